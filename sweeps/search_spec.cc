// Copyright 2026 SMoE Lab authors.
//
// File: sweeps/search_spec.cc
//
// `search:` (docs/adaptive-sweeps.md): the strategy and the keys it takes,
// then one function per group of keys (metric and mode, group_by, asha's
// and median's steps, asha's options, refine's axis and budget, the
// GPU-hour budget). Each adds its problems and returns whether it had none.
#include "sweeps/search_spec.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "trials/params.h"

namespace smoe::sweeps::internal {
namespace {

using nlohmann::json;

const char* const kStrategies = "{grid, asha, median, refine}";

bool IsSearchKey(const std::string& key) {
  for (const char* s : {"grid", "asha", "median", "refine"}) {
    const auto& keys = SearchKeys(s, "asha");
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) return true;
  }
  return false;
}

// The trials' step count: fixed.steps, else the kind's default; 0 when the
// kind has none or steps is a grid axis (reported by the caller).
int64_t TrialSteps(const SweepSpec& spec) {
  const trials::TrialKind* kind = SweepKind(spec);
  if (kind == nullptr) return 0;
  const trials::Param* steps = kind->Find("steps");
  if (steps == nullptr) return 0;
  for (const Axis& a : spec.grid) {
    if (a.name == "steps") return 0;
  }
  const json v = spec.fixed.value("steps", steps->default_value);
  return v.is_number_integer() ? v.get<int64_t>() : 0;
}

// search.<key> as an integer in [lo, hi] into *out; false when it is absent
// or invalid (then the problem is added and *ok cleared).
bool IntKey(const YAML::Node& node, const char* key, int64_t lo, int64_t hi,
            int64_t* out, Problems* problems, bool* ok) {
  const YAML::Node n = node[key];
  if (!n) return false;
  auto v = IntField(n, absl::StrCat("search.", key), lo, hi);
  if (!problems->Ok(v.status())) {
    *ok = false;
    return false;
  }
  *out = *v;
  return true;
}

// strategy and (refine) early_stop into *s; false when the block cannot be
// read further (not a map, an unknown strategy).
bool ParseStrategy(const YAML::Node& node, SearchSpec* s, Problems* problems,
                   bool* ok) {
  if (!node.IsMap()) {
    problems->Add(absl::StrCat("search: expected a map (strategy: one of ",
                               kStrategies, ")"));
    return false;
  }
  if (const YAML::Node st = node["strategy"]) {
    if (!st.IsScalar()) {
      problems->Add(
          absl::StrCat("search.strategy: expected one of ", kStrategies));
      return false;
    }
    s->strategy = st.Scalar();
    if (s->strategy != "grid" && s->strategy != "asha" &&
        s->strategy != "median" && s->strategy != "refine") {
      problems->Add(absl::StrCat("search.strategy: '", s->strategy,
                                 "' is not one of ", kStrategies));
      return false;
    }
  }
  if (const YAML::Node e = node["early_stop"]; e && s->strategy == "refine") {
    if (!e.IsScalar() || (e.Scalar() != "asha" && e.Scalar() != "none")) {
      problems->Add(absl::StrCat("search.early_stop: '",
                                 e.IsScalar() ? e.Scalar() : "(not a scalar)",
                                 "' is not one of {none, asha}"));
      *ok = false;
    } else if (e.Scalar() == "asha") {
      s->early_stop = "asha";
    }
  }
  return true;
}

// Every key of the block is one the strategy takes.
bool CheckKeys(const YAML::Node& node, const SearchSpec& s,
               Problems* problems) {
  const std::vector<std::string>& allowed =
      SearchKeys(s.strategy, s.early_stop);
  const std::string allowed_list = absl::StrJoin(allowed, ", ");
  bool ok = true;
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    const std::string field = absl::StrCat("search.", key);
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) {
      continue;
    }
    ok = false;
    if (IsSearchKey(key)) {
      const bool asha_key = key == "min_steps" || key == "reduction" ||
                            key == "max_steps" || key == "smooth_evals";
      problems->Add(
          absl::StrCat(field, ": not used by strategy ", s.strategy,
                       " (its keys: ", allowed_list, ")",
                       s.strategy == "refine" && asha_key
                           ? "; with early_stop: asha refine takes min_steps, "
                             "reduction, max_steps and smooth_evals"
                           : ""));
    } else {
      problems->Add(absl::StrCat("unknown key '", field, "' (allowed for ",
                                 s.strategy, ": ", allowed_list, ")"));
    }
  }
  return ok;
}

