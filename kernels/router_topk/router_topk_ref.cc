// Copyright 2026 SMoE Lab authors.
//
// CPU reference of the fused router (router_topk.h). Simple loops; the GPU
// kernel is checked against this and this against brute force.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernels/router_topk/router_topk.h"

namespace smoe::kernels {

absl::Status ValidateRouterArgs(int64_t num_tokens, int num_experts, int top_k,
                                bool for_gpu) {
  if (num_tokens < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_tokens must be >= 0, got ", num_tokens));
  }
  if (num_experts < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_experts must be >= 1, got ", num_experts));
  }
  if (top_k < 1 || top_k > num_experts) {
    return absl::InvalidArgumentError(absl::StrCat(
        "top_k must be in [1, num_experts=", num_experts, "], got ", top_k));
  }
  if (for_gpu && num_experts > kMaxRouterExperts) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_experts must be <= ", kMaxRouterExperts,
                     " on the GPU, got ", num_experts));
  }
  if (for_gpu && num_tokens * top_k >= (int64_t{1} << 31)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_tokens * top_k must be < 2^31, got ", num_tokens * top_k));
  }
  return absl::OkStatus();
}

namespace {

template <typename T>
void RouterTopKRefT(const T* logits, int64_t num_tokens, int num_experts,
                    int top_k, RouterGating gating, int32_t* topk_idx,
                    T* topk_weights, int32_t* num_tokens_per_expert,
                    int32_t* expert_offsets) {
  std::vector<int32_t> counts(num_experts, 0);
  std::vector<char> taken(num_experts);
  for (int64_t t = 0; t < num_tokens; ++t) {
    const T* row = logits + t * num_experts;
    // Selection: k passes of argmax over the not-yet-taken experts; strict >
    // keeps the lower index on ties.
    std::fill(taken.begin(), taken.end(), 0);
    for (int j = 0; j < top_k; ++j) {
      int best = -1;
      for (int e = 0; e < num_experts; ++e) {
        if (taken[e]) continue;
        if (best < 0 || row[e] > row[best]) best = e;
      }
      taken[best] = 1;
      topk_idx[t * top_k + j] = best;
      ++counts[best];
    }
    // Weights: exp relative to the row max (the first chosen logit).
    const T max = row[topk_idx[t * top_k]];
    T denom = 0;
    if (gating == RouterGating::kRenormalized) {
      for (int j = 0; j < top_k; ++j) {
        denom += std::exp(row[topk_idx[t * top_k + j]] - max);
      }
    } else {
      for (int e = 0; e < num_experts; ++e) denom += std::exp(row[e] - max);
    }
    for (int j = 0; j < top_k; ++j) {
      topk_weights[t * top_k + j] =
          std::exp(row[topk_idx[t * top_k + j]] - max) / denom;
    }
  }
  if (num_tokens_per_expert != nullptr) {
    for (int e = 0; e < num_experts; ++e) num_tokens_per_expert[e] = counts[e];
  }
  if (expert_offsets != nullptr) {
    expert_offsets[0] = 0;
    for (int e = 0; e < num_experts; ++e) {
      expert_offsets[e + 1] = expert_offsets[e] + counts[e];
    }
  }
}

template <typename T>
void RouterTopKBackwardRefT(const T* logits, const int32_t* topk_idx,
                            const T* topk_weights, const T* grad_topk_weights,
                            int64_t num_tokens, int num_experts, int top_k,
                            RouterGating gating, T* grad_logits) {
  for (int64_t t = 0; t < num_tokens; ++t) {
    const T* row = logits + t * num_experts;
    const int32_t* idx = topk_idx + t * top_k;
    const T* w = topk_weights + t * top_k;
    const T* g = grad_topk_weights + t * top_k;
    T* out = grad_logits + t * num_experts;
    T s = 0;
    for (int j = 0; j < top_k; ++j) s += w[j] * g[j];
    if (gating == RouterGating::kRenormalized) {
      for (int e = 0; e < num_experts; ++e) out[e] = 0;
      for (int j = 0; j < top_k; ++j) out[idx[j]] = w[j] * (g[j] - s);
    } else {
      T max = row[0];
      for (int e = 1; e < num_experts; ++e) max = std::fmax(max, row[e]);
      T denom = 0;
      for (int e = 0; e < num_experts; ++e) denom += std::exp(row[e] - max);
      for (int e = 0; e < num_experts; ++e) {
        T ge = 0;
        for (int j = 0; j < top_k; ++j) {
          if (idx[j] == e) ge = g[j];
        }
        out[e] = std::exp(row[e] - max) / denom * (ge - s);
      }
    }
  }
}

}  // namespace

void RouterTopKRef(const float* logits, int64_t num_tokens, int num_experts,
                   int top_k, RouterGating gating, int32_t* topk_idx,
                   float* topk_weights, int32_t* num_tokens_per_expert,
                   int32_t* expert_offsets) {
  RouterTopKRefT(logits, num_tokens, num_experts, top_k, gating, topk_idx,
                 topk_weights, num_tokens_per_expert, expert_offsets);
}

void RouterTopKRef(const double* logits, int64_t num_tokens, int num_experts,
                   int top_k, RouterGating gating, int32_t* topk_idx,
                   double* topk_weights, int32_t* num_tokens_per_expert,
                   int32_t* expert_offsets) {
  RouterTopKRefT(logits, num_tokens, num_experts, top_k, gating, topk_idx,
                 topk_weights, num_tokens_per_expert, expert_offsets);
}

void RouterTopKBackwardRef(const float* logits, const int32_t* topk_idx,
                           const float* topk_weights,
                           const float* grad_topk_weights, int64_t num_tokens,
                           int num_experts, int top_k, RouterGating gating,
                           float* grad_logits) {
  RouterTopKBackwardRefT(logits, topk_idx, topk_weights, grad_topk_weights,
                         num_tokens, num_experts, top_k, gating, grad_logits);
}

void RouterTopKBackwardRef(const double* logits, const int32_t* topk_idx,
                           const double* topk_weights,
                           const double* grad_topk_weights, int64_t num_tokens,
                           int num_experts, int top_k, RouterGating gating,
                           double* grad_logits) {
  RouterTopKBackwardRefT(logits, topk_idx, topk_weights, grad_topk_weights,
                         num_tokens, num_experts, top_k, gating, grad_logits);
}

}  // namespace smoe::kernels
