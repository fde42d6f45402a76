// Copyright 2026 SMoE Lab authors.
//
// File: worker/trainer/skillmix_models.h
//
// The Mixtral-format models of one `skillmix` trial (the student and, with
// grader=local, the grader), loaded by the LibTorch runtime, single-process
// or expert parallel over several smoe-trainer processes.
//
// Loading: each model directory is loaded once; chat models that name the
// same directory share its weights at their own EPTs (a student at EPT 1 and
// a local grader on the same checkpoint at its default EPT hold one copy).
// device "cpu" runs fp32; "cuda" bf16 on this rank's GPU (model::SelectDevice,
// worker/model/device.h: the one the worker daemon left visible, or GPU `rank`
// when every rank sees all of them).
//
// Expert parallelism (resources.ep_size > 1: SMOE_WORLD_SIZE ranks):
//   * every rank holds the non-expert weights and E/W experts of every layer
//     (worker/model/mixtral/mixtral_expert_parallel.h), so a model larger
//     than one GPU (Mixtral-8x7B in bf16 over two 80 GB GPUs) runs;
//   * rank 0 alone runs the Skill-Mix pipeline, the grader client, the
//     checkpoint and the events; each of its generation calls leads the
//     other ranks (LeadMixtralGenerate), which sit in Follow() and join the
//     forwards;
//   * every rank derives the same model list from the trial config
//     (ModelDirs), so calls name models by index;
//   * a follower waits for the next call at most the group's deadline
//     (kSkillMixGroupTimeoutMs): it covers rank 0's pauses between calls
//     (HTTP grading with retries). A dead rank 0 closes its sockets, so the
//     followers fail at once rather than at the deadline.
//
// Thread-safety: thread-compatible (one trial thread).
#ifndef SMOE_WORKER_TRAINER_SKILLMIX_MODELS_H_
#define SMOE_WORKER_TRAINER_SKILLMIX_MODELS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/all_to_all/communicator.h"
#include "worker/model/gloo_communicator.h"
#include "worker/model/mixtral/mixtral_model.h"
#include "worker/model/mixtral/mixtral_tokenizer.h"
#include "worker/trainer/skillmix_config.h"
#include "worker/trainer/skillmix_trial.h"

namespace smoe::trainer {

// Deadline of every collective of a Skill-Mix expert-parallel group,
// including a follower's wait for rank 0's next generation call.
inline constexpr int64_t kSkillMixGroupTimeoutMs = 30 * 60 * 1000;

// Joins the expert-parallel group of this trial's ranks (`info` from
// RendezvousFromEnv): the communicator model::SelectDevice picks (NCCL when
// device is "cuda" and the build has NCCL, else Gloo over host memory).
// `op_timeout_ms` bounds every call. Errors: SelectDevice's (e.g.
// FailedPrecondition for "cuda" without a visible GPU), Unavailable naming
// the rendezvous when the group cannot form.
absl::StatusOr<std::unique_ptr<kernels::Communicator>> JoinSkillMixGroup(
    const model::RendezvousInfo& info, const std::string& device,
    int64_t op_timeout_ms = kSkillMixGroupTimeoutMs);

class SkillMixModels {
 public:
  // The directories a trial loads, in the order every rank uses: the
  // student's, then the local grader's when it names another directory.
  static std::vector<std::string> ModelDirs(const SkillMixTrialConfig& config);

  // `comm` null (or of one rank): single process. Otherwise not owned, must
  // outlive this object, and every rank must construct it with the same
  // config.
  SkillMixModels(SkillMixTrialConfig config, kernels::Communicator* comm);

  // Rank 0 (or single process): the factory RunSkillMixTrial builds its
  // student and local grader with. It loads a directory on first use (this
  // rank's experts only when expert parallel); with several ranks each
  // generation call leads the followers. Errors: the loaders' (naming the
  // file), FailedPrecondition for device=cuda without a visible GPU,
  // InvalidArgument for an EPT outside 1..num_local_experts, Internal for a
  // directory outside ModelDirs when expert parallel. The factory refers to
  // this object, which must outlive it.
  ChatModelFactory Factory();

  // Ranks > 0: loads ModelDirs() (this rank's experts) and serves rank 0's
  // calls until it sends the stop. OK after the stop; the communicator's
  // error (DeadlineExceeded, connection reset, ...) when rank 0 is gone; a
  // load error as is. `calls_served`, when non-null, counts the calls.
  // REQUIRES: constructed with a communicator of rank > 0.
  absl::Status Follow(int64_t* calls_served = nullptr);

  // Rank 0: ends the followers' loops. No-op single process. Call once,
  // after the trial (also after a failure).
  absl::Status StopFollowers();

 private:
  // A loaded directory: weights shared by every chat model over it.
  struct Loaded {
    std::shared_ptr<model::mixtral::MixtralModel> model;
    std::shared_ptr<const model::mixtral::MixtralTokenizer> tokenizer;
    int index = 0;  // position in ModelDirs (expert parallel)
  };
  absl::StatusOr<model::mixtral::MixtralLoadOptions> LoadOptions() const;
  absl::StatusOr<Loaded*> Get(const std::string& dir, bool need_tokenizer);

  SkillMixTrialConfig config_;
  kernels::Communicator* comm_;  // not owned; may be null
  std::map<std::string, Loaded> loaded_;
};

}  // namespace smoe::trainer

#endif  // SMOE_WORKER_TRAINER_SKILLMIX_MODELS_H_
