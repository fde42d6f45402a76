// Copyright 2026 SMoE Lab authors.
//
// File: kernels/permute/gather_vector.h
//
// The vector width of the row gather behind Permute / Unpermute /
// PermuteBackward (LaunchGatherRows in permute.cu): the widest of 16, 4, 2
// and 1 bytes that divides the row size and both base addresses, so every
// vector load and store is aligned. 2 bytes is the path of bf16 rows with an
// odd hidden size (one element per lane step instead of one byte). Header-
// only, no CUDA, so CPU tests cover the choice.
#ifndef SMOE_KERNELS_PERMUTE_GATHER_VECTOR_H_
#define SMOE_KERNELS_PERMUTE_GATHER_VECTOR_H_

#include <cstdint>

namespace smoe::kernels {

// REQUIRES: row_bytes >= 1.
constexpr int GatherRowsVectorBytes(int64_t row_bytes, uintptr_t src,
                                    uintptr_t dst) {
  for (int v : {16, 4, 2}) {
    if (row_bytes % v == 0 && src % v == 0 && dst % v == 0) return v;
  }
  return 1;
}

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_PERMUTE_GATHER_VECTOR_H_
