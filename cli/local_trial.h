// Copyright 2026 SMoE Lab authors.
//
// File: cli/local_trial.h
//
// One trial outside any sweep, for `smoe train sraven` and `smoe skillmix
// run`: writes TRIAL.json, runs `smoe-trainer run` (the trainer contract,
// docs/trainer-protocol.md) as a child process, hands each JSON Lines event to
// the caller, and draws the caller's progress line on stderr (in place on a
// terminal, one line per change otherwise). The CLI never links LibTorch.
#ifndef SMOE_CLI_LOCAL_TRIAL_H_
#define SMOE_CLI_LOCAL_TRIAL_H_

#include <cstdint>
#include <functional>
#include <string>

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
};

// Runs `trial`; `on_event` receives every event object and returns the
// progress line to show after it. Returns the trainer's exit code (0 ok, 64
// bad params, 75 interrupted, other: error), 69 when the trainer is missing,
// 70 when the work dir or the child cannot be set up.
int RunLocalTrial(
    LocalTrial& trial,
    const std::function<std::string(const nlohmann::json&)>& on_event);

// Returns a `width`-character bar, '#' for done and '-' for the rest.
std::string ProgressBar(int64_t step, int64_t total, int width);

}  // namespace smoe::cli

#endif  // SMOE_CLI_LOCAL_TRIAL_H_
