// Copyright 2026 SMoE Lab authors.
#include "coordinator/analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/rng.h"
#include "trials/params.h"

namespace smoe::coordinator::analysis {
namespace {

using nlohmann::json;

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string NumberLabel(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  return absl::StrFormat("%g", v);
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

struct CellKey {
  GroupKey facet, series, x;
  bool operator<(const CellKey& o) const {
    if (facet < o.facet) return true;
    if (o.facet < facet) return false;
    if (series < o.series) return true;
    if (o.series < series) return false;
    return x < o.x;
  }
};

json NumOrNull(double v) { return std::isfinite(v) ? json(v) : json(); }

// (facet, series, x) -> (T = num_experts, m = steps * batch_size) of the
// cell's first trial.
using CellParams = std::map<CellKey, std::pair<double, double>>;

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

}  // namespace

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
  const json& defaults = KindDefaults(options.kind);
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

bool IsMaximized(const std::string& metric) {
  return !absl::StrContains(metric, "loss") &&
         !absl::StrContains(metric, "error");
}

namespace {

// The optimal x of one series (ComputeOptimalK's per-series step).
// REQUIRES: s.points non-empty.
OptimalK OptimalForSeries(const AggregateOptions& options,
                          const GroupKey& facet, const Series& s) {
  const bool maximize = IsMaximized(options.metric);
  auto better = [maximize](double a, double b) {
    return maximize ? a > b : a < b;
  };
  OptimalK o;
  o.facet = facet;
  o.series = s.key;
  o.maximize = maximize;
  size_t best = 0;
  for (size_t i = 1; i < s.points.size(); ++i) {
    if (better(s.points[i].stats.mean, s.points[best].stats.mean)) best = i;
  }
  o.best = s.points[best].x;
  o.best_mean = s.points[best].stats.mean;
  o.best_sem = s.points[best].stats.sem;
  for (const CurvePoint& p : s.points) {  // ascending x: first is smallest
    const bool within = maximize ? p.stats.mean >= o.best_mean - o.best_sem
                                 : p.stats.mean <= o.best_mean + o.best_sem;
    if (within) {
      o.one_se = p.x;
      break;
    }
  }
  // Paired bootstrap over the union of seeds.
  std::set<int64_t> seed_set;
  for (const CurvePoint& p : s.points) {
    seed_set.insert(p.seeds.begin(), p.seeds.end());
  }
  const std::vector<int64_t> seeds(seed_set.begin(), seed_set.end());
  const size_t ns = seeds.size();
  // value[x][seed index] (NaN when missing)
  std::vector<std::vector<double>> value(
      s.points.size(),
      std::vector<double>(ns, std::numeric_limits<double>::quiet_NaN()));
  for (size_t i = 0; i < s.points.size(); ++i) {
    const CurvePoint& p = s.points[i];
    for (size_t j = 0; j < p.seeds.size(); ++j) {
      const size_t idx =
          std::lower_bound(seeds.begin(), seeds.end(), p.seeds[j]) -
          seeds.begin();
      value[i][idx] = p.values[j];
    }
  }
  const int samples = std::max(0, options.bootstrap_samples);
  o.bootstrap_samples = samples;
  std::vector<int> wins(s.points.size(), 0);
  std::vector<double> winners;
  Rng rng = Rng::ForStream(
      options.seed,
      {Fnv1a(facet.label), Fnv1a(s.key.label), 0x6f70745f6bULL /* "opt_k" */});
  std::vector<int> counts(ns);
  for (int b = 0; b < samples; ++b) {
    std::fill(counts.begin(), counts.end(), 0);
    for (size_t j = 0; j < ns; ++j) ++counts[rng.UniformInt(ns)];
    int arg = -1;
    double arg_mean = 0;
    for (size_t i = 0; i < s.points.size(); ++i) {
      double sum = 0;
      int w = 0;
      for (size_t j = 0; j < ns; ++j) {
        if (counts[j] == 0 || std::isnan(value[i][j])) continue;
        sum += counts[j] * value[i][j];
        w += counts[j];
      }
      if (w == 0) continue;
      const double m = sum / w;
      if (arg < 0 || better(m, arg_mean)) {
        arg = static_cast<int>(i);
        arg_mean = m;
      }
    }
    if (arg < 0) continue;
    ++wins[arg];
    winners.push_back(s.points[arg].x.number);
  }
  const double total = static_cast<double>(winners.size());
  if (total > 0) {
    o.best_freq = wins[best] / total;
    for (size_t i = 0; i < s.points.size(); ++i) {
      if (wins[i] > 0) o.argmax_freq[s.points[i].x.label] = wins[i] / total;
    }
    std::sort(winners.begin(), winners.end());
    const double alpha = (1 - options.ci_level) / 2;
    const double n1 = total - 1;
    o.ci_lo = winners[static_cast<size_t>(std::floor(alpha * n1))];
    o.ci_hi = winners[static_cast<size_t>(std::ceil((1 - alpha) * n1))];
  } else {
    o.best_freq = 1;
    o.argmax_freq[o.best.label] = 1;
    o.ci_lo = o.ci_hi = o.best.number;
  }
  return o;
}

}  // namespace

std::vector<OptimalK> ComputeOptimalK(const Curves& curves) {
  std::vector<OptimalK> out;
  for (const Facet& f : curves.facets) {
    for (const Series& s : f.series) {
      if (s.points.empty()) continue;
      out.push_back(OptimalForSeries(curves.options, f.key, s));
    }
  }
  return out;
}

double TotalError(double a, double b, double k, double n, double t, double m) {
  const double est = n * k / m * std::log(t / k);
  return a * n * n / k + b * std::sqrt(std::max(0.0, est));
}

std::pair<double, double> Nnls2(const std::vector<double>& f1,
                                const std::vector<double>& f2,
                                const std::vector<double>& y) {
  double s11 = 0, s22 = 0, s12 = 0, r1 = 0, r2 = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    s11 += f1[i] * f1[i];
    s22 += f2[i] * f2[i];
    s12 += f1[i] * f2[i];
    r1 += f1[i] * y[i];
    r2 += f2[i] * y[i];
  }
  auto rss = [&](double a, double b) {
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      const double r = y[i] - a * f1[i] - b * f2[i];
      s += r * r;
    }
    return s;
  };
  const double det = s11 * s22 - s12 * s12;
  if (s11 > 0 && s22 > 0 && det > 1e-12 * s11 * s22) {
    const double a = (r1 * s22 - r2 * s12) / det;
    const double b = (r2 * s11 - r1 * s12) / det;
    if (a >= 0 && b >= 0) return {a, b};
  }
  std::vector<std::pair<double, double>> cand = {{0, 0}};
  if (s11 > 0) cand.emplace_back(std::max(0.0, r1 / s11), 0);
  if (s22 > 0) cand.emplace_back(0, std::max(0.0, r2 / s22));
  std::pair<double, double> best = cand[0];
  double best_rss = rss(best.first, best.second);
  for (const auto& c : cand) {
    const double r = rss(c.first, c.second);
    if (r < best_rss) {
      best_rss = r;
      best = c;
    }
  }
  return best;
}

