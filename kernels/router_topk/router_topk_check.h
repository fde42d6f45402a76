// Copyright 2026 SMoE Lab authors.
//
// File: kernels/router_topk/router_topk_check.h
//
// The router kernel vs its CPU reference, written once: called by the GPU
// test (router_topk_test.cc, also under `ctest -L emu`) and by `smoe
// doctor` (kernels/selfcheck). The tolerances live here.
// REQUIRES: a build with CUDA (SMOE_WITH_CUDA; the fake runtime counts).
#ifndef SMOE_KERNELS_ROUTER_TOPK_ROUTER_TOPK_CHECK_H_
#define SMOE_KERNELS_ROUTER_TOPK_ROUTER_TOPK_CHECK_H_

#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "kernels/common/kernel_check.h"
#include "kernels/router_topk/router_topk.h"

namespace smoe::kernels {

struct RouterTopKCheckCase {
  int64_t tokens = 0;
  int experts = 1;
  int k = 1;
  RouterGating gating = RouterGating::kRenormalized;
  bool tied = false;  // logits on a grid of halves: many ties
};

// Forward and backward on random logits and upstream gradients drawn from
// `rng` against RouterTopKRef / RouterTopKBackwardRef: topk_idx, counts and
// offsets exact; weights atol 1e-6 eps 1e-5; grad logits atol 1e-5 eps 1e-4.
// Appends one comparison per output to `out` (names start "router T=...").
// Returns the Status of a failed CUDA call or kernel launch.
absl::Status CheckRouterTopK(const RouterTopKCheckCase& c, std::mt19937& rng,
                             bool inject_fault,
                             std::vector<KernelComparison>* out);

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_ROUTER_TOPK_ROUTER_TOPK_CHECK_H_
