// Copyright 2026 SMoE Lab authors.
#include "analysis/theory_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "analysis/optimal_k.h"
#include "trials/params.h"

namespace smoe::analysis {

using internal::CellKey;
using internal::CellOf;
using internal::CellParams;
using internal::FitWithCellParams;
using internal::NumOrNull;
using internal::TrialTm;
using nlohmann::json;

bool IsMeaningful(const TheoryFit& f) { return f.ok && f.r2 >= 0; }

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

std::vector<TheoryFit> FitTotalError(const Curves& curves,
                                     const std::vector<TrialPoint>& trials) {
  const AggregateOptions& opt = curves.options;
  const json& defaults = ParamDefaults(opt);
  CellParams tm;
  for (const TrialPoint& t : trials) {
    if (opt.succeeded_only && t.state != store::TrialState::kSucceeded) {
      continue;
    }
    tm.try_emplace(CellOf(t, opt, defaults), TrialTm(t, defaults));
  }
  return FitWithCellParams(curves, tm);
}

namespace internal {

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

}  // namespace internal

bool FitsTheory(const AggregateOptions& options) {
  const trials::TrialKind* kind = trials::FindKind(options.kind);
  return IsMaximized(options.metric) && kind != nullptr &&
         !kind->view.theory_x.empty() && options.x == kind->view.theory_x &&
         options.series == kind->view.theory_series;
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
          {"meaningful", IsMeaningful(f)},
          {"points", points},
          {"k_star", ks},
          {"k_star_note", kKStarNote}};
}

}  // namespace smoe::analysis