namespace {

std::vector<TheoryFit> FitWithCellParams(const Curves& curves,
                                         const CellParams& tm);

}  // namespace

std::vector<TheoryFit> FitTotalError(const Curves& curves,
                                     const std::vector<TrialPoint>& trials) {
  const AggregateOptions& opt = curves.options;
  const json& defaults = KindDefaults(opt.kind);
  CellParams tm;
  for (const TrialPoint& t : trials) {
    if (opt.succeeded_only && t.state != store::TrialState::kSucceeded) {
      continue;
    }
    tm.try_emplace(CellOf(t, opt, defaults), TrialTm(t, defaults));
  }
  return FitWithCellParams(curves, tm);
}

namespace {

std::vector<TheoryFit> FitWithCellParams(const Curves& curves,
                                         const CellParams& tm) {
  const bool accuracy = IsMaximized(curves.options.metric);
  std::vector<TheoryFit> out;
  for (const Facet& f : curves.facets) {
    TheoryFit fit;
    fit.facet = f.key;
    std::vector<double> f1, f2, y;
    for (const Series& s : f.series) {
      if (!s.key.numeric) continue;
      for (const CurvePoint& p : s.points) {
        auto it = tm.find(CellKey{f.key, s.key, p.x});
        if (!p.x.numeric || it == tm.end()) continue;
        FitPoint fp;
        fp.k = p.x.number;
        fp.n = s.key.number;
        fp.t = it->second.first;
        fp.m = it->second.second;
        fp.seeds = p.stats.n;
        if (fp.k <= 0 || fp.k > fp.t || fp.n <= 0 || fp.m <= 0) continue;
        fp.measured = accuracy ? 1 - p.stats.mean : p.stats.mean;
        f1.push_back(fp.n * fp.n / fp.k);
        f2.push_back(std::sqrt(fp.n * fp.k / fp.m * std::log(fp.t / fp.k)));
        y.push_back(fp.measured);
        fit.points.push_back(fp);
      }
    }
    if (fit.points.size() < 2) {
      fit.message = absl::StrCat(
          "need at least 2 (k, N) cells with numeric k <= num_experts and "
          "steps*batch_size > 0; have ",
          fit.points.size());
      out.push_back(std::move(fit));
      continue;
    }
    std::tie(fit.a, fit.b) = Nnls2(f1, f2, y);
    double mean_y = 0;
    for (double v : y) mean_y += v;
    mean_y /= static_cast<double>(y.size());
    double tss = 0;
    for (size_t i = 0; i < fit.points.size(); ++i) {
      FitPoint& p = fit.points[i];
      p.predicted = fit.a * f1[i] + fit.b * f2[i];
      p.residual = p.measured - p.predicted;
      fit.rss += p.residual * p.residual;
      tss += (y[i] - mean_y) * (y[i] - mean_y);
    }
    fit.r2 = tss > 0 ? 1 - fit.rss / tss : 0;
    fit.ok = true;
    // k* per N.
    std::map<double, TheoryFit::KStar> by_n;
    for (const FitPoint& p : fit.points) {
      auto [it, inserted] = by_n.try_emplace(p.n);
      TheoryFit::KStar& ks = it->second;
      if (inserted) {
        ks.n = p.n;
        ks.t = p.t;
        ks.m = p.m;
        ks.k_star_grid = p.k;
      } else if (TotalError(fit.a, fit.b, p.k, p.n, p.t, p.m) <
                 TotalError(fit.a, fit.b, ks.k_star_grid, p.n, p.t, p.m)) {
        ks.k_star_grid = p.k;
      }
    }
    for (auto& [n, ks] : by_n) {
      const int t = static_cast<int>(std::floor(ks.t));
      double best = std::numeric_limits<double>::infinity();
      for (int k = 1; k <= t; ++k) {
        const double e = TotalError(fit.a, fit.b, k, ks.n, ks.t, ks.m);
        ks.curve.emplace_back(k, e);
        if (e < best) {
          best = e;
          ks.k_star = k;
        }
      }
      fit.k_star.push_back(ks);
    }
    out.push_back(std::move(fit));
  }
  return out;
}

}  // namespace

