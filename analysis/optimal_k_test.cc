// Copyright 2026 SMoE Lab authors.
//
// Unit tests of the optimal k (argmax, bootstrap, one-s.e. rule).
#include "analysis/optimal_k.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>

#include "analysis/test_trials.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::analysis {
namespace {

using nlohmann::json;
using test_trials::Grid;
using test_trials::Trial;

TEST(AnalysisTest, OptimalKArgmaxBootstrapAndOneSeRule) {
  AggregateOptions opt;
  const Curves c = AggregateCurves(Grid(6), opt);
  const auto opts = ComputeOptimalK(c);
  ASSERT_EQ(opts.size(), 4u);
  for (const OptimalK& o : opts) {
    const double want = 2 * o.series.number;  // the peak is at k = 2M
    EXPECT_EQ(o.best.number, want) << o.facet.label << " M=" << o.series.label;
    EXPECT_DOUBLE_EQ(o.best_freq, 1.0);
    EXPECT_EQ(o.ci_lo, want);
    EXPECT_EQ(o.ci_hi, want);
    EXPECT_EQ(o.one_se.number, want);
    EXPECT_TRUE(o.maximize);
  }

  // Two close candidates: k = 2 is within one s.e. of k = 4, and the
  // bootstrap splits between them.
  std::vector<TrialPoint> t;
  const double k2[] = {0.80, 0.90, 0.85, 0.76};
  const double k4[] = {0.86, 0.84, 0.88, 0.78};
  for (int s = 0; s < 4; ++s) {
    t.push_back(Trial(1, 1, "hyla", s, 0.5));
    t.push_back(Trial(1, 2, "hyla", s, k2[s]));
    t.push_back(Trial(1, 4, "hyla", s, k4[s]));
  }
  const auto close = ComputeOptimalK(AggregateCurves(t, opt));
  ASSERT_EQ(close.size(), 1u);
  EXPECT_EQ(close[0].best.number, 4);
  EXPECT_EQ(close[0].one_se.number, 2);
  EXPECT_GT(close[0].best_freq, 0.3);
  EXPECT_LT(close[0].best_freq, 1.0);
  EXPECT_EQ(close[0].ci_lo, 2);
  EXPECT_EQ(close[0].ci_hi, 4);
  EXPECT_EQ(close[0].argmax_freq.count("1"), 0u);
  double total = 0;
  for (const auto& [k, f] : close[0].argmax_freq) total += f;
  EXPECT_NEAR(total, 1.0, 1e-12);
}

TEST(AnalysisTest, LossMetricsAreMinimised) {
  EXPECT_TRUE(IsMaximized("ood_acc"));
  EXPECT_FALSE(IsMaximized("train_loss"));
  std::vector<TrialPoint> t;
  for (int k : {1, 2, 4}) {
    TrialPoint p = Trial(1, k, "hyla", 0, 0.5);
    p.results["train_loss"] = k == 2 ? 0.1 : 1.0;
    t.push_back(p);
  }
  AggregateOptions opt;
  opt.metric = "train_loss";
  const auto o = ComputeOptimalK(AggregateCurves(t, opt));
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(o[0].best.number, 2);
  EXPECT_FALSE(o[0].maximize);
}

// The number of seeds behind a series travels with its optimum, so views can
// say "n = 1" where a bootstrap has nothing to resample.
TEST(AnalysisTest, OptimalKCountsSeeds) {
  for (int seeds : {1, 3}) {
    const auto opts = ComputeOptimalK(AggregateCurves(Grid(seeds), {}));
    ASSERT_EQ(opts.size(), 4u);
    for (const OptimalK& o : opts) {
      EXPECT_EQ(o.seeds, seeds);
      EXPECT_EQ(ToJson(o)["seeds"], seeds);
    }
  }
}

// The union of a series' seeds is merged from the points' ascending lists;
// points whose seeds are not in order (built by hand) give the same answer,
// including a seed missing at some x.
TEST(AnalysisTest, OptimalKIsTheSameForSeedsInAnyOrder) {
  std::vector<TrialPoint> trials = Grid(6);
  trials.erase(trials.begin() + 3);  // one cell misses seed 3
  AggregateOptions o;
  o.bootstrap_samples = 200;
  const Curves c = AggregateCurves(trials, o);
  Curves shuffled = c;
  for (Facet& f : shuffled.facets) {
    for (Series& s : f.series) {
      for (CurvePoint& p : s.points) {
        std::reverse(p.seeds.begin(), p.seeds.end());
        std::reverse(p.values.begin(), p.values.end());
      }
    }
  }
  const auto want = ComputeOptimalK(c);
  const auto got = ComputeOptimalK(shuffled);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(ToJson(got[i]).dump(), ToJson(want[i]).dump());
    EXPECT_EQ(got[i].seeds, 6);
  }
}

}  // namespace
}  // namespace smoe::analysis
