// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/skillmix_config.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "trials/json_limits.h"
#include "trials/params.h"
#include "worker/trainer/trial_envelope.h"

namespace smoe::trainer {
namespace {

using json = nlohmann::json;
using trials::Set;
using trials::SetEnum;

// Binds one checked param (trials/skillmix_params.cc) to its field. Every
// table entry has a line here (tests/trials/trial_params_test.cc).
absl::Status Bind(const std::string& key, const json& v,
                  SkillMixTrialConfig* c) {
  skillmix::SkillMixConfig& e = c->eval;
  if (key == "model") return Set(v, &c->model);
  if (key == "ept") return Set(v, &c->ept);
  if (key == "k_skills") return Set(v, &e.k_skills);
  if (key == "num_combinations") return Set(v, &e.num_combinations);
  if (key == "num_generations") return Set(v, &e.num_generations);
  if (key == "num_gradings") return Set(v, &e.num_gradings);
  if (key == "combos_seed") return Set(v, &e.combos_seed);
  if (key == "exp_path") return Set(v, &e.exp_path);
  if (key == "generation_prompt") {
    return SetEnum(v, &skillmix::ParseGenerationPrompt, &e.generation_prompt);
  }
  if (key == "student_system_prompt") {
    return Set(v, &e.student_system_prompt);
  }
  if (key == "max_new_tokens") {
    return Set(v, &e.student_sampling.max_new_tokens);
  }
  if (key == "temperature") return Set(v, &e.student_sampling.temperature);
  if (key == "top_k") return Set(v, &e.student_sampling.top_k);
  if (key == "top_p") return Set(v, &e.student_sampling.top_p);
  if (key == "device") return Set(v, &c->device);
  if (key == "grader") return Set(v, &c->grader);
  if (key == "grader_model") return Set(v, &c->grader_model);
  if (key == "grader_base_url") return Set(v, &c->grader_base_url);
  if (key == "grader_api_key_env") return Set(v, &c->grader_api_key_env);
  if (key == "grader_prompt_kind") {
    return SetEnum(v, &skillmix::ParseGradingPrompt, &e.grading_prompt);
  }
  if (key == "grader_max_new_tokens") {
    return Set(v, &e.grader_sampling.max_new_tokens);
  }
  if (key == "grader_temperature") {
    return Set(v, &e.grader_sampling.temperature);
  }
  if (key == "grader_ept") return Set(v, &c->grader_ept);
  if (key == "grader_requests_per_second") {
    return Set(v, &c->grader_requests_per_second);
  }
  if (key == "grader_cache_dir") return Set(v, &c->grader_cache_dir);
  if (key == "filter_explicit_name") {
    return Set(v, &e.filter_explicit_name);
  }
  if (key == "skills_path") return Set(v, &c->skills_path);
  if (key == "topics_path") return Set(v, &c->topics_path);
  return absl::InternalError(absl::StrCat(
      "parameter \"", key,
      "\" is in trials/skillmix_params.cc but the trainer does not read it"));
}

absl::Status ApplyParam(const std::string& key, const json& v,
                        SkillMixTrialConfig* c, bool* has_model) {
  SMOE_RETURN_IF_ERROR(trials::CheckTrialParam(trials::SkillMixKind(), key, v));
  if (key == "model") *has_model = true;
  return Bind(key, v, c);
}

}  // namespace

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
