// Copyright 2026 SMoE Lab authors.
//
// File: worker/trainer/train_config.h
//
// One SRAVEN trial's resolved configuration, parsed from TRIAL.json
// (docs/trainer-protocol.md), and the learning-rate schedule. No LibTorch
// here.
//
// The accepted `params`, their ranges and defaults are the table in
// trials/sraven_params.cc (`smoe params sraven` prints it); ParseTrialJson
// checks each value against it and binds it to its field. The struct
// defaults below are the table's (tests/trials/trial_params_test.cc).
// Top level: sweep_id, trial_id (strings), attempt (int), kind ("sraven"),
//   seed (int >= 0, default 0), params (object). Anything else is an error.
#ifndef SMOE_WORKER_TRAINER_TRAIN_CONFIG_H_
#define SMOE_WORKER_TRAINER_TRAIN_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "worker/model/model_config.h"

namespace smoe::trainer {

struct TrainConfig {
  model::ModelConfig model;  // model.num_features is M
  uint64_t seed = 0;
  int64_t steps = 156250;  // S = 20M / 128
  int64_t batch_size = 128;
  double lr = 1e-3;
  double weight_decay = 0.1;
  int64_t warmup = 1000;  // W
  int64_t eval_every = 10000;
  // Also evaluate at eval_rungs_from * eval_rungs_eta^i (the ASHA rungs; the
  // coordinator sets them in the lease of an asha sweep). 0 = off.
  int64_t eval_rungs_from = 0;
  int64_t eval_rungs_eta = 3;
  int64_t num_eval = 51200;  // problems per eval split
  int64_t checkpoint_every = 5000;
  int64_t log_every = 1000;
  std::string device = "cpu";
  bool bf16 = false;
  int num_rules = 8;
  double frac_ood = 0.25;
  bool shared_stream = false;
  // Expert-parallel ranks (worker/model/expert_parallel.h). 1 = single
  // process. > 1: this process is one of ep_size ranks (SMOE_RANK,
  // SMOE_WORLD_SIZE, SMOE_RENDEZVOUS); the global batch of batch_size rows is
  // split evenly. Not part of the trajectory fingerprint: the math is the
  // single-process run's (up to float rounding), so a checkpoint resumes at
  // any ep_size.
  int ep_size = 1;
};

struct TrialSpec {
  std::string sweep_id;
  std::string trial_id;
  int64_t attempt = 0;
  std::string kind;
  TrainConfig config;
};

// Parses TRIAL.json text. Errors: InvalidArgument naming the key and value
// (unknown key, wrong type, out of range, bad JSON, a kind other than
// "sraven"): "bad trial spec" (exit 64).
absl::StatusOr<TrialSpec> ParseTrialJson(absl::string_view text);

// Checks cross-field constraints; InvalidArgument naming the key.
absl::Status ValidateTrainConfig(const TrainConfig& config);

// Learning rate for the update with 0-based index `step` (optax
// warmup_cosine_decay_schedule(0, lr, W, S - W, 0.1 lr), docs/sraven.md
// "Training"):
//   step < W:        lr * step / W   (the first update has lr 0)
//   W <= step:       lr * (0.1 + 0.9 * 0.5 * (1 + cos(pi * min(step - W,
//                    S - 2W) / (S - 2W))))
// so it reaches 0.1 lr at step S - W and stays (the paper's settings: S =
// 156250, W = 1000 or 3000). A run too short for that constant tail
// (S <= 2W; optax refuses it) decays over the rest of the run instead:
//   W <= step:       lr * (0.1 + 0.9 * 0.5 * (1 + cos(pi * min(step - W,
//                    S - W) / (S - W))))
// i.e. from lr at step W to 0.1 lr at step S, never straight down to 0.1 lr
// (issue 31 item 1). ValidateTrainConfig refuses W >= S.
double LearningRate(const TrainConfig& config, int64_t step);

// The warmup a trial gets when it does not set one: 1000 (the paper's),
// capped at a tenth of the run, so a short run peaks at lr and keeps a
// cosine phase (`--steps 500` warms up for 50 steps, not 1000).
int64_t DefaultWarmup(int64_t steps);

// Whether the trainer evaluates after update `step`: step 1, every
// eval_every, the last step, and the rung steps eval_rungs_from *
// eval_rungs_eta^i (so ASHA compares values recorded at its rungs).
bool EvalDue(const TrainConfig& config, int64_t step);

// Canonical JSON of every field that changes the training trajectory (not the
// eval/log/checkpoint cadence, num_eval or device). A checkpoint only resumes
// a run with the same fingerprint.
std::string TrajectoryFingerprint(const TrainConfig& config);

}  // namespace smoe::trainer

#endif  // SMOE_WORKER_TRAINER_TRAIN_CONFIG_H_
