// Copyright 2026 SMoE Lab authors.
#include "analysis/stats.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/cells.h"
#include "common/rng.h"
#include "trials/params.h"

namespace smoe::analysis {

using nlohmann::json;

namespace internal {
namespace {

double ParamNumber(const TrialPoint& t, const std::string& name,
                   const json& defaults, double fallback) {
  const json& v = ParamOf(t, name, defaults);
  return v.is_number() ? v.get<double>() : fallback;
}

// Bootstrap percentile CI of the mean of `values`.
std::pair<double, double> BootstrapMeanCi(const std::vector<double>& values,
                                          int samples, double level, Rng rng) {
  const size_t n = values.size();
  if (n == 0) return {0, 0};
  if (n == 1 || samples <= 0) {
    const CellStats s = Summarize(values);
    return {s.mean, s.mean};
  }
  std::vector<double> means(samples);
  for (int b = 0; b < samples; ++b) {
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += values[rng.UniformInt(n)];
    means[b] = sum / static_cast<double>(n);
  }
  std::sort(means.begin(), means.end());
  const double alpha = (1 - level) / 2;
  return {Quantile(means, alpha), Quantile(means, 1 - alpha)};
}

}  // namespace

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

GroupKey KeyOf(const json& v) {
  GroupKey k;
  if (v.is_number()) {
    k.number = v.get<double>();
    k.numeric = true;
    k.label = NumberLabel(k.number);
  } else if (v.is_string()) {
    k.label = v.get<std::string>();
  } else if (v.is_boolean()) {
    k.label = v.get<bool>() ? "true" : "false";
  } else if (!v.is_null()) {
    k.label = v.dump();
  }
  return k;
}

// The value of param `name` for `t` (kind defaults fill gaps); null if none.
const json& ParamOf(const TrialPoint& t, const std::string& name,
                    const json& defaults) {
  static const json* kNull = new json();
  if (name.empty()) return *kNull;
  if (t.params.is_object()) {
    auto it = t.params.find(name);
    if (it != t.params.end()) return *it;
  }
  if (defaults.is_object()) {
    auto it = defaults.find(name);
    if (it != defaults.end()) return *it;
  }
  return *kNull;
}

json NumOrNull(double v) { return std::isfinite(v) ? json(v) : json(); }

// (T, m) of one trial.
std::pair<double, double> TrialTm(const TrialPoint& t, const json& defaults) {
  return {ParamNumber(t, "num_experts", defaults, 8),
          ParamNumber(t, "steps", defaults, 0) *
              ParamNumber(t, "batch_size", defaults, 0)};
}

// The cell of one trial.
CellKey CellOf(const TrialPoint& t, const AggregateOptions& opt,
               const json& defaults) {
  return CellKey{KeyOf(ParamOf(t, opt.facet, defaults)),
                 KeyOf(ParamOf(t, opt.series, defaults)),
                 KeyOf(ParamOf(t, opt.x, defaults))};
}

// The aggregate of one cell from its (seed, value) pairs (any order).
CurvePoint MakeCurvePoint(const AggregateOptions& options, const CellKey& key,
                          std::vector<std::pair<int64_t, double>> vals) {
  std::sort(vals.begin(), vals.end());
  CurvePoint p;
  p.x = key.x;
  for (const auto& [seed, v] : vals) {
    p.seeds.push_back(seed);
    p.values.push_back(v);
  }
  p.stats = Summarize(p.values);
  const Rng rng = Rng::ForStream(
      options.seed,
      {Fnv1a(key.facet.label), Fnv1a(key.series.label), Fnv1a(key.x.label)});
  std::tie(p.stats.ci_lo, p.stats.ci_hi) = BootstrapMeanCi(
      p.values, options.bootstrap_samples, options.ci_level, rng);
  return p;
}

}  // namespace internal

using internal::CellKey;
using internal::CellOf;
using internal::MakeCurvePoint;
using internal::NumOrNull;

std::string NumberLabel(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  return absl::StrFormat("%g", v);
}

bool GroupKey::operator<(const GroupKey& o) const {
  if (numeric != o.numeric) return numeric;  // numbers first
  if (numeric && number != o.number) return number < o.number;
  return label < o.label;
}

std::vector<TrialPoint> FromSummaries(
    const std::vector<store::TrialSummary>& rows) {
  std::vector<TrialPoint> out;
  out.reserve(rows.size());
  for (const store::TrialSummary& r : rows) {
    TrialPoint p;
    p.trial_id = r.trial_id;
    p.params = json::parse(r.params_json, nullptr, /*allow_exceptions=*/false);
    if (!p.params.is_object()) p.params = json::object();
    p.seed = r.seed;
    p.state = r.state;
    p.results = r.results;
    out.push_back(std::move(p));
  }
  return out;
}

const json& KindDefaults(const std::string& kind) {
  // One object per kind, built once: aggregation looks defaults up per trial.
  static const auto* defaults = [] {
    auto* m = new std::map<std::string, json>;
    for (const trials::TrialKind* k : trials::AllKinds()) {
      (*m)[k->name] = trials::Defaults(*k);
    }
    return m;
  }();
  static const json* empty = new json(json::object());
  auto it = defaults->find(kind);
  return it == defaults->end() ? *empty : it->second;
}

const json& ParamDefaults(const AggregateOptions& options) {
  return options.defaults.is_object() ? options.defaults
                                      : KindDefaults(options.kind);
}

CellStats Summarize(const std::vector<double>& values) {
  CellStats s;
  s.n = static_cast<int>(values.size());
  if (s.n == 0) return s;
  double sum = 0;
  s.min = values[0];
  s.max = values[0];
  for (double v : values) {
    sum += v;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
  }
  s.mean = sum / s.n;
  if (s.n > 1) {
    double ss = 0;
    for (double v : values) ss += (v - s.mean) * (v - s.mean);
    s.sem = std::sqrt(ss / (s.n - 1)) / std::sqrt(static_cast<double>(s.n));
  }
  s.ci_lo = s.mean;
  s.ci_hi = s.mean;
  return s;
}

double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.size() == 1) return sorted[0];
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Curves AggregateCurves(const std::vector<TrialPoint>& trials,
                       const AggregateOptions& options) {
  Curves out;
  out.options = options;
  out.trials_total = static_cast<int>(trials.size());
  const json& defaults = ParamDefaults(options);
  std::map<CellKey, std::vector<std::pair<int64_t, double>>> cells;
  for (const TrialPoint& t : trials) {
    if (options.succeeded_only && t.state != store::TrialState::kSucceeded) {
      continue;
    }
    auto it = t.results.find(options.metric);
    if (it == t.results.end() || !std::isfinite(it->second)) continue;
    cells[CellOf(t, options, defaults)].emplace_back(t.seed, it->second);
    ++out.trials_used;
  }
  for (auto& [key, vals] : cells) {
    if (out.facets.empty() || !(out.facets.back().key == key.facet)) {
      out.facets.push_back(Facet{key.facet, {}});
    }
    Facet& f = out.facets.back();
    if (f.series.empty() || !(f.series.back().key == key.series)) {
      f.series.push_back(Series{key.series, {}});
    }
    f.series.back().points.push_back(MakeCurvePoint(options, key, vals));
  }
  return out;
}

