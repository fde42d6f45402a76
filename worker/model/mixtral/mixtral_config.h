// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/mixtral/mixtral_config.h
//
// The Hugging Face `config.json` of a Mixtral-format checkpoint
// (docs/skillmix.md section 2.2), parsed and validated, and written
// back in HF's own layout (the key set and values MixtralConfig.to_dict()
// produces for Mixtral-8x7B). No LibTorch here.
//
// Thread safety: plain values.
#ifndef SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_CONFIG_H_
#define SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace smoe::model::mixtral {

struct MixtralConfig {
  int64_t vocab_size = 32000;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 14336;  // per expert
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  int64_t num_key_value_heads = 8;
  // Per-head size; HF's default is hidden_size / num_attention_heads. Written
  // to config.json only when it differs from that default.
  int64_t head_dim = 128;
  int64_t num_local_experts = 8;
  int64_t num_experts_per_tok = 2;  // the checkpoint's default EPT
  double rms_norm_eps = 1e-5;
  double rope_theta = 1e6;
  int64_t max_position_embeddings = 32768;
  std::optional<int64_t> sliding_window;  // null: full causal attention
  int64_t bos_token_id = 1;
  int64_t eos_token_id = 2;
  bool tie_word_embeddings = false;
  std::string torch_dtype = "bfloat16";
  double router_aux_loss_coef = 0.02;  // training only; kept for round trips
  double initializer_range = 0.02;

  // The published Mixtral-8x7B-v0.1 configuration.
  static MixtralConfig Mixtral8x7B();
  // A test-sized configuration: vocab 384, hidden 64, 2 layers, 4 query / 2
  // KV heads of 16, 8 experts of 128, EPT 2, fp32.
  static MixtralConfig Tiny();

  // Number of query heads served by each KV head.
  int64_t QueriesPerKvHead() const {
    return num_attention_heads / num_key_value_heads;
  }
  // Parameters in the checkpoint; parameters touched per token at `ept`.
  int64_t TotalParameters() const;
  int64_t ActiveParameters(int64_t ept) const;
};

// Checks every field (positive sizes, heads divisible by KV heads, EPT in
// 1..num_local_experts, hidden_act silu, ...). InvalidArgument names the
// field and its value.
absl::Status ValidateMixtralConfig(const MixtralConfig& config);

// Parses config.json text. Unknown keys are ignored; model_type must be
// "mixtral" when present and hidden_act "silu"; missing keys take HF's
// MixtralConfig defaults. InvalidArgument names the field on bad values.
absl::StatusOr<MixtralConfig> ParseMixtralConfigJson(absl::string_view text);

// Reads and parses `path`; the error message names the file.
absl::StatusOr<MixtralConfig> ReadMixtralConfigFile(const std::string& path);

// Returns config.json text in HF's format (sorted keys, 2-space indent,
// "architectures": ["MixtralForCausalLM"], "sliding_window": null, ...).
std::string MixtralConfigToJson(const MixtralConfig& config);

}  // namespace smoe::model::mixtral

#endif  // SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_CONFIG_H_
