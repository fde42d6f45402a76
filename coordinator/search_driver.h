// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/search_driver.h
//
// The bridge between an adaptive sweep's search policy
// (analysis/search/: asha, median, refine) and the scheduler
// (docs/adaptive-sweeps.md). PlanSearch is a pure function of what the store
// records about one sweep — its trials and their states, the search metric's
// reports, the final results and the decision log so far — and returns the
// difference between the policy's desired state and the current one:
//   * prune:   a pending or running trial the policy stops -> kPruned;
//   * promote: a pruned trial the policy wants running again -> kPending
//              (it resumes from its checkpoint when leased again);
//   * log:     a running trial that passed a rung (logged once per rung);
//   * add:     refine's proposals, new points of the sweep;
//   * group:   refine's group states when they settle (resolved, ...).
// The scheduler applies a plan in the same transaction as the report that
// caused it, so a coordinator killed at any point restarts with every
// decision it took and takes none twice: recomputing the plan from the store
// gives no difference for the decisions already applied.
//
// Thread safety: PlanSearch is pure.
#ifndef SMOE_COORDINATOR_SEARCH_DRIVER_H_
#define SMOE_COORDINATOR_SEARCH_DRIVER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/search/asha.h"
#include "analysis/search/refine.h"
#include "analysis/search/types.h"
#include "nlohmann/json.hpp"
#include "store/types.h"
#include "sweeps/sweep_spec.h"

