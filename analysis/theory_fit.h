// Copyright 2026 SMoE Lab authors.
//
// File: analysis/theory_fit.h
//
// The total error of Zhao et al. (arXiv 2410.13964, 4.3)
//     E(k, N) = a * N^2 / k + b * sqrt(N * k / m * log(T / k)),
// fitted by non-negative least squares in (a, b) to measured error
// e = 1 - accuracy, per facet, over every (series, x) cell. Mapping to SRAVEN
// trial params: k = top_k, N = M (task complexity: rules composed),
// T = num_experts, m = steps * batch_size (training problems seen). The
// router-complexity factor d_N is absorbed into b. Returns residuals, R^2 and
// argmin_k E(k, N) over integer k in [1, T] and over the measured k values.
// That argmin is no prediction: for any a, b >= 0, E is smallest at k = T
// (a N^2 / k falls with k and the estimation term vanishes at k = T), so it
// is T (the largest measured k) for every N; kKStarNote says so wherever the
// fit is shown. The fit is for the shape of the measured curves. See
// docs/sraven.md for the model's derivation.
//
// Thread safety: every function is pure.
#ifndef SMOE_ANALYSIS_THEORY_FIT_H_
#define SMOE_ANALYSIS_THEORY_FIT_H_

#include <string>
#include <utility>
#include <vector>

#include "analysis/cells.h"
#include "analysis/stats.h"
#include "nlohmann/json.hpp"

namespace smoe::analysis {

struct FitPoint {
  double k = 0, n = 0, t = 0,
         m = 0;         // top_k, M, num_experts, training problems
  double measured = 0;  // mean error (1 - accuracy)
  double predicted = 0;
  double residual = 0;  // measured - predicted
  int seeds = 0;
};

struct TheoryFit {
  GroupKey facet;
  bool ok = false;  // false: too few usable points (see `message`)
  std::string message;
  double a = 0, b = 0;  // E = a*N^2/k + b*sqrt(N*k/m*log(T/k)); a, b >= 0
  double rss = 0;
  double r2 = 0;  // 1 - rss / total sum of squares (0 when undefined)
  std::vector<FitPoint> points;
  // Per N (series value): the predicted optimal k.
  struct KStar {
    double n = 0;
    double t = 0, m = 0;
    int k_star = 0;          // argmin over integer k in [1, T]
    double k_star_grid = 0;  // argmin over the measured k values
    std::vector<std::pair<double, double>> curve;  // (k, E) for k = 1..T
  };
  std::vector<KStar> k_star;
};

// Shown next to every fit instead of a per-N "predicted k*" (issue 31 item
// 6): the fitted model's argmin is k = T whatever the data.
inline constexpr char kKStarNote[] =
    "E(k, N) is smallest at k = T for any fitted a, b >= 0 (the estimation "
    "term vanishes there), so the fit's k* is T for every N: read the fit for "
    "the shape of the curves, not as a prediction of the optimal k";

// Whether an analysis gets the E(k, N) fit: an accuracy-like (maximised)
// metric of a sweep whose kind's view names the theory's axes
// (trials::KindView theory_x/theory_series; SRAVEN: x = top_k and series =
// M, the model's k and N). Other kinds and axes get no fit and no theory
// block (issue 31 item 6).
bool FitsTheory(const AggregateOptions& options);

// A fit says something only when it was made (ok) and explains some of the
// variance: R^2 < 0 means the fitted E(k, N) is worse than a flat line
// through the mean, so its k* predictions are not meaningful.
bool IsMeaningful(const TheoryFit& f);

// The model's value. REQUIRES: 0 < k <= t, n > 0, m > 0.
double TotalError(double a, double b, double k, double n, double t, double m);

// Fits per facet. `curves` must aggregate an accuracy-like metric with
// x = the number of active experts and series = the task complexity; every
// trial of a cell must share num_experts, steps and batch_size (a cell's
// first trial's values are used; `trials` supplies them).
std::vector<TheoryFit> FitTotalError(const Curves& curves,
                                     const std::vector<TrialPoint>& trials);

// Non-negative least squares y ~ a*f1 + b*f2 (a, b >= 0), closed form over the
// active sets. Returns {a, b}.
std::pair<double, double> Nnls2(const std::vector<double>& f1,
                                const std::vector<double>& f2,
                                const std::vector<double>& y);

nlohmann::json ToJson(const TheoryFit& f);

namespace internal {
// FitTotalError with each cell's (T, m) given (the incremental aggregator
// keeps them per cell).
std::vector<TheoryFit> FitWithCellParams(const Curves& curves,
                                         const CellParams& tm);
}  // namespace internal

}  // namespace smoe::analysis

#endif  // SMOE_ANALYSIS_THEORY_FIT_H_
