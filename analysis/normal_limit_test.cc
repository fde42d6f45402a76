// Copyright 2026 SMoE Lab authors.
//
// The bootstrap's normal limit for large cells (issue 35; stats.h,
// optimal_k.h): at the threshold it agrees with the percentile / paired
// bootstrap within the bootstrap's own Monte Carlo error, it is
// deterministic, and the switch happens exactly at the threshold.
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "analysis/optimal_k.h"
#include "analysis/stats.h"
#include "analysis/test_trials.h"
#include "common/rng.h"
#include "gtest/gtest.h"

namespace smoe::analysis {
namespace {

using test_trials::Trial;

// One facet (softmax), one series (M = 2), x = top_k in {1, 2, 4, 8}, `n`
// seeds. Skewed per-seed noise (exponential) shared across k (a seed
// effect, so the paired draws matter) plus independent noise; k = 2 and 4
// are close (about one s.e. apart), so the argmax frequencies are not 0/1.
// Every 7th seed misses k = 8 (missing values pair over the others).
std::vector<TrialPoint> Sweep(int n, uint64_t seed) {
  Rng rng = Rng::ForStream(seed, {0x6e6f726d616cULL});
  const double level[] = {0.70, 0.80, 0.80, 0.75};
  const int ks[] = {1, 2, 4, 8};
  std::vector<TrialPoint> out;
  for (int s = 0; s < n; ++s) {
    const double shared = -std::log(1 - rng.UniformDouble()) * 0.05;
    for (int i = 0; i < 4; ++i) {
      const double own = (rng.UniformDouble() - 0.5) * 0.08;
      if (i == 3 && s % 7 == 0) continue;
      // k = 4 sits 0.0005 below k = 2 (0.7 s.d. of the paired difference).
      const double v = level[i] + shared + own - (i == 2 ? 0.0005 : 0.0);
      out.push_back(Trial(2, ks[i], "softmax", s, v));
    }
  }
  return out;
}

AggregateOptions Options(int normal_min) {
  AggregateOptions o;
  o.normal_ci_min_seeds = normal_min;
  return o;
}

TEST(NormalLimitTest, NormalQuantile) {
  EXPECT_NEAR(NormalQuantile(0.975), 1.959963984540054, 1e-12);
  EXPECT_NEAR(NormalQuantile(0.5), 0, 1e-15);
  EXPECT_NEAR(NormalQuantile(0.05), -1.6448536269514722, 1e-12);
  EXPECT_NEAR(NormalQuantile(0.995), 2.5758293035489004, 1e-12);
  EXPECT_NEAR(NormalQuantile(1e-6), -4.753424308822899, 1e-9);
}

TEST(NormalLimitTest, NormalLimitAgreesWithTheBootstrapAtTheThreshold) {
  // k = 8 misses every 7th seed: 2,334 seeds give it 2,000, exactly the
  // threshold.
  const std::vector<TrialPoint> trials = Sweep(2334, 1);
  const Curves normal = AggregateCurves(trials, Options(kNormalCiMinSeeds));
  const Curves boot =
      AggregateCurves(trials, Options(std::numeric_limits<int>::max()));
  ASSERT_EQ(normal.facets.size(), 1u);
  ASSERT_EQ(normal.facets[0].series.size(), 1u);
  const Series& sn = normal.facets[0].series[0];
  const Series& sb = boot.facets[0].series[0];
  ASSERT_EQ(sn.points.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(sn.points[i].x.label);
    const CellStats& a = sn.points[i].stats;
    const CellStats& b = sb.points[i].stats;
    EXPECT_TRUE(a.normal_ci);
    EXPECT_FALSE(b.normal_ci);
    EXPECT_EQ(a.mean, b.mean);
    // The percentile bootstrap's 2.5% quantile from 1,000 resamples has a
    // Monte Carlo s.d. of about 0.085 s.e.; 0.35 s.e. is 4 of them.
    EXPECT_NEAR(a.ci_lo, b.ci_lo, 0.35 * a.sem);
    EXPECT_NEAR(a.ci_hi, b.ci_hi, 0.35 * a.sem);
    // Width: z * sd / sqrt(n) with the plug-in sd.
    EXPECT_NEAR(a.ci_hi - a.ci_lo,
                2 * 1.959963984540054 * a.sem * std::sqrt((a.n - 1.0) / a.n),
                1e-12);
  }
  const OptimalK on =
      OptimalForSeries(Options(kNormalCiMinSeeds), normal.facets[0].key, sn);
  const OptimalK ob = OptimalForSeries(Options(std::numeric_limits<int>::max()),
                                       boot.facets[0].key, sb);
  EXPECT_TRUE(on.normal_draws);
  EXPECT_FALSE(ob.normal_draws);
  EXPECT_EQ(on.best.label, ob.best.label);
  // Both frequencies are not degenerate here (the test's premise).
  EXPECT_GT(ob.best_freq, 0.5);
  EXPECT_LT(ob.best_freq, 0.95);
  // Two estimates from 1,000 draws each: s.d. of the difference <= 0.022;
  // 0.07 is over 3 of them.
  for (const char* k : {"1", "2", "4", "8"}) {
    const double fn = on.argmax_freq.count(k) ? on.argmax_freq.at(k) : 0;
    const double fb = ob.argmax_freq.count(k) ? ob.argmax_freq.at(k) : 0;
    EXPECT_NEAR(fn, fb, 0.07) << "k=" << k;
  }
  EXPECT_EQ(on.ci_lo, ob.ci_lo);
  EXPECT_EQ(on.ci_hi, ob.ci_hi);
}

TEST(NormalLimitTest, DeterministicAndLabelled) {
  const std::vector<TrialPoint> trials = Sweep(2334, 2);
  const Curves a = AggregateCurves(trials, Options(kNormalCiMinSeeds));
  const Curves b = AggregateCurves(trials, Options(kNormalCiMinSeeds));
  EXPECT_EQ(ToJson(a).dump(), ToJson(b).dump());
  const auto oa = ComputeOptimalK(a);
  const auto ob = ComputeOptimalK(b);
  ASSERT_EQ(oa.size(), 1u);
  EXPECT_EQ(ToJson(oa[0]).dump(), ToJson(ob[0]).dump());
  const nlohmann::json p = ToJson(a.facets[0].series[0].points[0]);
  EXPECT_EQ(p.at("ci_method"), "normal");
  EXPECT_EQ(ToJson(oa[0]).at("argmax_method"), "normal");
  // Another seed of the options draws other numbers.
  AggregateOptions other = Options(kNormalCiMinSeeds);
  other.seed = 9;
  const auto oc = ComputeOptimalK(AggregateCurves(trials, other));
  EXPECT_NE(ToJson(oa[0]).dump(), ToJson(oc[0]).dump());
}

TEST(NormalLimitTest, SwitchesAtTheThreshold) {
  // 20 seeds with a threshold of 20: normal; 19: the bootstrap, byte for
  // byte what a threshold out of reach gives (no label).
  const int t = 20;
  std::vector<TrialPoint> trials = Sweep(t, 3);
  const Curves at = AggregateCurves(trials, Options(t));
  for (const Series& s : at.facets[0].series) {
    for (const CurvePoint& p : s.points) {
      EXPECT_EQ(p.stats.normal_ci, p.stats.n >= t) << p.x.label;
    }
  }
  // k = 8 misses every 7th seed (17 of 20): the series stays on the
  // bootstrap; without it, all points have 20.
  EXPECT_FALSE(ComputeOptimalK(at)[0].normal_draws);
  std::vector<TrialPoint> full;
  for (const TrialPoint& p : trials) {
    if (p.params.at("top_k") != 8) full.push_back(p);
  }
  EXPECT_TRUE(
      ComputeOptimalK(AggregateCurves(full, Options(t)))[0].normal_draws);
  EXPECT_FALSE(
      ComputeOptimalK(AggregateCurves(full, Options(t + 1)))[0].normal_draws);
  trials.resize(trials.size() - 4);  // fewer seeds at some points
  const Curves below = AggregateCurves(trials, Options(t));
  const Curves never =
      AggregateCurves(trials, Options(std::numeric_limits<int>::max()));
  for (const CurvePoint& p : below.facets[0].series[0].points) {
    if (p.stats.n < t) {
      EXPECT_FALSE(p.stats.normal_ci);
      EXPECT_EQ(ToJson(p).count("ci_method"), 0u);
    }
  }
  // No bootstrap at all (0 samples): no CI method to speak of.
  AggregateOptions none = Options(1);
  none.bootstrap_samples = 0;
  for (const CurvePoint& p :
       AggregateCurves(trials, none).facets[0].series[0].points) {
    EXPECT_FALSE(p.stats.normal_ci);
  }
  EXPECT_EQ(ToJson(never).dump().find("normal"), std::string::npos);
}

TEST(NormalLimitTest, LargeCellsCarryTheSeedCountNotTheList) {
  // Threshold 20: k = 1, 2, 4 have 20 seeds (the count), k = 8 has 17 (the
  // list, as before). The count goes by seeds, not by the CI method: also
  // without a bootstrap.
  const int t = 20;
  const std::vector<TrialPoint> trials = Sweep(t, 4);
  for (const int samples : {1000, 0}) {
    SCOPED_TRACE(samples);
    AggregateOptions o = Options(t);
    o.bootstrap_samples = samples;
    const Curves c = AggregateCurves(trials, o);
    const nlohmann::json body = ToJson(c);
    const nlohmann::json& points =
        body.at("facets")[0].at("series")[0].at("points");
    ASSERT_EQ(points.size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
      const CurvePoint& p = c.facets[0].series[0].points[i];
      const nlohmann::json& j = points[i];
      SCOPED_TRACE(p.x.label);
      if (p.seeds.size() >= static_cast<size_t>(t)) {
        EXPECT_TRUE(p.seed_count_only);
        EXPECT_EQ(j.count("seeds"), 0u);
        EXPECT_EQ(j.at("seed_count"), t);
        EXPECT_EQ(j.at("n"), t);
      } else {
        EXPECT_FALSE(p.seed_count_only);
        EXPECT_EQ(j.count("seed_count"), 0u);
        EXPECT_EQ(j.at("seeds").get<std::vector<int64_t>>(), p.seeds);
      }
    }
  }
  // Out of reach: every point keeps its list.
  const nlohmann::json never =
      ToJson(AggregateCurves(trials, Options(std::numeric_limits<int>::max())));
  EXPECT_EQ(never.dump().find("seed_count"), std::string::npos);
  EXPECT_EQ(never.at("facets")[0].at("series")[0].at("points")[0].at("seeds"),
            nlohmann::json(std::vector<int64_t>{0,  1,  2,  3,  4,  5,  6,
                                                7,  8,  9,  10, 11, 12, 13,
                                                14, 15, 16, 17, 18, 19}));
}

}  // namespace
}  // namespace smoe::analysis
