// Copyright 2026 SMoE Lab authors.
#include "analysis/tuned.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/cells.h"
#include "common/rng.h"

namespace smoe::analysis {

using internal::CellKey;
using internal::CellOf;
using internal::Fnv1a;
using internal::KeyOf;
using internal::NumOrNull;
using internal::ParamOf;
using nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Obs {
  double select = 0;
  double metric = 0;
  std::string trial_id;
};

// One x of one series: per seed index, configuration index -> observation.
using PointObs = std::vector<std::map<int, Obs>>;

struct SeriesData {
  GroupKey facet, series;
  std::map<GroupKey, PointObs> by_x;
};

bool Better(double a, double b, bool maximize) {
  return maximize ? a > b : a < b;
}

// The configuration one seed selects (-1 when it has none). Ties go to the
// lower configuration index.
int SelectForSeed(const std::map<int, Obs>& obs, bool maximize) {
  int best = -1;
  double best_v = 0;
  for (const auto& [c, o] : obs) {
    if (best < 0 || Better(o.select, best_v, maximize)) {
      best = c;
      best_v = o.select;
    }
  }
  return best;
}

// The configuration a point selects under kPoint from the seeds weighted by
// `w` (the mean of select_by over the seeds that have it); -1 when none.
int SelectForPoint(const PointObs& obs, const std::vector<int>& w,
                   bool maximize) {
  std::map<int, std::pair<double, int>> sums;  // config -> (sum, weight)
  for (size_t j = 0; j < obs.size(); ++j) {
    if (w[j] == 0) continue;
    for (const auto& [c, o] : obs[j]) {
      sums[c].first += w[j] * o.select;
      sums[c].second += w[j];
    }
  }
  int best = -1;
  double best_v = 0;
  for (const auto& [c, sw] : sums) {
    const double m = sw.first / sw.second;
    if (best < 0 || Better(m, best_v, maximize)) {
      best = c;
      best_v = m;
    }
  }
  return best;
}

// The point's value (weighted mean of the metric at the selection) for the
// resample `w`; NaN when no drawn seed has a value.
double PointValue(const PointObs& obs, const std::vector<int>& w,
                  SelectUnit unit, bool maximize_select) {
  double sum = 0;
  int n = 0;
  if (unit == SelectUnit::kPoint) {
    const int c = SelectForPoint(obs, w, maximize_select);
    if (c < 0) return kNaN;
    for (size_t j = 0; j < obs.size(); ++j) {
      if (w[j] == 0) continue;
      auto it = obs[j].find(c);
      if (it == obs[j].end()) continue;
      sum += w[j] * it->second.metric;
      n += w[j];
    }
  } else {
    for (size_t j = 0; j < obs.size(); ++j) {
      if (w[j] == 0) continue;
      const int c = SelectForSeed(obs[j], maximize_select);
      if (c < 0) continue;
      sum += w[j] * obs[j].at(c).metric;
      n += w[j];
    }
  }
  return n == 0 ? kNaN : sum / n;
}

// Percentile CI of `v` (sorted in place); the point itself when empty.
std::pair<double, double> PercentileCi(std::vector<double>* v, double level,
                                       double point) {
  if (v->empty()) return {point, point};
  std::sort(v->begin(), v->end());
  const double alpha = (1 - level) / 2;
  return {Quantile(*v, alpha), Quantile(*v, 1 - alpha)};
}

std::string DifferingParams(const TrialPoint& a, const TrialPoint& b) {
  std::set<std::string> keys;
  for (const auto& [k, v] : a.params.items()) keys.insert(k);
  for (const auto& [k, v] : b.params.items()) keys.insert(k);
  std::vector<std::string> diff;
  for (const std::string& k : keys) {
    const json va = a.params.contains(k) ? a.params[k] : json();
    const json vb = b.params.contains(k) ? b.params[k] : json();
    if (va != vb) diff.push_back(k);
  }
  return diff.empty() ? std::string("nothing (duplicate trials)")
                      : absl::StrJoin(diff, ", ");
}

TunedSeries AnalyzeSeries(const AggregateOptions& options,
                          const TuneOptions& tune,
                          const std::vector<std::string>& config_labels,
                          const std::vector<int64_t>& seeds,
                          const SeriesData& d) {
  const bool maximize = IsMaximized(options.metric);
  const bool maximize_select = IsMaximized(tune.select_by);
  TunedSeries out;
  out.facet = d.facet;
  out.series = d.series;
  const size_t ns = seeds.size();
  const std::vector<int> ones(ns, 1);
  std::vector<const PointObs*> obs;
  for (const auto& [x, po] : d.by_x) {
    TunedPoint p;
    p.x = x;
    std::set<int> configs;
    for (const auto& per_seed : po) {
      for (const auto& [c, o] : per_seed) configs.insert(c);
    }
    p.configs = static_cast<int>(configs.size());
    const int point_choice = tune.unit == SelectUnit::kPoint
                                 ? SelectForPoint(po, ones, maximize_select)
                                 : -1;
    for (size_t j = 0; j < ns; ++j) {
      const int c = tune.unit == SelectUnit::kPoint
                        ? point_choice
                        : SelectForSeed(po[j], maximize_select);
      if (c < 0) continue;
      auto it = po[j].find(c);
      if (it == po[j].end()) continue;
      p.seeds.push_back(seeds[j]);
      p.values.push_back(it->second.metric);
      p.select_values.push_back(it->second.select);
      p.chosen.push_back(config_labels[c]);
      ++p.chosen_count[config_labels[c]];
    }
    p.stats = Summarize(p.values);
    out.points.push_back(std::move(p));
    obs.push_back(&po);
  }

  // Point estimate of the optimal x.
  OptimalK& o = out.optimal;
  o.facet = d.facet;
  o.series = d.series;
  o.maximize = maximize;
  int best = -1;
  for (size_t i = 0; i < out.points.size(); ++i) {
    if (out.points[i].stats.n == 0) continue;
    if (best < 0 || Better(out.points[i].stats.mean,
                           out.points[best].stats.mean, maximize)) {
      best = static_cast<int>(i);
    }
  }
  o.seeds = static_cast<int>(ns);
  if (best < 0) return out;
  o.best = out.points[best].x;
  o.best_mean = out.points[best].stats.mean;
  o.best_sem = out.points[best].stats.sem;
  for (const TunedPoint& p : out.points) {  // ascending x: first is smallest
    if (p.stats.n == 0) continue;
    const bool within = maximize ? p.stats.mean >= o.best_mean - o.best_sem
                                 : p.stats.mean <= o.best_mean + o.best_sem;
    if (within) {
      o.one_se = p.x;
      break;
    }
  }

  // Paired bootstrap over seeds; the selection is redone in every resample.
  const int samples = ns >= 2 ? std::max(0, options.bootstrap_samples) : 0;
  o.bootstrap_samples = std::max(0, options.bootstrap_samples);
  Rng rng =
      Rng::ForStream(options.seed, {Fnv1a(d.facet.label), Fnv1a(d.series.label),
                                    0x74756e6564ULL /* "tuned" */});
  std::vector<int> wins(out.points.size(), 0);
  std::vector<double> winners;
  std::vector<std::vector<double>> point_draws(out.points.size());
  std::vector<int> w(ns);
  for (int b = 0; b < samples; ++b) {
    std::fill(w.begin(), w.end(), 0);
    for (size_t j = 0; j < ns; ++j) ++w[rng.UniformInt(ns)];
    int arg = -1;
    double arg_v = 0;
    for (size_t i = 0; i < obs.size(); ++i) {
      const double v = PointValue(*obs[i], w, tune.unit, maximize_select);
      if (std::isnan(v)) continue;
      point_draws[i].push_back(v);
      if (arg < 0 || Better(v, arg_v, maximize)) {
        arg = static_cast<int>(i);
        arg_v = v;
      }
    }
    if (arg < 0) continue;
    ++wins[arg];
    winners.push_back(out.points[arg].x.number);
  }
  for (size_t i = 0; i < out.points.size(); ++i) {
    CellStats& s = out.points[i].stats;
    std::tie(s.ci_lo, s.ci_hi) =
        PercentileCi(&point_draws[i], options.ci_level, s.mean);
  }
  std::vector<std::string> labels;
  labels.reserve(out.points.size());
  for (const TunedPoint& p : out.points) labels.push_back(p.x.label);
  SummarizeArgmaxDraws(wins, labels, static_cast<size_t>(best),
                       std::move(winners), options.ci_level, &o);
  return out;
}

json CellStatsJson(const CellStats& s) {
  return {{"n", s.n},
          {"mean", NumOrNull(s.mean)},
          {"sem", NumOrNull(s.sem)},
          {"ci_lo", NumOrNull(s.ci_lo)},
          {"ci_hi", NumOrNull(s.ci_hi)}};
}

}  // namespace

