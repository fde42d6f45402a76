// Copyright 2026 SMoE Lab authors.
//
// File: kernels/permute/permute_check.h
//
// The permute kernels (plan, permute, unpermute, combine and the backwards)
// vs their CPU references, written once: called by the GPU test
// (permute_test.cc, also under `ctest -L emu`) and by `smoe doctor`
// (kernels/selfcheck). The tolerances live here.
// REQUIRES: a build with CUDA (SMOE_WITH_CUDA; the fake runtime counts).
#ifndef SMOE_KERNELS_PERMUTE_PERMUTE_CHECK_H_
#define SMOE_KERNELS_PERMUTE_PERMUTE_CHECK_H_

#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "kernels/common/kernel_check.h"

namespace smoe::kernels {

struct PermuteCheckCase {
  int64_t tokens = 0;
  int experts = 1;
  int k = 1;
  int64_t hidden = 1;
  bool one_expert = false;  // every token routes to experts 0..k-1
  bool with_bf16 = true;    // also permute and combine bf16
};

// Random routing, activations, weights and gradients drawn from `rng`: the
// plan (sorted_idx, dest_idx, offsets) and permute / unpermute exact; permute
// backward and combine atol 1e-5, combine backward grad_out 1e-6, grad
// weights 1e-6 * hidden (eps 1e-5); bf16 permute exact, bf16 combine atol
// 1e-5 eps 2^-8. Appends one comparison per output to `out` (names start
// "permute T=..."). Returns the Status of a failed CUDA call or launch.
absl::Status CheckPermute(const PermuteCheckCase& c, std::mt19937& rng,
                          bool inject_fault,
                          std::vector<KernelComparison>* out);

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_PERMUTE_PERMUTE_CHECK_H_
