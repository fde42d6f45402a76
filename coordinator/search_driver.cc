// Copyright 2026 SMoE Lab authors.
#include "coordinator/search_driver.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/search/asha.h"
#include "analysis/search/median_stop.h"
#include "analysis/search/refine.h"

namespace smoe::coordinator {
namespace {

namespace search = ::smoe::analysis::search;
using store::TrialRecord;
using store::TrialState;
using sweeps::ExpandedTrial;
using sweeps::SweepKind;
using sweeps::SweepSpec;
using sweeps::TrialId;

nlohmann::json ParamsOf(const TrialRecord& t) {
  nlohmann::json p = nlohmann::json::parse(t.params_json, nullptr, false);
  return p.is_object() ? p : nlohmann::json::object();
}

// Trials the policy still considers: failed and cancelled ones can reach no
// rung and would hold rungs open forever.
bool Considered(TrialState s) {
  return s != TrialState::kFailed && s != TrialState::kCancelled;
}

}  // namespace

namespace {

// SearchMaxSteps over `n` trials, `params(i)` giving the i-th one's params
// (an object).
template <typename Params>
int64_t MaxSteps(const SweepSpec& spec, size_t n, Params params) {
  if (spec.search.max_steps > 0) return spec.search.max_steps;
  for (size_t i = 0; i < n; ++i) {
    const nlohmann::json p = params(i);
    if (p.contains("steps") && p["steps"].is_number_integer()) {
      return p["steps"].get<int64_t>();
    }
  }
  if (spec.fixed.contains("steps") && spec.fixed["steps"].is_number_integer()) {
    return spec.fixed["steps"].get<int64_t>();
  }
  return 1;
}

}  // namespace

int64_t SearchMaxSteps(const SweepSpec& spec,
                       const std::vector<TrialRecord>& trials) {
  return MaxSteps(spec, trials.size(),
                  [&](size_t i) { return ParamsOf(trials[i]); });
}

int64_t SearchMaxSteps(const SweepSpec& spec, size_t n,
                       const std::function<const TrialRecord*(size_t)>& trial) {
  return MaxSteps(spec, n, [&](size_t i) {
    const TrialRecord* t = trial(i);
    return t != nullptr ? ParamsOf(*t) : nlohmann::json::object();
  });
}

int64_t SearchMaxStepsOfParams(
    const SweepSpec& spec, const std::vector<const nlohmann::json*>& params) {
  if (spec.search.max_steps > 0) return spec.search.max_steps;
  for (const nlohmann::json* p : params) {
    if (p->is_object() && p->contains("steps") &&
        (*p)["steps"].is_number_integer()) {
      return (*p)["steps"].get<int64_t>();
    }
  }
  return MaxSteps(spec, 0, [](size_t) { return nlohmann::json::object(); });
}

namespace {

store::DecisionRecord FromDecision(const search::Decision& d,
                                   const std::string& action) {
  store::DecisionRecord r;
  r.trial_id = d.trial_id;
  r.action = action;
  r.group = d.group;
  r.rung = d.rung;
  r.step = d.step;
  r.value = d.value;
  r.cutoff = d.cutoff;
  r.final = d.final;
  r.reason = d.reason;
  return r;
}

}  // namespace

void AppendStoppingDecision(const TrialRecord& t, const search::Decision& d,
                            const LoggedDecision* last, SearchPlan* plan) {
  switch (d.action) {
    case search::Action::kPrune:
      if (t.state == TrialState::kPending || t.state == TrialState::kRunning) {
        plan->changes.push_back({t.trial_id, TrialState::kPruned});
        plan->decisions.push_back(FromDecision(d, "prune"));
      } else if (t.state == TrialState::kPruned && d.final &&
                 (last == nullptr || last->action != "prune" ||
                  last->rung != d.rung || !last->final)) {
        // A pause became final (its rung completed): logged once.
        plan->decisions.push_back(FromDecision(d, "prune"));
      }
      break;
    case search::Action::kPromote:
    case search::Action::kRun:
    case search::Action::kRetry:
      if (t.state == TrialState::kPruned) {
        plan->changes.push_back({t.trial_id, TrialState::kPending});
        plan->decisions.push_back(FromDecision(
            d, d.action == search::Action::kPromote ? "promote" : "resume"));
      } else if (d.action == search::Action::kPromote &&
                 t.state != TrialState::kSucceeded &&
                 (last == nullptr || last->action != "promote" ||
                  last->rung != d.rung)) {
        // A running trial passed a rung: logged once per rung.
        plan->decisions.push_back(FromDecision(d, "promote"));
      }
      break;
    case search::Action::kComplete:
      break;
  }
}

bool ConsideredBySearch(TrialState state) { return Considered(state); }

analysis::search::RefineConfig RefineConfigOf(const SweepSpec& spec) {
  search::RefineConfig c;
  c.mode = search::ParseMode(spec.search.mode);
  c.lo = spec.search.bounds_lo;
  c.hi = spec.search.bounds_hi;
  c.budget = spec.search.budget;
  c.add_seeds = spec.search.add_seeds;
  c.tolerance = spec.search.tolerance;
  c.seeds = spec.seeds;
  return c;
}

void AppendRefineProposal(const SweepSpec& spec,
                          const search::RefineProposal& p,
                          const nlohmann::json& params, SearchPlan* plan) {
  const std::string& axis = spec.search.axis;
  ExpandedTrial e;
  e.params = params;
  e.params[axis] = p.x;
  e.seed = p.seed;
  e.trial_id = TrialId(spec.name, spec.kind, e.params, e.seed);
  plan->add.push_back(e);
  store::DecisionRecord d;
  d.trial_id = e.trial_id;
  d.action = "add";
  d.group = p.group;
  d.step = p.x;
  d.value = search::kNoValue;
  d.cutoff = search::kNoValue;
  d.reason = absl::StrCat(axis, "=", p.x, " seed ", p.seed, ": ", p.reason);
  plan->decisions.push_back(std::move(d));
}

void AppendRefineGroupDecision(const SweepSpec& spec,
                               const search::RefineGroup& g,
                               const LoggedDecision* last, SearchPlan* plan) {
  if (g.state != search::RefineState::kResolved &&
      g.state != search::RefineState::kUnresolved &&
      g.state != search::RefineState::kBudget) {
    return;
  }
  const std::string action = search::RefineStateName(g.state);
  if (last != nullptr && last->action == action &&
      last->rung == static_cast<int>(g.best)) {
    return;
  }
  const std::string& axis = spec.search.axis;
  store::DecisionRecord d;
  d.action = action;
  d.group = g.group;
  d.rung = static_cast<int>(g.best);  // refine: x* in the rung column
  d.step = g.best;
  d.value = g.best_mean;
  d.cutoff = g.best_freq;  // refine: the bootstrap P(argmax = x*)
  d.final = g.state == search::RefineState::kResolved;
  // Resolved within the tolerance: the decision names the set, not one x*.
  d.reason =
      g.equivalent.empty()
          ? absl::StrCat(axis, "*=", g.best, ": ", g.reason)
          : absl::StrCat(axis, "* in {", absl::StrJoin(g.equivalent, ", "),
                         "}: ", g.reason);
  plan->decisions.push_back(std::move(d));
}

search::AshaConfig AshaConfigOf(const SweepSpec& spec, int64_t max_steps) {
  search::AshaConfig c;
  c.mode = search::ParseMode(spec.search.mode);
  c.min_steps = std::max<int64_t>(1, spec.search.min_steps);
  c.reduction = std::max<int64_t>(2, spec.search.reduction);
  c.max_steps = max_steps;
  c.smooth = std::max<int64_t>(1, spec.search.smooth_evals);
  c.aggregate_seeds = spec.search.aggregate_seeds;
  c.keep_neighbors = !spec.search.keep_neighbors.empty();
  return c;
}

namespace {

// ASHA and the median rule (and refine's early stopping): prune, promote,
// and log rung passes. `stopped` (may be null) receives the trials pruned
// for good.
void PlanStopping(const SearchInputs& in, SearchPlan* plan,
                  std::set<std::string>* stopped) {
  const SweepSpec& spec = *in.spec;
  const bool refine = spec.search.strategy == "refine";
  const std::set<int64_t> base_seeds(spec.seeds.begin(), spec.seeds.end());
  std::vector<search::Trial> trials;
  std::map<std::string, const TrialRecord*> by_id;
  for (const TrialRecord& t : in.trials) {
    if (!Considered(t.state)) continue;
    search::Trial st;
    st.trial_id = t.trial_id;
    if (refine) {
      // Refine + asha: the axis' values race each other within a group and
      // one seed (paired, like refine's bootstrap). Seeds refine added to
      // separate a near-tie always run to the end.
      if (!base_seeds.count(t.seed)) continue;
      st.group = RefineStopGroup(
          search::GroupLabel(ParamsOf(t), spec.search.group_by), t.seed);
    } else {
      const SearchTrialInfo* info = nullptr;
      SearchTrialInfo parsed;
      if (in.info != nullptr) {
        auto it = in.info->find(t.trial_id);
        if (it != in.info->end()) info = &it->second;
      }
      if (info == nullptr) {
        parsed = SearchInfoOf(spec, t);
        info = &parsed;
      }
      st.group = info->group;
      st.config = info->config;
      st.has_axis = info->has_axis;
      st.axis = info->axis;
      st.rest = info->rest;
    }
    st.errored = t.state == TrialState::kPending && t.error_count > 0;
    st.paused = t.state == TrialState::kPruned;
    trials.push_back(std::move(st));
    by_id[t.trial_id] = &t;
  }
  const search::Mode mode = search::ParseMode(spec.search.mode);
  std::vector<search::Decision> decisions;
  if (spec.search.strategy == "asha" || spec.search.early_stop == "asha") {
    const search::AshaConfig c =
        AshaConfigOf(spec, in.max_steps > 0 ? in.max_steps
                                            : SearchMaxSteps(spec, in.trials));
    decisions = search::DecideAsha(c, trials, in.reports);
  } else {
    search::MedianConfig c;
    c.mode = mode;
    c.min_steps = spec.search.min_steps;
    c.max_steps =
        in.max_steps > 0 ? in.max_steps : SearchMaxSteps(spec, in.trials);
    decisions = search::DecideMedian(c, trials, in.reports);
  }
  const bool spent = BudgetSpent(in);
  for (const search::Decision& d : decisions) {
    auto it = by_id.find(d.trial_id);
    if (it == by_id.end()) continue;
    const TrialRecord& t = *it->second;
    if (stopped != nullptr && d.action == search::Action::kPrune && d.final) {
      stopped->insert(t.trial_id);
    }
    auto logged = in.last.find(d.trial_id);
    const LoggedDecision* last =
        logged == in.last.end() ? nullptr : &logged->second;
    if (spent && t.state == TrialState::kPruned &&
        (d.action == search::Action::kPromote ||
         d.action == search::Action::kRun ||
         d.action == search::Action::kRetry)) {
      // The budget is spent: a paused trial is not promoted or resumed; its
      // pause becomes final (logged once).
      if (last == nullptr || last->action != "prune" || !last->final) {
        search::Decision b = d;
        b.final = true;
        b.reason = absl::StrCat(
            BudgetNote(in), ": not ",
            d.action == search::Action::kPromote ? "promoted" : "resumed", " (",
            d.reason, ")");
        plan->decisions.push_back(FromDecision(b, "prune"));
      }
      continue;
    }
    AppendStoppingDecision(t, d, last, plan);
  }
}

// search.budget_gpu_hours spent: every pending trial the plan leaves
// pending is pruned for good (nothing more starts).
void PlanBudget(const SearchInputs& in, SearchPlan* plan) {
  if (!BudgetSpent(in)) return;
  std::vector<const TrialRecord*> sorted;
  for (const TrialRecord& t : in.trials) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(),
            [](const TrialRecord* a, const TrialRecord* b) {
              return a->trial_id < b->trial_id;
            });
  for (const TrialRecord* t : sorted) {
    if (t->state != TrialState::kPending) continue;
    bool changed = false;
    for (const TrialChange& c : plan->changes) {
      changed |= c.trial_id == t->trial_id;
    }
    if (changed) continue;
    plan->changes.push_back({t->trial_id, TrialState::kPruned});
    store::DecisionRecord d;
    d.trial_id = t->trial_id;
    d.action = "prune";
    d.group = search::GroupLabel(ParamsOf(*t), in.spec->search.group_by);
    d.value = search::kNoValue;
    d.cutoff = search::kNoValue;
    d.final = true;
    d.reason = absl::StrCat(BudgetNote(in), ": ",
                            t->attempt == 0 ? "not started" : "not restarted");
    plan->decisions.push_back(std::move(d));
  }
}

// Refine's points (in trial-id order) and a template of params per group
// (the params a new point copies).
std::vector<search::RefinePoint> RefinePoints(
    const SweepSpec& spec, const std::vector<TrialRecord>& trials,
    const std::unordered_map<std::string, double>& finals,
    const std::set<std::string>& stopped, bool budget_spent,
    std::map<std::string, nlohmann::json>* templates) {
  const std::string& axis = spec.search.axis;
  std::vector<search::RefinePoint> points;
  std::vector<TrialRecord> sorted = trials;
  std::sort(sorted.begin(), sorted.end(),
            [](const TrialRecord& a, const TrialRecord& b) {
              return a.trial_id < b.trial_id;
            });
  for (const TrialRecord& t : sorted) {
    const nlohmann::json params = ParamsOf(t);
    if (!params.contains(axis) || !params[axis].is_number_integer()) continue;
    search::RefinePoint p;
    p.group = search::GroupLabel(params, spec.search.group_by);
    p.x = params[axis].get<int64_t>();
    p.seed = t.seed;
    p.stopped = t.state == TrialState::kPruned && stopped.count(t.trial_id);
    // Once the GPU-hour budget is spent nothing resumes: a paused trial is
    // tried, not measured (neither pending nor stopped early).
    p.pending = t.state == TrialState::kPending ||
                t.state == TrialState::kRunning ||
                (t.state == TrialState::kPruned && !p.stopped && !budget_spent);
    auto f = finals.find(t.trial_id);
    p.done = t.state == TrialState::kSucceeded && f != finals.end();
    if (p.done) p.value = f->second;
    points.push_back(p);
    if (templates != nullptr) templates->emplace(p.group, params);
  }
  return points;
}

// Refine: new points for the proposals, and settled group states. `stopped`:
// the trials early stopping pruned for good (tried, not measured).
void PlanRefine(const SearchInputs& in, const std::set<std::string>& stopped,
                SearchPlan* plan,
                std::map<std::string, RefineGroupState>* groups) {
  const SweepSpec& spec = *in.spec;
  search::RefineConfig c = RefineConfigOf(spec);
  if (BudgetSpent(in)) c.stop_adding = BudgetNote(in);
  std::map<std::string, nlohmann::json> templates;
  const std::vector<search::RefinePoint> points = RefinePoints(
      spec, in.trials, in.finals, stopped, BudgetSpent(in), &templates);
  std::vector<search::RefineGroupPlan> group_plans;
  const bool keep = groups != nullptr && c.stop_adding.empty();
  const search::RefineResult r =
      search::DecideRefine(c, points, keep ? &group_plans : nullptr);
  if (keep) {
    // The points by group, in trial-id order (as RefinePoints lists them).
    for (search::RefineGroupPlan& g : group_plans) {
      (*groups)[g.group.group].plan = std::move(g);
    }
    for (const search::RefinePoint& p : points) {
      (*groups)[p.group].points.push_back(p);
    }
  }
  for (const search::RefineProposal& p : r.proposals) {
    auto t = templates.find(p.group);
    if (t == templates.end()) continue;
    AppendRefineProposal(spec, p, t->second, plan);
  }
  for (const search::RefineGroup& g : r.groups) {
    auto logged = in.last.find(GroupKey(g.group));
    AppendRefineGroupDecision(
        spec, g, logged == in.last.end() ? nullptr : &logged->second, plan);
  }
}

}  // namespace

