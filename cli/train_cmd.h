// Copyright 2026 SMoE Lab authors.
//
// File: cli/train_cmd.h
//
// `smoe train sraven --M 4 --top-k 2 --attention hyla ...`: one local training
// run outside any sweep. Writes a TRIAL.json, runs `smoe-trainer run` (the
// trainer contract, docs/trainer-protocol.md) as a child process, draws a
// progress bar from its JSON Lines, and prints a final summary. The CLI never
// links LibTorch: the trainer does the work. With ep_size N > 1 it runs N
// trainer processes, one expert-parallel rank each (cli/local_trial.h); the
// caller sets params["ep_size"] = N as well, which the trainer checks against
// the ranks it finds.
#ifndef SMOE_CLI_TRAIN_CMD_H_
#define SMOE_CLI_TRAIN_CMD_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace smoe::cli {

struct TrainOptions {
  nlohmann::json params = nlohmann::json::object();  // trainer params
  int64_t seed = 0;
  std::string workdir;       // default: a new directory under /tmp
  std::string trainer;       // default: smoe-trainer next to `smoe`
  int ep_size = 1;           // expert-parallel ranks (processes); >= 1
  std::vector<int> gpu_ids;  // CUDA_VISIBLE_DEVICES per rank; empty: inherited
};

// The progress line of `smoe train`: "[###---] step 400/2000  ETA 3m10s",
// or while the trainer evaluates "[###---] step 400/2000  evaluating ood
// 2560/4096" (progress events with a phase, trials/events.h); the ETA is the
// rate since the first step seen (a resumed run's earlier steps do not
// count).
class TrainProgress {
 public:
  void Step(int64_t step, int64_t total, absl::Time now);
  void Phase(const std::string& phase, int64_t done, int64_t total);
  std::string Line(const std::string& suffix) const;

 private:
  int64_t step_ = 0, total_ = 0, first_step_ = -1;
  absl::Time first_time_;
  std::string eta_;
  std::string phase_;  // empty: training
  int64_t phase_done_ = 0, phase_total_ = 0;
};

// Returns the trainer's exit code (0 ok, 64 bad params or ep_size < 1, 75
// interrupted; with several ranks the decisive one, see cli/local_trial.h),
// or 69 when the trainer cannot be started.
int RunTrainCommand(const TrainOptions& options, std::ostream& out);

}  // namespace smoe::cli

#endif  // SMOE_CLI_TRAIN_CMD_H_
