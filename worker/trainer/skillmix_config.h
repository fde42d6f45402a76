// Copyright 2026 SMoE Lab authors.
//
// File: worker/trainer/skillmix_config.h
//
// TRIAL.json of kind "skillmix" (docs/trainer-protocol.md): one Skill-Mix
// evaluation of a Mixtral-format model at one (EPT, k_skills). Torch-free.
//
// Accepted `params` keys (defaults in brackets):
//   model (required) model directory (config.json + safetensors + tokenizer)
//   ept [0 = the model's num_experts_per_tok] 0..64
//   k_skills [2] 1..10, num_combinations [100] 1..100000,
//   num_generations [3] 1..16, num_gradings [3] 1..16,
//   combos_seed [10] >= 0, exp_path ["test"],
//   generation_prompt [default] (default, llama_k_greater_2),
//   grader [openai] (openai, local),
//   grader_model [gpt-4]: the API model name (openai) or a model directory
//     (local),
//   grader_base_url [https://api.openai.com/v1],
//   grader_api_key_env [OPENAI_API_KEY]: name of the environment variable
//     holding the key ("" = no Authorization header); never the key itself,
//   grader_prompt_kind [gpt] (gpt, llama), grader_max_new_tokens [512],
//   grader_temperature [1.0] (the API default the reference used),
//   grader_ept [0 = model default] (local grader only),
//   grader_requests_per_second [2] (<= 0 unlimited),
//   grader_cache_dir ["" = WORKDIR/grader_cache],
//   max_new_tokens [512] 1..32768, temperature [0.7] 0..10, top_k [50] >= 0,
//   top_p [1.0] (0, 1], device [cuda] (cpu, cuda),
//   filter_explicit_name [false], skills_path [""], topics_path [""] (""
//   = the released 10 skills / 10 topics built into the binary),
//   student_system_prompt [""].
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

// The "kind" of a TRIAL.json ("" if absent); InvalidArgument for bad JSON.
absl::StatusOr<std::string> TrialKind(absl::string_view text);

}  // namespace smoe::trainer

#endif  // SMOE_WORKER_TRAINER_SKILLMIX_CONFIG_H_
