// Copyright 2026 SMoE Lab authors.
//
// GPU grouped GEMM (both variants, f32 and bf16) vs the CPU reference on
// fresh random inputs (label gpu; skips without a device).
#include "kernels/grouped_gemm/grouped_gemm.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

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

template <typename T>
void CheckOne(cublasHandle_t h, DType dtype, GroupedGemmVariant variant,
              std::mt19937& rng) {
  SCOPED_TRACE(testing::Message()
               << DTypeName(dtype) << " variant " << static_cast<int>(variant));
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
                  n, false, variant, ws.get(), nullptr);
  if (s.code() == absl::StatusCode::kUnimplemented) {
    GTEST_SKIP() << "cuBLAS grouped GEMM does not support this dtype: " << s;
  }
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(GroupedGemm(h, d_dc.get(), d_b.get(), d_da.get(), dtype,
                          off.data(), e, n, k, true, variant, ws.get(), nullptr)
                  .ok());
  ASSERT_TRUE(GroupedGemmWeightGrad(h, d_a.get(), d_dc.get(), d_db.get(), dtype,
                                    off.data(), e, k, n, variant, ws.get(),
                                    nullptr)
                  .ok());
  // Tolerance: f32 compute over <= 129-term dot products of values <= 1:
  // ~1e-5 absolute (cuBLAS may use a different summation order). bf16
  // output rounding adds 2^-8 relative.
  const double atol = 1e-4;
  const double eps = dtype == DType::kBFloat16 ? 1.0 / 128 : 1e-5;
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

TEST(GroupedGemmGpuTest, VariantsMatchReference) {
  SMOE_SKIP_WITHOUT_GPU();
  std::random_device rd;
  const uint32_t seed = rd();
  SCOPED_TRACE(testing::Message() << "seed=" << seed);
  std::mt19937 rng(seed);
  cublasHandle_t h;
  ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  for (GroupedGemmVariant v : {GroupedGemmVariant::kPerExpertLoop,
                               GroupedGemmVariant::kGroupedBatched}) {
    CheckOne<float>(h, DType::kFloat32, v, rng);
    CheckOne<__nv_bfloat16>(h, DType::kBFloat16, v, rng);
  }
  cublasDestroy(h);
}

}  // namespace
}  // namespace smoe::kernels