// metric (required) and mode (default: min for a loss or error, else max).
bool ParseMetricAndMode(const YAML::Node& node, SearchSpec* s,
                        Problems* problems) {
  bool ok = true;
  if (const YAML::Node m = node["metric"];
      m && m.IsScalar() && !m.Scalar().empty()) {
    s->metric = m.Scalar();
  } else {
    problems->Add(absl::StrCat("search.metric: required for strategy ",
                               s->strategy, " (a metric name, e.g. ood_acc)"));
    ok = false;
  }
  const bool minimize = s->metric.find("loss") != std::string::npos ||
                        s->metric.find("error") != std::string::npos;
  s->mode = minimize ? "min" : "max";
  if (const YAML::Node m = node["mode"]) {
    if (!m.IsScalar() || (m.Scalar() != "max" && m.Scalar() != "min")) {
      problems->Add(absl::StrCat("search.mode: '",
                                 m.IsScalar() ? m.Scalar() : "(not a scalar)",
                                 "' is not one of {max, min}"));
      ok = false;
    } else {
      s->mode = m.Scalar();
    }
  }
  return ok;
}

// group_by: grid axes, no duplicates, no sampled axis; a sampled sweep's asha
// and median default to every grid axis.
bool ParseGroupBy(const YAML::Node& node, const SweepSpec* spec,
                  const std::vector<std::string>& axes, SearchSpec* s,
                  Problems* problems) {
  auto is_axis = [&](const std::string& n) {
    return std::find(axes.begin(), axes.end(), n) != axes.end();
  };
  bool ok = true;
  if (const YAML::Node g = node["group_by"]) {
    std::vector<YAML::Node> items;
    if (g.IsScalar()) {
      items.push_back(g);
    } else if (g.IsSequence()) {
      for (size_t i = 0; i < g.size(); ++i) items.push_back(g[i]);
    } else {
      problems->Add("search.group_by: expected a list of grid axes");
      ok = false;
    }
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string field = g.IsScalar()
                                    ? "search.group_by"
                                    : absl::StrCat("search.group_by[", i, "]");
      if (!items[i].IsScalar()) {
        problems->Add(absl::StrCat(field, ": expected a grid axis name"));
        ok = false;
        continue;
      }
      const std::string name = items[i].Scalar();
      const bool sampled =
          std::any_of(spec->sample.begin(), spec->sample.end(),
                      [&](const SampledAxis& a) { return a.name == name; });
      if (sampled) {
        problems->Add(absl::StrCat(
            field, ": '", name,
            "' is a sampled axis; its configurations race within a group, "
            "so group_by takes grid axes (axes: ",
            absl::StrJoin(axes, ", "), ")"));
        ok = false;
        continue;
      }
      if (!is_axis(name)) {
        problems->Add(absl::StrCat(
            field, ": '", name,
            "' is not a grid axis (axes: ", absl::StrJoin(axes, ", "), ")"));
        ok = false;
        continue;
      }
      if (std::find(s->group_by.begin(), s->group_by.end(), name) !=
          s->group_by.end()) {
        problems->Add(absl::StrCat(field, ": duplicate axis '", name, "'"));
        ok = false;
        continue;
      }
      s->group_by.push_back(name);
    }
  } else if (!spec->sample.empty() &&
             (s->strategy == "asha" || s->strategy == "median")) {
    // A sampled sweep races its configurations within each grid point:
    // group_by defaults to every grid axis (docs/sampled-axes.md).
    s->group_by = axes;
  }
  return ok;
}

constexpr int64_t kMaxSteps = int64_t{1} << 40;

