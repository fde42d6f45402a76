// Copyright 2026 SMoE Lab authors.
//
// File: cli/local_trial.h
//
// One trial outside any sweep, for `smoe train sraven` and `smoe skillmix
// run`: writes TRIAL.json, runs `smoe-trainer run` (the trainer contract,
// docs/trainer-protocol.md) as a child process -- or, for an expert-parallel
// trial, one child per rank -- hands each JSON Lines event of rank 0 to the
// caller, and draws the caller's progress line on stderr (in place on a
// terminal, one line per change otherwise). The CLI never links LibTorch.
//
// Ranks are a launch::RankGroup (worker/launch/rank_group.h), as in the
// worker daemon: the same rank variables, FileStore rendezvous
// (WORKDIR/ep-rendezvous), CUDA_VISIBLE_DEVICES split (of `gpu_ids`; empty
// leaves the variable as inherited), stop policy (with term_grace_s) and
// decisive exit code. What is the CLI's own:
//   * Only rank 0's stdout is read for events; rank 0's stderr is ours (the
//     terminal); ranks > 0 write stdout and stderr to WORKDIR/rank<r>.log
//     (truncated per run).
//   * Ranks get SIGTERM if `smoe` itself dies (PR_SET_PDEATHSIG; the daemon's
//     get SIGKILL), so a killed CLI leaves no ranks behind.
//   * SIGINT (Ctrl-C) or SIGTERM to `smoe` is forwarded as SIGTERM to every
//     rank (the trainer checkpoints and exits 75); a second one sends SIGKILL.
// Every wait is bounded: success -> SIGTERM and SIGTERM -> SIGKILL after
// term_grace_s each, and a rank not reaped kReapDeadlineS after SIGKILL makes
// RunLocalTrial give up (70). A trial that runs normally has no deadline
// (training may take days).
//
// Thread-safety: RunLocalTrial installs process-wide SIGINT/SIGTERM handlers
// for its duration (restored before it returns): one call at a time per
// process, from a thread that outlives it.
#ifndef SMOE_CLI_LOCAL_TRIAL_H_
#define SMOE_CLI_LOCAL_TRIAL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace smoe::cli {

struct LocalTrial {
  std::string command;  // for messages, e.g. "smoe train"
  std::string kind;     // the trial kind: "sraven" | "skillmix"
  int64_t seed = 0;
  nlohmann::json params = nlohmann::json::object();
  // The trial's directory; empty: a new /tmp/smoe-<kind>-XXXXXX. RunLocalTrial
  // sets it to the directory used.
  std::string workdir;
  std::string trainer;  // empty: smoe-trainer next to `smoe`
  // Expert-parallel ranks (--ep-size): 1 runs one trainer process without any
  // SMOE_* rank variables; N > 1 runs N of them. REQUIRES: >= 1 (else
  // RunLocalTrial returns 64 naming --ep-size).
  int ep_size = 1;
  // --gpu-ids; empty leaves CUDA_VISIBLE_DEVICES as inherited.
  std::vector<int> gpu_ids;
  // Seconds between SIGTERM to the ranks still running and SIGKILL; also how
  // long the others may run on after one rank succeeded.
  double term_grace_s = 30;
};

// The help footer of the local commands that take --ep-size.
inline constexpr char kLocalEpHelp[] =
    "Expert parallelism: --ep-size N > 1 starts N `smoe-trainer run`\n"
    "processes (ranks) on this machine, SMOE_RANK 0..N-1, meeting through\n"
    "the file WORKDIR/ep-rendezvous. Progress and results come from rank 0;\n"
    "rank r > 0 logs to WORKDIR/rank<r>.log. With --gpu-ids listing at least\n"
    "N ids each rank gets its own GPUs (--ep-size 2 --gpu-ids 0,1: rank 0\n"
    "sees GPU 0, rank 1 GPU 1); with fewer, every rank sees all of them.\n"
    "Ctrl-C stops every rank (checkpoint, exit 75; re-run with the same\n"
    "--workdir to resume). When one rank fails the others are stopped; the\n"
    "exit code is rank 0's unless it succeeded and another rank failed.";

// How long RunLocalTrial waits for ranks to be reaped after SIGKILL.
inline constexpr double kReapDeadlineS = 10;

// Runs `trial`; `on_event` receives every event object of rank 0 and returns
// the progress line to show after it. Returns the decisive exit code (see the
// file comment: 0 ok, 64 bad params, 75 interrupted, other: error), 64 when
// ep_size < 1, 69 when the trainer is missing, 70 when the work dir or a child
// cannot be set up or a rank survives SIGKILL.
int RunLocalTrial(
    LocalTrial& trial,
    const std::function<std::string(const nlohmann::json&)>& on_event);

// Returns a `width`-character bar, '#' for done and '-' for the rest.
std::string ProgressBar(int64_t step, int64_t total, int width);

}  // namespace smoe::cli

#endif  // SMOE_CLI_LOCAL_TRIAL_H_
