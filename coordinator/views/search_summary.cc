// Copyright 2026 SMoE Lab authors.
#include "coordinator/views/search_summary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <unordered_map>
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
  std::map<std::string, double> finals;
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

// One trial as the summary reads it: from the scheduler's records (parsed
// here) or from the read model's snapshot (parsed there).
struct TrialFacts {
  const std::string* trial_id;
  const json* params;  // anything but an object: no params
  int64_t seed;
  store::TrialState state;
};

// The labeler learned from a snapshot's trials, kept per sweep while its
// snapshots share one trial index: a snapshot refreshed after a change
// shares its base's index and has the same trials with the same params (a
// trial's id is a hash of them; new trials reload the snapshot with a new
// index), so a refresh does not relearn from every trial (issue 35).
class LabelerCache {
 public:
  // Labels for `ids` (trial ids of the snapshot) by the labeler of the
  // snapshot's trials, learned now if the cached one is another index's.
  std::unordered_map<std::string, std::string> Labels(
      const std::string& sweep_id, const SweepSnapshot& snapshot,
      const std::vector<std::string>& axes,
      const std::vector<std::pair<std::string, size_t>>& ids) {
    absl::MutexLock lock(&mu_);
    Entry& e = entries_[sweep_id];
    if (e.index.lock() != snapshot.index || e.axes != axes ||
        e.labeler == nullptr) {
      if (entries_.size() > kMaxSweeps) {
        // Bounded: drop the others (each is rebuilt on its next request).
        Entry keep = std::move(e);
        entries_.clear();
        entries_[sweep_id] = std::move(keep);
      }
      Entry& fresh = entries_[sweep_id];
      fresh.index = snapshot.index;
      fresh.axes = axes;
      fresh.labeler = std::make_unique<analysis::TrialLabeler>(axes);
      for (const RowTable::Row& row : snapshot.rows) {
        fresh.labeler->Add(row->param_values(), row->seed);
      }
    }
    Entry& cur = entries_[sweep_id];
    std::unordered_map<std::string, std::string> out;
    for (const auto& [id, pos] : ids) {
      const TrialRow& p = *snapshot.rows[pos];
      out[id] = cur.labeler->Label(p.param_values(), p.seed);
    }
    return out;
  }

