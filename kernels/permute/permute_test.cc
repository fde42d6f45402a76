// Copyright 2026 SMoE Lab authors.
//
// GPU plan builder, permute, unpermute, combine and backward vs the CPU
// reference on fresh random inputs (label gpu; skips without a device).
#include "kernels/permute/permute.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/common/compare.h"
#include "kernels/common/device.h"
#include "kernels/common/device_buffer.h"

namespace smoe::kernels {
namespace {

void CheckOne(int64_t t, int e, int k, int64_t hidden, bool one_expert,
              std::mt19937& rng) {
  SCOPED_TRACE(testing::Message() << "T=" << t << " E=" << e << " k=" << k
                                  << " hidden=" << hidden);
  std::vector<int32_t> topk;
  std::vector<int> experts(e);
  for (int64_t r = 0; r < t; ++r) {
    for (int i = 0; i < e; ++i) experts[i] = i;
    std::shuffle(experts.begin(), experts.end(), rng);
    if (one_expert) std::sort(experts.begin(), experts.end());
    topk.insert(topk.end(), experts.begin(), experts.begin() + k);
  }
  const int64_t rows = t * k;
  std::vector<int32_t> sorted(rows), dest(rows), off(e + 1);
  PermutePlan hp{sorted.data(), dest.data(), off.data(), t, k, e};
  BuildPermutePlanRef(topk.data(), hp);

  DeviceBuffer<int32_t> d_topk(topk), d_sorted(rows), d_dest(rows),
      d_off(e + 1), d_cnt(e);
  DeviceBuffer<char> d_ws(PermutePlanWorkspaceBytes(t, k, e));
  PermutePlan dp{d_sorted.get(), d_dest.get(), d_off.get(), t, k, e};
  ASSERT_TRUE(
      BuildPermutePlan(d_topk.get(), dp, d_cnt.get(), d_ws.get(), nullptr)
          .ok());
  EXPECT_EQ(d_sorted.ToHost(), sorted);
  EXPECT_EQ(d_dest.ToHost(), dest);
  EXPECT_EQ(d_off.ToHost(), off);

  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(t * hidden), w(rows), y(rows * hidden), gout(t * hidden);
  for (float& v : x) v = u(rng);
  for (float& v : w) v = u(rng);
  for (float& v : y) v = u(rng);
  for (float& v : gout) v = u(rng);
  std::vector<float> perm(rows * hidden), unperm(rows * hidden), gx(t * hidden),
      comb(t * hidden), gy(rows * hidden), gw(rows);
  PermuteRef(x.data(), hidden, hp, perm.data());
  UnpermuteRef(perm.data(), hidden, hp, unperm.data());
  PermuteBackwardRef(y.data(), hidden, hp, gx.data());
  CombineRef(y.data(), w.data(), hidden, hp, comb.data());
  CombineBackwardRef(gout.data(), y.data(), w.data(), hidden, hp, gy.data(),
                     gw.data());

  DeviceBuffer<float> d_x(x), d_w(w), d_y(y), d_gout(gout),
      d_perm(rows * hidden), d_unperm(rows * hidden), d_gx(t * hidden),
      d_comb(t * hidden), d_gy(rows * hidden), d_gw(rows);
  const DType f32 = DType::kFloat32;
  ASSERT_TRUE(Permute(d_x.get(), f32, hidden, dp, d_perm.get(), nullptr).ok());
  ASSERT_TRUE(
      Unpermute(d_perm.get(), f32, hidden, dp, d_unperm.get(), nullptr).ok());
  ASSERT_TRUE(
      PermuteBackward(d_y.get(), f32, hidden, dp, d_gx.get(), nullptr).ok());
  ASSERT_TRUE(
      Combine(d_y.get(), d_w.get(), f32, hidden, dp, d_comb.get(), nullptr)
          .ok());
  ASSERT_TRUE(CombineBackward(d_gout.get(), d_y.get(), d_w.get(), f32, hidden,
                              dp, d_gy.get(), d_gw.get(), nullptr)
                  .ok());
  // Copies are exact.
  EXPECT_EQ(d_perm.ToHost(), perm);
  EXPECT_EQ(d_unperm.ToHost(), unperm);
  // Tolerance: k-term sums in the same order; the device may contract
  // a + w * y into one FMA (one rounding fewer): <= k ulps of values <= k.
  auto near = [](const std::vector<float>& ref, const std::vector<float>& got,
                 double atol) {
    const CompareResult r =
        CompareClose(ref.data(), got.data(), ref.size(), atol, 1e-5);
    EXPECT_TRUE(r.ok) << r.message;
  };
  near(gx, d_gx.ToHost(), 1e-5);
  near(comb, d_comb.ToHost(), 1e-5);
  near(gy, d_gy.ToHost(), 1e-6);
  // grad_topk_weights: a hidden-long dot product reduced as a tree.
  near(gw, d_gw.ToHost(), 1e-6 * hidden);

  // bf16: permute copies exactly; combine rounds once at the end (bf16 has
  // 8 mantissa bits: eps 2^-8 relative on the f32 result of bf16 inputs).
  std::vector<__nv_bfloat16> xb(t * hidden);
  for (int64_t i = 0; i < t * hidden; ++i) xb[i] = __float2bfloat16(x[i]);
  DeviceBuffer<__nv_bfloat16> d_xb(xb), d_pb(rows * hidden), d_cb(t * hidden);
  ASSERT_TRUE(
      Permute(d_xb.get(), DType::kBFloat16, hidden, dp, d_pb.get(), nullptr)
          .ok());
  const std::vector<__nv_bfloat16> pb = d_pb.ToHost();
  for (int64_t p = 0; p < rows; ++p) {
    for (int64_t c = 0; c < hidden; ++c) {
      ASSERT_EQ(__bfloat162float(pb[p * hidden + c]),
                __bfloat162float(xb[(sorted[p] / k) * hidden + c]));
    }
  }
  ASSERT_TRUE(Combine(d_pb.get(), d_w.get(), DType::kBFloat16, hidden, dp,
                      d_cb.get(), nullptr)
                  .ok());
  std::vector<float> pf(rows * hidden), cref(t * hidden), cgot(t * hidden);
  for (int64_t i = 0; i < rows * hidden; ++i) pf[i] = __bfloat162float(pb[i]);
  CombineRef(pf.data(), w.data(), hidden, hp, cref.data());
  const std::vector<__nv_bfloat16> cb = d_cb.ToHost();
  for (int64_t i = 0; i < t * hidden; ++i) cgot[i] = __bfloat162float(cb[i]);
  const CompareResult r =
      CompareClose(cref.data(), cgot.data(), cref.size(), 1e-5, 1.0 / 256);
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(PermuteGpuTest, ShapeGridMatchesReference) {
  SMOE_SKIP_WITHOUT_GPU();
  std::random_device rd;
  const uint32_t seed = rd();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  std::mt19937 rng(seed);
  for (int64_t t : {0, 1, 7, 4096}) {
    for (int e : {1, 8, 64}) {
      for (int k : {1, 2, e}) {
        if (k > e) continue;
        // hidden 5 is not a multiple of any vector width; 256 takes the
        // 16-byte path.
        for (int64_t hidden : {5, 256}) {
          if (t * k * hidden > (int64_t{1} << 24)) continue;
          CheckOne(t, e, k, hidden, /*one_expert=*/false, rng);
        }
      }
    }
  }
  CheckOne(3000, 8, 1, 64, /*one_expert=*/true, rng);  // all to expert 0
  CheckOne(3000, 8, 2, 64, /*one_expert=*/true, rng);  // all to {0, 1}
}

// The shapes a review picks: zero tokens, one token, experts not a multiple
// of 32, k = experts, 256 experts, odd hidden sizes, a partial last chunk,
// several plan blocks adding to the same global counts.
TEST(PermuteGpuTest, EdgeShapesMatchReference) {
  SMOE_SKIP_WITHOUT_GPU();
  std::random_device rd;
  const uint32_t seed = rd();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  std::mt19937 rng(seed);
  CheckOne(0, 33, 2, 5, /*one_expert=*/false, rng);
  CheckOne(1, 256, 256, 3, /*one_expert=*/false, rng);
  CheckOne(1, 33, 1, 1, /*one_expert=*/false, rng);
  CheckOne(37, 33, 33, 4, /*one_expert=*/false, rng);
  CheckOne(300, 100, 7, 8, /*one_expert=*/false, rng);
  CheckOne(2100, 5, 2, 2, /*one_expert=*/false, rng);  // 5 chunks, 2 blocks
  CheckOne(4500, 3, 3, 1, /*one_expert=*/true, rng);   // 14 chunks, 4 blocks
}

}  // namespace
}  // namespace smoe::kernels
