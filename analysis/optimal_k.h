// Copyright 2026 SMoE Lab authors.
//
// File: analysis/optimal_k.h
//
// The optimal x (k) per (facet, series): the x maximising the mean
// (minimising for loss/error metrics), a paired seed bootstrap of that argmax
// (how often each x wins, and a percentile CI of the winning x), and the
// smallest-x-within-one-s.e. rule (smallest x whose mean is within one s.e.m.
// of the best mean; a sparsity-preferring choice).
//
// Thread safety: every function is pure.
#ifndef SMOE_ANALYSIS_OPTIMAL_K_H_
#define SMOE_ANALYSIS_OPTIMAL_K_H_

#include <map>
#include <string>
#include <vector>

#include "analysis/stats.h"
#include "nlohmann/json.hpp"

namespace smoe::analysis {

struct OptimalK {
  GroupKey facet;
  GroupKey series;
  bool maximize = true;
  GroupKey best;  // argmax (argmin) of the mean
  double best_mean = 0;
  double best_sem = 0;
  GroupKey one_se;  // smallest x within one s.e.m. of the best mean
  // Distinct seeds behind the series. Below 2 there is nothing to resample:
  // best_freq is 1 and the CI is the point by construction, and views show
  // "n = 1" instead of them.
  int seeds = 0;
  // Bootstrap of the argmax over seeds (paired: one resample of the seed list
  // is applied to every x).
  int bootstrap_samples = 0;
  double best_freq = 0;  // fraction of replicates whose argmax is `best`
  double ci_lo = 0;      // percentile CI of the argmax x (numeric x only)
  double ci_hi = 0;
  std::map<std::string, double> argmax_freq;  // x label -> fraction
  // Every point of the series has at least options.normal_ci_min_seeds
  // seeds (stats.h): the draws are the paired bootstrap's normal limit
  // instead of resamples of the seed list. The vector of the points' means
  // is drawn from N(means, C), C_ij = sum over the seeds at both i and j of
  // (v_is - mean_i)(v_js - mean_j) / (n_i n_j) (the covariance the paired
  // resampling gives the means, to first order): O(seeds x K^2 + draws x
  // K^2) instead of O(draws x seeds x K). Deterministic (the series' Rng
  // stream); JSON "argmax_method": "normal" (absent: the bootstrap).
  bool normal_draws = false;
};

// True for metrics where larger is better (everything except names containing
// "loss" or "error").
bool IsMaximized(const std::string& metric);

// One OptimalK per (facet, series) of `curves`, in the curves' order.
std::vector<OptimalK> ComputeOptimalK(const Curves& curves);

// The optimal x of one series (ComputeOptimalK's per-series step).
// REQUIRES: s.points non-empty.
// Fills `o`'s bootstrap summary of the argmax from its draws: wins[i] = the
// resamples whose argmax was point i (labelled labels[i]), winners = each
// resample's argmax x (sorted here), best = the index of o->best. With no
// draw, the point estimate stands alone (frequency 1, CI = {best}). Shared by
// OptimalForSeries and the tuned analysis (analysis/tuned.h).
void SummarizeArgmaxDraws(const std::vector<int>& wins,
                          const std::vector<std::string>& labels, size_t best,
                          std::vector<double> winners, double ci_level,
                          OptimalK* o);

OptimalK OptimalForSeries(const AggregateOptions& options,
                          const GroupKey& facet, const Series& s);

nlohmann::json ToJson(const OptimalK& o);

}  // namespace smoe::analysis

#endif  // SMOE_ANALYSIS_OPTIMAL_K_H_