namespace smoe::coordinator {

// True for the strategies the scheduler drives (asha, median, refine).
bool IsAdaptive(const sweeps::SweepSpec& spec);

// True when the scheduler stops trials early: asha, median, and refine with
// early_stop: asha (decisions are planned on every search-metric report).
bool StopsEarly(const sweeps::SweepSpec& spec);

// True when a metric named `name` is the search metric `metric` (the
// trainer reports evaluations as "eval/<name>").
bool IsSearchMetric(const std::string& metric, const std::string& name);

// What the driver remembers of the decision log, per trial and per group:
// the last logged action and rung (recomputed from the store on restart).
struct LoggedDecision {
  std::string action;
  int rung = -1;
  bool final = false;
};

// What the stopping rules (asha, median) read of one trial's params: its
// group label (search.group_by), and for asha its configuration (params
// without the seed) and keep_neighbors axis. Parsed once per trial by the
// scheduler (params never change) instead of on every plan.
struct SearchTrialInfo {
  std::string group;
  std::string config;
  // asha: the keep_neighbors axis' value; refine: search.axis' (a trial
  // without an integer value there is no refine point).
  bool has_axis = false;
  int64_t axis = 0;
  std::string rest;  // params without the axis (keep_neighbors)
};

// SearchTrialInfo of `t` under `spec` (asha, median, refine: its group
// label and axis value; refine's stopping groups (early_stop: asha) are
// the label and the seed, RefineStopGroup).
SearchTrialInfo SearchInfoOf(const sweeps::SweepSpec& spec,
                             const store::TrialRecord& t);

// The stopping group of a refine trial with early_stop: asha (group label
// `label`, seed `seed`): the axis' values race each other within a group and
// one seed. Only the sweep's seeds race (seeds refine added run to the end).
std::string RefineStopGroup(const std::string& label, int64_t seed);

// True when PlanSearch decides each search group from that group's trials and
// reports alone while search.budget_gpu_hours (if set) is not spent: asha
// and median. The scheduler then plans only the groups whose trials or
// reports changed (issue 35 item 2); refine, and asha and median once their
// budget is spent (a spent budget prunes pending trials of every group), are
// planned from every trial.
bool PlansPerGroup(const sweeps::SweepSpec& spec);

struct SearchInputs {
  const sweeps::SweepSpec* spec = nullptr;
  // Every trial of the sweep (any order).
  std::vector<store::TrialRecord> trials;
  // The search metric's reports, every trial (any order).
  std::vector<analysis::search::Report> reports;
  // Refine: the search metric's final value of each succeeded trial.
  std::unordered_map<std::string, double> finals;
  // The last logged decision per trial id, and per refine group ("group:" +
  // label).
  std::unordered_map<std::string, LoggedDecision> last;
  // The device-hours the sweep has used, as the dashboard counts them
  // (views/search_summary.h: every attempt's wall time x max(1,
  // gpus_per_trial), a running attempt until now; GPU-hours, or slot-hours on
  // CPU). Compared with search.budget_gpu_hours; the scheduler fills it in.
  double device_hours_used = 0;
  // Optional (PlansPerGroup sweeps): SearchInfoOf per trial id, for some or
  // all of `trials`; the others are parsed.
  const std::unordered_map<std::string, SearchTrialInfo>* info = nullptr;
  // > 0: the sweep's SearchMaxSteps, for when `trials` is a subset of the
  // sweep (whole groups); 0: SearchMaxSteps(spec, trials).
  int64_t max_steps = 0;
};

struct TrialChange {
  std::string trial_id;
  store::TrialState next = store::TrialState::kPending;  // kPruned | kPending
};

struct SearchPlan {
  std::vector<TrialChange> changes;
  std::vector<sweeps::ExpandedTrial> add;  // refine: new points, in grant order
  // One per change, then log-only decisions and one per added point; sweep
  // id and time are left for the scheduler to fill in.
  std::vector<store::DecisionRecord> decisions;
  bool empty() const {
    return changes.empty() && add.empty() && decisions.empty();
  }
};

// The plan for one sweep (empty for grid). Deterministic: the same inputs in
// any order give the same plan.
//
// search.budget_gpu_hours: once device_hours_used reaches it, the plan
// starts nothing more: pending trials (never started, retries, resumes) are
// pruned for good, a paused trial the policy would promote or resume stays
// pruned (its prune becomes final), refine adds no point (its unsettled
// groups settle as `budget`); running attempts go on to their next rung or
// the end. Every such decision's reason names the budget and the hours used.
SearchPlan PlanSearch(const SearchInputs& in);

// Refine's decision of one group before the sweep's budget and the points
// it was taken on (one per trial with an integer axis value, by trial id).
struct RefineGroupState {
  std::vector<analysis::search::RefinePoint> points;
  analysis::search::RefineGroupPlan plan;
};

// PlanSearch, and for refine (its GPU-hour budget not spent) each group's
// state as the plan decided it, by label, in `refine_groups` (may be null):
// where the scheduler's incremental refine plans start after a plan from
// every trial.
SearchPlan PlanSearch(const SearchInputs& in,
                      std::map<std::string, RefineGroupState>* refine_groups);

// "" when `a` and `b` are the same plan (the same changes, added trial ids
// and decisions, in order; NaN values equal); else the first difference.
std::string PlanDifference(const SearchPlan& a, const SearchPlan& b);

// The trials' training length: search.max_steps when set, else the `steps`
// of the first trial that has one, else fixed.steps, else 1.
int64_t SearchMaxSteps(const sweeps::SweepSpec& spec,
                       const std::vector<store::TrialRecord>& trials);
// The same over `n` trials looked up as needed (`trial(i)`: the i-th, or
// null for none; Scheduler::GetSearchUsage: it stops at the first trial
// with `steps`), and over trials' parsed params (anything but an object has
// no `steps`; the dashboard's search summary reads them from the read
// model's snapshot).
int64_t SearchMaxSteps(
    const sweeps::SweepSpec& spec, size_t n,
    const std::function<const store::TrialRecord*(size_t)>& trial);
int64_t SearchMaxStepsOfParams(
    const sweeps::SweepSpec& spec,
    const std::vector<const nlohmann::json*>& params);

// Refine's frontier for display (the dashboard's search panel): per group,
// the measured means per x, the x stopped early, x*, P(argmax = x*) and the
// group's state, as DecideRefine sees the sweep now. `finals`: the search
// metric's final value per succeeded trial; `stopped`: trials whose last
// decision is a final prune. Empty unless the strategy is refine.
std::vector<analysis::search::RefineGroup> RefineFrontier(
    const sweeps::SweepSpec& spec,
    const std::vector<store::TrialRecord>& trials,
    const std::unordered_map<std::string, double>& finals,
    const std::set<std::string>& stopped);

// The params a lease carries. For a sweep with ASHA rungs (strategy asha, or
// refine with early_stop: asha) on a kind that takes `eval_rungs_from`
// (sraven), the rungs are added — eval_rungs_from = min_steps,
// eval_rungs_eta = reduction, unless the trial sets them — so the trainer
// evaluates exactly at every rung step. The stored params (and the trial id)
// are unchanged; anything else is returned as is.
std::string LeaseParamsJson(const sweeps::SweepSpec& spec,
                            const std::string& params_json);

// True when search.budget_gpu_hours is set and `in` has used it up.
bool BudgetSpent(const SearchInputs& in);

// The reason of a budget decision: "budget_gpu_hours 2 spent: 2.01
// slot-hours used (CPU sweep: slot-hours = attempts' wall time x 1 slot)".
std::string BudgetNote(const SearchInputs& in);

// ASHA's configuration for `spec` (strategy asha or early_stop asha) with
// the sweep's training length.
analysis::search::AshaConfig AshaConfigOf(const sweeps::SweepSpec& spec,
                                          int64_t max_steps);

// True for the trial states the stopping rules consider (failed and
// cancelled trials reach no rung and would hold rungs open forever).
bool ConsideredBySearch(store::TrialState state);

// What PlanSearch does with asha's or the median rule's decision `d` about
// trial `t` (no budget spent): appends `t`'s state change and the decision to
// log, if any, to `plan`. `last`: t's last logged decision (may be null).
// The scheduler's incremental asha planning (issue 35) applies it to the
// trials whose decision may have changed.
void AppendStoppingDecision(const store::TrialRecord& t,
                            const analysis::search::Decision& d,
                            const LoggedDecision* last, SearchPlan* plan);

// Refine's configuration for `spec` (strategy refine), without the
// GPU-hour budget's stop_adding.
analysis::search::RefineConfig RefineConfigOf(const sweeps::SweepSpec& spec);

// What PlanSearch does with refine's granted proposal `p`: a new point
// copying `params` (the params of the group's first trial by id) with the
// axis at p.x and seed p.seed, and its "add" decision.
void AppendRefineProposal(const sweeps::SweepSpec& spec,
                          const analysis::search::RefineProposal& p,
                          const nlohmann::json& params, SearchPlan* plan);

// What PlanSearch does with refine group `g`'s state: a settled state
// (resolved, unresolved, budget) is logged unless `last` (the group's last
// logged decision; may be null) already says it with the same x*.
void AppendRefineGroupDecision(const sweeps::SweepSpec& spec,
                               const analysis::search::RefineGroup& g,
                               const LoggedDecision* last, SearchPlan* plan);

// The key of a refine group in SearchInputs::last.
std::string GroupKey(const std::string& label);

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_SEARCH_DRIVER_H_
