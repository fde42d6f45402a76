// Copyright 2026 SMoE Lab authors.
#include "analysis/optimal_k.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/match.h"
#include "analysis/cells.h"
#include "common/rng.h"

namespace smoe::analysis {

using internal::Fnv1a;
using internal::NumOrNull;
using nlohmann::json;

bool IsMaximized(const std::string& metric) {
  return !absl::StrContains(metric, "loss") &&
         !absl::StrContains(metric, "error");
}

namespace {

// The paired bootstrap's normal limit (issue 35; optimal_k.h): `samples`
// draws of the vector of the points' means from N(means, C), where
// C_ij = sum over seeds at both i and j of d_is d_js / (n_i n_j) (d = value
// - the point's mean) is the covariance the paired resampling of the seed
// list gives the means to first order. value[i][j]: point i's value of seed
// j, NaN when missing. Appends each draw's argmax to `wins` / `winners`.
template <typename Better>
void NormalArgmaxDraws(const Series& s,
                       const std::vector<std::vector<double>>& value,
                       int samples, Better better, Rng* rng,
                       std::vector<int>* wins, std::vector<double>* winners) {
  const size_t k = s.points.size();
  const size_t ns = k == 0 ? 0 : value[0].size();
  std::vector<double> mean(k), n(k);
  for (size_t i = 0; i < k; ++i) {
    mean[i] = s.points[i].stats.mean;
    n[i] = static_cast<double>(s.points[i].values.size());
  }
  std::vector<std::vector<double>> cov(k, std::vector<double>(k, 0));
  for (size_t j = 0; j < ns; ++j) {
    for (size_t a = 0; a < k; ++a) {
      if (std::isnan(value[a][j])) continue;
      const double da = value[a][j] - mean[a];
      for (size_t b = 0; b <= a; ++b) {
        if (std::isnan(value[b][j])) continue;
        cov[a][b] += da * (value[b][j] - mean[b]);
      }
    }
  }
  for (size_t a = 0; a < k; ++a) {
    for (size_t b = 0; b <= a; ++b) {
      cov[a][b] /= n[a] * n[b];
      cov[b][a] = cov[a][b];
    }
  }
  // Cholesky factor, tolerating a singular C (a zero pivot's column is 0).
  std::vector<std::vector<double>> l(k, std::vector<double>(k, 0));
  for (size_t j = 0; j < k; ++j) {
    double d = cov[j][j];
    for (size_t m = 0; m < j; ++m) d -= l[j][m] * l[j][m];
    if (!(d > 1e-14 * std::max(cov[j][j], 1e-300))) continue;
    l[j][j] = std::sqrt(d);
    for (size_t i = j + 1; i < k; ++i) {
      double x = cov[i][j];
      for (size_t m = 0; m < j; ++m) x -= l[i][m] * l[j][m];
      l[i][j] = x / l[j][j];
    }
  }
  std::vector<double> z(k), draw(k);
  for (int b = 0; b < samples; ++b) {
    for (size_t i = 0; i < k; i += 2) {  // Box-Muller, two per pair
      const double u1 = 1 - rng->UniformDouble();
      const double u2 = rng->UniformDouble();
      const double r = std::sqrt(-2 * std::log(u1));
      z[i] = r * std::cos(2 * M_PI * u2);
      if (i + 1 < k) z[i + 1] = r * std::sin(2 * M_PI * u2);
    }
    int arg = -1;
    for (size_t i = 0; i < k; ++i) {
      double x = mean[i];
      for (size_t m = 0; m <= i; ++m) x += l[i][m] * z[m];
      draw[i] = x;
      if (arg < 0 || better(x, draw[static_cast<size_t>(arg)])) {
        arg = static_cast<int>(i);
      }
    }
    ++(*wins)[static_cast<size_t>(arg)];
    winners->push_back(s.points[static_cast<size_t>(arg)].x.number);
  }
}

}  // namespace

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
  // Paired bootstrap over the union of seeds (ascending, distinct: a sorted
  // vector, not a std::set; 10^5 seeds per series at 10^6 trials).
  // Points from AggregateCurves have their seeds ascending (merged in,
  // O(seeds x points)); others are sorted.
  bool ascending = true;
  std::vector<int64_t> seeds;
  {
    size_t total = 0;
    for (const CurvePoint& p : s.points) {
      total += p.seeds.size();
      ascending &= std::is_sorted(p.seeds.begin(), p.seeds.end());
    }
    seeds.reserve(total);
    for (const CurvePoint& p : s.points) {
      const auto mid = static_cast<std::ptrdiff_t>(seeds.size());
      seeds.insert(seeds.end(), p.seeds.begin(), p.seeds.end());
      if (ascending) {
        std::inplace_merge(seeds.begin(), seeds.begin() + mid, seeds.end());
      }
    }
    if (!ascending) std::sort(seeds.begin(), seeds.end());
    seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
  }
  const size_t ns = seeds.size();
  o.seeds = static_cast<int>(ns);
  // value[x][seed index] (NaN when missing)
  std::vector<std::vector<double>> value(
      s.points.size(),
      std::vector<double>(ns, std::numeric_limits<double>::quiet_NaN()));
  for (size_t i = 0; i < s.points.size(); ++i) {
    const CurvePoint& p = s.points[i];
    // Ascending: one forward walk finds each seed's index.
    size_t idx = 0;
    for (size_t j = 0; j < p.seeds.size(); ++j) {
      if (ascending) {
        while (seeds[idx] < p.seeds[j]) ++idx;
      } else {
        idx = static_cast<size_t>(
            std::lower_bound(seeds.begin(), seeds.end(), p.seeds[j]) -
            seeds.begin());
      }
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
  size_t min_n = ns;
  for (const CurvePoint& p : s.points) min_n = std::min(min_n, p.values.size());
  const bool normal = samples > 0 && options.normal_ci_min_seeds > 0 &&
                      min_n >= static_cast<size_t>(options.normal_ci_min_seeds);
  if (normal) {
    o.normal_draws = true;
    NormalArgmaxDraws(s, value, samples, better, &rng, &wins, &winners);
  }
  std::vector<int> counts(normal ? 0 : ns);
  for (int b = 0; b < (normal ? 0 : samples); ++b) {
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
  std::vector<std::string> labels;
  labels.reserve(s.points.size());
  for (const CurvePoint& p : s.points) labels.push_back(p.x.label);
  SummarizeArgmaxDraws(wins, labels, best, std::move(winners), options.ci_level,
                       &o);
  return o;
}

void SummarizeArgmaxDraws(const std::vector<int>& wins,
                          const std::vector<std::string>& labels, size_t best,
                          std::vector<double> winners, double ci_level,
                          OptimalK* o) {
  const double total = static_cast<double>(winners.size());
  if (total > 0) {
    o->best_freq = wins[best] / total;
    for (size_t i = 0; i < labels.size(); ++i) {
      if (wins[i] > 0) o->argmax_freq[labels[i]] = wins[i] / total;
    }
    std::sort(winners.begin(), winners.end());
    const double alpha = (1 - ci_level) / 2;
    const double n1 = total - 1;
    o->ci_lo = winners[static_cast<size_t>(std::floor(alpha * n1))];
    o->ci_hi = winners[static_cast<size_t>(std::ceil((1 - alpha) * n1))];
  } else {
    o->best_freq = 1;
    o->argmax_freq[o->best.label] = 1;
    o->ci_lo = o->ci_hi = o->best.number;
  }
}

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

json ToJson(const OptimalK& o) {
  json j = {{"facet", ToJson(o.facet)},
            {"facet_label", o.facet.label},
            {"series", ToJson(o.series)},
            {"series_label", o.series.label},
            {"maximize", o.maximize},
            {"best", ToJson(o.best)},
            {"best_mean", NumOrNull(o.best_mean)},
            {"best_sem", NumOrNull(o.best_sem)},
            {"one_se", ToJson(o.one_se)},
            {"seeds", o.seeds},
            {"bootstrap_samples", o.bootstrap_samples},
            {"best_freq", o.best_freq},
            {"ci_lo", o.ci_lo},
            {"ci_hi", o.ci_hi},
            {"argmax_freq", o.argmax_freq}};
  // Only when used (small sweeps answer byte for byte as before).
  if (o.normal_draws) j["argmax_method"] = "normal";
  return j;
}

}  // namespace smoe::analysis