// asha's step keys (strategy asha, or refine with early_stop: asha) and
// median's min_steps, against the trials' one training length.
bool ParseStepKeys(const YAML::Node& node, const SweepSpec* spec,
                   const std::vector<std::string>& axes, SearchSpec* s,
                   Problems* problems) {
  bool ok = true;
  auto int_field = [&](const char* key, int64_t lo, int64_t hi, int64_t* out) {
    return IntKey(node, key, lo, hi, out, problems, &ok);
  };
  auto is_axis = [&](const std::string& n) {
    return std::find(axes.begin(), axes.end(), n) != axes.end();
  };
  // asha's step keys: strategy asha, or refine with early_stop: asha.
  const bool asha = s->strategy == "asha" || s->early_stop == "asha";
  if (asha || s->strategy == "median") {
    const bool has_min =
        int_field("min_steps", asha ? 1 : 0, kMaxSteps, &s->min_steps);
    if (!has_min && !node["min_steps"] && asha) {
      problems->Add(absl::StrCat(
          "search.min_steps: required for ",
          s->strategy == "asha" ? "strategy asha" : "early_stop: asha",
          " (the first rung, in training steps)"));
      ok = false;
    }
    const int64_t steps = TrialSteps(*spec);
    if (steps <= 0) {
      const bool axis_steps = is_axis("steps");
      problems->Add(absl::StrCat(
          s->strategy == "refine"
              ? "search.early_stop: asha"
              : absl::StrCat("search.strategy: ", s->strategy),
          " needs one training length: ",
          axis_steps ? "steps is a grid axis (give it in fixed)"
                     : absl::StrCat("kind ", spec->kind, " has no steps")));
      ok = false;
    }
    if (asha) {
      int_field("reduction", 2, 1000, &s->reduction);
      int_field("smooth_evals", 1, 1000, &s->smooth_evals);
      s->max_steps = steps;
      int64_t given = 0;
      if (int_field("max_steps", 1, kMaxSteps, &given) && steps > 0 &&
          given != steps) {
        problems->Add(absl::StrCat("search.max_steps: ", given,
                                   " must equal the trials' steps (", steps,
                                   "); leave it out to use them"));
        ok = false;
      }
      if (s->min_steps > 0 && steps > 0 && s->min_steps > steps) {
        problems->Add(absl::StrCat("search.min_steps: ", s->min_steps,
                                   " is above max_steps ", steps));
        ok = false;
      }
    } else if (s->min_steps > 0 && steps > 0 && s->min_steps >= steps) {
      problems->Add(absl::StrCat("search.min_steps: ", s->min_steps,
                                 " leaves no step to stop at (steps ", steps,
                                 ")"));
      ok = false;
    }
  }
  return ok;
}

// asha's aggregate_seeds (default: true for a sampled sweep) and
// keep_neighbors.
bool ParseAshaOptions(const YAML::Node& node, const SweepSpec* spec,
                      const std::vector<std::string>& axes, SearchSpec* s,
                      Problems* problems) {
  bool ok = true;
  // A sampled sweep's unit is a configuration with all its seeds (the
  // tuned analysis selects on their mean or per seed among finished ones).
  s->aggregate_seeds = !spec->sample.empty();
  if (const YAML::Node a = node["aggregate_seeds"]) {
    if (!a.IsScalar() || (a.Scalar() != "true" && a.Scalar() != "false")) {
      problems->Add(absl::StrCat(
          "search.aggregate_seeds: '",
          a.IsScalar() ? a.Scalar() : "(not a scalar)",
          "' is not a boolean (true: a configuration's seeds are ranked "
          "by their mean and stopped together)"));
      ok = false;
    } else {
      s->aggregate_seeds = a.Scalar() == "true";
    }
  }
  if (const YAML::Node n = node["keep_neighbors"]) {
    const Axis* axis = nullptr;
    const std::string name = n.IsScalar() ? n.Scalar() : "(not a scalar)";
    for (const Axis& x : spec->grid) {
      if (n.IsScalar() && x.name == name) axis = &x;
    }
    if (axis == nullptr) {
      problems->Add(absl::StrCat(
          "search.keep_neighbors: '", name,
          "' is not a grid axis (axes: ", absl::StrJoin(axes, ", "), ")"));
      ok = false;
    } else if (std::find(s->group_by.begin(), s->group_by.end(), name) !=
               s->group_by.end()) {
      problems->Add(absl::StrCat("search.keep_neighbors: '", name,
                                 "' is also in group_by (neighbours are "
                                 "compared within a group)"));
      ok = false;
    } else {
      for (const json& v : axis->values) {
        if (!v.is_number_integer()) {
          problems->Add(absl::StrCat("search.keep_neighbors: ", name,
                                     " has the non-integer value ", Show(v),
                                     " (neighbours are values one apart)"));
          ok = false;
          break;
        }
      }
      s->keep_neighbors = name;
    }
  }
  return ok;
}