bool BudgetSpent(const SearchInputs& in) {
  return in.spec != nullptr && in.spec->search.budget_gpu_hours > 0 &&
         in.device_hours_used >= in.spec->search.budget_gpu_hours;
}

std::string BudgetNote(const SearchInputs& in) {
  const int gpus = in.spec == nullptr ? 0 : in.spec->resources.gpus_per_trial;
  return absl::StrCat(
      "budget_gpu_hours ",
      absl::StrFormat(
          "%.4g", in.spec == nullptr ? 0.0 : in.spec->search.budget_gpu_hours),
      " spent: ", absl::StrFormat("%.4g", in.device_hours_used),
      gpus > 0
          ? absl::StrCat(" GPU-hours used (attempts' wall time x ", gpus,
                         " GPU", gpus == 1 ? "" : "s", ")")
          : " slot-hours used (CPU sweep: slot-hours = attempts' wall time "
            "x 1 slot, counted against the GPU-hour budget)");
}

SearchTrialInfo SearchInfoOf(const SweepSpec& spec, const TrialRecord& t) {
  SearchTrialInfo info;
  nlohmann::json params = ParamsOf(t);
  info.group = search::GroupLabel(params, spec.search.group_by);
  if (spec.search.strategy == "asha") {
    // The configuration (params without the seed: aggregate_seeds) and the
    // neighbour axis (keep_neighbors).
    info.config = params.dump();
    const std::string& axis = spec.search.keep_neighbors;
    if (!axis.empty() && params.contains(axis) &&
        params[axis].is_number_integer()) {
      info.has_axis = true;
      info.axis = params[axis].get<int64_t>();
      params.erase(axis);
      info.rest = params.dump();
    }
  } else if (spec.search.strategy == "refine") {
    const std::string& axis = spec.search.axis;
    if (params.contains(axis) && params[axis].is_number_integer()) {
      info.has_axis = true;
      info.axis = params[axis].get<int64_t>();
    }
  }
  return info;
}