absl::StatusOr<SelectUnit> ParseSelectUnit(const std::string& name) {
  if (name == "seed") return SelectUnit::kSeed;
  if (name == "point") return SelectUnit::kPoint;
  return absl::InvalidArgumentError(
      absl::StrCat("'", name, "' is not a selection unit (seed or point)"));
}

const char* SelectUnitName(SelectUnit u) {
  return u == SelectUnit::kPoint ? "point" : "seed";
}

std::string ConfigLabel(const TrialPoint& t,
                        const std::vector<std::string>& tune,
                        const json& defaults) {
  std::vector<std::string> parts;
  for (const std::string& name : tune) {
    parts.push_back(
        absl::StrCat(name, "=", KeyOf(ParamOf(t, name, defaults)).label));
  }
  return absl::StrJoin(parts, ", ");
}

absl::StatusOr<TunedAnalysis> AnalyzeTuned(
    const std::vector<TrialPoint>& trials, const AggregateOptions& options,
    const TuneOptions& tune) {
  if (tune.tune.empty()) {
    return absl::InvalidArgumentError("no parameter to tune");
  }
  if (tune.select_by.empty()) {
    return absl::InvalidArgumentError("no metric to select by");
  }
  std::set<std::string> seen;
  for (const std::string& name : tune.tune) {
    if (name.empty()) {
      return absl::InvalidArgumentError("an empty parameter name to tune");
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", name, "' is named twice to tune"));
    }
    for (const auto& [axis, value] :
         {std::pair<const char*, const std::string*>{"x", &options.x},
          {"series", &options.series},
          {"facet", &options.facet}}) {
      if (*value == name) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", name, "' is the ", axis,
                         " axis of the analysis: it cannot also be tuned"));
      }
    }
  }
  TunedAnalysis a;
  a.options = options;
  a.tune = tune;
  a.trials_total = static_cast<int>(trials.size());
  const json& defaults = ParamDefaults(options);

  // Configurations, sorted by their values.
  std::map<std::vector<GroupKey>, std::pair<std::string, json>> config_keys;
  for (const TrialPoint& t : trials) {
    std::vector<GroupKey> key;
    json values = json::object();
    for (const std::string& name : tune.tune) {
      const json& v = ParamOf(t, name, defaults);
      key.push_back(KeyOf(v));
      values[name] = v;
    }
    config_keys.emplace(
        std::move(key),
        std::make_pair(ConfigLabel(t, tune.tune, defaults), std::move(values)));
  }
  std::map<std::string, int> config_index;
  for (const auto& [key, lv] : config_keys) {
    config_index[lv.first] = static_cast<int>(a.configs.size());
    a.configs.push_back(lv.first);
  }

  // The observations, and the union of seeds per (facet, series).
  std::map<std::pair<GroupKey, GroupKey>, std::set<int64_t>> series_seeds;
  struct Raw {
    CellKey cell;
    int64_t seed;
    int config;
    Obs obs;
  };
  std::vector<Raw> raw;
  std::map<std::tuple<CellKey, int64_t, int>, const TrialPoint*> owner;
  for (const TrialPoint& t : trials) {
    if (options.succeeded_only && t.state != store::TrialState::kSucceeded) {
      continue;
    }
    auto m = t.results.find(options.metric);
    auto s = t.results.find(tune.select_by);
    if (m == t.results.end() || s == t.results.end() ||
        !std::isfinite(m->second) || !std::isfinite(s->second)) {
      continue;
    }
    const CellKey cell = CellOf(t, options, defaults);
    const std::string label = ConfigLabel(t, tune.tune, defaults);
    const int c = config_index.at(label);
    auto [it, fresh] = owner.emplace(std::make_tuple(cell, t.seed, c), &t);
    if (!fresh) {
      const TrialPoint& other = *it->second;
      std::vector<std::string> where;
      if (!options.facet.empty()) {
        where.push_back(absl::StrCat(options.facet, "=", cell.facet.label));
      }
      where.push_back(absl::StrCat(options.series, "=", cell.series.label));
      where.push_back(absl::StrCat(options.x, "=", cell.x.label));
      where.push_back(absl::StrCat("seed ", t.seed));
      where.push_back(label);
      return absl::InvalidArgumentError(absl::StrCat(
          "trials ", other.trial_id, " and ", t.trial_id, " are both (",
          absl::StrJoin(where, ", "), "): they differ in ",
          DifferingParams(other, t),
          ", neither tuned nor an axis of the analysis; tune it too or make "
          "it the series or facet"));
    }
    series_seeds[{cell.facet, cell.series}].insert(t.seed);
    raw.push_back(Raw{cell, t.seed, c, Obs{s->second, m->second, t.trial_id}});
    ++a.trials_used;
  }
  std::map<std::pair<GroupKey, GroupKey>, SeriesData> data;
  for (const Raw& r : raw) {
    const auto sk = std::make_pair(r.cell.facet, r.cell.series);
    const std::set<int64_t>& ss = series_seeds[sk];
    SeriesData& d = data[sk];
    d.facet = r.cell.facet;
    d.series = r.cell.series;
    PointObs& po = d.by_x[r.cell.x];
    if (po.empty()) po.resize(ss.size());
    const size_t j =
        static_cast<size_t>(std::distance(ss.begin(), ss.find(r.seed)));
    po[j][r.config] = r.obs;
  }
  for (const auto& [sk, d] : data) {
    const std::set<int64_t>& ss = series_seeds[sk];
    a.series.push_back(AnalyzeSeries(options, tune, a.configs,
                                     std::vector<int64_t>(ss.begin(), ss.end()),
                                     d));
  }

  // The untuned comparison: each fixed configuration on its own.
  for (const auto& [key, lv] : config_keys) {
    std::vector<TrialPoint> subset;
    for (const TrialPoint& t : trials) {
      if (ConfigLabel(t, tune.tune, defaults) == lv.first) subset.push_back(t);
    }
    UntunedCurve u;
    u.label = lv.first;
    u.values = lv.second;
    u.curves = AggregateCurves(subset, options);
    u.optimal = ComputeOptimalK(u.curves);
    a.untuned.push_back(std::move(u));
  }
  return a;
}

