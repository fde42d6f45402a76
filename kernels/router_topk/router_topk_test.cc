// Copyright 2026 SMoE Lab authors.
//
// GPU router kernel vs the CPU reference on fresh random inputs (label gpu;
// skips without a device).
#include "kernels/router_topk/router_topk.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/common/compare.h"
#include "kernels/common/device.h"
#include "kernels/common/device_buffer.h"

namespace smoe::kernels {
namespace {

void CheckOne(int64_t t, int e, int k, RouterGating g, bool tied,
              uint32_t seed) {
  SCOPED_TRACE(testing::Message()
               << "T=" << t << " E=" << e << " k=" << k
               << " g=" << static_cast<int>(g) << " tied=" << tied);
  std::mt19937 rng(seed);  // fresh inputs per run of the grid
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::uniform_int_distribution<int> ui(-4, 4);
  std::vector<float> logits(t * e);
  for (float& x : logits) x = tied ? 0.5f * ui(rng) : u(rng);
  std::vector<int32_t> idx(t * k), cnt(e), off(e + 1);
  std::vector<float> w(t * k);
  RouterTopKRef(logits.data(), t, e, k, g, idx.data(), w.data(), cnt.data(),
                off.data());
  DeviceBuffer<float> d_logits(logits), d_w(t * k);
  DeviceBuffer<int32_t> d_idx(t * k), d_cnt(e), d_off(e + 1);
  ASSERT_TRUE(RouterTopK(d_logits.get(), t, e, k, g, d_idx.get(), d_w.get(),
                         d_cnt.get(), d_off.get(), nullptr)
                  .ok());
  EXPECT_EQ(d_idx.ToHost(), idx);
  EXPECT_EQ(d_cnt.ToHost(), cnt);
  EXPECT_EQ(d_off.ToHost(), off);
  // Tolerance: device expf is within 2 ulp and the full-softmax sum is a
  // tree instead of a left fold: a few float ulps of a value <= 1.
  const std::vector<float> gw = d_w.ToHost();
  CompareResult r = CompareClose(w.data(), gw.data(), w.size(), 1e-6, 1e-5);
  EXPECT_TRUE(r.ok) << r.message;

  // Backward on random upstream gradients.
  std::vector<float> gup(t * k), gl(t * e);
  for (float& x : gup) x = u(rng);
  RouterTopKBackwardRef(logits.data(), idx.data(), w.data(), gup.data(), t, e,
                        k, g, gl.data());
  DeviceBuffer<float> d_gup(gup), d_gl(t * e);
  ASSERT_TRUE(RouterTopKBackward(d_logits.get(), d_idx.get(), d_w.get(),
                                 d_gup.get(), t, e, k, g, d_gl.get(), nullptr)
                  .ok());
  const std::vector<float> ggl = d_gl.ToHost();
  // Tolerance: products of values <= 3 with weights <= 1 and a k-term sum.
  r = CompareClose(gl.data(), ggl.data(), gl.size(), 1e-5, 1e-4);
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(RouterTopKGpuTest, ShapeGridMatchesReference) {
  SMOE_SKIP_WITHOUT_GPU();
  std::random_device rd;
  const uint32_t seed = rd();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  for (int64_t t : {0, 1, 7, 4096}) {
    for (int e : {1, 8, 64, 200}) {
      for (int k : {1, 2, e}) {
        if (k > e) continue;
        for (RouterGating g :
             {RouterGating::kRenormalized, RouterGating::kNoRenorm}) {
          CheckOne(t, e, k, g, /*tied=*/true, seed + t + e + k);
          CheckOne(t, e, k, g, /*tied=*/false, seed + 7 * t + e + k);
        }
      }
    }
  }
}

// The shapes a review picks: experts not a multiple of 32 (the padding
// lanes), k = experts, 256 experts (the limit: 8 per lane), one token.
TEST(RouterTopKGpuTest, EdgeShapesMatchReference) {
  SMOE_SKIP_WITHOUT_GPU();
  std::random_device rd;
  const uint32_t seed = rd();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  struct Shape {
    int64_t t;
    int e, k;
  };
  for (const Shape& s : {Shape{0, 33, 33}, Shape{1, 256, 1}, Shape{1, 256, 256},
                         Shape{5, 33, 33}, Shape{3, 256, 8}, Shape{37, 31, 31},
                         Shape{100, 255, 3}, Shape{9, 97, 97}}) {
    for (RouterGating g :
         {RouterGating::kRenormalized, RouterGating::kNoRenorm}) {
      CheckOne(s.t, s.e, s.k, g, /*tied=*/true, seed + s.t + s.e + s.k);
      CheckOne(s.t, s.e, s.k, g, /*tied=*/false, seed + 7 * s.t + s.e);
    }
  }
}

// 2048 blocks x 4 warps cover 8192 tokens per pass of the grid-stride loop:
// 8192 + 37 tokens run its tail, and with 3 experts every block adds to the
// same global counters.
TEST(RouterTopKGpuTest, GridStrideTailMatchesReference) {
  SMOE_SKIP_WITHOUT_GPU();
  std::random_device rd;
  const uint32_t seed = rd();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  CheckOne(8192 + 37, 3, 2, RouterGating::kRenormalized, /*tied=*/false, seed);
}

TEST(RouterTopKGpuTest, RejectsBadArguments) {
  SMOE_SKIP_WITHOUT_GPU();
  DeviceBuffer<float> d(16);
  DeviceBuffer<int32_t> i(16);
  const absl::Status s =
      RouterTopK(d.get(), 2, 300, 2, RouterGating::kRenormalized, i.get(),
                 d.get(), i.get(), i.get(), nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace smoe::kernels