std::string RefineStopGroup(const std::string& label, int64_t seed) {
  return absl::StrCat(label, label.empty() ? "" : ",", "seed=", seed);
}

bool PlansPerGroup(const SweepSpec& spec) {
  return spec.search.strategy == "asha" || spec.search.strategy == "median";
}

bool StopsEarly(const SweepSpec& spec) {
  return spec.search.strategy == "asha" || spec.search.strategy == "median" ||
         spec.search.early_stop == "asha";
}

bool IsAdaptive(const SweepSpec& spec) {
  return spec.search.strategy == "asha" || spec.search.strategy == "median" ||
         spec.search.strategy == "refine";
}

bool IsSearchMetric(const std::string& metric, const std::string& name) {
  return !metric.empty() &&
         (name == metric || name == absl::StrCat("eval/", metric));
}

std::vector<analysis::search::RefineGroup> RefineFrontier(
    const SweepSpec& spec, const std::vector<store::TrialRecord>& trials,
    const std::unordered_map<std::string, double>& finals,
    const std::set<std::string>& stopped) {
  if (spec.search.strategy != "refine") return {};
  return search::DecideRefine(
             RefineConfigOf(spec),
             RefinePoints(spec, trials, finals, stopped, false, nullptr))
      .groups;
}

std::string LeaseParamsJson(const SweepSpec& spec,
                            const std::string& params_json) {
  const bool rungs =
      spec.search.strategy == "asha" || spec.search.early_stop == "asha";
  if (!rungs || spec.search.min_steps <= 0) return params_json;
  const trials::TrialKind* kind = SweepKind(spec);
  if (kind == nullptr || kind->Find("eval_rungs_from") == nullptr ||
      kind->Find("eval_rungs_eta") == nullptr) {
    return params_json;
  }
  nlohmann::json p = nlohmann::json::parse(params_json, nullptr, false);
  if (!p.is_object() || p.contains("eval_rungs_from")) return params_json;
  p["eval_rungs_from"] = spec.search.min_steps;
  if (!p.contains("eval_rungs_eta")) {
    p["eval_rungs_eta"] = std::max<int64_t>(2, spec.search.reduction);
  }
  return p.dump();
}