 private:
  static constexpr size_t kMaxSweeps = 32;
  struct Entry {
    std::weak_ptr<const TrialIndex> index;
    std::vector<std::string> axes;
    std::unique_ptr<analysis::TrialLabeler> labeler;
  };
  absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

LabelerCache& Labelers() {
  static auto* cache = new LabelerCache;
  return *cache;
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
  const bool from_snapshot =
      snapshot != nullptr && v.spec.search.strategy != "refine";
  std::vector<store::TrialRecord> trials;
  std::vector<json> parsed;
  std::vector<TrialFacts> facts;
  if (from_snapshot) {
    facts.reserve(snapshot->rows.size());
    for (const RowTable::Row& row : snapshot->rows) {
      const TrialRow& p = *row;
      facts.push_back({&p.trial_id, &p.param_values(), p.seed, p.state});
    }
  } else {
    SMOE_ASSIGN_OR_RETURN(trials, scheduler->ListTrials(sweep_id));
    // Each trial's params, parsed once.
    parsed.reserve(trials.size());
    facts.reserve(trials.size());
    for (const store::TrialRecord& t : trials) {
      parsed.push_back(json::parse(t.params_json, nullptr, false));
      facts.push_back({&t.trial_id, &parsed.back(), t.seed, t.state});
    }
  }
  std::vector<const json*> params;
  params.reserve(facts.size());
  for (const TrialFacts& t : facts) {
    params.push_back(t.params);
    if (t.state == store::TrialState::kPruned)
      out.pruned.push_back(*t.trial_id);
  }
  SMOE_ASSIGN_OR_RETURN(std::vector<store::DecisionRecord> log,
                        store->ListDecisions(sweep_id, 0, 0));
  out.decisions_total = static_cast<int64_t>(log.size());
  const size_t keep = static_cast<size_t>(std::max(0, limit));
  const size_t first_shown = log.size() > keep ? log.size() - keep : 0;
  // Decisions name their trial by the parameters that tell it apart: which
  // those are is learned from every trial (once per snapshot's trial set
  // with a snapshot), the labels made only for the trials of the decisions
  // shown.
  const std::vector<std::string> axes = AxisNames(v.spec);  // grid, sampled
  std::unordered_map<std::string, std::string> labels;
  if (from_snapshot && snapshot->index != nullptr) {
    std::vector<std::pair<std::string, size_t>> ids;
    std::set<std::string> seen;
    for (size_t i = first_shown; i < log.size(); ++i) {
      const std::string& id = log[i].trial_id;
      if (id.empty() || !seen.insert(id).second) continue;
      std::optional<size_t> at = snapshot->Find(id);
      if (at && *at < facts.size()) ids.emplace_back(id, *at);
    }
    labels = Labelers().Labels(sweep_id, *snapshot, axes, ids);
  } else {
    analysis::TrialLabeler labeler(axes);
    std::unordered_map<std::string, const TrialFacts*> shown;
    for (size_t i = first_shown; i < log.size(); ++i) {
      if (!log[i].trial_id.empty()) shown.emplace(log[i].trial_id, nullptr);
    }
    for (const TrialFacts& t : facts) {
      labeler.Add(*t.params, t.seed);
      auto it = shown.find(*t.trial_id);
      if (it != shown.end()) it->second = &t;
    }
    for (const auto& [id, t] : shown) {
      if (t != nullptr) labels[id] = labeler.Label(*t->params, t->seed);
    }
  }
  for (size_t i = first_shown; i < log.size(); ++i) {
    auto it = labels.find(log[i].trial_id);
    out.decisions.push_back(
        {log[i], it != labels.end() ? it->second : std::string()});
  }

  const SearchSpec& ss = v.spec.search;
  if ((ss.strategy == "asha" || ss.early_stop == "asha") && ss.min_steps > 0) {
    analysis::search::AshaConfig c;
    c.min_steps = ss.min_steps;
    c.reduction = std::max<int64_t>(2, ss.reduction);
    c.max_steps = SearchMaxStepsOfParams(v.spec, params);
    out.rungs = analysis::search::AshaRungs(c);
  }

  // Pruned points: the value each pruned trial was stopped at, and which
  // trials are stopped for good (their last decision is a final prune).
  std::map<std::string, const store::DecisionRecord*> last;
  for (const store::DecisionRecord& d : log) {
    if (!d.trial_id.empty() && d.action != "add") last[d.trial_id] = &d;
  }
  std::set<std::string> stopped;
  const trials::TrialKind* kind = SweepKind(v.spec);
  for (const TrialFacts& t : facts) {
    if (t.state != store::TrialState::kPruned) continue;
    auto it = last.find(*t.trial_id);
    if (it == last.end() || it->second->action != "prune") continue;
    const store::DecisionRecord& d = *it->second;
    if (d.final) stopped.insert(*t.trial_id);
    json p = t.params->is_object() ? *t.params : json::object();
    // The analysis (and so the charts' facets and x) reads a missing param
    // as the kind's default (e.g. attention: softmax): the same here.
    if (kind != nullptr) {
      for (const trials::Param& param : kind->params) {
        if (!param.default_value.is_null() && !p.contains(param.name)) {
          p[param.name] = param.default_value;
        }
      }
    }
    out.pruned_points.push_back({*t.trial_id, std::move(p), t.seed, d.step,
                                 std::isfinite(d.value) ? d.value : kNaN,
                                 d.final});
  }

  if (ss.strategy == "refine") {
    SMOE_ASSIGN_OR_RETURN(out.frontier,
                          ReadFrontier(v, store, trials, parsed, stopped, log));
  }

  // Device-hours: attempts' wall time x devices, from one read.
  const int devices = std::max(1, v.spec.resources.gpus_per_trial);
  const absl::Time now = absl::Now();
  // When every trial's id starts with "<sweep>/" (the scheduler's names),
  // the store reads the attempts from that key range: the same rows, in the
  // same order, so the same sum.
  const std::string prefix = absl::StrCat(sweep_id, "/");
  const bool prefixed =
      std::all_of(facts.begin(), facts.end(), [&](const TrialFacts& t) {
        return absl::StartsWith(*t.trial_id, prefix);
      });
  SMOE_ASSIGN_OR_RETURN(
      std::vector<store::AttemptRecord> attempts,
      prefixed ? store->ListSweepAttemptsWithPrefix(sweep_id, prefix)
               : store->ListSweepAttempts(sweep_id));
  for (const store::AttemptRecord& a : attempts) {
    const absl::Time end =
        a.outcome == store::AttemptOutcome::kRunning ? now : a.ended_at;
    if (end <= a.started_at) continue;
    out.device_hours_used += absl::ToDoubleHours(end - a.started_at) * devices;
  }
  out.device = v.spec.resources.gpus_per_trial > 0 ? "GPU" : "slot";
  if (out.usage.trial_steps_used > 0) {
    out.device_hours_full_grid_estimate =
        out.device_hours_used *
        static_cast<double>(out.usage.full_grid_trial_steps) /
        static_cast<double>(out.usage.trial_steps_used);
  }
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
