// Copyright 2026 SMoE Lab authors.
//
// File: worker/trainer/trainer.h
//
// The SRAVEN training loop behind `smoe-trainer run` (docs/sraven.md 1.4,
// 1.5 and 4; docs/trainer-protocol.md). No LibTorch in this header.
//
// Determinism: the model is initialised from torch's generator seeded with a
// function of config.seed; before update `s` (0-based) the generator is
// reseeded from (seed, s), so dropout masks do not depend on history; batch s
// is SRAVEN batch s of the train split (a pure function of (seed, split,
// batch)). Hence a run resumed from a checkpoint reproduces the uninterrupted
// run exactly on CPU (same thread count).
//
// Optimiser: AdamW as optax.adamw (b1 0.9, b2 0.999, eps 1e-8 outside the
// sqrt, decoupled decay wd * lr * p on DecayParameter() params only), lr from
// LearningRate(). No gradient clipping.
//
// Events (JSON Lines through EventSink), with `step` = updates done:
//   progress  every log_every updates and at the end
//   metric    train/loss (mean over the updates since the last one),
//             train/lr every log_every updates; at every eval
//             eval/{test,val,ood}_acc, eval/{test,val,ood}_acc_per_feature
//             and router/layer{l}/expert{e}_frac, router/layer{l}/entropy
//             (from the test-set eval forward passes)
//   checkpoint every checkpoint_every updates, at the end, and on stop
//   result     exactly once, after the final eval (emitted by RunTraining)
// Evaluation runs after the first update (the original's "step 0" eval,
// docs/sraven.md 4), after update s when s % eval_every == 0, and when s ==
// steps, on num_eval problems each of the test, the validation and the OOD
// split (eval mode: no dropout; Soft MoE uses Algorithm 1 when top_k <
// num_experts).
#ifndef SMOE_WORKER_TRAINER_TRAINER_H_
#define SMOE_WORKER_TRAINER_TRAINER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "worker/trainer/train_config.h"

namespace smoe::trainer {

// Receives one JSON object (no newline) per event.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void Emit(const std::string& json_line) = 0;
};

// Writes each event as one line to stdout and flushes.
class StdoutEventSink : public EventSink {
 public:
  void Emit(const std::string& json_line) override;
};

struct RunOptions {
  std::string workdir;          // created if missing; holds checkpoint.smoeckpt
  EventSink* events = nullptr;  // may be null
  const std::atomic<bool>* stop = nullptr;  // SIGTERM flag; may be null
  // Test hook: behave as if `stop` were set once this many updates are done.
  int64_t stop_at_step = -1;
  // Called after every update with (updates done, that update's train loss).
  // Forces a device sync per step; leave empty in production.
  std::function<void(int64_t, double)> on_step;
};

struct TrainResult {
  int64_t steps = 0;
  double test_acc = 0, ood_acc = 0;  // ood_* are NaN when OOD is empty
  double test_acc_per_feature = 0, ood_acc_per_feature = 0;
  // The validation split (in-distribution rule combinations, its own
  // stream): for selecting hyperparameters without touching test problems.
  double val_acc = 0, val_acc_per_feature = 0;
  double train_loss = 0;    // mean loss of the last log window
  double steps_per_s = 0;   // this process's training updates only
  double tokens_per_s = 0;  // steps_per_s * batch_size * 9M
};

// The checkpoint file inside `workdir`.
std::string CheckpointPath(const std::string& workdir);

// Sets torch's intra-op threads from OMP_NUM_THREADS (default 1).
void ConfigureTorchThreads();

// Trains and evaluates one trial, resuming from workdir's checkpoint if there
// is one. A checkpoint that fails verification (checkpoint.h) is set aside
// (renamed, never deleted) and the run resumes from the previous checkpoint,
// else from scratch, emitting trials::CheckpointRestoredEvent first. Returns
// the result (after emitting the `result` event), or:
//   Cancelled         stop requested; a checkpoint was written (exit 75)
//   InvalidArgument   bad config (exit 64)
//   FailedPrecondition checkpoint from a different trajectory or format
//                     version, or device=cuda without a GPU
//   Internal          a LibTorch error (message included)
// Never throws.
absl::StatusOr<TrainResult> RunTraining(const TrainConfig& config,
                                        const RunOptions& options);

}  // namespace smoe::trainer

#endif  // SMOE_WORKER_TRAINER_TRAINER_H_