// refine's axis (an integer grid axis, not in group_by), bounds (covering the
// grid's values), budget, add_seeds and tolerance.
bool ParseRefine(const YAML::Node& node, const SweepSpec* spec,
                 const std::vector<std::string>& axes, SearchSpec* s,
                 Problems* problems) {
  bool ok = true;
  auto int_field = [&](const char* key, int64_t lo, int64_t hi, int64_t* out) {
    return IntKey(node, key, lo, hi, out, problems, &ok);
  };
  const Axis* axis = nullptr;
  if (const YAML::Node a = node["axis"]; a && a.IsScalar()) {
    s->axis = a.Scalar();
    for (const Axis& x : spec->grid) {
      if (x.name == s->axis) axis = &x;
    }
    if (axis == nullptr) {
      problems->Add(absl::StrCat(
          "search.axis: '", s->axis,
          "' is not a grid axis (axes: ", absl::StrJoin(axes, ", "), ")"));
      ok = false;
    }
  } else {
    problems->Add(
        "search.axis: required for strategy refine (an integer grid axis, "
        "e.g. top_k)");
    ok = false;
  }
  if (axis != nullptr) {
    int64_t lo = std::numeric_limits<int64_t>::max();
    int64_t hi = std::numeric_limits<int64_t>::min();
    for (const json& v : axis->values) {
      if (!v.is_number_integer()) {
        problems->Add(absl::StrCat("search.axis: ", s->axis,
                                   " has the non-integer value ", Show(v),
                                   " (refine needs an integer axis)"));
        ok = false;
        break;
      }
      lo = std::min(lo, v.get<int64_t>());
      hi = std::max(hi, v.get<int64_t>());
    }
    if (std::find(s->group_by.begin(), s->group_by.end(), s->axis) !=
        s->group_by.end()) {
      problems->Add(absl::StrCat("search.group_by: contains the refined axis '",
                                 s->axis, "'"));
      ok = false;
    }
    s->bounds_lo = lo;
    s->bounds_hi = hi;
    if (const YAML::Node b = node["bounds"]) {
      if (!b.IsSequence() || b.size() != 2) {
        problems->Add("search.bounds: expected [lo, hi] (two integers)");
        ok = false;
      } else {
        auto blo = IntField(b[0], "search.bounds[0]",
                            std::numeric_limits<int32_t>::min(),
                            std::numeric_limits<int32_t>::max());
        auto bhi = IntField(b[1], "search.bounds[1]",
                            std::numeric_limits<int32_t>::min(),
                            std::numeric_limits<int32_t>::max());
        ok &= problems->Ok(blo.status());
        ok &= problems->Ok(bhi.status());
        if (blo.ok() && bhi.ok()) {
          if (*blo > *bhi) {
            problems->Add(absl::StrCat("search.bounds: [", *blo, ", ", *bhi,
                                       "] is empty (lo > hi)"));
            ok = false;
          } else if (lo <= hi && (lo < *blo || hi > *bhi)) {
            problems->Add(absl::StrCat("search.bounds: [", *blo, ", ", *bhi,
                                       "] leaves out grid.", s->axis,
                                       " values (", lo, "..", hi, ")"));
            ok = false;
          } else {
            s->bounds_lo = *blo;
            s->bounds_hi = *bhi;
          }
        }
      }
    }
  }
  if (int_field("budget", 0, 100000000, &s->budget) && s->budget > 0) {
    const int64_t initial = CountPoints(*spec);
    if (s->budget < initial) {
      problems->Add(absl::StrCat("search.budget: ", s->budget,
                                 " is below the initial grid's ", initial,
                                 " trials"));
      ok = false;
    }
  }
  int_field("add_seeds", 0, 1000, &s->add_seeds);
  if (const YAML::Node t = node["tolerance"]) {
    auto v = ScalarToJson(t, "search.tolerance");
    if (!problems->Ok(v.status())) {
      ok = false;
    } else if (!v->is_number() || !std::isfinite(v->get<double>()) ||
               v->get<double>() < 0 || v->get<double>() > 1e9) {
      problems->Add(absl::StrCat(
          "search.tolerance: ", Show(*v),
          " is not a number >= 0 in the metric's units (0: the argmax "
          "itself must be separated)"));
      ok = false;
    } else {
      s->tolerance = v->get<double>();
    }
  }
  return ok;
}

