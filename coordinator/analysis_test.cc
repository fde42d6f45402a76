// Copyright 2026 SMoE Lab authors.
//
// Unit tests of the sweep analysis: aggregation over seeds, bootstrap CIs,
// optimal k, the E(k, N) fit and the Skill-Mix tables.
#include "coordinator/analysis.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::coordinator::analysis {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TrialPoint Trial(int m, int k, const std::string& att, int64_t seed, double ood,
                 store::TrialState state = store::TrialState::kSucceeded) {
  TrialPoint t;
  t.trial_id = "s/" + std::to_string(m) + att + std::to_string(k) + "-" +
               std::to_string(seed);
  t.params = {{"M", m},           {"top_k", k},   {"attention", att},
              {"num_experts", 8}, {"steps", 100}, {"batch_size", 10}};
  t.seed = seed;
  t.state = state;
  t.results = {{"ood_acc", ood}, {"test_acc", ood + 0.05}};
  return t;
}

// A Figure-1-like grid: accuracy peaks at k = 2M, seeds add +-0.01 noise.
std::vector<TrialPoint> Grid(int seeds) {
  std::vector<TrialPoint> out;
  for (const char* att : {"softmax", "hyla"}) {
    for (int m : {1, 2}) {
      for (int k : {1, 2, 4, 8}) {
        for (int s = 0; s < seeds; ++s) {
          const double base =
              0.9 - 0.05 * std::fabs(std::log2(k) - std::log2(2.0 * m));
          out.push_back(Trial(m, k, att, s, base + 0.01 * ((s % 3) - 1)));
        }
      }
    }
  }
  return out;
}

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

TEST(AnalysisTest, FitNeedsTwoCells) {
  std::vector<TrialPoint> trials = {Trial(1, 2, "hyla", 0, 0.9)};
  const auto fits = FitTotalError(AggregateCurves(trials, {}), trials);
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_FALSE(fits[0].ok);
  EXPECT_THAT(fits[0].message, HasSubstr("at least 2"));
}

TEST(AnalysisTest, SkillMixTablesMeanAndSe) {
  std::vector<TrialPoint> trials;
  auto add = [&](int ept, int k, int64_t seed, double v, double se) {
    TrialPoint t;
    t.params = {{"ept", ept}, {"k_skills", k}};
    t.seed = seed;
    t.state = store::TrialState::kSucceeded;
    t.results = {{"ratio_full_marks", v}, {"ratio_full_marks_se", se}};
    trials.push_back(t);
  };
  add(1, 2, 0, 0.4, 0.05);
  add(2, 2, 0, 0.6, 0.04);
  add(2, 3, 0, 0.2, 0.1);
  add(2, 3, 1, 0.4, 0.1);
  const auto tables = SkillMixTables(trials);
  ASSERT_EQ(tables.size(), 1u);  // the _se key is not its own table
  const SkillMixTable& t = tables[0];
  EXPECT_EQ(t.metric, "ratio_full_marks");
  ASSERT_EQ(t.rows.size(), 2u);
  ASSERT_EQ(t.cols.size(), 2u);
  EXPECT_EQ(t.cells[0][1].n, 0);  // ept 1, k 3: empty
  EXPECT_DOUBLE_EQ(t.cells[0][0].mean, 0.4);
  EXPECT_DOUBLE_EQ(t.cells[0][0].sem, 0.05);  // one seed: the trial's own s.e.
  EXPECT_NEAR(t.cells[1][1].mean, 0.3, 1e-12);
  EXPECT_NEAR(t.cells[1][1].sem, 0.1, 1e-12);  // two seeds: across seeds
  const json j = ToJson(t);
  EXPECT_TRUE(j["cells"][0][1].is_null());
  EXPECT_EQ(j["rows"][1], 2);
  // A single trial without a reported s.e.: unknown (null), not 0.
  TrialPoint lone;
  lone.params = {{"ept", 4}, {"k_skills", 2}};
  lone.state = store::TrialState::kSucceeded;
  lone.results = {{"skill_fraction", 0.5}};
  const auto lone_tables = SkillMixTables({lone});
  ASSERT_EQ(lone_tables.size(), 1u);
  EXPECT_TRUE(std::isnan(lone_tables[0].cells[0][0].sem));
  EXPECT_TRUE(ToJson(lone_tables[0])["cells"][0][0]["sem"].is_null());
  EXPECT_EQ(ToJson(lone_tables[0])["cells"][0][0]["mean"], 0.5);
}

