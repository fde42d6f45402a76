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
// can change are that trial (and its unit's) and, at each rung, those ranked
// around the promotion boundary (keep_i; a changed trial moves the others'
// ranks by at most one), and, at a rung whose completeness flipped, the trials
// below the boundary (their prunes become final or not). Decide() gives exactly
// the decision DecideAsha gives for the trial from the same trials and
// reports; the coordinator checks that on every plan in its tests
// (SchedulerOptions::verify_search_plans) and recomputes from every trial
// after a restart.
//
// aggregate_seeds: the ranked unit is a configuration (Trial::config) with
// its seeds, valued at a rung by their mean once all have a value there; a
// change to one seed re-ranks its unit and marks all its seeds.
// keep_neighbors: each rung also promotes the axis neighbours (same
// Trial::rest, axis +- 1) of its best unit; when the best unit of a rung
// changes (or keep_i leaves or reaches 0) the neighbours of the old and the
// new best are marked (found through an index by group, rest and axis).
//
// Cost: Set/Remove O(rungs x (log n + n x 16 bytes of memmove)) for a group
// of n units, plus, at rungs above a complete rung, O(keep) to recheck
// completeness (only once the group's first rung is complete, i.e. late in
// a sweep). Decide O(rungs + log n + seeds).
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
  // True for every AshaConfig (aggregate_seeds and keep_neighbors included);
  // kept for callers that ask.
  static bool Supports(const AshaConfig& c);

  explicit IncrementalAsha(const AshaConfig& c);

  // Trial `trial_id` is one the policy considers, in group `group`, with
  // these reports (its own, any order). Replaces what was set for it.
  // `facts` (may be null: none) gives its Trial::config, has_axis, axis and
  // rest, which aggregate_seeds and keep_neighbors read; they must not
  // change between calls for one trial.
  void Set(const std::string& trial_id, const std::string& group,
           const std::vector<Report>& reports, const Trial* facts = nullptr);
  // Set for many trials at once (the index a coordinator builds on its
  // first plan): O(n log n) per group and rung instead of n insertions.
  // REQUIRES: none of them was set before. Marks nothing affected.
  struct Initial {
    const std::string* trial_id = nullptr;
    const std::string* group = nullptr;
    const std::vector<Report>* reports = nullptr;
    const Trial* facts = nullptr;  // as Set's
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
    uint32_t unit = 0;
    bool present = false;
    std::vector<std::optional<RungValue>> at;
    int64_t progress = -1;
    double last_value = kNoValue;
  };
  // What is ranked: a trial, or (aggregate_seeds) a configuration's seeds.
  struct Unit {
    std::string key;  // ties are broken by it (DecideAsha's Unit::key)
    int group = -1;
    std::vector<uint32_t> members;             // present trials, by trial id
    std::vector<std::optional<RungValue>> at;  // the members' mean
    std::vector<int64_t> reached;  // per rung: members with a value there
    bool linked = false;           // has members
    bool has_axis = false;
    int64_t axis = 0;
    std::string rest;
  };
  struct Entry {
    double value = 0;
    uint32_t unit = 0;
  };
  struct Group {
    std::string label;
    int64_t considered = 0;                  // linked units
    std::vector<std::vector<Entry>> ranked;  // per rung, best first
    std::vector<int64_t> keep;               // per rung
    std::vector<bool> complete;              // per rung
  };
  struct Snapshot {
    std::vector<int64_t> keep;
    std::vector<bool> complete;
    std::vector<int64_t> best;  // per rung: the best unit, -1 for none
  };

  // a before b in a rung's ranking.
  bool Before(const Entry& a, const Entry& b) const;
  size_t Position(const Group& g, size_t rung, const Entry& e) const;
  void Summarise(Group* g) const;
  Snapshot Snap(const Group& g) const;
  // keep_neighbors: the units of `g` on `u`'s axis line next to it.
  std::vector<uint32_t> NeighbourUnits(uint32_t u) const;
  bool Neighbours(uint32_t a, uint32_t b) const;
  // The unit's rung values from its members' (their mean where all have one).
  std::vector<std::optional<RungValue>> MeanAt(uint32_t u) const;
  void UnlinkUnit(uint32_t u);  // removes the unit's entries from its group
  void LinkUnit(uint32_t u);    // recomputes its values and inserts them
  void MarkUnit(uint32_t u);    // its members are affected
  // Adds (sign 1) or takes (-1) member t's rung values to / from reached.
  void Count(uint32_t u, uint32_t t, int sign);
  // Marks the units of `g` whose promotion or final prune may differ from
  // when it was `old`.
  void MarkAround(const Group& g, const Snapshot& old);
  void Change(uint32_t t, int group, const std::vector<Report>* reports,
              const Trial* facts);
  uint32_t ViewOf(const std::string& trial_id);
  int GroupOf(const std::string& group);
  uint32_t UnitOf(int group, const std::string& trial_id, const Trial* facts);
  // Sets view t's rung values, progress and last value from `reports`.
  void Evaluate(uint32_t t, const std::vector<Report>& reports);

  AshaConfig c_;
  std::vector<int64_t> rungs_;
  std::vector<View> views_;
  std::unordered_map<std::string, uint32_t> index_;
  std::vector<Unit> units_;
  std::unordered_map<std::string, uint32_t> unit_index_;  // group \x1f key
  // keep_neighbors: group \x1f rest \x1f axis -> units
  std::unordered_map<std::string, std::vector<uint32_t>> line_index_;
  std::vector<Group> groups_;
  std::unordered_map<std::string, int> group_index_;
  std::set<std::string> affected_;
};

}  // namespace smoe::analysis::search

#endif  // SMOE_ANALYSIS_SEARCH_ASHA_INCREMENTAL_H_
