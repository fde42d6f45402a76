// Copyright 2026 SMoE Lab authors.
#include "analysis/optimal_k.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

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
  o.seeds = static_cast<int>(ns);
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
  return {{"facet", ToJson(o.facet)},
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
}

}  // namespace smoe::analysis
