// Copyright 2026 SMoE Lab authors.
//
// File: kernels/grouped_gemm/grouped_gemm_check.h
//
// The grouped GEMM (forward, dgrad, wgrad) vs its CPU reference, written
// once: called by the GPU test (grouped_gemm_test.cc, also under `ctest -L
// emu`) and by `smoe doctor` (kernels/selfcheck). The tolerances live here.
// REQUIRES: a build with CUDA (SMOE_WITH_CUDA; the fake runtime counts).
#ifndef SMOE_KERNELS_GROUPED_GEMM_GROUPED_GEMM_CHECK_H_
#define SMOE_KERNELS_GROUPED_GEMM_GROUPED_GEMM_CHECK_H_

#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kernels/common/dtype.h"
#include "kernels/common/kernel_check.h"
#include "kernels/grouped_gemm/grouped_gemm.h"

namespace smoe::kernels {

struct GroupedGemmCheckCase {
  DType dtype = DType::kFloat32;  // kFloat32 or kBFloat16
  GroupedGemmVariant variant = GroupedGemmVariant::kPerExpertLoop;
  GroupedGemmMath math = GroupedGemmMath::kStrictF32;
};

// Forward, dgrad (trans_b) and wgrad on one shape (4 experts, expert 2 empty,
// sizes not multiples of 8) on random inputs drawn from `rng`: atol 1e-4,
// eps 1e-5 (f32) / 2^-7 (bf16); f32 with TF32 atol 3e-2 eps 1e-2. Appends
// one comparison per output to `out` (names start "grouped_gemm ...").
// When the first call returns Unimplemented (this cuBLAS lacks the grouped
// mode for the case), sets *unsupported to its message, compares nothing and
// returns OK; otherwise *unsupported is "". Returns the Status of a failed
// CUDA or cuBLAS call.
absl::Status CheckGroupedGemm(cublasHandle_t handle,
                              const GroupedGemmCheckCase& c, std::mt19937& rng,
                              bool inject_fault,
                              std::vector<KernelComparison>* out,
                              std::string* unsupported);

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_GROUPED_GEMM_GROUPED_GEMM_CHECK_H_
