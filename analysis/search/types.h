// Copyright 2026 SMoE Lab authors.
//
// File: analysis/search/types.h
//
// Adaptive-sweep policies (docs/adaptive-sweeps.md): ASHA (asha.h), the
// median stopping rule (median_stop.h) and refine (refine.h). They are pure
// functions of what the store records: the trials of a sweep, their groups
// and their (trial, attempt, step, value) metric reports. The same records in
// any order give the same decisions (inputs are sorted and deduplicated
// first), so a coordinator can recompute them after a restart, and a replay
// (bench/search_replay_bench.cc) exercises exactly the code that runs.
//
// Layering: analysis/search/ may include only common/ and analysis/ (no
// store, proto or gRPC; tests/quality/layering.cc), so the coordinator, the
// CLI and the benchmarks can all use it.
//
// Thread safety: every function is pure.
#ifndef SMOE_ANALYSIS_SEARCH_TYPES_H_
#define SMOE_ANALYSIS_SEARCH_TYPES_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace smoe::analysis::search {

enum class Mode { kMax, kMin };

// Parses "max" / "min" (anything else is kMax).
Mode ParseMode(const std::string& mode);

// True when a is strictly better than b under `mode`.
inline bool Better(Mode mode, double a, double b) {
  return mode == Mode::kMax ? a > b : a < b;
}

// One recorded metric value (the policy's metric only).
struct Report {
  std::string trial_id;
  int attempt = 1;
  int64_t step = 0;
  double value = 0;
};

// A trial of the sweep as the policies see it.
struct Trial {
  std::string trial_id;
  std::string group;     // GroupLabel of its params ("" = one group)
  bool errored = false;  // its last attempt errored; it will be retried
  bool paused = false;   // currently pruned (the median rule keeps it so)
  // Its configuration: the params without the seed ("" = the trial alone).
  // ASHA with aggregate_seeds judges and stops the trials of one
  // configuration together, by the mean over their seeds.
  std::string config{};
  // ASHA with keep_neighbors: the trial's value on the integer axis, and its
  // params without that axis and the seed. Two configurations are
  // neighbours when `rest` is equal and `axis` differs by one.
  bool has_axis = false;
  int64_t axis = 0;
  std::string rest{};
};

enum class Action {
  kRun,       // keep running (or start); nothing to decide yet
  kPromote,   // passed a rung: continue (resume from its checkpoint if paused)
  kPrune,     // stop now and keep the checkpoint; `final` says whether a
              //   later result can still promote it
  kComplete,  // reached max_steps
  kRetry,     // errored: retry it (an error is not a bad metric)
};

const char* ActionName(Action a);

constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

// One decision about one trial, with its reason.
struct Decision {
  std::string trial_id;
  std::string group;
  Action action = Action::kRun;
  int rung = -1;             // ASHA rung index; -1 when none applies
  int64_t step = 0;          // the step the decision is about
  double value = kNoValue;   // the trial's value there
  double cutoff = kNoValue;  // the value it had to beat (NaN: none yet)
  bool final = false;        // kPrune only: no later result can undo it
  std::string reason;
  bool operator==(const Decision& o) const;
};

// "M=2,attention=softmax": the params' values of `group_by`, in that order
// (a missing one reads "-"). "" for no group_by.
std::string GroupLabel(const nlohmann::json& params,
                       const std::vector<std::string>& group_by);

// The running average after a trial's n-th value (n = 0: the first):
// (prev * n + value) / (n + 1); one that is not a number (it mixes -inf and
// +inf) is the mode's worst, as Canonical makes a NaN report, so that every
// running average orders (the median rule sorts them).
double NextRunningAverage(Mode mode, double prev, size_t n, double value);

// The reports sorted by (trial, step), keeping one per (trial, step): the
// highest attempt's (a retry's value supersedes the errored attempt's), then
// the larger value (duplicates of one attempt are identical when ingest is
// idempotent; this only makes the choice order-free). A non-finite value
// (a diverged run) becomes the worst value under `mode`.
std::vector<Report> Canonical(std::vector<Report> reports, Mode mode);
// The trials sorted by trial_id, duplicates (same id) dropped: the order the
// policies decide in, whatever order the trials arrived in.
std::vector<Trial> SortedUniqueTrials(std::vector<Trial> trials);

nlohmann::json ToJson(const Decision& d);

}  // namespace smoe::analysis::search

#endif  // SMOE_ANALYSIS_SEARCH_TYPES_H_
