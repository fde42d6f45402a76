// Copyright 2026 SMoE Lab authors.
#include "coordinator/views/search_summary.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "analysis/search/asha.h"
#include "analysis/trial_labels.h"
#include "common/status_macros.h"
#include "coordinator/search_driver.h"

namespace smoe::coordinator {

using nlohmann::json;

absl::StatusOr<json> SearchJson(Scheduler* scheduler,
                                store::ExperimentStore* store,
                                const std::string& sweep_id, int limit) {
  SMOE_ASSIGN_OR_RETURN(SweepView v, scheduler->GetSweep(sweep_id));
  json out = {{"strategy", v.spec.search.strategy},
              {"metric", v.spec.search.metric},
              {"axis", v.spec.search.axis},
              {"early_stop", v.spec.search.early_stop},
              {"smooth_evals", v.spec.search.smooth_evals},
              {"budget_gpu_hours", v.spec.search.budget_gpu_hours},
              {"adaptive", IsAdaptive(v.spec)}};
  if (!IsAdaptive(v.spec)) return out;
  SMOE_ASSIGN_OR_RETURN(SearchUsage u, scheduler->GetSearchUsage(sweep_id));
  out["trial_steps_used"] = u.trial_steps_used;
  out["full_grid_trial_steps"] = u.full_grid_trial_steps;
  SMOE_ASSIGN_OR_RETURN(std::vector<store::TrialRecord> trials,
                        scheduler->ListTrials(sweep_id));
  json pruned = json::array();
  for (const store::TrialRecord& t : trials) {
    if (t.state == store::TrialState::kPruned) pruned.push_back(t.trial_id);
  }
  out["pruned"] = pruned;
  // Decisions name their trial by the parameters that tell it apart.
  std::vector<analysis::LabelInput> label_in;
  label_in.reserve(trials.size());
  for (const store::TrialRecord& t : trials) {
    label_in.push_back(
        {t.trial_id, json::parse(t.params_json, nullptr, false), t.seed});
  }
  const std::vector<std::string> axes = AxisNames(v.spec);  // grid, sampled
  const std::map<std::string, std::string> labels =
      analysis::TrialLabels(label_in, axes);
  SMOE_ASSIGN_OR_RETURN(std::vector<store::DecisionRecord> log,
                        store->ListDecisions(sweep_id, 0, 0));
  out["decisions_total"] = log.size();
  const size_t keep = static_cast<size_t>(std::max(0, limit));
  const size_t first = log.size() > keep ? log.size() - keep : 0;
  json decisions = json::array();
  for (size_t i = first; i < log.size(); ++i) {
    const store::DecisionRecord& d = log[i];
    decisions.push_back(
        {{"seq", d.seq},
         {"trial_id", d.trial_id},
         {"trial_label",
          labels.count(d.trial_id) ? labels.at(d.trial_id) : std::string()},
         {"action", d.action},
         {"group", d.group},
         {"rung", d.rung},
         {"step", d.step},
         {"value", std::isfinite(d.value) ? json(d.value) : json()},
         {"cutoff", std::isfinite(d.cutoff) ? json(d.cutoff) : json()},
         {"final", d.final},
         {"reason", d.reason},
         {"at_ms", absl::ToUnixMillis(d.at)}});
  }
  out["decisions"] = decisions;

  // Rungs (asha, refine + early_stop asha).
  json rungs = json::array();
  const SearchSpec& ss = v.spec.search;
  if ((ss.strategy == "asha" || ss.early_stop == "asha") && ss.min_steps > 0) {
    analysis::search::AshaConfig c;
    c.min_steps = ss.min_steps;
    c.reduction = std::max<int64_t>(2, ss.reduction);
    c.max_steps = SearchMaxSteps(v.spec, trials);
    for (int64_t r : analysis::search::AshaRungs(c)) rungs.push_back(r);
  }
  out["rungs"] = rungs;

  // Pruned points: the value each pruned trial was stopped at, and which
  // trials are stopped for good (their last decision is a final prune).
  std::map<std::string, const store::DecisionRecord*> last;
  for (const store::DecisionRecord& d : log) {
    if (!d.trial_id.empty() && d.action != "add") last[d.trial_id] = &d;
  }
  std::set<std::string> stopped;
  json pruned_points = json::array();
  for (const store::TrialRecord& t : trials) {
    if (t.state != store::TrialState::kPruned) continue;
    auto it = last.find(t.trial_id);
    if (it == last.end() || it->second->action != "prune") continue;
    const store::DecisionRecord& d = *it->second;
    if (d.final) stopped.insert(t.trial_id);
    json params = json::parse(t.params_json, nullptr, false);
    if (!params.is_object()) params = json::object();
    // The analysis (and so the charts' facets and x) reads a missing param
    // as the kind's default (e.g. attention: softmax): the same here.
    if (const trials::TrialKind* kind = SweepKind(v.spec); kind != nullptr) {
      for (const trials::Param& p : kind->params) {
        if (!p.default_value.is_null() && !params.contains(p.name)) {
          params[p.name] = p.default_value;
        }
      }
    }
    pruned_points.push_back(
        {{"trial_id", t.trial_id},
         {"params", params},
         {"seed", t.seed},
         {"step", d.step},
         {"value", std::isfinite(d.value) ? json(d.value) : json()},
         {"final", d.final}});
  }
  out["pruned_points"] = pruned_points;

  // Refine's frontier.
  json frontier = json::array();
  if (ss.strategy == "refine") {
    SMOE_ASSIGN_OR_RETURN(std::vector<store::TrialSummary> rows,
                          store->ListSummaries(sweep_id));
    std::map<std::string, double> finals;
    for (const store::TrialSummary& r : rows) {
      for (const auto& [name, value] : r.results) {
        if (IsSearchMetric(ss.metric, name)) finals[r.trial_id] = value;
      }
    }
    std::map<std::string, std::set<int64_t>> tried;
    for (const store::TrialRecord& t : trials) {
      const json p = json::parse(t.params_json, nullptr, false);
      if (!p.is_object() || !p.contains(ss.axis) ||
          !p[ss.axis].is_number_integer()) {
        continue;
      }
      tried[analysis::search::GroupLabel(p, ss.group_by)].insert(
          p[ss.axis].get<int64_t>());
    }
    // The settled state each group logged (resolved, unresolved, budget):
    // what the search decided, including a group stopped by the GPU-hour
    // budget, which the recomputed frontier (no budget applied) would show
    // as still exploring.
    std::map<std::string, const store::DecisionRecord*> settled;
    for (const store::DecisionRecord& d : log) {
      if (d.trial_id.empty()) settled[d.group] = &d;
    }
    for (const analysis::search::RefineGroup& g :
         RefineFrontier(v.spec, trials, finals, stopped)) {
      json means = json::object();
      for (const auto& [x, m] : g.mean) {
        means[std::to_string(x)] = std::isfinite(m) ? json(m) : json();
      }
      frontier.push_back(
          {{"group", g.group},
           {"state", analysis::search::RefineStateName(g.state)},
           {"best", g.best},
           {"best_mean",
            std::isfinite(g.best_mean) ? json(g.best_mean) : json()},
           {"best_freq", g.best_freq},
           {"seeds", g.seeds},
           {"means", means},
           {"tried", tried[g.group]},
           {"stopped", g.stopped},
           {"reason", g.reason}});
      if (auto it = settled.find(g.group); it != settled.end()) {
        json& row = frontier.back();
        row["settled"] = it->second->action;
        row["settled_reason"] = it->second->reason;
        // A group the budget settled keeps that state: nothing more is
        // added for it, whatever the recomputed frontier would want.
        if (it->second->action == "budget") row["state"] = "budget";
      }
    }
  }
  out["frontier"] = frontier;

  // Device-hours: attempts' wall time x devices.
  const int devices = std::max(1, v.spec.resources.gpus_per_trial);
  const absl::Time now = absl::Now();
  double hours = 0;
  for (const store::TrialRecord& t : trials) {
    SMOE_ASSIGN_OR_RETURN(std::vector<store::AttemptRecord> attempts,
                          store->ListAttempts(t.trial_id));
    for (const store::AttemptRecord& a : attempts) {
      const absl::Time end =
          a.outcome == store::AttemptOutcome::kRunning ? now : a.ended_at;
      if (end <= a.started_at) continue;
      hours += absl::ToDoubleHours(end - a.started_at) * devices;
    }
  }
  out["device"] = v.spec.resources.gpus_per_trial > 0 ? "GPU" : "slot";
  out["device_hours_used"] = hours;
  out["device_hours_full_grid_estimate"] =
      u.trial_steps_used > 0
          ? json(hours * static_cast<double>(u.full_grid_trial_steps) /
                 static_cast<double>(u.trial_steps_used))
          : json();
  return out;
}

}  // namespace smoe::coordinator
