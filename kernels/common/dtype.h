// Copyright 2026 SMoE Lab authors.
//
// File: kernels/common/dtype.h
//
// The one element-type enum of kernels/: what the dtype-generic kernels
// (permute, grouped_gemm) and every Communicator (all_to_all/communicator.h)
// accept. Plain enum, no CUDA types, so CPU-only code (worker/model/ops,
// worker/model/gloo_communicator.cc) can name a dtype. Which values a given
// function accepts is part of its contract: the dispatch kernels take
// kFloat32 and kBFloat16 only (IsKernelFloatDType), the communicators move
// all of them.
#ifndef SMOE_KERNELS_COMMON_DTYPE_H_
#define SMOE_KERNELS_COMMON_DTYPE_H_

#include <cstddef>

namespace smoe::kernels {

// The values are stable: the .cu launchers receive static_cast<int>(dtype)
// and test 0 (f32) vs 1 (bf16).
enum class DType : int {
  kFloat32 = 0,   // IEEE float, 4 bytes
  kBFloat16 = 1,  // bfloat16 (__nv_bfloat16), 2 bytes; kernel math in float
  kFloat64 = 2,   // IEEE double, 8 bytes
  kFloat16 = 3,   // IEEE half (__half), 2 bytes
  kInt32 = 4,     // int32_t
  kInt64 = 5,     // int64_t
};

// Returns the size in bytes of one element of `dtype` (0 for a value outside
// the enum).
inline constexpr size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
    case DType::kBFloat16:
    case DType::kFloat16:
      return 2;
  }
  return 0;
}

// Returns "float32", "bfloat16", "float64", "float16", "int32", "int64" (the
// LibTorch spellings), or "unknown" for a value outside the enum.
inline constexpr const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kFloat64:
      return "float64";
    case DType::kFloat16:
      return "float16";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
  }
  return "unknown";
}

// True for the element types the dispatch kernels (permute's typed kernels,
// grouped_gemm) compute in: kFloat32 and kBFloat16.
inline constexpr bool IsKernelFloatDType(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kBFloat16;
}

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_COMMON_DTYPE_H_