json ToJson(const TunedAnalysis& a) {
  json series = json::array();
  for (const TunedSeries& s : a.series) {
    json points = json::array();
    for (const TunedPoint& p : s.points) {
      json j = CellStatsJson(p.stats);
      j["x"] = ToJson(p.x);
      j["x_label"] = p.x.label;
      j["seeds"] = p.seeds;
      j["values"] = p.values;
      j["select_values"] = p.select_values;
      j["chosen"] = p.chosen;
      j["chosen_count"] = p.chosen_count;
      j["configs"] = p.configs;
      points.push_back(std::move(j));
    }
    series.push_back({{"facet", ToJson(s.facet)},
                      {"facet_label", s.facet.label},
                      {"series", ToJson(s.series)},
                      {"series_label", s.series.label},
                      {"points", points},
                      {"optimal", ToJson(s.optimal)}});
  }
  json untuned = json::array();
  for (const UntunedCurve& u : a.untuned) {
    json optimal = json::array();
    for (const OptimalK& o : u.optimal) optimal.push_back(ToJson(o));
    untuned.push_back({{"config", u.label},
                       {"values", u.values},
                       {"curves", ToJson(u.curves)},
                       {"optimal", optimal}});
  }
  json notes = json::array();
  if (a.tune.select_by == a.options.metric) {
    notes.push_back(absl::StrCat(
        "selected and reported on the same metric (", a.options.metric,
        "): the tuned values are biased upwards; select by val_acc"));
  }
  return {{"kind", "tuned"},
          {"metric", a.options.metric},
          {"x", a.options.x},
          {"series", a.options.series},
          {"facet", a.options.facet},
          {"tune", a.tune.tune},
          {"select_by", a.tune.select_by},
          {"select_per", SelectUnitName(a.tune.unit)},
          {"bootstrap_samples", a.options.bootstrap_samples},
          {"ci_level", a.options.ci_level},
          {"configs", a.configs},
          {"trials_used", a.trials_used},
          {"trials_total", a.trials_total},
          {"tuned", series},
          {"untuned", untuned},
          {"notes", notes}};
}

}  // namespace smoe::analysis
