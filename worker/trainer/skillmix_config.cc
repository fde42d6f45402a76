// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/skillmix_config.h"

#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "worker/trainer/trial_envelope.h"

namespace smoe::trainer {
namespace {

using json = nlohmann::json;

absl::Status Bad(absl::string_view key, const json& v, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(key, "=", v.dump(), ": ", why));
}

absl::Status GetString(absl::string_view key, const json& v, std::string* out) {
  if (!v.is_string()) return Bad(key, v, "must be a string");
  *out = v.get<std::string>();
  return absl::OkStatus();
}

absl::Status GetEnum(absl::string_view key, const json& v,
                     std::initializer_list<const char*> allowed,
                     std::string* out) {
  SMOE_RETURN_IF_ERROR(GetString(key, v, out));
  std::string list;
  for (const char* a : allowed) {
    if (*out == a) return absl::OkStatus();
    absl::StrAppend(&list, list.empty() ? "" : ", ", a);
  }
  return Bad(key, v, absl::StrCat("must be one of {", list, "}"));
}

template <typename T>
absl::Status GetInt(absl::string_view key, const json& v, int64_t lo,
                    int64_t hi, T* out) {
  if (!v.is_number_integer()) return Bad(key, v, "must be an integer");
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) {
    return Bad(key, v, absl::StrCat("must be in [", lo, ", ", hi, "]"));
  }
  *out = static_cast<T>(x);
  return absl::OkStatus();
}

absl::Status GetDouble(absl::string_view key, const json& v, double lo,
                       double hi, double* out) {
  if (!v.is_number()) return Bad(key, v, "must be a number");
  const double x = v.get<double>();
  if (!(x >= lo && x <= hi)) {
    return Bad(key, v, absl::StrCat("must be in [", lo, ", ", hi, "]"));
  }
  *out = x;
  return absl::OkStatus();
}

absl::Status ApplyParam(const std::string& key, const json& v,
                        SkillMixTrialConfig* c, bool* has_model) {
  skillmix::SkillMixConfig& e = c->eval;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (key == "model") {
    SMOE_RETURN_IF_ERROR(GetString(key, v, &c->model));
    if (c->model.empty()) return Bad(key, v, "must not be empty");
    *has_model = true;
    return absl::OkStatus();
  }
  if (key == "ept") return GetInt(key, v, 0, 64, &c->ept);
  if (key == "device") return GetEnum(key, v, {"cpu", "cuda"}, &c->device);
  if (key == "k_skills") return GetInt(key, v, 1, 10, &e.k_skills);
  if (key == "num_combinations") {
    return GetInt(key, v, 1, 100000, &e.num_combinations);
  }
  if (key == "num_generations")
    return GetInt(key, v, 1, 16, &e.num_generations);
  if (key == "num_gradings") return GetInt(key, v, 1, 16, &e.num_gradings);
  if (key == "combos_seed") {
    return GetInt(key, v, 0, std::numeric_limits<int64_t>::max(),
                  &e.combos_seed);
  }
  if (key == "exp_path") return GetString(key, v, &e.exp_path);
  if (key == "generation_prompt") {
    std::string s;
    SMOE_RETURN_IF_ERROR(GetString(key, v, &s));
    auto p = skillmix::ParseGenerationPrompt(s);
    if (!p.ok()) return p.status();
    e.generation_prompt = *p;
    return absl::OkStatus();
  }
  if (key == "grader") return GetEnum(key, v, {"openai", "local"}, &c->grader);
  if (key == "grader_model") {
    SMOE_RETURN_IF_ERROR(GetString(key, v, &c->grader_model));
    return c->grader_model.empty() ? Bad(key, v, "must not be empty")
                                   : absl::OkStatus();
  }
  if (key == "grader_base_url") {
    SMOE_RETURN_IF_ERROR(GetString(key, v, &c->grader_base_url));
    return c->grader_base_url.empty() ? Bad(key, v, "must not be empty")
                                      : absl::OkStatus();
  }
  if (key == "grader_api_key_env") {
    return GetString(key, v, &c->grader_api_key_env);
  }
  if (key == "grader_prompt_kind") {
    std::string s;
    SMOE_RETURN_IF_ERROR(GetString(key, v, &s));
    auto p = skillmix::ParseGradingPrompt(s);
    if (!p.ok()) return p.status();
    e.grading_prompt = *p;
    return absl::OkStatus();
  }
  if (key == "grader_max_new_tokens") {
    return GetInt(key, v, 1, 32768, &e.grader_sampling.max_new_tokens);
  }
  if (key == "grader_temperature") {
    return GetDouble(key, v, 0, 10, &e.grader_sampling.temperature);
  }
  if (key == "grader_ept") return GetInt(key, v, 0, 64, &c->grader_ept);
  if (key == "grader_requests_per_second") {
    return GetDouble(key, v, -kInf, kInf, &c->grader_requests_per_second);
  }
  if (key == "grader_cache_dir") return GetString(key, v, &c->grader_cache_dir);
  if (key == "max_new_tokens") {
    return GetInt(key, v, 1, 32768, &e.student_sampling.max_new_tokens);
  }
  if (key == "temperature") {
    return GetDouble(key, v, 0, 10, &e.student_sampling.temperature);
  }
  if (key == "top_k") {
    return GetInt(key, v, 0, 1 << 20, &e.student_sampling.top_k);
  }
  if (key == "top_p") {
    SMOE_RETURN_IF_ERROR(GetDouble(key, v, 0, 1, &e.student_sampling.top_p));
    return e.student_sampling.top_p > 0 ? absl::OkStatus()
                                        : Bad(key, v, "must be in (0, 1]");
  }
  if (key == "filter_explicit_name") {
    if (!v.is_boolean()) return Bad(key, v, "must be true or false");
    e.filter_explicit_name = v.get<bool>();
    return absl::OkStatus();
  }
  if (key == "skills_path") return GetString(key, v, &c->skills_path);
  if (key == "topics_path") return GetString(key, v, &c->topics_path);
  if (key == "student_system_prompt") {
    return GetString(key, v, &e.student_system_prompt);
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
