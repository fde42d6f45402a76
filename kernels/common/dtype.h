// Copyright 2026 SMoE Lab authors.
//
// File: kernels/common/dtype.h
//
// Element types the dtype-generic kernels accept. Plain enum, no CUDA types,
// so CPU-only code (worker/model/ops) can name a dtype.
#ifndef SMOE_KERNELS_COMMON_DTYPE_H_
#define SMOE_KERNELS_COMMON_DTYPE_H_

#include <cstddef>

namespace smoe::kernels {

enum class DType : int {
  kFloat32 = 0,   // IEEE float, 4 bytes
  kBFloat16 = 1,  // bfloat16 (__nv_bfloat16), 2 bytes; math in float
};

// Returns the size in bytes of one element of `dtype`.
inline constexpr size_t DTypeSize(DType dtype) {
  return dtype == DType::kFloat32 ? 4 : 2;
}

// Returns "f32" or "bf16".
inline constexpr const char* DTypeName(DType dtype) {
  return dtype == DType::kFloat32 ? "f32" : "bf16";
}

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_COMMON_DTYPE_H_
