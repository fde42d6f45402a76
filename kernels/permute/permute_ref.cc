// Copyright 2026 SMoE Lab authors.
//
// CPU reference of permute / unpermute / combine and their backward
// (permute.h). Simple loops; the GPU kernels are checked against these.
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernels/permute/permute.h"

namespace smoe::kernels {

absl::Status ValidatePermuteArgs(int64_t num_tokens, int num_experts, int top_k,
                                 int64_t hidden, bool for_gpu) {
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
  if (hidden < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("hidden must be >= 1, got ", hidden));
  }
  if (for_gpu && num_experts > kMaxPermuteExperts) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_experts must be <= ", kMaxPermuteExperts,
                     " on the GPU, got ", num_experts));
  }
  if (for_gpu && num_tokens * top_k >= (int64_t{1} << 31)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_tokens * top_k must be < 2^31, got ", num_tokens * top_k));
  }
  return absl::OkStatus();
}

absl::Status ValidateTopkIdx(const int32_t* topk_idx, int64_t num_tokens,
                             int top_k, int num_experts) {
  for (int64_t f = 0; f < num_tokens * top_k; ++f) {
    if (topk_idx[f] < 0 || topk_idx[f] >= num_experts) {
      return absl::InvalidArgumentError(absl::StrCat(
          "topk_idx[", f / top_k, ", ", f % top_k, "] = ", topk_idx[f],
          " is outside [0, num_experts=", num_experts, ")"));
    }
  }
  return absl::OkStatus();
}

void BuildPermutePlanRef(const int32_t* topk_idx, const PermutePlan& plan) {
  const int64_t rows = plan.num_rows();
  std::vector<int32_t> counts(plan.num_experts, 0);
  // Entries outside [0, num_experts) are skipped, as the GPU builder does:
  // they get dest_idx -1 and the offsets then total fewer than num_rows(),
  // which is how callers detect them without reading topk_idx again.
  auto valid = [&](int32_t e) { return e >= 0 && e < plan.num_experts; };
  for (int64_t f = 0; f < rows; ++f) {
    if (valid(topk_idx[f])) ++counts[topk_idx[f]];
  }
  plan.expert_offsets[0] = 0;
  for (int e = 0; e < plan.num_experts; ++e) {
    plan.expert_offsets[e + 1] = plan.expert_offsets[e] + counts[e];
  }
  // Stable counting sort: pairs of one expert keep ascending flat index.
  std::vector<int32_t> next(plan.expert_offsets,
                            plan.expert_offsets + plan.num_experts);
  for (int64_t f = 0; f < rows; ++f) {
    if (!valid(topk_idx[f])) {
      plan.dest_idx[f] = -1;
      continue;
    }
    const int32_t p = next[topk_idx[f]]++;
    plan.sorted_idx[p] = static_cast<int32_t>(f);
    plan.dest_idx[f] = p;
  }
}

