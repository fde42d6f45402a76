// Copyright 2026 SMoE Lab authors.
//
// Unit tests of the aggregation over seeds and the bootstrap CIs.
#include "analysis/stats.h"

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

TEST(AnalysisTest, SummarizeAndQuantile) {
  const CellStats s = Summarize({1, 2, 3, 4});
  EXPECT_EQ(s.n, 4);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_NEAR(s.sem, std::sqrt(5.0 / 3.0) / 2.0, 1e-12);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 4);
  EXPECT_EQ(Summarize({7}).sem, 0);
  EXPECT_DOUBLE_EQ(Quantile({1, 2, 3, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(Quantile({1, 2, 3, 4}, 0.25), 1.75);
  EXPECT_DOUBLE_EQ(Quantile({1, 2, 3, 4}, 1.0), 4);
}

TEST(AnalysisTest, AggregatesBySeriesFacetAndX) {
  const auto trials = Grid(3);
  AggregateOptions opt;
  const Curves c = AggregateCurves(trials, opt);
  ASSERT_EQ(c.facets.size(), 2u);
  // Strings sort lexically: hyla before softmax.
  EXPECT_EQ(c.facets[0].key.label, "hyla");
  EXPECT_EQ(c.facets[1].key.label, "softmax");
  ASSERT_EQ(c.facets[0].series.size(), 2u);
  EXPECT_EQ(c.facets[0].series[0].key.label, "1");
  const Series& s = c.facets[0].series[1];  // M = 2
  ASSERT_EQ(s.points.size(), 4u);
  std::vector<double> xs;
  for (const CurvePoint& p : s.points) xs.push_back(p.x.number);
  EXPECT_EQ(xs, (std::vector<double>{1, 2, 4, 8}));
  const CurvePoint& p = s.points[2];  // k = 4 = 2M: the peak
  EXPECT_EQ(p.stats.n, 3);
  EXPECT_NEAR(p.stats.mean, 0.9, 1e-12);
  EXPECT_NEAR(p.stats.sem, 0.01 / std::sqrt(3.0), 1e-12);
  EXPECT_LE(p.stats.ci_lo, p.stats.mean);
  EXPECT_GE(p.stats.ci_hi, p.stats.mean);
  EXPECT_GE(p.stats.ci_lo, p.stats.min);
  EXPECT_LE(p.stats.ci_hi, p.stats.max);
  EXPECT_EQ(p.seeds, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(c.trials_used, 48);
  EXPECT_EQ(c.trials_total, 48);
}

TEST(AnalysisTest, BootstrapIsSeededAndOrderIndependent) {
  auto trials = Grid(5);
  AggregateOptions opt;
  const Curves a = AggregateCurves(trials, opt);
  std::mt19937 g(42);  // the input order must not matter
  std::shuffle(trials.begin(), trials.end(), g);
  const Curves b = AggregateCurves(trials, opt);
  EXPECT_EQ(ToJson(a).dump(), ToJson(b).dump());
  opt.seed = 7;
  const Curves d = AggregateCurves(trials, opt);
  EXPECT_NE(ToJson(a).dump(), ToJson(d).dump());
}

TEST(AnalysisTest, SkipsUnfinishedTrialsAndFillsDefaults) {
  std::vector<TrialPoint> trials = Grid(1);
  trials.push_back(Trial(1, 1, "hyla", 9, 0.0, store::TrialState::kRunning));
  TrialPoint bare;  // no params at all: sraven defaults M=4, top_k=2, softmax
  bare.state = store::TrialState::kSucceeded;
  bare.results = {{"ood_acc", 0.5}};
  trials.push_back(bare);
  const Curves c = AggregateCurves(trials, AggregateOptions{});
  EXPECT_EQ(c.trials_used, 17);
  const Facet& softmax = c.facets[1];
  ASSERT_EQ(softmax.series.size(), 3u);
  EXPECT_EQ(softmax.series[2].key.label, "4");
  EXPECT_EQ(softmax.series[2].points[0].x.label, "2");
}

}  // namespace
}  // namespace smoe::analysis
