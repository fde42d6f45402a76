// Copyright 2026 SMoE Lab authors.
//
// File: worker/trainer/skillmix_trial.h
//
// The `skillmix` trial kind of smoe-trainer (docs/trainer-protocol.md): one
// Skill-Mix evaluation (worker/eval/skillmix) of a student model at one
// (EPT, k_skills), graded by the OpenAI-compatible client or a local model,
// resumable through WORKDIR/skillmix_checkpoint.jsonl.
//
// Events (one JSON object per emit call):
//   {"event":"progress","step":done,"total":N}          after each combination
//   {"event":"metric","step":done,"name":"skillmix/ratio_full_marks",...}
//     running mean over finished combinations, for ratio_full_marks,
//     ratio_all_skills, skill_fraction, total_score, total_skill_score, each
//     also as "<name>_se" (when n >= 2) and under "skillmix/k<k>/<name>";
//   {"event":"checkpoint","step":done}                  after each append
//   {"event":"result","metrics":{"ratio_full_marks":..,"ratio_full_marks_se":
//     ..,...}}                                          once, at the end.
// The result is also written to WORKDIR/skillmix_result.json.
//
// Models are built through factories so the runner is independent of the
// LibTorch runtime (main.cc passes the Mixtral adapter; tests pass fakes).
//
// Thread-safety: RunSkillMixTrial is thread-compatible.
#ifndef SMOE_WORKER_TRAINER_SKILLMIX_TRIAL_H_
#define SMOE_WORKER_TRAINER_SKILLMIX_TRIAL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "worker/eval/skillmix/chat_model.h"
#include "worker/eval/skillmix/pipeline.h"
#include "worker/trainer/skillmix_config.h"

namespace smoe::trainer {

// What a factory needs to build a local chat model.
struct ChatModelSpec {
  std::string model_dir;
  int ept = 0;  // experts per token; 0 = the model's num_experts_per_tok
  std::string device = "cuda";
};
using ChatModelFactory =
    std::function<absl::StatusOr<std::unique_ptr<skillmix::ChatModel>>(
        const ChatModelSpec&)>;

struct SkillMixRunOptions {
  std::string workdir;  // created if missing
  // Receives one JSON event (no newline); may be empty.
  std::function<void(const std::string&)> emit;
  const std::atomic<bool>* stop = nullptr;  // SIGTERM flag; may be null
  // Builds the student (and a local grader). Required.
  ChatModelFactory model_factory;
  // Test hook: when set, used as the grader instead of building one.
  skillmix::ChatModel* grader_override = nullptr;
};

// The checkpoint and result files inside `workdir`.
std::string SkillMixCheckpointPath(const std::string& workdir);
std::string SkillMixResultPath(const std::string& workdir);

// Runs or resumes the trial. Errors: Aborted when stopped (finished
// combinations are checkpointed: exit 75), InvalidArgument for a bad config
// or data files (exit 64), FailedPrecondition for a checkpoint of another
// config or a missing API key, others from the models.
absl::StatusOr<skillmix::SkillMixResult> RunSkillMixTrial(
    const SkillMixTrialConfig& config, const SkillMixRunOptions& options);

}  // namespace smoe::trainer

#endif  // SMOE_WORKER_TRAINER_SKILLMIX_TRIAL_H_
