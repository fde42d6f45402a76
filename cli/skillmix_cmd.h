// Copyright 2026 SMoE Lab authors.
//
// File: cli/skillmix_cmd.h
//
// `smoe skillmix run --model DIR --k-skills 2 --ept 2 --grader openai|local
// ...`: one local Skill-Mix evaluation outside any sweep. Writes a TRIAL.json
// of kind "skillmix", runs `smoe-trainer run` (docs/trainer-protocol.md) as a
// child process, draws a progress bar from its JSON Lines and prints the
// metrics (mean ± s.e. over combinations). The CLI never links the model or
// the grader client: the trainer does the work. Re-running with the same
// --workdir resumes (finished combinations and cached grader replies are
// reused). --ep-size N runs N trainer processes, one expert-parallel rank
// each (cli/local_trial.h).
#ifndef SMOE_CLI_SKILLMIX_CMD_H_
#define SMOE_CLI_SKILLMIX_CMD_H_

#include <ostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "nlohmann/json.hpp"

namespace smoe::cli {

struct SkillMixRunOptions {
  nlohmann::json params = nlohmann::json::object();  // trainer params
  int64_t seed = 0;
  std::string workdir;  // default: a new directory under /tmp
  std::string trainer;  // default: smoe-trainer next to `smoe`
  // Expert-parallel ranks (processes, cli/local_trial.h); >= 1. No trainer
  // param: the skillmix trial reads SMOE_WORLD_SIZE.
  int ep_size = 1;
  std::vector<int> gpu_ids;  // CUDA_VISIBLE_DEVICES per rank; empty: inherited
};

// Flag values of `smoe skillmix run` before they become trainer params.
struct SkillMixRunFlags {
  std::string model;
  int64_t k_skills = 2;
  int64_t ept = 0;
  int64_t num_combinations = 100;
  int64_t num_generations = 3;
  int64_t num_gradings = 3;
  int64_t combos_seed = 10;
  std::string grader = "openai";
  std::string grader_model = "gpt-4";
  std::string grader_base_url = "https://api.openai.com/v1";
  std::string grader_api_key_env = "OPENAI_API_KEY";
  std::string grader_prompt_kind = "gpt";
  std::string device = "cuda";
  int64_t max_new_tokens = 512;
  double temperature = 0.7;
  std::vector<std::string> extra;  // --param key=value
  SkillMixRunOptions run;
};

// Adds `skillmix run` to `app`; returns the `run` subcommand.
CLI::App* AddSkillMixCommand(CLI::App* app, SkillMixRunFlags* flags);

// Builds the trainer params from the flags. Returns false (and prints why to
// `err`) for a malformed --param.
bool SkillMixParamsFromFlags(SkillMixRunFlags* flags, std::ostream& err);

// Returns the trainer's exit code (0 ok, 64 bad params or ep_size < 1, 75
// interrupted; with several ranks the decisive one, see cli/local_trial.h),
// or 69 when the trainer cannot be started.
int RunSkillMixCommand(const SkillMixRunOptions& options, std::ostream& out);

}  // namespace smoe::cli

#endif  // SMOE_CLI_SKILLMIX_CMD_H_