// budget_gpu_hours: a number of hours in [0, 1e9] (0: none).
bool ParseBudgetHours(const YAML::Node& node, SearchSpec* s,
                      Problems* problems) {
  bool ok = true;
  if (const YAML::Node b = node["budget_gpu_hours"]) {
    auto v = ScalarToJson(b, "search.budget_gpu_hours");
    if (!problems->Ok(v.status())) {
      ok = false;
    } else if (!v->is_number() || !std::isfinite(v->get<double>()) ||
               v->get<double>() < 0 || v->get<double>() > 1e9) {
      problems->Add(absl::StrCat("search.budget_gpu_hours: ", Show(*v),
                                 " is not a number of hours in [0, 1e9] "
                                 "(0: no budget)"));
      ok = false;
    } else {
      s->budget_gpu_hours = v->get<double>();
    }
  }
  return ok;
}

}  // namespace

const std::vector<std::string>& SearchKeys(const std::string& strategy,
                                           const std::string& early_stop) {
  static const auto* grid = new std::vector<std::string>{"strategy"};
  static const auto* asha = new std::vector<std::string>{
      "strategy",     "metric",          "mode",
      "min_steps",    "reduction",       "max_steps",
      "smooth_evals", "aggregate_seeds", "keep_neighbors",
      "group_by",     "budget_gpu_hours"};
  static const auto* median =
      new std::vector<std::string>{"strategy",  "metric",   "mode",
                                   "min_steps", "group_by", "budget_gpu_hours"};
  static const auto* refine = new std::vector<std::string>{
      "strategy",  "metric",    "mode",      "axis",
      "bounds",    "group_by",  "budget",    "budget_gpu_hours",
      "add_seeds", "tolerance", "early_stop"};
  static const auto* refine_asha = new std::vector<std::string>{
      "strategy",  "metric",    "mode",        "axis",
      "bounds",    "group_by",  "budget",      "budget_gpu_hours",
      "add_seeds", "tolerance", "early_stop",  "min_steps",
      "reduction", "max_steps", "smooth_evals"};
  if (strategy == "asha") return *asha;
  if (strategy == "median") return *median;
  if (strategy == "refine")
    return early_stop == "asha" ? *refine_asha : *refine;
  return *grid;
}

void ParseSearch(const YAML::Node& node, SweepSpec* spec, Problems* problems) {
  SearchSpec s;
  bool ok = true;
  if (!ParseStrategy(node, &s, problems, &ok)) return;
  ok &= CheckKeys(node, s, problems);
  if (s.strategy == "grid") {
    if (ok) spec->search = s;
    return;
  }
  // Refine adds points along an integer grid axis; it does not know about
  // drawn configurations (asha and median race them: docs/sampled-axes.md).
  if (s.strategy == "refine" && !spec->sample.empty()) {
    problems->Add(
        "search.strategy: refine does not take sampled axes (sample:); use "
        "asha or median to race the drawn configurations, or grid");
    ok = false;
  }
  std::vector<std::string> axes;
  for (const Axis& a : spec->grid) axes.push_back(a.name);
  ok &= ParseMetricAndMode(node, &s, problems);
  ok &= ParseGroupBy(node, spec, axes, &s, problems);
  if (s.strategy == "asha" || s.early_stop == "asha" ||
      s.strategy == "median") {
    ok &= ParseStepKeys(node, spec, axes, &s, problems);
  }
  if (s.strategy == "asha") {
    ok &= ParseAshaOptions(node, spec, axes, &s, problems);
  }
  if (s.strategy == "refine") {
    ok &= ParseRefine(node, spec, axes, &s, problems);
  }
  ok &= ParseBudgetHours(node, &s, problems);
  if (ok) spec->search = s;
}

void CheckSearchPoints(const SweepSpec& spec, Problems* problems) {
  const SearchSpec& s = spec.search;
  if (s.strategy != "refine") return;
  // The first point's params (no trial ids: the grid is not expanded).
  if (CountPoints(spec) <= 0) return;
  json first;
  ForEachConfiguration(spec, [&](const json& params) {
    first = params;
    return false;
  });
  if (first.is_null()) return;
  for (int64_t bound : {s.bounds_lo, s.bounds_hi}) {
    json params = first;
    params[s.axis] = bound;
    absl::Status st = ValidateTrialParams(spec, params);
    if (!st.ok()) {
      problems->Add(absl::StrCat("search.bounds: ", s.axis, "=", bound,
                                 " is not a valid trial: ", st.message()));
    }
  }
}

}  // namespace smoe::sweeps::internal