json ToJson(const GroupKey& k) {
  if (!k.numeric) return k.label;
  if (k.number == std::floor(k.number) && std::fabs(k.number) < 1e15) {
    return static_cast<int64_t>(k.number);
  }
  return k.number;
}

json ToJson(const CurvePoint& p) {
  return {{"x", ToJson(p.x)},
          {"x_label", p.x.label},
          {"n", p.stats.n},
          {"mean", NumOrNull(p.stats.mean)},
          {"sem", NumOrNull(p.stats.sem)},
          {"ci_lo", NumOrNull(p.stats.ci_lo)},
          {"ci_hi", NumOrNull(p.stats.ci_hi)},
          {"min", NumOrNull(p.stats.min)},
          {"max", NumOrNull(p.stats.max)},
          {"seeds", p.seeds}};
}

json ToJson(const Curves& c) {
  json facets = json::array();
  for (const Facet& f : c.facets) {
    json series = json::array();
    for (const Series& s : f.series) {
      json points = json::array();
      for (const CurvePoint& p : s.points) points.push_back(ToJson(p));
      series.push_back(
          {{"key", ToJson(s.key)}, {"label", s.key.label}, {"points", points}});
    }
    facets.push_back(
        {{"key", ToJson(f.key)}, {"label", f.key.label}, {"series", series}});
  }
  return {{"metric", c.options.metric},
          {"x", c.options.x},
          {"series", c.options.series},
          {"facet", c.options.facet},
          {"bootstrap_samples", c.options.bootstrap_samples},
          {"ci_level", c.options.ci_level},
          {"trials_used", c.trials_used},
          {"trials_total", c.trials_total},
          {"facets", facets}};
}

}  // namespace smoe::analysis
