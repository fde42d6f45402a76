// Copyright 2026 SMoE Lab authors.
#include "worker/model/mixtral/mixtral_config.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace smoe::model::mixtral {
namespace {

using Json = nlohmann::json;

absl::Status GetInt(const Json& j, const char* key, int64_t* out) {
  if (!j.contains(key)) return absl::OkStatus();
  const Json& v = j[key];
  if (!v.is_number_integer()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.json: field '", key, "' must be an integer, got ", v.dump()));
  }
  *out = v.get<int64_t>();
  return absl::OkStatus();
}

absl::Status GetDouble(const Json& j, const char* key, double* out) {
  if (!j.contains(key)) return absl::OkStatus();
  const Json& v = j[key];
  if (!v.is_number()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.json: field '", key, "' must be a number, got ", v.dump()));
  }
  *out = v.get<double>();
  return absl::OkStatus();
}

absl::Status Positive(const char* field, int64_t v) {
  if (v > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("config: ", field, " must be positive, got ", v));
}

}  // namespace

MixtralConfig MixtralConfig::Mixtral8x7B() { return MixtralConfig(); }

MixtralConfig MixtralConfig::Tiny() {
  MixtralConfig c;
  c.vocab_size = 384;
  c.hidden_size = 64;
  c.intermediate_size = 128;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;
  c.num_local_experts = 8;
  c.num_experts_per_tok = 2;
  // Mixtral's own context: a Skill-Mix student prompt alone is ~1,100
  // tokens of this random tokenizer, plus two turns of max_new_tokens (512
  // each by default) and the grader's prompt; 1024 refused every default
  // evaluation (issue 31 item 8). Only a bound: nothing is sized by it.
  c.max_position_embeddings = 32768;
  c.torch_dtype = "float32";
  return c;
}

int64_t MixtralConfig::ActiveParameters(int64_t ept) const {
  const int64_t h = hidden_size;
  const int64_t q = num_attention_heads * head_dim;
  const int64_t kv = num_key_value_heads * head_dim;
  const int64_t per_layer = 2 * h + h * q + 2 * h * kv + q * h +
                            num_local_experts * h +
                            ept * 3 * h * intermediate_size;
  return vocab_size * h * (tie_word_embeddings ? 1 : 2) + h +
         num_hidden_layers * per_layer;
}

int64_t MixtralConfig::TotalParameters() const {
  return ActiveParameters(num_local_experts);
}

