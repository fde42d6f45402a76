// Copyright 2026 SMoE Lab authors.
//
// File: worker/eval/skillmix/pipeline.h
//
// One Skill-Mix evaluation at one k (docs/skillmix.md part 1):
// for every combination, num_generations two-turn student conversations,
// num_gradings gradings of each extracted answer, majority vote per point,
// max over generations, mean ± s.e. over combinations.
//
// Resumable: every finished combination is appended (and fsync'ed) as one
// JSON line to config.checkpoint_path; a later run with the same config skips
// the combinations found there. The first line is a header holding the
// config fields that determine the results; a checkpoint written under a
// different header is refused (FailedPrecondition) rather than mixed in. A
// torn last line (crash mid-write) is dropped. Replies are stored; points are
// re-derived from them on load.
//
// Determinism: combination c's student calls use seed
// Mix(student_sampling.seed, c, turn) and its grader call
// Mix(grader_sampling.seed, c), so results do not depend on resumption.
//
// Thread-safety: RunSkillMix is thread-compatible; it calls the models from
// the calling thread only.
#ifndef SMOE_WORKER_EVAL_SKILLMIX_PIPELINE_H_
#define SMOE_WORKER_EVAL_SKILLMIX_PIPELINE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/eval/skillmix/chat_model.h"
#include "worker/eval/skillmix/data.h"
#include "worker/eval/skillmix/grading.h"
#include "worker/eval/skillmix/metrics.h"
#include "worker/eval/skillmix/prompts.h"

namespace smoe::skillmix {

struct SkillMixConfig {
  int k_skills = 2;
  int num_combinations = 100;
  int num_generations = 3;  // generation rounds per combination
  int num_gradings = 3;     // grading rounds per generation
  int64_t combos_seed = 10;
  std::string exp_path = "test";  // reseeds the in-combination skill order
  GenerationPrompt generation_prompt = GenerationPrompt::kDefault;
  GradingPrompt grading_prompt = GradingPrompt::kGpt;
  // "" = no system message (the reference's Mistral/Mixtral students).
  std::string student_system_prompt;
  std::string grader_system_prompt = "You are a helpful assistant.";
  // Reference student settings: T = 0.7, HF defaults top-k 50, top-p 1.0.
  SamplingParams student_sampling = {0.7, 50, 1.0, 0, 512};
  // The reference grades at the API's default temperature (1.0).
  SamplingParams grader_sampling = {1.0, 0, 1.0, 0, 512};
  bool filter_explicit_name = false;
  GenerationAggregation generation_aggregation = GenerationAggregation::kMax;
  // JSONL checkpoint; "" disables checkpointing.
  std::string checkpoint_path;
};

// InvalidArgument naming the first bad field.
absl::Status ValidateConfig(const SkillMixConfig& config);

struct GradingRecord {
  std::string output;          // the grader's reply
  ParsedGrade parsed;          // what the parser read
  std::vector<double> points;  // FinalPoints(parsed.points, k, answer)
};

struct GenerationRecord {
  std::vector<std::string> replies;  // one per student turn
  std::string answer;                // ExtractAnswer(replies.back())
  int num_sentences = 0;             // CountSentences(answer)
  std::vector<GradingRecord> gradings;
  std::vector<double> votes;  // MajorityVote over the gradings' points
};

struct CombinationResult {
  int index = 0;
  Combination combo;
  std::vector<GenerationRecord> generations;
};

struct SkillMixResult {
  int k = 0;
  int num_combinations = 0;
  int resumed = 0;  // combinations taken from the checkpoint
  // Non-empty when the checkpoint had corrupt lines and was set aside (the
  // valid ones kept): what and where.
  std::string checkpoint_set_aside;
  std::map<ScoreMethod, MeanSe> metrics;
  std::vector<CombinationResult> combinations;  // by index
};

struct SkillMixProgress {
  int done = 0;  // finished combinations (resumed ones included)
  int total = 0;
  int resumed = 0;
  std::string checkpoint_set_aside;  // as SkillMixResult's
  // Metrics over the finished combinations so far.
  std::map<ScoreMethod, MeanSe> running;
};
using ProgressCallback = std::function<void(const SkillMixProgress&)>;

// Runs (or resumes) the evaluation of `combos` (usually
// DrawCombinations(catalog.Names(), topics, k, n, combos_seed, exp_path)).
// `progress` (may be empty) is called once after loading the checkpoint and
// after every finished combination. `should_stop` (may be empty) is polled
// before each combination; when it returns true the run stops with
// Aborted("preempted ...") and the finished combinations stay checkpointed;
// a model call that returns Cancelled (SamplingParams::cancel) also ends the
// run with Aborted, discarding the combination in flight.
// REQUIRES: combos.size() == config.num_combinations, every combination has
// config.k_skills skills known to `catalog`.
// Errors: InvalidArgument (config/combos), FailedPrecondition (checkpoint of
// a different config or combination list), Internal (checkpoint I/O), any
// model error (the combination in flight is not recorded).
absl::StatusOr<SkillMixResult> RunSkillMix(
    const SkillMixConfig& config, const SkillCatalog& catalog,
    const std::vector<Combination>& combos, ChatModel& student,
    ChatModel& grader, const ProgressCallback& progress = nullptr,
    const std::function<bool()>& should_stop = nullptr);

// The derived seed for (base, a, b): splitmix64 mixing, stable everywhere.
uint64_t MixSeed(uint64_t base, uint64_t a, uint64_t b = 0);

}  // namespace smoe::skillmix

#endif  // SMOE_WORKER_EVAL_SKILLMIX_PIPELINE_H_
