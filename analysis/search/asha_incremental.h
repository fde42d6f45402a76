// Copyright 2026 SMoE Lab authors.
//
// File: analysis/search/asha_incremental.h
//
// ASHA's decisions (asha.h) maintained per report instead of recomputed
// from every trial (issue 35: planning cost per report independent of the
// sweep's size). Per group and rung it keeps the trials' rung values sorted
// best first (a sorted vector: an insertion is a binary search and a
// memmove), and per group and rung keep_i and whether the rung is complete.
// When one trial's reports or presence change, the trials whose decision
// can change are that trial and, at each rung, those ranked around the
// promotion boundary (keep_i; a changed trial moves the others' ranks by at
// most one), and, at a rung whose completeness flipped, the trials below
// the boundary (their prunes become final or not). Decide() gives exactly
// the decision DecideAsha gives for the trial from the same trials and
// reports; the coordinator checks that on every plan in its tests
// (SchedulerOptions::verify_search_plans) and recomputes from every trial
// after a restart.
//
// Supported: one unit per trial (no aggregate_seeds, no keep_neighbors);
// Supports() says so, and the coordinator plans the others per group.
//
// Cost: Set/Remove O(rungs x (log n + n x 16 bytes of memmove)) for a group
// of n trials, plus, at rungs above a complete rung, O(keep) to recheck
// completeness (only once the group's first rung is complete, i.e. late in
// a sweep). Decide O(rungs + log n).
//
// Thread safety: none (the scheduler holds its lock).
#ifndef SMOE_ANALYSIS_SEARCH_ASHA_INCREMENTAL_H_
#define SMOE_ANALYSIS_SEARCH_ASHA_INCREMENTAL_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/search/asha.h"
#include "analysis/search/types.h"

namespace smoe::analysis::search {

class IncrementalAsha {
 public:
  // True when `c` ranks single trials (no aggregate_seeds, no
  // keep_neighbors).
  static bool Supports(const AshaConfig& c);

  // REQUIRES: Supports(c).
  explicit IncrementalAsha(const AshaConfig& c);

  // Trial `trial_id` is one the policy considers, in group `group`, with
  // these reports (its own, any order). Replaces what was set for it.
  void Set(const std::string& trial_id, const std::string& group,
           const std::vector<Report>& reports);
  // Set for many trials at once (the index a coordinator builds on its
  // first plan): O(n log n) per group and rung instead of n insertions.
  // REQUIRES: none of them was set before. Marks nothing affected.
  struct Initial {
    const std::string* trial_id = nullptr;
    const std::string* group = nullptr;
    const std::vector<Report>* reports = nullptr;
  };
  void Load(const std::vector<Initial>& trials);
  // The trial is no longer considered (failed, cancelled). No-op if unknown.
  void Remove(const std::string& trial_id);
  bool Has(const std::string& trial_id) const;

  // DecideAsha's decision for a considered trial (Has), `errored` as
  // Trial::errored.
  Decision Decide(const std::string& trial_id, bool errored) const;

  // The trials whose decision may have changed since the last call (a
  // superset; includes every trial Set or Removed), sorted.
  std::set<std::string> TakeAffected();

 private:
  struct RungValue {
    int64_t step = 0;
    double value = 0;
  };
  struct View {
    std::string trial_id;
    int group = -1;
    bool present = false;
    std::vector<std::optional<RungValue>> at;
    int64_t progress = -1;
    double last_value = kNoValue;
  };
  struct Entry {
    double value = 0;
    uint32_t trial = 0;
  };
  struct Group {
    std::string label;
    int64_t considered = 0;
    std::vector<std::vector<Entry>> ranked;  // per rung, best first
    std::vector<int64_t> keep;               // per rung
    std::vector<bool> complete;              // per rung
  };

  // a before b in a rung's ranking.
  bool Before(const Entry& a, const Entry& b) const;
  size_t Position(const Group& g, size_t rung, const Entry& e) const;
  void Summarise(Group* g) const;
  void Unlink(uint32_t t);  // removes the trial's entries from its group
  void Link(uint32_t t);    // inserts them
  void Change(uint32_t t, int group, const std::vector<Report>* reports);
  // Marks the trials of `g` whose promotion or final prune may differ
  // from when its rungs had `old_keep` and `old_complete`.
  void MarkAround(const Group& g, const std::vector<int64_t>& old_keep,
                  const std::vector<bool>& old_complete);
  uint32_t ViewOf(const std::string& trial_id);
  int GroupOf(const std::string& group);
  // Sets view t's rung values, progress and last value from `reports`.
  void Evaluate(uint32_t t, const std::vector<Report>& reports);

  AshaConfig c_;
  std::vector<int64_t> rungs_;
  std::vector<View> views_;
  std::unordered_map<std::string, uint32_t> index_;
  std::vector<Group> groups_;
  std::unordered_map<std::string, int> group_index_;
  std::set<std::string> affected_;
};

}  // namespace smoe::analysis::search

#endif  // SMOE_ANALYSIS_SEARCH_ASHA_INCREMENTAL_H_