std::vector<SkillMixTable> SkillMixTables(const std::vector<TrialPoint>& trials,
                                          const std::string& row_param,
                                          const std::string& col_param) {
  const json& defaults = KindDefaults("skillmix");
  std::set<std::string> metrics;
  std::set<GroupKey> rows, cols;
  // metric -> (row, col) -> values ; and the per-trial _se when n == 1
  std::map<std::string, std::map<std::pair<GroupKey, GroupKey>,
                                 std::vector<std::pair<double, double>>>>
      acc;
  for (const TrialPoint& t : trials) {
    if (t.state != store::TrialState::kSucceeded) continue;
    const GroupKey r = KeyOf(ParamOf(t, row_param, defaults));
    const GroupKey c = KeyOf(ParamOf(t, col_param, defaults));
    bool any = false;
    for (const auto& [name, v] : t.results) {
      if (absl::EndsWith(name, "_se") || !std::isfinite(v)) continue;
      auto se = t.results.find(name + "_se");
      acc[name][{r, c}].emplace_back(
          v, se == t.results.end() ? std::numeric_limits<double>::quiet_NaN()
                                   : se->second);
      metrics.insert(name);
      any = true;
    }
    if (any) {
      rows.insert(r);
      cols.insert(c);
    }
  }
  std::vector<SkillMixTable> out;
  for (const std::string& m : metrics) {
    SkillMixTable t;
    t.metric = m;
    t.rows.assign(rows.begin(), rows.end());
    t.cols.assign(cols.begin(), cols.end());
    t.cells.assign(t.rows.size(), std::vector<CellStats>(t.cols.size()));
    for (size_t i = 0; i < t.rows.size(); ++i) {
      for (size_t j = 0; j < t.cols.size(); ++j) {
        auto it = acc[m].find({t.rows[i], t.cols[j]});
        if (it == acc[m].end()) continue;
        std::vector<double> vals;
        for (const auto& [v, se] : it->second) vals.push_back(v);
        CellStats s = Summarize(vals);
        // One trial: its own s.e. over combinations; NaN (JSON null:
        // unknown, not 0) when it reported none.
        if (s.n == 1) s.sem = it->second[0].second;
        s.ci_lo = s.mean - s.sem;
        s.ci_hi = s.mean + s.sem;
        t.cells[i][j] = s;
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<SkillMixBest> BestRowPerColumn(const SkillMixTable& table) {
  std::vector<SkillMixBest> out;
  for (size_t c = 0; c < table.cols.size(); ++c) {
    SkillMixBest b;
    b.col = c;
    for (size_t r = 0; r < table.rows.size(); ++r) {
      const CellStats& s = table.cells[r][c];
      if (s.n == 0 || !std::isfinite(s.mean)) continue;
      const int ri = static_cast<int>(r);
      if (b.best < 0 || s.mean > table.cells[b.best][c].mean) {
        b.runner_up = b.best;
        b.best = ri;
      } else if (b.runner_up < 0 || s.mean > table.cells[b.runner_up][c].mean) {
        b.runner_up = ri;
      }
    }
    out.push_back(b);
  }
  return out;
}

// ---- JSON
// ---------------------------------------------------------------------

json ToJson(const GroupKey& k) {
  if (!k.numeric) return k.label;
  if (k.number == std::floor(k.number) && std::fabs(k.number) < 1e15) {
    return static_cast<int64_t>(k.number);
  }
  return k.number;
}

json ToJson(const Curves& c) {
  json facets = json::array();
  for (const Facet& f : c.facets) {
    json series = json::array();
    for (const Series& s : f.series) {
      json points = json::array();
      for (const CurvePoint& p : s.points) {
        points.push_back({{"x", ToJson(p.x)},
                          {"x_label", p.x.label},
                          {"n", p.stats.n},
                          {"mean", NumOrNull(p.stats.mean)},
                          {"sem", NumOrNull(p.stats.sem)},
                          {"ci_lo", NumOrNull(p.stats.ci_lo)},
                          {"ci_hi", NumOrNull(p.stats.ci_hi)},
                          {"min", NumOrNull(p.stats.min)},
                          {"max", NumOrNull(p.stats.max)},
                          {"seeds", p.seeds}});
      }
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

json ToJson(const OptimalK& o) {
  return {{"facet", ToJson(o.facet)},
          {"facet_label", o.facet.label},
          {"series", ToJson(o.series)},
          {"series_label", o.series.label},
          {"maximize", o.maximize},
          {"best", ToJson(o.best)},
          {"best_mean", NumOrNull(o.best_mean)},
          {"best_sem", NumOrNull(o.best_sem)},
          {"one_se", ToJson(o.one_se)},
          {"bootstrap_samples", o.bootstrap_samples},
          {"best_freq", o.best_freq},
          {"ci_lo", o.ci_lo},
          {"ci_hi", o.ci_hi},
          {"argmax_freq", o.argmax_freq}};
}

json ToJson(const TheoryFit& f) {
  json points = json::array();
  for (const FitPoint& p : f.points) {
    points.push_back({{"k", p.k},
                      {"N", p.n},
                      {"T", p.t},
                      {"m", p.m},
                      {"measured", p.measured},
                      {"predicted", p.predicted},
                      {"residual", p.residual},
                      {"seeds", p.seeds}});
  }
  json ks = json::array();
  for (const TheoryFit::KStar& k : f.k_star) {
    json curve = json::array();
    for (const auto& [kk, e] : k.curve) curve.push_back({kk, NumOrNull(e)});
    ks.push_back({{"N", k.n},
                  {"T", k.t},
                  {"m", k.m},
                  {"k_star", k.k_star},
                  {"k_star_grid", k.k_star_grid},
                  {"curve", curve}});
  }
  return {{"facet", ToJson(f.facet)},
          {"facet_label", f.facet.label},
          {"ok", f.ok},
          {"message", f.message},
          {"a", f.a},
          {"b", f.b},
          {"rss", f.rss},
          {"r2", f.r2},
          {"points", points},
          {"k_star", ks}};
}

json ToJson(const SkillMixTable& t) {
  json rows = json::array(), cols = json::array(), cells = json::array();
  for (const GroupKey& r : t.rows) rows.push_back(ToJson(r));
  for (const GroupKey& c : t.cols) cols.push_back(ToJson(c));
  for (const auto& row : t.cells) {
    json jr = json::array();
    for (const CellStats& s : row) {
      if (s.n == 0) {
        jr.push_back(nullptr);
      } else {
        jr.push_back({{"n", s.n},
                      {"mean", NumOrNull(s.mean)},
                      {"sem", NumOrNull(s.sem)}});
      }
    }
    cells.push_back(std::move(jr));
  }
  json best = json::array();
  for (const SkillMixBest& b : BestRowPerColumn(t)) {
    json jb = {{"col", ToJson(t.cols[b.col])},
               {"best", nullptr},
               {"runner_up", nullptr}};
    if (b.best >= 0) jb["best"] = ToJson(t.rows[b.best]);
    if (b.runner_up >= 0) jb["runner_up"] = ToJson(t.rows[b.runner_up]);
    best.push_back(std::move(jb));
  }
  return {{"metric", t.metric},
          {"rows", rows},
          {"cols", cols},
          {"cells", cells},
          {"best", best}};
}

namespace {
json AnalysisJson(const AggregateOptions& options, const Curves& curves,
                  const std::vector<OptimalK>& optimal_k,
                  const std::vector<TheoryFit>& theory);
}  // namespace

json AnalyzeSweep(const std::vector<TrialPoint>& trials,
                  const AggregateOptions& options) {
  const Curves curves = AggregateCurves(trials, options);
  std::vector<TheoryFit> fits;
  if (IsMaximized(options.metric)) fits = FitTotalError(curves, trials);
  return AnalysisJson(options, curves, ComputeOptimalK(curves), fits);
}

namespace {

json AnalysisJson(const AggregateOptions& options, const Curves& curves,
                  const std::vector<OptimalK>& optimal_k,
                  const std::vector<TheoryFit>& theory) {
  json optimal = json::array();
  for (const OptimalK& o : optimal_k) optimal.push_back(ToJson(o));
  json fits = json::array();
  for (const TheoryFit& f : theory) fits.push_back(ToJson(f));
  return {{"metric", options.metric},
          {"x", options.x},
          {"series", options.series},
          {"facet", options.facet},
          {"curves", ToJson(curves)},
          {"optimal", optimal},
          {"fits", fits},
          {"model",
           "E(k,N) = a*N^2/k + b*sqrt(N*k/m*log(T/k)); error = 1 - metric; "
           "k = top_k, N = M, T = num_experts, m = steps*batch_size"}};
}

}  // namespace

// ---- CurveAggregator
// ------------------------------------------------------------

struct CurveAggregator::Impl {
  explicit Impl(AggregateOptions o)
      : options(std::move(o)), defaults(KindDefaults(options.kind)) {}

  struct Entry {
    bool has_value = false;
    int64_t seed = 0;
    double value = 0;
    std::pair<double, double> tm;  // (T, m)
  };
  struct Cell {
    std::map<int64_t, Entry> entries;  // by position
    int values = 0;                    // entries with has_value
    bool dirty = true;
    CurvePoint point;
  };
  using SeriesKey = std::pair<GroupKey, GroupKey>;  // (facet, series)

  AggregateOptions options;
  const json& defaults;
  std::map<CellKey, Cell> cells;
  // position -> the cell it contributes to (absent: filtered out).
  std::unordered_map<int64_t, CellKey> where;
  std::set<int64_t> positions;  // every position ever Set
  std::set<SeriesKey> dirty_series;
  std::map<SeriesKey, OptimalK> optimal_by_series;
  bool curves_dirty = true;
  bool optimal_dirty = true;
  Curves curves;
  std::vector<OptimalK> optimal;
  int64_t cells_computed = 0;

  void Touch(const CellKey& key) {
    dirty_series.insert({key.facet, key.series});
    curves_dirty = true;
    optimal_dirty = true;
  }

  void Set(int64_t position, const TrialPoint& t) {
    positions.insert(position);
    if (auto w = where.find(position); w != where.end()) {
      auto c = cells.find(w->second);
      auto e = c->second.entries.find(position);
      if (e->second.has_value) --c->second.values;
      c->second.entries.erase(e);
      c->second.dirty = true;
      Touch(c->first);
      if (c->second.entries.empty()) cells.erase(c);
      where.erase(w);
    }
    if (options.succeeded_only && t.state != store::TrialState::kSucceeded) {
      curves_dirty = true;  // trials_total may have changed
      return;
    }
    const CellKey key = CellOf(t, options, defaults);
    Entry e;
    e.seed = t.seed;
    e.tm = TrialTm(t, defaults);
    auto r = t.results.find(options.metric);
    e.has_value = r != t.results.end() && std::isfinite(r->second);
    if (e.has_value) e.value = r->second;
    Cell& c = cells[key];
    c.entries[position] = e;
    if (e.has_value) ++c.values;
    c.dirty = true;
    where[position] = key;
    Touch(key);
  }

  const Curves& GetCurves() {
    if (!curves_dirty) return curves;
    curves = Curves();
    curves.options = options;
    curves.trials_total = static_cast<int>(positions.size());
    for (auto& [key, cell] : cells) {
      if (cell.values == 0) continue;
      if (cell.dirty) {
        std::vector<std::pair<int64_t, double>> vals;
        vals.reserve(cell.values);
        for (const auto& [pos, e] : cell.entries) {
          if (e.has_value) vals.emplace_back(e.seed, e.value);
        }
        cell.point = MakeCurvePoint(options, key, std::move(vals));
        cell.dirty = false;
        ++cells_computed;
      }
      curves.trials_used += cell.values;
      if (curves.facets.empty() || !(curves.facets.back().key == key.facet)) {
        curves.facets.push_back(Facet{key.facet, {}});
      }
      Facet& f = curves.facets.back();
      if (f.series.empty() || !(f.series.back().key == key.series)) {
        f.series.push_back(Series{key.series, {}});
      }
      f.series.back().points.push_back(cell.point);
    }
    curves_dirty = false;
    return curves;
  }

  const std::vector<OptimalK>& GetOptimal() {
    const Curves& c = GetCurves();
    if (!optimal_dirty) return optimal;
    optimal.clear();
    std::map<SeriesKey, OptimalK> next;
    for (const Facet& f : c.facets) {
      for (const Series& s : f.series) {
        if (s.points.empty()) continue;
        const SeriesKey key{f.key, s.key};
        auto old = optimal_by_series.find(key);
        if (old != optimal_by_series.end() && !dirty_series.count(key)) {
          next.emplace(key, std::move(old->second));
        } else {
          next.emplace(key, OptimalForSeries(options, f.key, s));
        }
        optimal.push_back(next.at(key));
      }
    }
    optimal_by_series = std::move(next);
    dirty_series.clear();
    optimal_dirty = false;
    return optimal;
  }

  json GetAnalysis() {
    const Curves& c = GetCurves();
    const std::vector<OptimalK>& o = GetOptimal();
    std::vector<TheoryFit> fits;
    if (IsMaximized(options.metric)) {
      CellParams tm;
      for (const auto& [key, cell] : cells) {
        tm.emplace(key, cell.entries.begin()->second.tm);
      }
      fits = FitWithCellParams(c, tm);
    }
    return AnalysisJson(options, c, o, fits);
  }
};

CurveAggregator::CurveAggregator(AggregateOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
CurveAggregator::~CurveAggregator() = default;
const AggregateOptions& CurveAggregator::options() const {
  return impl_->options;
}
void CurveAggregator::Set(int64_t position, const TrialPoint& trial) {
  impl_->Set(position, trial);
}
const Curves& CurveAggregator::curves() { return impl_->GetCurves(); }
const std::vector<OptimalK>& CurveAggregator::optimal() {
  return impl_->GetOptimal();
}
json CurveAggregator::Analysis() { return impl_->GetAnalysis(); }
int64_t CurveAggregator::cells_computed() const {
  return impl_->cells_computed;
}

namespace {
// Reads a number without throwing (NaN when absent or not a number).
double Num(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_number()
             ? it->get<double>()
             : std::numeric_limits<double>::quiet_NaN();
}
std::string Str(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}
}  // namespace

std::string FormatSkillMixTables(const std::vector<SkillMixTable>& tables,
                                 const std::string& row_param,
                                 const std::string& col_param,
                                 const std::string& metric) {
  std::ostringstream out;
  auto cell = [](const CellStats& s) {
    if (s.n == 0) return std::string("-");
    return std::isfinite(s.sem) && s.sem > 0
               ? absl::StrFormat("%.3f +- %.3f", s.mean, s.sem)
               : absl::StrFormat("%.3f", s.mean);
  };
  bool any = false;
  for (const SkillMixTable& t : tables) {
    if (!metric.empty() && t.metric != metric) continue;
    any = true;
    out << t.metric << " (mean +- s.e. over combinations): rows " << row_param
        << ", columns " << col_param << "\n";
    out << absl::StrFormat("  %8s", row_param);
    for (const GroupKey& c : t.cols) out << absl::StrFormat(" %16s", c.label);
    out << "\n";
    for (size_t r = 0; r < t.rows.size(); ++r) {
      out << absl::StrFormat("  %8s", t.rows[r].label);
      for (size_t c = 0; c < t.cols.size(); ++c) {
        out << absl::StrFormat(" %16s", cell(t.cells[r][c]));
      }
      out << "\n";
    }
    out << "  best " << row_param << " per " << col_param
        << " (argmax of the mean; runner-up after the slash):\n";
    for (const SkillMixBest& b : BestRowPerColumn(t)) {
      out << absl::StrFormat("  %8s = %-6s", col_param, t.cols[b.col].label);
      if (b.best < 0) {
        out << " no finished trial\n";
        continue;
      }
      out << absl::StrFormat(" %s = %-4s %s", row_param, t.rows[b.best].label,
                             cell(t.cells[b.best][b.col]));
      if (b.runner_up >= 0) {
        out << absl::StrFormat("  /  %s = %-4s %s", row_param,
                               t.rows[b.runner_up].label,
                               cell(t.cells[b.runner_up][b.col]));
      }
      out << "\n";
    }
    out << "\n";
  }
  if (!any) {
    out << (metric.empty() ? std::string("no succeeded trials with results")
                           : "no succeeded trials with metric " + metric)
        << "\n";
  }
  return out.str();
}

std::string FormatAnalysisTable(const json& a) {
  std::ostringstream out;
  const std::string metric = Str(a, "metric");
  const std::string x = Str(a, "x");
  const std::string series = Str(a, "series");
  const std::string facet = Str(a, "facet");
  auto label = [](const json& v) {
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  const json& curves = a["curves"];
  out << "metric " << metric << ": " << curves.value("trials_used", 0) << " of "
      << curves.value("trials_total", 0)
      << " trials have it (succeeded). Optimal " << x << " per " << series
      << (facet.empty() ? "" : " and " + facet) << "\n";
  out << "  (mean +- s.e.m. over seeds; P = bootstrap frequency of the best "
      << x
      << "; CI = " << static_cast<int>(curves.value("ci_level", 0.95) * 100)
      << "% bootstrap CI of the argmax; 1se = smallest " << x
      << " within one s.e.m. of the best)\n";
  out << absl::StrFormat("  %-12s %6s %6s %16s %6s %12s %6s\n",
                         facet.empty() ? "-" : facet, series, x, "mean +- sem",
                         "P", "CI", "1se");
  for (const json& o : a["optimal"]) {
    out << absl::StrFormat("  %-12s %6s %6s %7.4f +- %6.4f %6.2f %12s %6s\n",
                           Str(o, "facet_label"), Str(o, "series_label"),
                           label(o["best"]), Num(o, "best_mean"),
                           Num(o, "best_sem"), Num(o, "best_freq"),
                           absl::StrCat("[", NumberLabel(Num(o, "ci_lo")), ", ",
                                        NumberLabel(Num(o, "ci_hi")), "]"),
                           label(o["one_se"]));
  }
  if (a["optimal"].empty()) out << "  (no succeeded trials with this metric)\n";
  if (!a["fits"].empty()) {
    out << "\ntheory fit: " << Str(a, "model") << "\n";
    for (const json& f : a["fits"]) {
      if (!f.value("ok", false)) {
        out << absl::StrFormat("  %-12s not fitted: %s\n",
                               Str(f, "facet_label"), Str(f, "message"));
        continue;
      }
      out << absl::StrFormat(
          "  %-12s a = %.4g  b = %.4g  R^2 = %.3f  rss = %.4g  points = %d\n",
          Str(f, "facet_label"), Num(f, "a"), Num(f, "b"), Num(f, "r2"),
          Num(f, "rss"), static_cast<int>(f["points"].size()));
      for (const json& k : f["k_star"]) {
        out << absl::StrFormat(
            "  %-12s   N = %s: predicted k* = %d (of T = %s; over the "
            "measured k: %s)\n",
            "", NumberLabel(Num(k, "N")), k.value("k_star", 0),
            NumberLabel(Num(k, "T")), NumberLabel(Num(k, "k_star_grid")));
      }
    }
  }
  return out.str();
}

}  // namespace smoe::coordinator::analysis
