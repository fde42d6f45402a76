// Copyright 2026 SMoE Lab authors.
//
// File: analysis/search/refine.h
//
// "Resolve the optimal k": refine an integer axis (top_k) per group (e.g.
// M x attention) until its argmax is located and separated, as a pure
// function of the sweep's points and their final metric values.
//
// Per group, once none of its points is pending (running, queued or
// errored-and-retrying), with x* = the argmax of the mean over seeds (ties:
// the smaller x; mode min: the argmin):
//   1. every integer neighbour x*-1, x*+1 within [lo, hi] with no point yet
//      is proposed, with the sweep's seeds (state kExploring);
//   2. when both are measured, a paired bootstrap over seeds of the argmax
//      (analysis/optimal_k.h, OptimalForSeries) gives P(x*) = the fraction of
//      resamples whose argmax is x*; P(x*) >= resolve_p (0.9) with >= 2 seeds
//      resolves the group (kResolved);
//      with tolerance > 0, P(argmax within tolerance of x*) >= resolve_p
//      also resolves it (the reason says so);
//      An x whose points were all stopped early (refine + asha) counts as
//      tried and lost: it is never x* and takes no part in the bootstrap;
//   3. otherwise, while the group has added fewer than add_seeds seeds, the
//      next seed (largest seed + 1) is proposed for every x the bootstrap's
//      argmax covers (frequency >= 0.05) (kAddingSeeds); then kUnresolved.
// Proposals are granted round-robin over groups in label order, one
// (x, seeds) unit at a time, while the sweep's trials stay within `budget`
// (0: none); a group left with an ungranted proposal is kBudget.
#ifndef SMOE_ANALYSIS_SEARCH_REFINE_H_
#define SMOE_ANALYSIS_SEARCH_REFINE_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analysis/search/types.h"

namespace smoe::analysis::search {

struct RefineConfig {
  Mode mode = Mode::kMax;
  int64_t lo = 1;  // bounds of the axis
  int64_t hi = 1;
  int64_t budget = 0;     // most trials in the sweep; 0 = none
  int64_t add_seeds = 0;  // most extra seeds per group
  // Non-empty: grant no proposal (e.g. the sweep's GPU-hour budget is
  // spent); a group with one settles as kBudget, this text in its reason.
  std::string stop_adding;
  std::vector<int64_t> seeds = {0};  // the sweep's seeds (for new x)
  double resolve_p = 0.9;
  // Indifference zone (ranking and selection; a ROPE): values whose mean is
  // within `tolerance` of x*'s are practically equivalent. With tolerance
  // > 0 a group also resolves when the bootstrap's argmax lands on x* or an
  // equivalent value in >= resolve_p of the resamples ("x* is best to
  // within tolerance"), and seeds are only added while it does not. 0: the
  // argmax itself must be separated.
  double tolerance = 0;
  int bootstrap_samples = 1000;
  uint64_t bootstrap_seed = 0;
};

// One point of the sweep: (group, x, seed) and its state.
struct RefinePoint {
  std::string group;
  int64_t x = 0;
  int64_t seed = 0;
  bool done = false;     // succeeded with the metric: `value` is set
  bool pending = false;  // queued, running or being retried
  double value = kNoValue;
  // Stopped for good by early stopping (refine + asha): tried, not measured;
  // an x whose points are all stopped lost a rung and is never x*.
  bool stopped = false;
};

enum class RefineState {
  kWaiting,      // points pending
  kExploring,    // neighbours of x* proposed
  kAddingSeeds,  // argmax ambiguous: seeds proposed
  kResolved,
  kUnresolved,  // add_seeds spent, still ambiguous
  kBudget,      // a proposal did not fit the budget
};
const char* RefineStateName(RefineState s);

struct RefineGroup {
  std::string group;
  RefineState state = RefineState::kWaiting;
  int64_t best = 0;  // x* (0 when nothing is measured)
  double best_mean = kNoValue;
  double best_freq = 0;            // bootstrap P(argmax = x*)
  int seeds = 0;                   // distinct seeds measured
  std::map<int64_t, double> mean;  // measured x -> mean over seeds
  std::vector<int64_t> stopped;    // x with every point stopped early
  // Resolved within the tolerance (more than one x): the measured x whose
  // means are within it of x*'s, ascending. They are indistinguishable at
  // that precision: x* is only the one with the best mean among them.
  std::vector<int64_t> equivalent;
  std::string reason;
};

struct RefineProposal {
  std::string group;
  int64_t x = 0;
  int64_t seed = 0;
  std::string reason;
  bool operator==(const RefineProposal& o) const {
    return group == o.group && x == o.x && seed == o.seed && reason == o.reason;
  }
};

struct RefineResult {
  std::vector<RefineGroup> groups;        // by label
  std::vector<RefineProposal> proposals;  // granted, in grant order
  int64_t trials = 0;                     // points before the proposals
};

// DecideRefine in two steps, for a caller that keeps each group's decision
// and redoes only the groups whose points changed (the coordinator's
// incremental refine plan, issue 35): DecideRefine(c, points) is
// GrantRefine over DecideRefineGroup of each group's points, by label;
// `group_plans` (may be null) receives those group decisions, by label.
struct RefineGroupPlan;
RefineResult DecideRefine(const RefineConfig& config,
                          const std::vector<RefinePoint>& points,
                          std::vector<RefineGroupPlan>* group_plans = nullptr);

// One group's decision before the sweep's budget: its state and the units
// of proposals it wants (one x with its seeds each, in the order they are
// granted). `points`: the group's points (any order, duplicates allowed;
// the same group label).
struct RefineGroupPlan {
  RefineGroup group;
  std::vector<std::vector<RefineProposal>> wants;
  int64_t points = 0;  // distinct (x, seed) points
};
RefineGroupPlan DecideRefineGroup(const RefineConfig& config,
                                  const std::string& label,
                                  const std::vector<RefinePoint>& points);

// The granted proposals, in grant order, and the groups (indices into
// GrantRefine's `groups`) left with an ungranted proposal, with the reason
// that replaces their plan's (state kBudget).
struct RefineGrant {
  std::vector<RefineProposal> proposals;
  std::vector<std::pair<size_t, std::string>> budget;
};
// Grants `groups`' wants round-robin in the given order (DecideRefine: by
// label; only groups with wants matter), one unit at a time, while the
// sweep's `trials` distinct points plus the granted stay within c.budget.
RefineGrant GrantRefine(const RefineConfig& config,
                        const std::vector<const RefineGroupPlan*>& groups,
                        int64_t trials);

}  // namespace smoe::analysis::search

#endif  // SMOE_ANALYSIS_SEARCH_REFINE_H_
