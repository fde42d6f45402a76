// Copyright 2026 SMoE Lab authors.
#include "analysis/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
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

double ParamNumber(const json& params, const std::string& name,
                   const json& defaults, double fallback) {
  const json& v = ParamOf(params, name, defaults);
  return v.is_number() ? v.get<double>() : fallback;
}

// Bootstrap percentile CI of the mean of `values`; from `normal_min` values
// on, its normal limit (*normal set).
std::pair<double, double> BootstrapMeanCi(const std::vector<double>& values,
                                          int samples, double level,
                                          int normal_min, Rng rng,
                                          bool* normal) {
  const size_t n = values.size();
  if (n == 0) return {0, 0};
  if (n == 1 || samples <= 0) {
    const CellStats s = Summarize(values);
    return {s.mean, s.mean};
  }
  if (normal_min > 0 && n >= static_cast<size_t>(normal_min)) {
    // The resampled mean's distribution tends to N(mean, sd^2 / n) with the
    // plug-in (ddof 0) variance; its alpha quantiles are mean -+ z sd/sqrt(n).
    double sum = 0;
    for (double v : values) sum += v;
    const double mean = sum / static_cast<double>(n);
    double ss = 0;
    for (double v : values) ss += (v - mean) * (v - mean);
    const double se = std::sqrt(ss / static_cast<double>(n)) /
                      std::sqrt(static_cast<double>(n));
    const double z = NormalQuantile(1 - (1 - level) / 2);
    *normal = true;
    return {mean - z * se, mean + z * se};
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
  return ParamOf(t.params, name, defaults);
}

const json& ParamOf(const json& params, const std::string& name,
                    const json& defaults) {
  static const json* kNull = new json();
  if (name.empty()) return *kNull;
  if (params.is_object()) {
    auto it = params.find(name);
    if (it != params.end()) return *it;
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
  return TrialTm(t.params, defaults);
}

std::pair<double, double> TrialTm(const json& params, const json& defaults) {
  return {ParamNumber(params, "num_experts", defaults, 8),
          ParamNumber(params, "steps", defaults, 0) *
              ParamNumber(params, "batch_size", defaults, 0)};
}

// The cell of one trial.
CellKey CellOf(const TrialPoint& t, const AggregateOptions& opt,
               const json& defaults) {
  return CellOf(t.params, opt, defaults);
}

CellKey CellOf(const json& params, const AggregateOptions& opt,
               const json& defaults) {
  return CellKey{KeyOf(ParamOf(params, opt.facet, defaults)),
                 KeyOf(ParamOf(params, opt.series, defaults)),
                 KeyOf(ParamOf(params, opt.x, defaults))};
}

// The aggregate of one cell from its (seed, value) pairs (any order).
CurvePoint MakeCurvePoint(const AggregateOptions& options, const CellKey& key,
                          std::vector<std::pair<int64_t, double>> vals) {
  std::sort(vals.begin(), vals.end());
  CurvePoint p;
  p.seeds.reserve(vals.size());
  p.values.reserve(vals.size());
  for (const auto& [seed, v] : vals) {
    p.seeds.push_back(seed);
    p.values.push_back(v);
  }
  FinishCurvePoint(options, key, &p);
  return p;
}

void FinishCurvePoint(const AggregateOptions& options, const CellKey& key,
                      CurvePoint* out) {
  CurvePoint& p = *out;
  p.x = key.x;
  p.stats = Summarize(p.values);
  p.seed_count_only =
      options.normal_ci_min_seeds > 0 &&
      p.seeds.size() >= static_cast<size_t>(options.normal_ci_min_seeds);
  const Rng rng = Rng::ForStream(
      options.seed,
      {Fnv1a(key.facet.label), Fnv1a(key.series.label), Fnv1a(key.x.label)});
  std::tie(p.stats.ci_lo, p.stats.ci_hi) =
      BootstrapMeanCi(p.values, options.bootstrap_samples, options.ci_level,
                      options.normal_ci_min_seeds, rng, &p.stats.normal_ci);
}

}  // namespace internal

using internal::CellKey;
using internal::CellOf;
using internal::MakeCurvePoint;
using internal::NumOrNull;

double NormalQuantile(double p) {
  // P. J. Acklam's algorithm.
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                             -2.759285104469687e+02, 1.383577518672690e+02,
                             -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                             -1.556989798598866e+02, 6.680131188771972e+01,
                             -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                             -2.400758277161838e+00, -2.549732539343734e+00,
                             4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                             2.445134137142996e+00, 3.754408661907416e+00};
  if (!(p > 0 && p < 1)) {
    return p <= 0 ? -std::numeric_limits<double>::infinity()
                  : std::numeric_limits<double>::infinity();
  }
  const double lo = 0.02425;
  double x;
  if (p < lo) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - lo) {
    const double q = p - 0.5;
    const double r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) *
        q / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    const double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  // One Halley step.
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

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
  json j = {{"x", ToJson(p.x)},
            {"x_label", p.x.label},
            {"n", p.stats.n},
            {"mean", NumOrNull(p.stats.mean)},
            {"sem", NumOrNull(p.stats.sem)},
            {"ci_lo", NumOrNull(p.stats.ci_lo)},
            {"ci_hi", NumOrNull(p.stats.ci_hi)},
            {"min", NumOrNull(p.stats.min)},
            {"max", NumOrNull(p.stats.max)}};
  // Large cells (stats.h): the count, not the list. Only then, and
  // "ci_method" only when used, so a sweep of small cells answers byte for
  // byte as before.
  if (p.seed_count_only) {
    j["seed_count"] = p.seeds.size();
  } else {
    j["seeds"] = p.seeds;
  }
  if (p.stats.normal_ci) j["ci_method"] = "normal";
  return j;
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