std::string PlanDifference(const SearchPlan& a, const SearchPlan& b) {
  auto same = [](double x, double y) {
    return x == y || (std::isnan(x) && std::isnan(y));
  };
  if (a.changes.size() != b.changes.size()) {
    return absl::StrCat(a.changes.size(), " vs ", b.changes.size(),
                        " state changes");
  }
  for (size_t i = 0; i < a.changes.size(); ++i) {
    if (a.changes[i].trial_id != b.changes[i].trial_id ||
        a.changes[i].next != b.changes[i].next) {
      return absl::StrCat("state change ", i, ": ", a.changes[i].trial_id,
                          " vs ", b.changes[i].trial_id);
    }
  }
  if (a.add.size() != b.add.size()) {
    return absl::StrCat(a.add.size(), " vs ", b.add.size(), " added points");
  }
  for (size_t i = 0; i < a.add.size(); ++i) {
    if (a.add[i].trial_id != b.add[i].trial_id) {
      return absl::StrCat("added point ", i, ": ", a.add[i].trial_id, " vs ",
                          b.add[i].trial_id);
    }
  }
  if (a.decisions.size() != b.decisions.size()) {
    return absl::StrCat(a.decisions.size(), " vs ", b.decisions.size(),
                        " decisions");
  }
  for (size_t i = 0; i < a.decisions.size(); ++i) {
    const store::DecisionRecord& x = a.decisions[i];
    const store::DecisionRecord& y = b.decisions[i];
    if (x.trial_id != y.trial_id || x.action != y.action ||
        x.group != y.group || x.rung != y.rung || x.step != y.step ||
        !same(x.value, y.value) || !same(x.cutoff, y.cutoff) ||
        x.final != y.final || x.reason != y.reason) {
      return absl::StrCat("decision ", i, ": ", x.action, " ", x.trial_id, " (",
                          x.reason, ") vs ", y.action, " ", y.trial_id, " (",
                          y.reason, ")");
    }
  }
  return "";
}

