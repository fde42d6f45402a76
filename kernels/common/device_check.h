// Copyright 2026 SMoE Lab authors.
//
// File: kernels/common/device_check.h
//
// The device half of the kernel checks (kernels/<k>/<k>_check.cc): downloads
// a GPU output, applies the fault injection, compares it with its reference
// (kernels/common/kernel_check.h) and appends the comparison.
//
// Fault injection (to prove a check can fail): with `inject_fault`, 1 is added
// to the first element of every downloaded output before it is compared (far
// outside every tolerance; a one-ulp flip would pass the float checks).
// REQUIRES: CUDA runtime headers (real or tests/fakes/include).
#ifndef SMOE_KERNELS_COMMON_DEVICE_CHECK_H_
#define SMOE_KERNELS_COMMON_DEVICE_CHECK_H_

#include <cuda_bf16.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/kernel_check.h"

namespace smoe::kernels {

inline std::vector<__nv_bfloat16> ToBf16(const std::vector<float>& v) {
  std::vector<__nv_bfloat16> o(v.size());
  for (size_t i = 0; i < v.size(); ++i) o[i] = __float2bfloat16(v[i]);
  return o;
}
inline std::vector<float> FromBf16(const std::vector<__nv_bfloat16>& v) {
  std::vector<float> o(v.size());
  for (size_t i = 0; i < v.size(); ++i) o[i] = __bfloat162float(v[i]);
  return o;
}

// Appends the comparisons of one check case to `out`, each named
// `prefix` + what.
class DeviceComparisons {
 public:
  DeviceComparisons(std::string prefix, bool inject_fault,
                    std::vector<KernelComparison>* out)
      : prefix_(std::move(prefix)), fault_(inject_fault), out_(out) {}

  // Bitwise equality of `ref.size()` elements of `d` (float or int32_t).
  template <typename T>
  absl::Status Exact(const std::string& what, const std::vector<T>& ref,
                     const DeviceMem& d) {
    absl::StatusOr<std::vector<T>> got = Download<T>(d, ref.size());
    if (!got.ok()) return got.status();
    Fault(&*got);
    out_->push_back(CompareExactOutput(prefix_ + what, ref, *got));
    return absl::OkStatus();
  }
  // compare.h's rule on `ref.size()` elements of `d`, stored as T (float or
  // __nv_bfloat16, compared as float).
  template <typename T = float>
  absl::Status Close(const std::string& what, const std::vector<float>& ref,
                     const DeviceMem& d, double atol, double eps) {
    absl::StatusOr<std::vector<float>> got = DownloadAsFloat<T>(d, ref.size());
    if (!got.ok()) return got.status();
    out_->push_back(CompareCloseOutput(prefix_ + what, ref, *got, atol, eps));
    return absl::OkStatus();
  }
  // Bitwise equality of a bf16 output with a float reference of bf16 values.
  absl::Status ExactBf16(const std::string& what, const std::vector<float>& ref,
                         const DeviceMem& d) {
    absl::StatusOr<std::vector<float>> got =
        DownloadAsFloat<__nv_bfloat16>(d, ref.size());
    if (!got.ok()) return got.status();
    out_->push_back(CompareExactOutput(prefix_ + what, ref, *got));
    return absl::OkStatus();
  }
  const std::string& prefix() const { return prefix_; }

 private:
  template <typename T>
  absl::StatusOr<std::vector<float>> DownloadAsFloat(const DeviceMem& d,
                                                     size_t n) {
    absl::StatusOr<std::vector<T>> got = Download<T>(d, n);
    if (!got.ok()) return got.status();
    Fault(&*got);
    if constexpr (std::is_same_v<T, float>) {
      return *std::move(got);
    } else {
      return FromBf16(*got);
    }
  }
  void Fault(std::vector<float>* v) const {
    if (fault_ && !v->empty()) (*v)[0] += 1.0f;
  }
  void Fault(std::vector<int32_t>* v) const {
    if (fault_ && !v->empty()) (*v)[0] += 1;
  }
  void Fault(std::vector<__nv_bfloat16>* v) const {
    if (fault_ && !v->empty()) {
      (*v)[0] = __float2bfloat16(__bfloat162float((*v)[0]) + 1.0f);
    }
  }

  std::string prefix_;
  bool fault_;
  std::vector<KernelComparison>* out_;
};

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_COMMON_DEVICE_CHECK_H_
