// Copyright 2026 SMoE Lab authors.
//
// File: tests/ep/mixtral_ep_inputs.h
//
// The inputs shared by mixtral_ep_test (single-process reference) and
// smoe-mixtral-ep-rank (one expert-parallel rank), so both sides run exactly
// the same calls. Header-only; test code.
#ifndef SMOE_TESTS_EP_MIXTRAL_EP_INPUTS_H_
#define SMOE_TESTS_EP_MIXTRAL_EP_INPUTS_H_

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "worker/model/mixtral/mixtral_config.h"
#include "worker/model/mixtral/mixtral_model.h"

namespace smoe::ep_test {

// [2, 5] token ids (valid for vocab >= 320).
inline torch::Tensor MixtralEpTokens() {
  return torch::tensor({1, 15, 27, 300, 4, 1, 99, 12, 250, 7}, torch::kInt64)
      .view({2, 5});
}

// EPT 1, 2 and E.
inline std::vector<int64_t> MixtralEpEpts(
    const model::mixtral::MixtralConfig& c) {
  return {1, 2, c.num_local_experts};
}

inline std::vector<std::vector<int32_t>> MixtralEpPrompts() {
  return {{1, 15, 27, 300}, {1, 5}};
}

inline model::mixtral::MixtralGenerationOptions MixtralEpGreedy() {
  model::mixtral::MixtralGenerationOptions g;
  g.max_new_tokens = 5;
  g.temperature = 0;
  g.stop_at_eos = false;
  g.experts_per_token = 2;
  return g;
}

// Rows of token ids as an F32 [rows, max_len] tensor padded with -1 (ids <
// 2^24 are exact in F32; safetensors here stores F32/BF16/F16 only).
inline torch::Tensor TokensToTensor(
    const std::vector<std::vector<int32_t>>& rows) {
  size_t n = 0;
  for (const auto& r : rows) n = std::max(n, r.size());
  torch::Tensor t = torch::full(
      {static_cast<int64_t>(rows.size()), static_cast<int64_t>(n)}, -1.0f);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < rows[i].size(); ++j) {
      t[i][j] = static_cast<float>(rows[i][j]);
    }
  }
  return t;
}

}  // namespace smoe::ep_test

#endif  // SMOE_TESTS_EP_MIXTRAL_EP_INPUTS_H_
