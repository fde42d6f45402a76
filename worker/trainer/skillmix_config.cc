// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/skillmix_config.h"

#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/api_token.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "worker/trainer/json_params.h"
#include "worker/trainer/trial_envelope.h"

namespace smoe::trainer {
namespace {

using json = nlohmann::json;

absl::Status ApplyParam(const std::string& key, const json& v,
                        SkillMixTrialConfig* c, bool* has_model) {
  skillmix::SkillMixConfig& e = c->eval;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (key == "model") {
    SMOE_RETURN_IF_ERROR(GetJsonString(key, v, &c->model));
    if (c->model.empty()) return JsonParamError(key, v, "must not be empty");
    *has_model = true;
    return absl::OkStatus();
  }
  if (key == "ept") {
    return GetJsonInt(key, v, 0, 64, kSkillMixIntRules, &c->ept);
  }
  if (key == "device") return GetJsonOneOf(key, v, {"cpu", "cuda"}, &c->device);
  if (key == "k_skills") {
    return GetJsonInt(key, v, 1, 10, kSkillMixIntRules, &e.k_skills);
  }
  if (key == "num_combinations") {
    return GetJsonInt(key, v, 1, 100000, kSkillMixIntRules,
                      &e.num_combinations);
  }
  if (key == "num_generations") {
    return GetJsonInt(key, v, 1, 16, kSkillMixIntRules, &e.num_generations);
  }
  if (key == "num_gradings") {
    return GetJsonInt(key, v, 1, 16, kSkillMixIntRules, &e.num_gradings);
  }
  if (key == "combos_seed") {
    return GetJsonInt(key, v, 0, std::numeric_limits<int64_t>::max(),
                      kSkillMixIntRules, &e.combos_seed);
  }
  if (key == "exp_path") return GetJsonString(key, v, &e.exp_path);
  if (key == "generation_prompt") {
    return GetJsonEnum(key, v, &skillmix::ParseGenerationPrompt,
                       &e.generation_prompt);
  }
  if (key == "grader") {
    return GetJsonOneOf(key, v, {"openai", "local"}, &c->grader);
  }
  if (key == "grader_model") {
    SMOE_RETURN_IF_ERROR(GetJsonString(key, v, &c->grader_model));
    return c->grader_model.empty() ? JsonParamError(key, v, "must not be empty")
                                   : absl::OkStatus();
  }
  if (key == "grader_base_url") {
    SMOE_RETURN_IF_ERROR(GetJsonString(key, v, &c->grader_base_url));
    return c->grader_base_url.empty()
               ? JsonParamError(key, v, "must not be empty")
               : absl::OkStatus();
  }
  if (key == "grader_api_key_env") {
    SMOE_RETURN_IF_ERROR(GetJsonString(key, v, &c->grader_api_key_env));
    // "" sends no key (local servers); else only *_API_KEY variables.
    return c->grader_api_key_env.empty()
               ? absl::OkStatus()
               : CheckApiKeyEnvName(c->grader_api_key_env);
  }
  if (key == "grader_prompt_kind") {
    return GetJsonEnum(key, v, &skillmix::ParseGradingPrompt,
                       &e.grading_prompt);
  }
  if (key == "grader_max_new_tokens") {
    return GetJsonInt(key, v, 1, 32768, kSkillMixIntRules,
                      &e.grader_sampling.max_new_tokens);
  }
  if (key == "grader_temperature") {
    return GetJsonDouble(key, v, 0, 10, &e.grader_sampling.temperature);
  }
  if (key == "grader_ept") {
    return GetJsonInt(key, v, 0, 64, kSkillMixIntRules, &c->grader_ept);
  }
  if (key == "grader_requests_per_second") {
    return GetJsonDouble(key, v, -kInf, kInf, &c->grader_requests_per_second);
  }
  if (key == "grader_cache_dir") {
    return GetJsonString(key, v, &c->grader_cache_dir);
  }
  if (key == "max_new_tokens") {
    return GetJsonInt(key, v, 1, 32768, kSkillMixIntRules,
                      &e.student_sampling.max_new_tokens);
  }
  if (key == "temperature") {
    return GetJsonDouble(key, v, 0, 10, &e.student_sampling.temperature);
  }
  if (key == "top_k") {
    return GetJsonInt(key, v, 0, 1 << 20, kSkillMixIntRules,
                      &e.student_sampling.top_k);
  }
  if (key == "top_p") {
    SMOE_RETURN_IF_ERROR(
        GetJsonDouble(key, v, 0, 1, &e.student_sampling.top_p));
    return e.student_sampling.top_p > 0
               ? absl::OkStatus()
               : JsonParamError(key, v, "must be in (0, 1]");
  }
  if (key == "filter_explicit_name") {
    return GetJsonBool(key, v, &e.filter_explicit_name);
  }
  if (key == "skills_path") return GetJsonString(key, v, &c->skills_path);
  if (key == "topics_path") return GetJsonString(key, v, &c->topics_path);
  if (key == "student_system_prompt") {
    return GetJsonString(key, v, &e.student_system_prompt);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown parameter \"", key, "\" (value ", v.dump(), ")"));
}

}  // namespace

absl::StatusOr<std::string> TrialKind(absl::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("TRIAL.json is not a JSON object");
  }
  if (!j.contains("kind") || !j["kind"].is_string()) return std::string();
  return j["kind"].get<std::string>();
}

absl::StatusOr<SkillMixTrialConfig> ParseSkillMixTrialJson(
    absl::string_view text) {
  SMOE_ASSIGN_OR_RETURN(TrialEnvelope e, ParseTrialEnvelope(text));
  if (e.kind != "skillmix") {
    return absl::InvalidArgumentError(
        absl::StrCat("kind=\"", e.kind, "\": expected \"skillmix\""));
  }
  SkillMixTrialConfig c;
  c.sweep_id = e.sweep_id;
  c.trial_id = e.trial_id;
  c.attempt = e.attempt;
  c.seed = e.seed;
  const json* params = &e.params;
  bool has_model = false;
  if (params != nullptr) {
    for (auto it = params->begin(); it != params->end(); ++it) {
      SMOE_RETURN_IF_ERROR(ApplyParam(it.key(), it.value(), &c, &has_model));
    }
  }
  if (!has_model) {
    return absl::InvalidArgumentError(
        "model: required (the student model directory)");
  }
  c.eval.student_sampling.seed = c.seed;
  c.eval.grader_sampling.seed = c.seed;
  SMOE_RETURN_IF_ERROR(skillmix::ValidateConfig(c.eval));
  return c;
}

}  // namespace smoe::trainer
