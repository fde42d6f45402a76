// Copyright 2026 SMoE Lab authors.
//
// Unit tests of the E(k, N) fit.
#include "analysis/theory_fit.h"

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
using ::testing::HasSubstr;

TEST(AnalysisTest, Nnls2ExactAndClamped) {
  const std::vector<double> f1 = {1, 2, 3, 4}, f2 = {0.5, 0.1, 0.9, 0.3};
  std::vector<double> y;
  for (size_t i = 0; i < f1.size(); ++i) y.push_back(2 * f1[i] + 3 * f2[i]);
  auto [a, b] = Nnls2(f1, f2, y);
  EXPECT_NEAR(a, 2, 1e-9);
  EXPECT_NEAR(b, 3, 1e-9);
  // The unconstrained optimum has a < 0: the fit clamps a to 0.
  std::vector<double> neg;
  for (size_t i = 0; i < f1.size(); ++i) neg.push_back(-1 * f1[i] + 3 * f2[i]);
  std::tie(a, b) = Nnls2(f1, f2, neg);
  EXPECT_EQ(a, 0);
  EXPECT_GE(b, 0);
  // Everything negative: both zero.
  std::tie(a, b) = Nnls2(f1, f2, {-1, -1, -1, -1});
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 0);
}

TEST(AnalysisTest, FitRecoversTheModelAndPredictsKStar) {
  // Accuracy generated exactly by E(k, N) with known a, b.
  const double a = 0.002, b = 3.0, m = 100 * 10, t = 8;
  std::vector<TrialPoint> trials;
  for (int n : {1, 2, 3}) {
    for (int k : {1, 2, 4, 8}) {
      trials.push_back(
          Trial(n, k, "hyla", 0, 1 - TotalError(a, b, k, n, t, m)));
    }
  }
  AggregateOptions opt;
  const Curves c = AggregateCurves(trials, opt);
  const auto fits = FitTotalError(c, trials);
  ASSERT_EQ(fits.size(), 1u);
  const TheoryFit& f = fits[0];
  ASSERT_TRUE(f.ok) << f.message;
  EXPECT_NEAR(f.a, a, 1e-9);
  EXPECT_NEAR(f.b, b, 1e-7);
  EXPECT_LT(f.rss, 1e-18);
  EXPECT_NEAR(f.r2, 1.0, 1e-9);
  ASSERT_EQ(f.points.size(), 12u);
  EXPECT_EQ(f.points[0].t, 8);
  EXPECT_EQ(f.points[0].m, 1000);
  ASSERT_EQ(f.k_star.size(), 3u);
  for (const TheoryFit::KStar& ks : f.k_star) {
    int want = 1;
    for (int k = 2; k <= 8; ++k) {
      if (TotalError(a, b, k, ks.n, t, m) < TotalError(a, b, want, ks.n, t, m))
        want = k;
    }
    EXPECT_EQ(ks.k_star, want) << "N=" << ks.n;
    EXPECT_EQ(ks.curve.size(), 8u);
  }
  // Harder tasks need more experts under this model (section 4.3 (c)).
  EXPECT_LE(f.k_star[0].k_star, f.k_star[2].k_star);
}

// Issue 31 item 6: the model's argmin is k = T for every a, b >= 0 (the
// estimation term vanishes at T), so k* is no prediction; ToJson says so.
TEST(AnalysisTest, TheModelsKStarIsAlwaysT) {
  for (double a : {0.0, 1e-4, 0.002, 0.5}) {
    for (double b : {0.0, 0.1, 3.0, 100.0}) {
      for (double n : {1.0, 4.0, 8.0}) {
        for (int k = 1; k < 8; ++k) {
          EXPECT_GE(TotalError(a, b, k, n, 8, 1000),
                    TotalError(a, b, 8, n, 8, 1000))
              << "a " << a << " b " << b << " N " << n << " k " << k;
        }
      }
    }
  }
  std::vector<TrialPoint> trials;
  for (int n : {1, 3}) {
    for (int k : {1, 2, 4, 8}) {
      trials.push_back(Trial(n, k, "hyla", 0, 0.5 + 0.01 * n + 0.02 * k));
    }
  }
  const auto fits = FitTotalError(AggregateCurves(trials, {}), trials);
  ASSERT_EQ(fits.size(), 1u);
  ASSERT_TRUE(fits[0].ok) << fits[0].message;
  for (const TheoryFit::KStar& ks : fits[0].k_star) EXPECT_EQ(ks.k_star, 8);
  EXPECT_EQ(ToJson(fits[0])["k_star_note"], kKStarNote);
}

TEST(AnalysisTest, FitNeedsTwoCells) {
  std::vector<TrialPoint> trials = {Trial(1, 2, "hyla", 0, 0.9)};
  const auto fits = FitTotalError(AggregateCurves(trials, {}), trials);
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_FALSE(fits[0].ok);
  EXPECT_THAT(fits[0].message, HasSubstr("at least 2"));
}

// Errors that fall with N while the model's rise with it: the best
// non-negative fit is worse than the mean, R^2 < 0, and the fit says so.
TEST(AnalysisTest, FitWithNegativeR2IsNotMeaningful) {
  std::vector<TrialPoint> trials;
  for (int k : {1, 2, 4, 8}) {
    trials.push_back(Trial(1, k, "hyla", 0, 0.1));  // error 0.9 at N = 1
    trials.push_back(Trial(3, k, "hyla", 0, 0.9));  // error 0.1 at N = 3
  }
  const auto fits = FitTotalError(AggregateCurves(trials, {}), trials);
  ASSERT_EQ(fits.size(), 1u);
  ASSERT_TRUE(fits[0].ok) << fits[0].message;
  EXPECT_LT(fits[0].r2, 0);
  EXPECT_FALSE(IsMeaningful(fits[0]));
  EXPECT_EQ(ToJson(fits[0])["meaningful"], false);
  EXPECT_LT(ToJson(fits[0])["r2"].get<double>(), 0);
  // The exact fit of FitRecoversTheModelAndPredictsKStar is meaningful; a
  // fit that was not made is not.
  std::vector<TrialPoint> exact;
  for (int n : {1, 2}) {
    for (int k : {1, 2, 4}) {
      exact.push_back(
          Trial(n, k, "hyla", 0, 1 - TotalError(0.002, 3.0, k, n, 8, 1000)));
    }
  }
  const auto good = FitTotalError(AggregateCurves(exact, {}), exact);
  ASSERT_EQ(good.size(), 1u);
  EXPECT_TRUE(IsMeaningful(good[0]));
  EXPECT_EQ(ToJson(good[0])["meaningful"], true);
  EXPECT_FALSE(IsMeaningful(TheoryFit{}));
}

// The theory applies where the kind's view names its axes (SRAVEN: top_k
// on x, a line per M) and the metric is maximised; other kinds and axes get
// no fit.
TEST(TheoryFitTest, FitsTheoryFollowsTheKindsView) {
  AggregateOptions o;
  o.kind = "sraven";
  o.metric = "ood_acc";
  o.x = "top_k";
  o.series = "M";
  EXPECT_TRUE(FitsTheory(o));
  o.x = "M";
  o.series = "top_k";
  EXPECT_FALSE(FitsTheory(o));
  o.x = "top_k";
  o.series = "M";
  o.metric = "loss";  // minimised
  EXPECT_FALSE(FitsTheory(o));
  o.metric = "ood_acc";
  o.kind = "skillmix";
  EXPECT_FALSE(FitsTheory(o));
  o.kind = "command";
  EXPECT_FALSE(FitsTheory(o));
}

}  // namespace
}  // namespace smoe::analysis