std::string GroupKey(const std::string& label) {
  return absl::StrCat("group:", label);
}

SearchPlan PlanSearch(const SearchInputs& in) {
  return PlanSearch(in, nullptr);
}

SearchPlan PlanSearch(const SearchInputs& in,
                      std::map<std::string, RefineGroupState>* refine_groups) {
  SearchPlan plan;
  if (in.spec == nullptr || !IsAdaptive(*in.spec)) return plan;
  if (in.spec->search.strategy == "refine") {
    std::set<std::string> stopped;
    if (in.spec->search.early_stop == "asha") {
      PlanStopping(in, &plan, &stopped);
      // The plan's state changes are what the trials will be: a trial pruned
      // for good by this plan is stopped for refine now.
    }
    PlanBudget(in, &plan);
    std::vector<store::TrialRecord> next = in.trials;
    for (store::TrialRecord& t : next) {
      for (const TrialChange& c : plan.changes) {
        if (c.trial_id == t.trial_id) t.state = c.next;
      }
    }
    SearchInputs after = in;
    after.trials = std::move(next);
    PlanRefine(after, stopped, &plan, refine_groups);
  } else {
    PlanStopping(in, &plan, nullptr);
    PlanBudget(in, &plan);
  }
  return plan;
}

}  // namespace smoe::coordinator