absl::Status ValidateMixtralConfig(const MixtralConfig& c) {
  SMOE_RETURN_IF_ERROR(Positive("vocab_size", c.vocab_size));
  SMOE_RETURN_IF_ERROR(Positive("hidden_size", c.hidden_size));
  SMOE_RETURN_IF_ERROR(Positive("intermediate_size", c.intermediate_size));
  SMOE_RETURN_IF_ERROR(Positive("num_hidden_layers", c.num_hidden_layers));
  SMOE_RETURN_IF_ERROR(Positive("num_attention_heads", c.num_attention_heads));
  SMOE_RETURN_IF_ERROR(Positive("num_key_value_heads", c.num_key_value_heads));
  SMOE_RETURN_IF_ERROR(Positive("head_dim", c.head_dim));
  SMOE_RETURN_IF_ERROR(Positive("num_local_experts", c.num_local_experts));
  SMOE_RETURN_IF_ERROR(
      Positive("max_position_embeddings", c.max_position_embeddings));
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config: num_attention_heads ", c.num_attention_heads,
        " is not a multiple of num_key_value_heads ", c.num_key_value_heads));
  }
  if (c.head_dim % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config: head_dim must be even for RoPE, got ", c.head_dim));
  }
  if (c.num_experts_per_tok < 1 ||
      c.num_experts_per_tok > c.num_local_experts) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config: num_experts_per_tok ", c.num_experts_per_tok,
        " must be in 1..num_local_experts (", c.num_local_experts, ")"));
  }
  if (!(c.rms_norm_eps > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("config: rms_norm_eps must be > 0, got ", c.rms_norm_eps));
  }
  if (!(c.rope_theta > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("config: rope_theta must be > 0, got ", c.rope_theta));
  }
  if (c.sliding_window.has_value() && *c.sliding_window <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("config: sliding_window must be positive or null, got ",
                     *c.sliding_window));
  }
  for (const auto& [field, id] :
       {std::pair<const char*, int64_t>{"bos_token_id", c.bos_token_id},
        {"eos_token_id", c.eos_token_id}}) {
    if (id < 0 || id >= c.vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrCat("config: ", field, " ", id,
                       " is outside the vocabulary [0, ", c.vocab_size, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<MixtralConfig> ParseMixtralConfigJson(absl::string_view text) {
  const Json j = Json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("config.json: not a JSON object");
  }
  MixtralConfig c;
  if (j.contains("model_type") &&
      (!j["model_type"].is_string() || j["model_type"] != "mixtral")) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: model_type must be \"mixtral\", got ",
                     j["model_type"].dump()));
  }
  if (j.contains("hidden_act") &&
      (!j["hidden_act"].is_string() || j["hidden_act"] != "silu")) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: hidden_act must be \"silu\", got ",
                     j["hidden_act"].dump()));
  }
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: rope_scaling is not supported, got ",
                     j["rope_scaling"].dump()));
  }
  SMOE_RETURN_IF_ERROR(GetInt(j, "vocab_size", &c.vocab_size));
  SMOE_RETURN_IF_ERROR(GetInt(j, "hidden_size", &c.hidden_size));
  SMOE_RETURN_IF_ERROR(GetInt(j, "intermediate_size", &c.intermediate_size));
  SMOE_RETURN_IF_ERROR(GetInt(j, "num_hidden_layers", &c.num_hidden_layers));
  SMOE_RETURN_IF_ERROR(
      GetInt(j, "num_attention_heads", &c.num_attention_heads));
  c.num_key_value_heads = c.num_attention_heads;  // HF: None -> MHA
  SMOE_RETURN_IF_ERROR(
      GetInt(j, "num_key_value_heads", &c.num_key_value_heads));
  c.head_dim =
      c.num_attention_heads > 0 ? c.hidden_size / c.num_attention_heads : 0;
  if (j.contains("head_dim") && !j["head_dim"].is_null()) {
    SMOE_RETURN_IF_ERROR(GetInt(j, "head_dim", &c.head_dim));
  }
  SMOE_RETURN_IF_ERROR(GetInt(j, "num_local_experts", &c.num_local_experts));
  SMOE_RETURN_IF_ERROR(
      GetInt(j, "num_experts_per_tok", &c.num_experts_per_tok));
  SMOE_RETURN_IF_ERROR(GetDouble(j, "rms_norm_eps", &c.rms_norm_eps));
  SMOE_RETURN_IF_ERROR(GetDouble(j, "rope_theta", &c.rope_theta));
  SMOE_RETURN_IF_ERROR(
      GetInt(j, "max_position_embeddings", &c.max_position_embeddings));
  if (j.contains("sliding_window") && !j["sliding_window"].is_null()) {
    int64_t w = 0;
    SMOE_RETURN_IF_ERROR(GetInt(j, "sliding_window", &w));
    c.sliding_window = w;
  }
  SMOE_RETURN_IF_ERROR(GetInt(j, "bos_token_id", &c.bos_token_id));
  SMOE_RETURN_IF_ERROR(GetInt(j, "eos_token_id", &c.eos_token_id));
  if (j.contains("tie_word_embeddings")) {
    if (!j["tie_word_embeddings"].is_boolean()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config.json: tie_word_embeddings must be a boolean, "
                       "got ",
                       j["tie_word_embeddings"].dump()));
    }
    c.tie_word_embeddings = j["tie_word_embeddings"].get<bool>();
  }
  if (j.contains("torch_dtype") && j["torch_dtype"].is_string()) {
    c.torch_dtype = j["torch_dtype"].get<std::string>();
  }
  SMOE_RETURN_IF_ERROR(
      GetDouble(j, "router_aux_loss_coef", &c.router_aux_loss_coef));
  SMOE_RETURN_IF_ERROR(GetDouble(j, "initializer_range", &c.initializer_range));
  SMOE_RETURN_IF_ERROR(ValidateMixtralConfig(c));
  return c;
}

absl::StatusOr<MixtralConfig> ReadMixtralConfigFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read"));
  std::stringstream text;
  text << in.rdbuf();
  auto c = ParseMixtralConfigJson(text.str());
  if (!c.ok()) {
    return absl::Status(c.status().code(),
                        absl::StrCat(path, ": ", c.status().message()));
  }
  return c;
}

std::string MixtralConfigToJson(const MixtralConfig& c) {
  Json j = {
      {"architectures", {"MixtralForCausalLM"}},
      {"attention_dropout", 0.0},
      {"bos_token_id", c.bos_token_id},
      {"eos_token_id", c.eos_token_id},
      {"hidden_act", "silu"},
      {"hidden_size", c.hidden_size},
      {"initializer_range", c.initializer_range},
      {"intermediate_size", c.intermediate_size},
      {"max_position_embeddings", c.max_position_embeddings},
      {"model_type", "mixtral"},
      {"num_attention_heads", c.num_attention_heads},
      {"num_experts_per_tok", c.num_experts_per_tok},
      {"num_hidden_layers", c.num_hidden_layers},
      {"num_key_value_heads", c.num_key_value_heads},
      {"num_local_experts", c.num_local_experts},
      {"output_router_logits", false},
      {"rms_norm_eps", c.rms_norm_eps},
      {"rope_theta", c.rope_theta},
      {"router_aux_loss_coef", c.router_aux_loss_coef},
      {"sliding_window", nullptr},
      {"tie_word_embeddings", c.tie_word_embeddings},
      {"torch_dtype", c.torch_dtype},
      {"transformers_version", "4.36.0"},
      {"use_cache", true},
      {"vocab_size", c.vocab_size},
  };
  if (c.sliding_window.has_value()) j["sliding_window"] = *c.sliding_window;
  if (c.head_dim * c.num_attention_heads != c.hidden_size) {
    j["head_dim"] = c.head_dim;
  }
  return j.dump(2) + "\n";
}

}  // namespace smoe::model::mixtral
