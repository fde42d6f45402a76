// Copyright 2026 SMoE Lab authors.
#include "kernels/grouped_gemm/grouped_gemm_check.h"

#include <cuda_bf16.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/device_check.h"

namespace smoe::kernels {
namespace {

template <typename T>
std::vector<T> CastTo(const std::vector<float>& v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else {
    return ToBf16(v);
  }
}

template <typename T>
absl::Status CheckTyped(cublasHandle_t h, const GroupedGemmCheckCase& c,
                        std::mt19937& rng, DeviceComparisons& cmp,
                        std::string* unsupported) {
  const DType dtype = c.dtype;
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
    a = FromBf16(ToBf16(a));
    b = FromBf16(ToBf16(b));
    dc = FromBf16(ToBf16(dc));
  }
  std::vector<float> cr(rows * n), da(rows * k), db(e * k * n);
  GroupedGemmRef(a.data(), b.data(), cr.data(), off.data(), e, k, n, false);
  GroupedGemmRef(dc.data(), b.data(), da.data(), off.data(), e, n, k, true);
  GroupedGemmWeightGradRef(a.data(), dc.data(), db.data(), off.data(), e, k, n);
  DeviceMem d_a, d_b, d_dc, d_c, d_da, d_db, ws;
  SMOE_RETURN_IF_ERROR(Upload(CastTo<T>(a), &d_a));
  SMOE_RETURN_IF_ERROR(Upload(CastTo<T>(b), &d_b));
  SMOE_RETURN_IF_ERROR(Upload(CastTo<T>(dc), &d_dc));
  SMOE_RETURN_IF_ERROR(Poisoned<T>(rows * n, &d_c));
  SMOE_RETURN_IF_ERROR(Poisoned<T>(rows * k, &d_da));
  // Non-zero garbage: the empty expert's weight gradient must be zeroed.
  SMOE_RETURN_IF_ERROR(
      Upload(CastTo<T>(std::vector<float>(e * k * n, 7.0f)), &d_db));
  SMOE_RETURN_IF_ERROR(ws.Alloc(GroupedGemmWorkspaceBytes(e)));
  const absl::Status s =
      GroupedGemm(h, d_a.get(), d_b.get(), d_c.get(), dtype, off.data(), e, k,
                  n, false, c.variant, ws.get(), nullptr, c.math);
  if (absl::IsUnimplemented(s)) {
    *unsupported = std::string(s.message());
    return absl::OkStatus();
  }
  SMOE_RETURN_IF_ERROR(s);
  SMOE_RETURN_IF_ERROR(GroupedGemm(h, d_dc.get(), d_b.get(), d_da.get(), dtype,
                                   off.data(), e, n, k, true, c.variant,
                                   ws.get(), nullptr, c.math));
  SMOE_RETURN_IF_ERROR(GroupedGemmWeightGrad(
      h, d_a.get(), d_dc.get(), d_db.get(), dtype, off.data(), e, k, n,
      c.variant, ws.get(), nullptr, c.math));
  // Tolerance: f32 compute over <= 129-term dot products of values <= 1:
  // ~1e-5 absolute (cuBLAS may use a different summation order). bf16
  // output rounding adds 2^-8 relative. TF32 rounds both inputs to a 10-bit
  // mantissa (<= 2^-10 relative each), i.e. <= 2^-9 per product: over <= 72
  // terms of |product| <= 1 with random signs ~1e-2 absolute at worst.
  const bool tf32 =
      dtype == DType::kFloat32 && c.math == GroupedGemmMath::kFastTf32;
  const double atol = tf32 ? 3e-2 : 1e-4;
  const double eps = dtype == DType::kBFloat16 ? 1.0 / 128 : tf32 ? 1e-2 : 1e-5;
  SMOE_RETURN_IF_ERROR(cmp.Close<T>("forward", cr, d_c, atol, eps));
  SMOE_RETURN_IF_ERROR(cmp.Close<T>("dgrad (trans_b)", da, d_da, atol, eps));
  return cmp.Close<T>("wgrad (empty expert zeroed)", db, d_db, atol, eps);
}

}  // namespace

absl::Status CheckGroupedGemm(cublasHandle_t handle,
                              const GroupedGemmCheckCase& c, std::mt19937& rng,
                              bool inject_fault,
                              std::vector<KernelComparison>* out,
                              std::string* unsupported) {
  unsupported->clear();
  DeviceComparisons cmp(
      absl::StrCat("grouped_gemm ", DTypeName(c.dtype),
                   c.variant == GroupedGemmVariant::kGroupedBatched
                       ? " grouped-batched"
                       : " per-expert-loop",
                   c.math == GroupedGemmMath::kFastTf32 ? " tf32" : "", ": "),
      inject_fault, out);
  if (c.dtype == DType::kBFloat16) {
    return CheckTyped<__nv_bfloat16>(handle, c, rng, cmp, unsupported);
  }
  if (c.dtype != DType::kFloat32) {
    return absl::InvalidArgumentError(
        absl::StrCat("CheckGroupedGemm: dtype ", DTypeName(c.dtype)));
  }
  return CheckTyped<float>(handle, c, rng, cmp, unsupported);
}

}  // namespace smoe::kernels
