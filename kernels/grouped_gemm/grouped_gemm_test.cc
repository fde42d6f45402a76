// Copyright 2026 SMoE Lab authors.
//
// GPU grouped GEMM (both variants; f32 strict and TF32, bf16) vs the CPU
// reference on fresh random inputs (label gpu; skips without a device, and
// the grouped test skips where this cuBLAS lacks a grouped mode).
#include "kernels/grouped_gemm/grouped_gemm.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "kernels/common/compare.h"
#include "kernels/common/device.h"
#include "kernels/common/device_buffer.h"

namespace smoe::kernels {
namespace {

template <typename T>
std::vector<T> Cast(const std::vector<float>& v) {
  std::vector<T> o(v.size());
  for (size_t i = 0; i < v.size(); ++i) o[i] = static_cast<T>(v[i]);
  return o;
}
std::vector<float> ToFloat(const std::vector<__nv_bfloat16>& v) {
  std::vector<float> o(v.size());
  for (size_t i = 0; i < v.size(); ++i) o[i] = __bfloat162float(v[i]);
  return o;
}

// Runs forward, dgrad and wgrad with `variant` / `math` against the CPU
// reference. Sets *unsupported (and checks nothing else) when the first call
// returns Unimplemented: the grouped variant on a cuBLAS older than 12.5, or a
// dtype / compute type its grouped mode lacks. The caller decides whether
// that skips the test (a GTEST_SKIP here would only leave this helper).
template <typename T>
void CheckOne(cublasHandle_t h, DType dtype, GroupedGemmVariant variant,
              GroupedGemmMath math, std::mt19937& rng, bool* unsupported) {
  SCOPED_TRACE(testing::Message()
               << DTypeName(dtype) << " variant " << static_cast<int>(variant)
               << " math " << static_cast<int>(math));
  *unsupported = false;
  // Expert 2 is empty; sizes are not multiples of 8.
  const std::vector<int64_t> off = {0, 37, 100, 100, 129};
  const int e = 4;
  const int64_t rows = off.back(), k = 72, n = 40;
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(rows * k), b(e * k * n), dc(rows * n);
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  for (float& v : dc) v = u(rng);
  if (dtype == DType::kBFloat16) {  // the reference sees the rounded inputs
    a = ToFloat(Cast<__nv_bfloat16>(a));
    b = ToFloat(Cast<__nv_bfloat16>(b));
    dc = ToFloat(Cast<__nv_bfloat16>(dc));
  }
  std::vector<float> c(rows * n), da(rows * k), db(e * k * n);
  GroupedGemmRef(a.data(), b.data(), c.data(), off.data(), e, k, n, false);
  GroupedGemmRef(dc.data(), b.data(), da.data(), off.data(), e, n, k, true);
  GroupedGemmWeightGradRef(a.data(), dc.data(), db.data(), off.data(), e, k, n);
  DeviceBuffer<T> d_a(Cast<T>(a)), d_b(Cast<T>(b)), d_dc(Cast<T>(dc)),
      d_c(rows * n), d_da(rows * k),
      d_db(Cast<T>(std::vector<float>(e * k * n, 7.0f)));
  DeviceBuffer<char> ws(GroupedGemmWorkspaceBytes(e));
  absl::Status s =
      GroupedGemm(h, d_a.get(), d_b.get(), d_c.get(), dtype, off.data(), e, k,
                  n, false, variant, ws.get(), nullptr, math);
  if (absl::IsUnimplemented(s)) {
    *unsupported = true;
    return;
  }
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(GroupedGemm(h, d_dc.get(), d_b.get(), d_da.get(), dtype,
                          off.data(), e, n, k, true, variant, ws.get(), nullptr,
                          math)
                  .ok());
  ASSERT_TRUE(GroupedGemmWeightGrad(h, d_a.get(), d_dc.get(), d_db.get(), dtype,
                                    off.data(), e, k, n, variant, ws.get(),
                                    nullptr, math)
                  .ok());
  // Tolerance: f32 compute over <= 129-term dot products of values <= 1:
  // ~1e-5 absolute (cuBLAS may use a different summation order). bf16
  // output rounding adds 2^-8 relative. TF32 rounds both inputs to a 10-bit
  // mantissa (<= 2^-10 relative each), i.e. <= 2^-9 per product: over <= 72
  // terms of |product| <= 1 with random signs ~1e-2 absolute at worst.
  const bool tf32 =
      dtype == DType::kFloat32 && math == GroupedGemmMath::kFastTf32;
  const double atol = tf32 ? 3e-2 : 1e-4;
  const double eps = dtype == DType::kBFloat16 ? 1.0 / 128 : tf32 ? 1e-2 : 1e-5;
  auto near = [&](const std::vector<float>& ref, const DeviceBuffer<T>& d) {
    std::vector<float> got;
    if constexpr (std::is_same_v<T, float>) {
      got = d.ToHost();
    } else {
      got = ToFloat(d.ToHost());
    }
    const CompareResult r =
        CompareClose(ref.data(), got.data(), ref.size(), atol, eps);
    EXPECT_TRUE(r.ok) << r.message;
  };
  near(c, d_c);
  near(da, d_da);
  near(db, d_db);  // includes the zeroed empty expert
}

class GroupedGemmGpuTest : public testing::Test {
 protected:
  void SetUp() override {
    SMOE_SKIP_WITHOUT_GPU();
    std::random_device rd;
    seed_ = rd();
    rng_.seed(seed_);
    ASSERT_EQ(cublasCreate(&h_), CUBLAS_STATUS_SUCCESS);
  }
  void TearDown() override {
    if (h_ != nullptr) cublasDestroy(h_);
  }
  cublasHandle_t h_ = nullptr;
  uint32_t seed_ = 0;
  std::mt19937 rng_;
};

TEST_F(GroupedGemmGpuTest, PerExpertLoopMatchesReference) {
  SCOPED_TRACE(testing::Message() << "seed=" << seed_);
  bool unsupported = false;
  for (GroupedGemmMath m :
       {GroupedGemmMath::kStrictF32, GroupedGemmMath::kFastTf32}) {
    CheckOne<float>(h_, DType::kFloat32, GroupedGemmVariant::kPerExpertLoop, m,
                    rng_, &unsupported);
    ASSERT_FALSE(HasFatalFailure());
    EXPECT_FALSE(unsupported) << "cublasGemmEx is the baseline";
  }
  CheckOne<__nv_bfloat16>(h_, DType::kBFloat16,
                          GroupedGemmVariant::kPerExpertLoop,
                          GroupedGemmMath::kStrictF32, rng_, &unsupported);
  EXPECT_FALSE(unsupported) << "cublasGemmEx is the baseline";
}

TEST_F(GroupedGemmGpuTest, GroupedBatchedMatchesReferenceOrFallsBack) {
  SCOPED_TRACE(testing::Message() << "seed=" << seed_);
  bool unsupported = false;
  CheckOne<float>(h_, DType::kFloat32, GroupedGemmVariant::kGroupedBatched,
                  GroupedGemmMath::kStrictF32, rng_, &unsupported);
  ASSERT_FALSE(HasFatalFailure());
  if (!CublasHasGroupedBatched(CUBLAS_VERSION)) {
    // Built against cuBLAS < 12.5: Unimplemented, and callers use the loop.
    EXPECT_TRUE(unsupported);
    GTEST_SKIP() << "cuBLAS " << CUBLAS_VERSION
                 << " has no cublasGemmGroupedBatchedEx (needs 12.5); "
                    "kernels fall back to kPerExpertLoop";
  }
  EXPECT_FALSE(unsupported) << "f32 is supported from cuBLAS 12.5";
  std::vector<std::string> skipped;
  CheckOne<float>(h_, DType::kFloat32, GroupedGemmVariant::kGroupedBatched,
                  GroupedGemmMath::kFastTf32, rng_, &unsupported);
  ASSERT_FALSE(HasFatalFailure());
  if (unsupported) skipped.push_back("f32 with TF32");
  CheckOne<__nv_bfloat16>(h_, DType::kBFloat16,
                          GroupedGemmVariant::kGroupedBatched,
                          GroupedGemmMath::kStrictF32, rng_, &unsupported);
  ASSERT_FALSE(HasFatalFailure());
  if (unsupported) skipped.push_back("bf16");
  if (!skipped.empty()) {
    GTEST_SKIP() << "this cuBLAS has no grouped mode for: "
                 << absl::StrJoin(skipped, ", ")
                 << " (callers fall back to kPerExpertLoop)";
  }
}

}  // namespace
}  // namespace smoe::kernels
