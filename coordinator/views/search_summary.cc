// Copyright 2026 SMoE Lab authors.
#include "coordinator/views/search_summary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "analysis/search/asha.h"
#include "analysis/trial_labels.h"
#include "common/status_macros.h"
#include "coordinator/search_driver.h"

namespace smoe::coordinator::views {

using nlohmann::json;
using sweeps::AxisNames;
using sweeps::SearchSpec;
using sweeps::SweepKind;
using sweeps::SweepSpec;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

json Finite(double v) { return std::isfinite(v) ? json(v) : json(); }

// Refine's frontier: each group's state, means and the x values tried.
absl::StatusOr<std::vector<FrontierRow>> ReadFrontier(
    const SweepView& v, store::ExperimentStore* store,
    const std::vector<store::TrialRecord>& trials,
    const std::vector<json>& params, const std::set<std::string>& stopped,
    const std::vector<store::DecisionRecord>& log) {
  const SearchSpec& ss = v.spec.search;
  SMOE_ASSIGN_OR_RETURN(std::vector<store::TrialSummary> rows,
                        store->ListSummaries(v.record.sweep_id));
  std::unordered_map<std::string, double> finals;
  for (const store::TrialSummary& r : rows) {
    for (const auto& [name, value] : r.results) {
      if (IsSearchMetric(ss.metric, name)) finals[r.trial_id] = value;
    }
  }
  std::map<std::string, std::set<int64_t>> tried;
  for (const json& p : params) {
    if (!p.is_object() || !p.contains(ss.axis) ||
        !p[ss.axis].is_number_integer()) {
      continue;
    }
    tried[analysis::search::GroupLabel(p, ss.group_by)].insert(
        p[ss.axis].get<int64_t>());
  }
  // The settled state each group logged (resolved, unresolved, budget):
  // what the search decided, including a group stopped by the GPU-hour
  // budget, which the recomputed frontier (no budget applied) would show as
  // still exploring.
  std::map<std::string, const store::DecisionRecord*> settled;
  for (const store::DecisionRecord& d : log) {
    if (d.trial_id.empty()) settled[d.group] = &d;
  }
  std::vector<FrontierRow> out;
  for (analysis::search::RefineGroup& g :
       RefineFrontier(v.spec, trials, finals, stopped)) {
    FrontierRow row;
    row.tried = tried[g.group];
    if (auto it = settled.find(g.group); it != settled.end()) {
      row.settled = it->second->action;
      row.settled_reason = it->second->reason;
    }
    row.group = std::move(g);
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace

namespace {

// The last decision (other than "add") of a trial when it is a prune: the
// value a pruned trial was stopped at (pruned_points).
struct LastPrune {
  int64_t step = 0;
  double value = 0;
  bool final = false;
};

// What the snapshot path of ReadSearchSummary keeps per sweep between
// requests (issue 35), so that a request costs O(changes since the last
// one + pruned trials + decisions shown), not O(trials + decisions):
//  - the labeler (which params tell the trials apart), learned from the
//    snapshot's rows once and then only from rows added at the end (new
//    trials get the next ordinals; the rows before keep their trials, whose
//    ids are hashes of their params), with the two facts read from the same
//    rows: the first trial's `steps` (SearchMaxStepsOfParams) and whether
//    every trial id has the "<sweep>/" prefix;
//  - the positions of the pruned trials, updated from the positions a
//    refreshed snapshot changed (SweepSnapshot::changed) when its base is
//    the snapshot seen last, else rescanned;
//  - per trial whose last decision (other than "add") is a prune, that
//    prune, updated from the decisions logged after the last seq read.
// The labeler is dropped when the sweep's record is another one's (a sweep
// of the same name created again); the rest is tied to the snapshots'
// trial index (SweepSnapshot::index), which a reload (a new store, a sweep
// created again, trials added, many changes at once) replaces.
class SearchCache {
 public:
  struct Entry {
    absl::Mutex mu;
    absl::Time created_at ABSL_GUARDED_BY(mu) = absl::InfinitePast();
    // Labeler and row facts: rows [0, learned) of `index`'s snapshots.
    std::weak_ptr<const TrialIndex> index ABSL_GUARDED_BY(mu);
    std::vector<std::string> axes ABSL_GUARDED_BY(mu);
    std::unique_ptr<analysis::TrialLabeler> labeler ABSL_GUARDED_BY(mu);
    size_t learned ABSL_GUARDED_BY(mu) = 0;
    uint64_t ids_hash ABSL_GUARDED_BY(mu) = 0;  // of rows [0, learned)'s ids
    std::optional<int64_t> first_steps ABSL_GUARDED_BY(mu);
    bool prefixed ABSL_GUARDED_BY(mu) = true;
    // Pruned positions as of snapshot (pruned_index, pruned_version).
    std::weak_ptr<const TrialIndex> pruned_index ABSL_GUARDED_BY(mu);
    int64_t pruned_version ABSL_GUARDED_BY(mu) = -1;
    std::set<size_t> pruned ABSL_GUARDED_BY(mu);
    // Decisions read: those with seq <= after_seq, while the snapshots
    // share `log_index` (a new index, a reload of the snapshot: all again;
    // that ties the log read to one store and one sweep of this name).
    std::weak_ptr<const TrialIndex> log_index ABSL_GUARDED_BY(mu);
    int64_t after_seq ABSL_GUARDED_BY(mu) = 0;
    // The log was read backwards from its newest seq only until every trial
    // pruned then met its last decision: a pruned trial without a prune here
    // has it (or its absence) before that, and gets the log read whole once.
    bool log_partial ABSL_GUARDED_BY(mu) = false;
    std::unordered_map<std::string, LastPrune> prunes ABSL_GUARDED_BY(mu);
  };

  std::shared_ptr<Entry> Of(const std::string& sweep_id) {
    absl::MutexLock lock(&mu_);
    std::shared_ptr<Entry>& e = entries_[sweep_id];
    if (e == nullptr) {
      if (entries_.size() > kMaxSweeps) {
        // Bounded: drop the others (each is rebuilt on its next request).
        std::shared_ptr<Entry> keep = std::make_shared<Entry>();
        entries_.clear();
        entries_[sweep_id] = keep;
        return keep;
      }
      e = std::make_shared<Entry>();
    }
    return e;
  }

 private:
  static constexpr size_t kMaxSweeps = 32;
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
};

SearchCache& Caches() {
  static auto* cache = new SearchCache;
  return *cache;
}

// Decisions per page when the log is read backwards.
constexpr int64_t kLogPage = 1024;

uint64_t HashId(uint64_t h, const std::string& id) {
  return (h ^ std::hash<std::string>()(id)) * 0x100000001b3ULL + 0x9e3779b9ULL;
}

// Brings `e` to `snapshot` and the decision log (see SearchCache).
absl::Status SyncEntry(SearchCache::Entry& e, const SweepView& v,
                       const SweepSnapshot& snapshot,
                       const std::vector<std::string>& axes, int64_t newest_seq,
                       store::ExperimentStore* store)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu) {
  const std::string& sweep_id = v.record.sweep_id;
  if (e.created_at != v.record.created_at) {
    e.created_at = v.record.created_at;
    e.labeler = nullptr;
  }
  const RowTable& rows = snapshot.rows;
  // The labeler and row facts.
  const bool same_index = e.labeler != nullptr && e.axes == axes &&
                          e.index.lock() == snapshot.index;
  // New trials come at the end: learn only those when the rows learned are
  // still the first ones (their ids hashed in order: one pass over the ids,
  // not over every trial's params).
  bool grown = false;
  if (e.labeler != nullptr && e.axes == axes && !same_index &&
      rows.size() >= e.learned) {
    uint64_t h = 0;
    for (size_t i = 0; i < e.learned; ++i) h = HashId(h, rows[i]->trial_id);
    grown = h == e.ids_hash;
  }
  if (!same_index && !grown) {
    e.labeler = std::make_unique<analysis::TrialLabeler>(axes);
    e.axes = axes;
    e.learned = 0;
    e.ids_hash = 0;
    e.first_steps.reset();
    e.prefixed = true;
  }
  if (!same_index) {
    const std::string prefix = absl::StrCat(sweep_id, "/");
    for (size_t i = e.learned; i < rows.size(); ++i) {
      const TrialRow& p = *rows[i];
      e.labeler->Add(p.param_values(), p.seed);
      e.ids_hash = HashId(e.ids_hash, p.trial_id);
      if (!e.first_steps.has_value() && p.param_values().is_object()) {
        auto it = p.param_values().find("steps");
        if (it != p.param_values().end() && it->is_number_integer()) {
          e.first_steps = it->get<int64_t>();
        }
      }
      if (e.prefixed && !absl::StartsWith(p.trial_id, prefix)) {
        e.prefixed = false;
      }
    }
    e.learned = rows.size();
    e.index = snapshot.index;
  }
  // The pruned positions.
  const bool same_rows =
      e.pruned_index.lock() == snapshot.index && snapshot.index != nullptr;
  auto mark = [&](size_t pos) {
    if (rows[pos]->state == store::TrialState::kPruned) {
      e.pruned.insert(pos);
    } else {
      e.pruned.erase(pos);
    }
  };
  if (same_rows && snapshot.version == e.pruned_version) {
    // Seen already.
  } else if (same_rows && snapshot.base_version == e.pruned_version &&
             snapshot.base_version >= 0) {
    for (size_t pos : snapshot.changed) {
      if (pos < rows.size()) mark(pos);
    }
  } else {
    e.pruned.clear();
    for (size_t i = 0; i < rows.size(); ++i) mark(i);
  }
  e.pruned_index = snapshot.index;
  e.pruned_version = snapshot.version;
  // The decisions logged since the last read.
  if (e.log_index.lock() != snapshot.index) {
    e.log_index = snapshot.index;
    e.prunes.clear();
    // The log read backwards from its newest decision, a page at a time (at
    // least one), until every pruned trial has met its last decision (other
    // than "add"): the trials met on the way keep theirs when it is a
    // prune. A trial pruned later is pruned by a decision read forward from
    // the newest; one pruned without a prune met gets the log read whole
    // (below).
    e.log_partial = true;
    e.after_seq = newest_seq;
    std::unordered_set<std::string> want, met;
    for (size_t pos : e.pruned) want.insert(rows[pos]->trial_id);
    int64_t before = newest_seq + 1;
    do {
      SMOE_ASSIGN_OR_RETURN(
          std::vector<store::DecisionRecord> page,
          store->ListDecisionsBefore(sweep_id, before, kLogPage));
      if (page.empty()) break;
      before = page.front().seq;
      for (auto it = page.rbegin(); it != page.rend(); ++it) {
        const store::DecisionRecord& d = *it;
        if (d.trial_id.empty() || d.action == "add") continue;
        if (!met.insert(d.trial_id).second) continue;
        want.erase(d.trial_id);
        if (d.action == "prune")
          e.prunes[d.trial_id] = {d.step, d.value, d.final};
      }
      if (static_cast<int64_t>(page.size()) < kLogPage) break;
    } while (!want.empty());
  }
  auto read = [&]() -> absl::Status {
    SMOE_ASSIGN_OR_RETURN(std::vector<store::DecisionRecord> log,
                          store->ListDecisions(sweep_id, e.after_seq, 0));
    for (const store::DecisionRecord& d : log) {
      e.after_seq = std::max(e.after_seq, d.seq);
      if (d.trial_id.empty() || d.action == "add") continue;
      if (d.action == "prune") {
        e.prunes[d.trial_id] = {d.step, d.value, d.final};
      } else {
        e.prunes.erase(d.trial_id);
      }
    }
    return absl::OkStatus();
  };
  SMOE_RETURN_IF_ERROR(read());
  if (e.log_partial) {
    for (size_t pos : e.pruned) {
      if (e.prunes.count(rows[pos]->trial_id)) continue;
      e.log_partial = false;
      e.prunes.clear();
      e.after_seq = 0;
      SMOE_RETURN_IF_ERROR(read());
      break;
    }
  }
  return absl::OkStatus();
}

// Adds the kind's defaults for params missing from `params` (the analysis,
// and so the charts' facets and x, reads a missing param as the kind's
// default, e.g. attention: softmax).
json WithDefaults(const json& params, const trials::TrialKind* kind) {
  json p = params.is_object() ? params : json::object();
  if (kind != nullptr) {
    for (const trials::Param& param : kind->params) {
      if (!param.default_value.is_null() && !p.contains(param.name)) {
        p[param.name] = param.default_value;
      }
    }
  }
  return p;
}

// Device-hours: attempts' wall time x devices, from one read.
absl::Status AddDeviceHours(const SweepView& v, store::ExperimentStore* store,
                            bool prefixed, SearchSummary* out) {
  const std::string& sweep_id = v.record.sweep_id;
  const int devices = std::max(1, v.spec.resources.gpus_per_trial);
  const absl::Time now = absl::Now();
  // When every trial's id starts with "<sweep>/" (the scheduler's names),
  // the store reads the attempts from that key range: the same rows, in the
  // same order, so the same sum.
  const std::string prefix = absl::StrCat(sweep_id, "/");
  SMOE_ASSIGN_OR_RETURN(
      std::vector<store::AttemptRecord> attempts,
      prefixed ? store->ListSweepAttemptsWithPrefix(sweep_id, prefix)
               : store->ListSweepAttempts(sweep_id));
  for (const store::AttemptRecord& a : attempts) {
    const absl::Time end =
        a.outcome == store::AttemptOutcome::kRunning ? now : a.ended_at;
    if (end <= a.started_at) continue;
    out->device_hours_used += absl::ToDoubleHours(end - a.started_at) * devices;
  }
  out->device = v.spec.resources.gpus_per_trial > 0 ? "GPU" : "slot";
  if (out->usage.trial_steps_used > 0) {
    out->device_hours_full_grid_estimate =
        out->device_hours_used *
        static_cast<double>(out->usage.full_grid_trial_steps) /
        static_cast<double>(out->usage.trial_steps_used);
  }
  return absl::OkStatus();
}

std::vector<int64_t> Rungs(const SweepSpec& spec, int64_t max_steps) {
  const SearchSpec& ss = spec.search;
  if ((ss.strategy == "asha" || ss.early_stop == "asha") && ss.min_steps > 0) {
    analysis::search::AshaConfig c;
    c.min_steps = ss.min_steps;
    c.reduction = std::max<int64_t>(2, ss.reduction);
    c.max_steps = max_steps;
    return analysis::search::AshaRungs(c);
  }
  return {};
}

// ReadSearchSummary from the read model's snapshot (asha, median): the
// decision count and the newest `limit` from the store's index, the rest
// from the sweep's SearchCache entry brought up to date.
absl::Status ReadFromSnapshot(const SweepView& v, store::ExperimentStore* store,
                              int limit, const SweepSnapshot& snapshot,
                              SearchSummary* out) {
  const std::string& sweep_id = v.record.sweep_id;
  SMOE_ASSIGN_OR_RETURN(std::vector<store::DecisionRecord> shown,
                        store->ListLastDecisions(sweep_id, std::max(0, limit)));
  SMOE_ASSIGN_OR_RETURN(out->decisions_total, store->CountDecisions(sweep_id));
  // The newest decision's seq (0: none).
  int64_t newest_seq = shown.empty() ? 0 : shown.back().seq;
  if (limit <= 0 && out->decisions_total > 0) {
    SMOE_ASSIGN_OR_RETURN(std::vector<store::DecisionRecord> newest,
                          store->ListLastDecisions(sweep_id, 1));
    if (!newest.empty()) newest_seq = newest.back().seq;
  }
  const std::vector<std::string> axes = AxisNames(v.spec);  // grid, sampled
  const RowTable& rows = snapshot.rows;
  std::shared_ptr<SearchCache::Entry> entry = Caches().Of(sweep_id);
  bool prefixed = false;
  {
    absl::MutexLock lock(&entry->mu);
    SearchCache::Entry& e = *entry;
    SMOE_RETURN_IF_ERROR(SyncEntry(e, v, snapshot, axes, newest_seq, store));
    // Labels only for the trials of the decisions shown.
    std::unordered_map<std::string, std::string> labels;
    for (const store::DecisionRecord& d : shown) {
      if (d.trial_id.empty() || labels.count(d.trial_id)) continue;
      std::optional<size_t> at = snapshot.Find(d.trial_id);
      if (!at || *at >= rows.size()) continue;
      const TrialRow& p = *rows[*at];
      labels[d.trial_id] = e.labeler->Label(p.param_values(), p.seed);
    }
    for (store::DecisionRecord& d : shown) {
      auto it = labels.find(d.trial_id);
      std::string label = it != labels.end() ? it->second : std::string();
      out->decisions.push_back({std::move(d), std::move(label)});
    }
    out->rungs =
        Rungs(v.spec, v.spec.search.max_steps > 0 || !e.first_steps.has_value()
                          ? SearchMaxStepsOfParams(v.spec, {})
                          : *e.first_steps);
    // Pruned trials by ordinal, and the value each was stopped at (their
    // last decision, when it is a prune).
    const trials::TrialKind* kind = SweepKind(v.spec);
    for (size_t pos : e.pruned) {
      const TrialRow& p = *rows[pos];
      out->pruned.push_back(p.trial_id);
      auto it = e.prunes.find(p.trial_id);
      if (it == e.prunes.end()) continue;
      const LastPrune& d = it->second;
      out->pruned_points.push_back(
          {p.trial_id, WithDefaults(p.param_values(), kind), p.seed, d.step,
           std::isfinite(d.value) ? d.value : kNaN, d.final});
    }
    prefixed = e.prefixed;
  }
  return AddDeviceHours(v, store, prefixed, out);
}

}  // namespace

absl::StatusOr<SearchSummary> ReadSearchSummary(Scheduler* scheduler,
                                                store::ExperimentStore* store,
                                                const std::string& sweep_id,
                                                int limit,
                                                const SweepSnapshot* snapshot) {
  SMOE_ASSIGN_OR_RETURN(SweepView v, scheduler->GetSweep(sweep_id));
  SearchSummary out;
  out.search = v.spec.search;
  out.adaptive = IsAdaptive(v.spec);
  if (!out.adaptive) return out;
  SMOE_ASSIGN_OR_RETURN(out.usage, scheduler->GetSearchUsage(sweep_id));
  // Refine's frontier reads the trials' records: the scheduler's then.
  if (snapshot != nullptr && snapshot->index != nullptr &&
      v.spec.search.strategy != "refine") {
    SMOE_RETURN_IF_ERROR(ReadFromSnapshot(v, store, limit, *snapshot, &out));
    return out;
  }
  // Without a snapshot: the scheduler's records, each trial's params parsed
  // once, and the whole decision log (the reference the snapshot path is
  // tested against).
  SMOE_ASSIGN_OR_RETURN(std::vector<store::TrialRecord> trials,
                        scheduler->ListTrials(sweep_id));
  std::vector<json> parsed;
  parsed.reserve(trials.size());
  std::vector<const json*> params;
  params.reserve(trials.size());
  for (const store::TrialRecord& t : trials) {
    parsed.push_back(json::parse(t.params_json, nullptr, false));
  }
  for (size_t i = 0; i < trials.size(); ++i) {
    params.push_back(&parsed[i]);
    if (trials[i].state == store::TrialState::kPruned) {
      out.pruned.push_back(trials[i].trial_id);
    }
  }
  SMOE_ASSIGN_OR_RETURN(std::vector<store::DecisionRecord> log,
                        store->ListDecisions(sweep_id, 0, 0));
  out.decisions_total = static_cast<int64_t>(log.size());
  const size_t keep = static_cast<size_t>(std::max(0, limit));
  const size_t first_shown = log.size() > keep ? log.size() - keep : 0;
  // Decisions name their trial by the parameters that tell it apart: which
  // those are is learned from every trial, the labels made only for the
  // trials of the decisions shown.
  const std::vector<std::string> axes = AxisNames(v.spec);  // grid, sampled
  std::unordered_map<std::string, std::string> labels;
  {
    analysis::TrialLabeler labeler(axes);
    std::unordered_map<std::string, size_t> shown;
    for (size_t i = first_shown; i < log.size(); ++i) {
      if (!log[i].trial_id.empty()) shown.emplace(log[i].trial_id, SIZE_MAX);
    }
    for (size_t i = 0; i < trials.size(); ++i) {
      labeler.Add(parsed[i], trials[i].seed);
      auto it = shown.find(trials[i].trial_id);
      if (it != shown.end()) it->second = i;
    }
    for (const auto& [id, i] : shown) {
      if (i != SIZE_MAX) labels[id] = labeler.Label(parsed[i], trials[i].seed);
    }
  }
  for (size_t i = first_shown; i < log.size(); ++i) {
    auto it = labels.find(log[i].trial_id);
    out.decisions.push_back(
        {log[i], it != labels.end() ? it->second : std::string()});
  }
  out.rungs = Rungs(v.spec, SearchMaxStepsOfParams(v.spec, params));

  // Pruned points: the value each pruned trial was stopped at, and which
  // trials are stopped for good (their last decision is a final prune).
  std::map<std::string, const store::DecisionRecord*> last;
  for (const store::DecisionRecord& d : log) {
    if (!d.trial_id.empty() && d.action != "add") last[d.trial_id] = &d;
  }
  std::set<std::string> stopped;
  const trials::TrialKind* kind = SweepKind(v.spec);
  for (size_t i = 0; i < trials.size(); ++i) {
    const store::TrialRecord& t = trials[i];
    if (t.state != store::TrialState::kPruned) continue;
    auto it = last.find(t.trial_id);
    if (it == last.end() || it->second->action != "prune") continue;
    const store::DecisionRecord& d = *it->second;
    if (d.final) stopped.insert(t.trial_id);
    out.pruned_points.push_back(
        {t.trial_id, WithDefaults(parsed[i], kind), t.seed, d.step,
         std::isfinite(d.value) ? d.value : kNaN, d.final});
  }

  if (v.spec.search.strategy == "refine") {
    SMOE_ASSIGN_OR_RETURN(out.frontier,
                          ReadFrontier(v, store, trials, parsed, stopped, log));
  }
  const std::string prefix = absl::StrCat(sweep_id, "/");
  const bool prefixed = std::all_of(
      trials.begin(), trials.end(),
      [&](const auto& t) { return absl::StartsWith(t.trial_id, prefix); });
  SMOE_RETURN_IF_ERROR(AddDeviceHours(v, store, prefixed, &out));
  return out;
}

json SearchJson(const SearchSummary& s) {
  json out = {{"strategy", s.search.strategy},
              {"metric", s.search.metric},
              {"axis", s.search.axis},
              {"early_stop", s.search.early_stop},
              {"smooth_evals", s.search.smooth_evals},
              {"budget_gpu_hours", s.search.budget_gpu_hours},
              {"adaptive", s.adaptive}};
  if (!s.adaptive) return out;
  out["trial_steps_used"] = s.usage.trial_steps_used;
  out["full_grid_trial_steps"] = s.usage.full_grid_trial_steps;
  out["pruned"] = s.pruned;
  out["decisions_total"] = s.decisions_total;
  json decisions = json::array();
  for (const SearchDecision& sd : s.decisions) {
    const store::DecisionRecord& d = sd.record;
    decisions.push_back({{"seq", d.seq},
                         {"trial_id", d.trial_id},
                         {"trial_label", sd.trial_label},
                         {"action", d.action},
                         {"group", d.group},
                         {"rung", d.rung},
                         {"step", d.step},
                         {"value", Finite(d.value)},
                         {"cutoff", Finite(d.cutoff)},
                         {"final", d.final},
                         {"reason", d.reason},
                         {"at_ms", absl::ToUnixMillis(d.at)}});
  }
  out["decisions"] = std::move(decisions);
  out["rungs"] = s.rungs;
  json pruned_points = json::array();
  for (const PrunedPoint& p : s.pruned_points) {
    pruned_points.push_back({{"trial_id", p.trial_id},
                             {"params", p.params},
                             {"seed", p.seed},
                             {"step", p.step},
                             {"value", Finite(p.value)},
                             {"final", p.final}});
  }
  out["pruned_points"] = std::move(pruned_points);
  json frontier = json::array();
  for (const FrontierRow& r : s.frontier) {
    const analysis::search::RefineGroup& g = r.group;
    json means = json::object();
    for (const auto& [x, m] : g.mean) means[std::to_string(x)] = Finite(m);
    json row = {{"group", g.group},
                {"state", analysis::search::RefineStateName(g.state)},
                {"best", g.best},
                {"best_mean", Finite(g.best_mean)},
                {"best_freq", g.best_freq},
                {"seeds", g.seeds},
                {"means", means},
                {"tried", r.tried},
                {"stopped", g.stopped},
                {"reason", g.reason}};
    if (!r.settled.empty()) {
      row["settled"] = r.settled;
      row["settled_reason"] = r.settled_reason;
      // A group the budget settled keeps that state: nothing more is added
      // for it, whatever the recomputed frontier would want.
      if (r.settled == "budget") row["state"] = "budget";
    }
    frontier.push_back(std::move(row));
  }
  out["frontier"] = std::move(frontier);
  out["device"] = s.device;
  out["device_hours_used"] = s.device_hours_used;
  out["device_hours_full_grid_estimate"] =
      s.device_hours_full_grid_estimate.has_value()
          ? json(*s.device_hours_full_grid_estimate)
          : json();
  return out;
}

absl::StatusOr<json> ReadSearchJson(Scheduler* scheduler,
                                    store::ExperimentStore* store,
                                    const std::string& sweep_id, int limit,
                                    const SweepSnapshot* snapshot) {
  SMOE_ASSIGN_OR_RETURN(
      SearchSummary s,
      ReadSearchSummary(scheduler, store, sweep_id, limit, snapshot));
  return SearchJson(s);
}

}  // namespace smoe::coordinator::views