namespace {

template <typename T>
void PermuteRefT(const T* x, int64_t hidden, const PermutePlan& plan,
                 T* permuted) {
  for (int64_t p = 0; p < plan.num_rows(); ++p) {
    const T* src = x + (plan.sorted_idx[p] / plan.top_k) * hidden;
    for (int64_t c = 0; c < hidden; ++c) permuted[p * hidden + c] = src[c];
  }
}

template <typename T>
void UnpermuteRefT(const T* permuted, int64_t hidden, const PermutePlan& plan,
                   T* out) {
  for (int64_t f = 0; f < plan.num_rows(); ++f) {
    const T* src = permuted + int64_t{plan.dest_idx[f]} * hidden;
    for (int64_t c = 0; c < hidden; ++c) out[f * hidden + c] = src[c];
  }
}

template <typename T>
void PermuteBackwardRefT(const T* grad_permuted, int64_t hidden,
                         const PermutePlan& plan, T* grad_x) {
  for (int64_t t = 0; t < plan.num_tokens; ++t) {
    for (int64_t c = 0; c < hidden; ++c) {
      T acc = 0;
      for (int j = 0; j < plan.top_k; ++j) {
        acc +=
            grad_permuted[int64_t{plan.dest_idx[t * plan.top_k + j]} * hidden +
                          c];
      }
      grad_x[t * hidden + c] = acc;
    }
  }
}

template <typename T>
void CombineRefT(const T* expert_out, const T* topk_weights, int64_t hidden,
                 const PermutePlan& plan, T* out) {
  for (int64_t t = 0; t < plan.num_tokens; ++t) {
    for (int64_t c = 0; c < hidden; ++c) {
      T acc = 0;
      for (int j = 0; j < plan.top_k; ++j) {
        const int64_t f = t * plan.top_k + j;
        acc += topk_weights[f] *
               expert_out[int64_t{plan.dest_idx[f]} * hidden + c];
      }
      out[t * hidden + c] = acc;
    }
  }
}

template <typename T>
void CombineBackwardRefT(const T* grad_out, const T* expert_out,
                         const T* topk_weights, int64_t hidden,
                         const PermutePlan& plan, T* grad_expert_out,
                         T* grad_topk_weights) {
  for (int64_t f = 0; f < plan.num_rows(); ++f) {
    const T* g = grad_out + (f / plan.top_k) * hidden;
    const int64_t row = int64_t{plan.dest_idx[f]} * hidden;
    T dot = 0;
    for (int64_t c = 0; c < hidden; ++c) {
      grad_expert_out[row + c] = topk_weights[f] * g[c];
      dot += g[c] * expert_out[row + c];
    }
    grad_topk_weights[f] = dot;
  }
}

}  // namespace

void PermuteRef(const float* x, int64_t hidden, const PermutePlan& plan,
                float* permuted) {
  PermuteRefT(x, hidden, plan, permuted);
}

void UnpermuteRef(const float* permuted, int64_t hidden,
                  const PermutePlan& plan, float* out) {
  UnpermuteRefT(permuted, hidden, plan, out);
}

void PermuteBackwardRef(const float* grad_permuted, int64_t hidden,
                        const PermutePlan& plan, float* grad_x) {
  PermuteBackwardRefT(grad_permuted, hidden, plan, grad_x);
}

void CombineRef(const float* expert_out, const float* topk_weights,
                int64_t hidden, const PermutePlan& plan, float* out) {
  CombineRefT(expert_out, topk_weights, hidden, plan, out);
}

void CombineBackwardRef(const float* grad_out, const float* expert_out,
                        const float* topk_weights, int64_t hidden,
                        const PermutePlan& plan, float* grad_expert_out,
                        float* grad_topk_weights) {
  CombineBackwardRefT(grad_out, expert_out, topk_weights, hidden, plan,
                      grad_expert_out, grad_topk_weights);
}

void PermuteRef(const double* x, int64_t hidden, const PermutePlan& plan,
                double* permuted) {
  PermuteRefT(x, hidden, plan, permuted);
}

void UnpermuteRef(const double* permuted, int64_t hidden,
                  const PermutePlan& plan, double* out) {
  UnpermuteRefT(permuted, hidden, plan, out);
}

void PermuteBackwardRef(const double* grad_permuted, int64_t hidden,
                        const PermutePlan& plan, double* grad_x) {
  PermuteBackwardRefT(grad_permuted, hidden, plan, grad_x);
}

void CombineRef(const double* expert_out, const double* topk_weights,
                int64_t hidden, const PermutePlan& plan, double* out) {
  CombineRefT(expert_out, topk_weights, hidden, plan, out);
}

void CombineBackwardRef(const double* grad_out, const double* expert_out,
                        const double* topk_weights, int64_t hidden,
                        const PermutePlan& plan, double* grad_expert_out,
                        double* grad_topk_weights) {
  CombineBackwardRefT(grad_out, expert_out, topk_weights, hidden, plan,
                      grad_expert_out, grad_topk_weights);
}

}  // namespace smoe::kernels