// Best EPT per k_skills: argmax of the mean, ties to the smaller EPT, the
// runner-up next; an empty column has none; JSON and text carry them.
TEST(AnalysisTest, SkillMixBestRowPerColumn) {
  std::vector<TrialPoint> trials;
  auto add = [&](int ept, int k, double v) {
    TrialPoint t;
    t.params = {{"ept", ept}, {"k_skills", k}};
    t.state = store::TrialState::kSucceeded;
    t.results = {{"ratio_full_marks", v}, {"ratio_full_marks_se", 0.01}};
    trials.push_back(t);
  };
  add(1, 1, 0.5);  // k = 1: ept 1 and 2 tie at 0.5 -> ept 1; ept 4 last
  add(2, 1, 0.5);
  add(4, 1, 0.1);
  add(1, 3, 0.1);  // k = 3: ept 4 best, ept 2 runner-up
  add(2, 3, 0.3);
  add(4, 3, 0.35);
  add(1, 5, 0.2);  // k = 5: one cell only
  TrialPoint failed;
  failed.params = {{"ept", 8}, {"k_skills", 7}};
  failed.state = store::TrialState::kFailed;  // column k = 7 never appears
  trials.push_back(failed);
  const auto tables = SkillMixTables(trials);
  ASSERT_EQ(tables.size(), 1u);
  const SkillMixTable& t = tables[0];
  ASSERT_EQ(t.cols.size(), 3u);
  const auto best = BestRowPerColumn(t);
  ASSERT_EQ(best.size(), 3u);
  EXPECT_EQ(t.rows[best[0].best].label, "1");
  EXPECT_EQ(t.rows[best[0].runner_up].label, "2");
  EXPECT_EQ(t.rows[best[1].best].label, "4");
  EXPECT_EQ(t.rows[best[1].runner_up].label, "2");
  EXPECT_EQ(t.rows[best[2].best].label, "1");
  EXPECT_EQ(best[2].runner_up, -1);
  const json j = ToJson(t);
  EXPECT_EQ(j["best"][1]["col"], 3);
  EXPECT_EQ(j["best"][1]["best"], 4);
  EXPECT_EQ(j["best"][1]["runner_up"], 2);
  EXPECT_TRUE(j["best"][2]["runner_up"].is_null());
  const std::string text = FormatSkillMixTables(tables, "ept", "k_skills");
  EXPECT_THAT(text, HasSubstr("ratio_full_marks (mean +- s.e."));
  EXPECT_THAT(text, HasSubstr("k_skills = 3      ept = 4    0.350 +- 0.010"));
  EXPECT_THAT(text, HasSubstr("/  ept = 2    0.300 +- 0.010"));
  EXPECT_THAT(FormatSkillMixTables(tables, "ept", "k_skills", "skill_fraction"),
              HasSubstr("no succeeded trials with metric skill_fraction"));
}

TEST(AnalysisTest, AnalyzeSweepJsonAndTable) {
  const json a = AnalyzeSweep(Grid(3), AggregateOptions{});
  EXPECT_EQ(a["optimal"].size(), 4u);
  EXPECT_EQ(a["fits"].size(), 2u);
  EXPECT_EQ(a["curves"]["facets"].size(), 2u);
  const std::string table = FormatAnalysisTable(a);
  EXPECT_THAT(table, HasSubstr("Optimal top_k per M and attention"));
  EXPECT_THAT(table, HasSubstr("hyla"));
  EXPECT_THAT(table, HasSubstr("predicted k*"));
  // Empty input formats without failing.
  const json empty = AnalyzeSweep({}, AggregateOptions{});
  EXPECT_THAT(FormatAnalysisTable(empty), HasSubstr("no succeeded trials"));
}

// The incremental aggregator against the from-scratch functions on random
// sweeps under random changes: new results, state changes, missing and NaN
// metrics, trials moving between cells, and new trials.
TEST(CurveAggregatorTest, EqualsFromScratchUnderRandomChanges) {
  std::mt19937_64 rng(7);
  auto random_trial = [&](int64_t seed) {
    const int m = 1 + static_cast<int>(rng() % 3);
    const int k = 1 << (rng() % 4);
    const std::string att = rng() % 2 ? "hyla" : "softmax";
    TrialPoint t = Trial(m, k, att, seed, 0.5 + (rng() % 1000) / 2000.0);
    switch (rng() % 8) {
      case 0:
        t.state = store::TrialState::kRunning;
        t.results.clear();
        break;
      case 1:
        t.results.erase("ood_acc");
        break;
      case 2:
        t.results["ood_acc"] = std::nan("");
        break;
      case 3:
        t.params["steps"] = 200;  // a cell's first trial sets (T, m)
        break;
      default:
        break;
    }
    return t;
  };
  AggregateOptions o;
  o.bootstrap_samples = 50;
  CurveAggregator agg(o);
  std::vector<TrialPoint> trials;
  for (int i = 0; i < 300; ++i) {
    trials.push_back(random_trial(i % 12));
    agg.Set(i, trials.back());
  }
  auto expect_equal = [&](const char* when) {
    const Curves want = AggregateCurves(trials, o);
    EXPECT_EQ(ToJson(agg.curves()).dump(), ToJson(want).dump()) << when;
    json want_opt = json::array(), got_opt = json::array();
    for (const OptimalK& k : ComputeOptimalK(want)) {
      want_opt.push_back(ToJson(k));
    }
    for (const OptimalK& k : agg.optimal()) got_opt.push_back(ToJson(k));
    EXPECT_EQ(got_opt.dump(), want_opt.dump()) << when;
    EXPECT_EQ(agg.Analysis().dump(), AnalyzeSweep(trials, o).dump()) << when;
  };
  expect_equal("initial");
  const int64_t cells = agg.cells_computed();
  EXPECT_GT(cells, 20);
  for (int round = 0; round < 30; ++round) {
    // One trial completes: only its cell is recomputed.
    const size_t pos = rng() % trials.size();
    TrialPoint t = trials[pos];
    t.state = store::TrialState::kSucceeded;
    t.results["ood_acc"] = 0.25 + round / 100.0;
    trials[pos] = t;
    const int64_t before = agg.cells_computed();
    agg.Set(static_cast<int64_t>(pos), t);
    expect_equal("after one completion");
    EXPECT_LE(agg.cells_computed() - before, 1);
    // A burst of arbitrary changes, some moving trials between cells, and a
    // new trial at the end.
    for (int j = 0; j < 5; ++j) {
      const size_t p = rng() % trials.size();
      trials[p] = random_trial(trials[p].seed);
      agg.Set(static_cast<int64_t>(p), trials[p]);
    }
    trials.push_back(random_trial(round % 12));
    agg.Set(static_cast<int64_t>(trials.size() - 1), trials.back());
    expect_equal("after a burst");
  }
  // 61 comparisons: recomputing everything each time would cost cells * 61;
  // the changes touch at most 12 cells per round.
  EXPECT_LT(agg.cells_computed(), cells * 61 / 3);
}

}  // namespace
}  // namespace smoe::coordinator::analysis
