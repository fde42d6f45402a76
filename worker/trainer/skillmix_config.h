// Copyright 2026 SMoE Lab authors.
//
// File: worker/trainer/skillmix_config.h
//
// TRIAL.json of kind "skillmix" (docs/trainer-protocol.md): one Skill-Mix
// evaluation of a Mixtral-format model at one (EPT, k_skills). Torch-free.
//
// The accepted `params`, their ranges and defaults are the table in
// trials/skillmix_params.cc (`smoe params skillmix` prints it); the struct
// defaults below are the table's (tests/trials/trial_params_test.cc).
// Top level: sweep_id, trial_id, attempt, kind ("skillmix"), seed (>= 0: the
// student's and local grader's sampling seed), params.
#ifndef SMOE_WORKER_TRAINER_SKILLMIX_CONFIG_H_
#define SMOE_WORKER_TRAINER_SKILLMIX_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "worker/eval/skillmix/pipeline.h"

namespace smoe::trainer {

struct SkillMixTrialConfig {
  std::string sweep_id;
  std::string trial_id;
  int64_t attempt = 0;
  uint64_t seed = 0;

  std::string model;  // student model directory
  int ept = 0;        // 0 = the model's default
  std::string device = "cuda";

  std::string grader = "openai";  // openai | local
  std::string grader_model = "gpt-4";
  std::string grader_base_url = "https://api.openai.com/v1";
  std::string grader_api_key_env = "OPENAI_API_KEY";
  int grader_ept = 0;
  double grader_requests_per_second = 2.0;
  std::string grader_cache_dir;

  std::string skills_path;
  std::string topics_path;

  // Protocol settings (k, counts, prompts, sampling). checkpoint_path is set
  // by the runner from the work dir.
  skillmix::SkillMixConfig eval;
};

// Parses TRIAL.json text of kind "skillmix". Errors: InvalidArgument naming
// the key and value (unknown key, wrong type, out of range, bad JSON, missing
// model, another kind).
absl::StatusOr<SkillMixTrialConfig> ParseSkillMixTrialJson(
    absl::string_view text);

}  // namespace smoe::trainer

#endif  // SMOE_WORKER_TRAINER_SKILLMIX_CONFIG_H_
