// Copyright 2026 SMoE Lab authors.
//
// File: analysis/search/median_incremental.h
//
// The median rule's decisions (median_stop.h) maintained per report instead
// of recomputed from the group's trials (issue 35 item 2). Per group and
// report step s (min_steps <= s < max_steps, a step some trial of the group
// reported at) it keeps
//   * the running averages at s of the group's trials that reached s,
//     sorted (the multiset DecideMedian sorts per (group, step)), and
//   * the trials that reported exactly at s, sorted by their best value up
//     to s (the trials the median at s judges).
// When one trial's reports change (normally: one more report), its curve is
// compared with the one it had; at the steps after their common prefix its
// running average leaves / joins / moves in the sorted averages (a binary
// search and an insertion each). A trial judged at s can change its verdict
// there only if its best lies between the old and the new median at s, and
// every candidate median (the median of the others, whichever the own value
// is) lies in [a[lo], a[hi + 1]] of the sorted averages; so the trials
// marked affected are those whose best at s lies in the union of that range
// before and after the change (a binary search in the second list), all
// those judged at s when the group has fewer than 4 averages at s or a bound
// is not finite (infinite running averages make the median NaN), and the
// changed trial. Decide() then gives exactly DecideMedian's decision (the
// same code: DecideMedianTrial), and trials outside TakeAffected() keep
// their action, step and final (a run's reason, which quotes the median of
// its last step, may change without a mark: the scheduler logs no run).
//
// The full recompute (DecideMedian, the coordinator's plan from every trial)
// stays the restart path and the oracle (SchedulerOptions::
// verify_search_plans; median_incremental_test.cc).
//
// Cost per Set: O(steps in the changed range x (log n + n x 8 bytes of
// memmove)) for a group of n trials plus the affected trials' Decide (each
// O(its steps x log n)); a new report step of the group is built from the
// trials that reached it (those still in the step range, found from the
// group's trials sorted by progress). Load is O(n log n) per step.
//
// Thread safety: none (the scheduler holds its lock).
#ifndef SMOE_ANALYSIS_SEARCH_MEDIAN_INCREMENTAL_H_
#define SMOE_ANALYSIS_SEARCH_MEDIAN_INCREMENTAL_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/search/median_stop.h"
#include "analysis/search/types.h"

namespace smoe::analysis::search {

class IncrementalMedian {
 public:
  explicit IncrementalMedian(const MedianConfig& c);

  // Trial `trial_id` is one the rule considers, in group `group`, with these
  // reports (its own, any order). Replaces what was set for it.
  void Set(const std::string& trial_id, const std::string& group,
           const std::vector<Report>& reports);
  // Set for many trials at once (a coordinator's first plan): sorts each
  // (group, step) once. REQUIRES: none of them was set before. Marks
  // nothing affected.
  struct Initial {
    const std::string* trial_id = nullptr;
    const std::string* group = nullptr;
    const std::vector<Report>* reports = nullptr;
  };
  void Load(const std::vector<Initial>& trials);
  // The trial is no longer considered (failed, cancelled). No-op if unknown.
  void Remove(const std::string& trial_id);
  bool Has(const std::string& trial_id) const;

  // DecideMedian's decision for a considered trial (Has); `errored` and
  // `paused` as Trial::errored / Trial::paused.
  Decision Decide(const std::string& trial_id, bool errored, bool paused) const;

  // The trials whose action may have changed since the last call (a
  // superset; includes every trial Set or Removed), sorted.
  std::set<std::string> TakeAffected();

 private:
  struct View {
    std::string trial_id;
    int group = -1;
    bool present = false;
    MedianCurve curve;
  };
  struct Judged {
    double best = 0;
    uint32_t trial = 0;
    bool operator<(const Judged& o) const {
      return best < o.best || (best == o.best && trial < o.trial);
    }
  };
  struct StepData {
    std::vector<double> averages;  // sorted ascending
    std::vector<Judged> judged;    // sorted by best
  };
  struct Bounds {
    bool all = false;  // every judged trial may change
    double lo = 0, hi = 0;
  };
  struct Group {
    std::string label;
    std::map<int64_t, StepData> steps;
    std::set<std::pair<int64_t, uint32_t>> by_progress;  // non-empty curves
  };

  Bounds BoundsOf(const StepData& d) const;
  void MarkRange(const StepData& d, const Bounds& before, const Bounds& after);
  // Moves trial t from curve `old_curve` to its view's curve (the view's
  // presence says whether it counts).
  void Update(uint32_t t, const MedianCurve& old_curve, bool was_present);
  uint32_t ViewOf(const std::string& trial_id);
  int GroupOf(const std::string& group);

  MedianConfig c_;
  std::vector<View> views_;
  std::unordered_map<std::string, uint32_t> index_;
  std::vector<Group> groups_;
  std::unordered_map<std::string, int> group_index_;
  std::set<uint32_t> affected_;
};

}  // namespace smoe::analysis::search

#endif  // SMOE_ANALYSIS_SEARCH_MEDIAN_INCREMENTAL_H_
