// Copyright 2026 SMoE Lab authors.
#include "analysis/tuned.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::analysis {
namespace {

using ::testing::HasSubstr;

constexpr double kA = 0.001;  // the two learning rates of these tests
constexpr double kB = 0.01;

TrialPoint Trial(int m, int k, double lr, int64_t seed, double test,
                 double val) {
  TrialPoint t;
  t.trial_id = "t/M" + std::to_string(m) + "k" + std::to_string(k) + "lr" +
               std::to_string(lr) + "s" + std::to_string(seed);
  t.params = {{"M", m}, {"top_k", k}, {"attention", "softmax"}, {"lr", lr}};
  t.seed = seed;
  t.state = store::TrialState::kSucceeded;
  t.results = {{"test_acc", test}, {"val_acc", val}};
  return t;
}

AggregateOptions Options() {
  AggregateOptions o;
  o.metric = "test_acc";
  o.bootstrap_samples = 2000;
  return o;
}

TuneOptions Tune(SelectUnit unit = SelectUnit::kSeed) {
  TuneOptions t;
  t.tune = {"lr"};
  t.select_by = "val_acc";
  t.unit = unit;
  return t;
}

const TunedPoint& PointAt(const TunedSeries& s, int k) {
  for (const TunedPoint& p : s.points) {
    if (p.x.number == k) return p;
  }
  static const TunedPoint* none = new TunedPoint();
  ADD_FAILURE() << "no point at k=" << k;
  return *none;
}

const UntunedCurve& UntunedAt(const TunedAnalysis& a, const std::string& cfg) {
  for (const UntunedCurve& u : a.untuned) {
    if (u.label == cfg) return u;
  }
  static const UntunedCurve* none = new UntunedCurve();
  ADD_FAILURE() << "no untuned curve " << cfg;
  return *none;
}

// Val prefers lr A everywhere, test prefers lr B everywhere: the tuned value
// is test at A, never the better-looking test at B.
TEST(TunedTest, SelectsOnTheSelectionSplitAndReportsTheMetricThere) {
  std::vector<TrialPoint> trials;
  for (int k : {1, 2}) {
    for (int64_t s = 0; s < 4; ++s) {
      const double noise = 0.002 * static_cast<double>(s);
      trials.push_back(Trial(1, k, kA, s, 0.50 + 0.1 * k + noise, 0.9));
      trials.push_back(Trial(1, k, kB, s, 0.80 + 0.1 * k + noise, 0.2));
    }
  }
  for (SelectUnit unit : {SelectUnit::kSeed, SelectUnit::kPoint}) {
    absl::StatusOr<TunedAnalysis> a =
        AnalyzeTuned(trials, Options(), Tune(unit));
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_EQ(a->series.size(), 1u);
    EXPECT_EQ(a->configs, (std::vector<std::string>{"lr=0.001", "lr=0.01"}));
    for (int k : {1, 2}) {
      const TunedPoint& p = PointAt(a->series[0], k);
      EXPECT_EQ(p.stats.n, 4);
      EXPECT_NEAR(p.stats.mean, 0.50 + 0.1 * k + 0.003, 1e-9);
      EXPECT_EQ(p.chosen_count.at("lr=0.001"), 4);
      EXPECT_EQ(p.chosen_count.count("lr=0.01"), 0u);
      for (double v : p.select_values) EXPECT_NEAR(v, 0.9, 1e-12);
    }
    EXPECT_EQ(a->series[0].optimal.best.label, "2");
    EXPECT_TRUE(ToJson(*a)["notes"].empty());
  }
  // Selecting on the reported metric picks B, and says it is biased.
  TuneOptions on_test = Tune();
  on_test.select_by = "test_acc";
  absl::StatusOr<TunedAnalysis> biased =
      AnalyzeTuned(trials, Options(), on_test);
  ASSERT_TRUE(biased.ok()) << biased.status();
  EXPECT_EQ(PointAt(biased->series[0], 2).chosen_count.at("lr=0.01"), 4);
  EXPECT_THAT(ToJson(*biased)["notes"][0].get<std::string>(),
              HasSubstr("biased upwards"));
}

// Test accuracy of every configuration is the same in both data sets; only
// the validation split differs. When it cannot decide between the two
// learning rates at k = 2, the CI of the optimal k must widen: wider than
// with a stable selection, and wider than the same selection held fixed
// (the untuned curve at the configuration the full data selects).
std::vector<TrialPoint> NoisyOrStable(bool noisy, SelectUnit unit) {
  std::vector<TrialPoint> trials;
  const double test_a[] = {0.50, 0.70, 0.60};  // k = 1, 2, 4
  const double test_b[] = {0.40, 0.30, 0.50};
  const int ks[] = {1, 2, 4};
  for (int i = 0; i < 3; ++i) {
    for (int64_t s = 0; s < 6; ++s) {
      const double e = 0.001 * static_cast<double>(s % 3);
      double val_a = test_a[i] + 0.01, val_b = test_b[i] + 0.01;
      if (noisy && ks[i] == 2) {
        // Seeds 0-2 prefer B on validation. kSeed: those seeds select B.
        // kPoint: A still wins the mean over all seeds (0.71 > 0.65), but B
        // wins in resamples with 4 or more draws from seeds 0-2.
        val_a = 0.71;
        val_b = s < 3 ? (unit == SelectUnit::kSeed ? 0.90 : 0.95) : 0.35;
      }
      trials.push_back(Trial(1, ks[i], kA, s, test_a[i] + e, val_a));
      trials.push_back(Trial(1, ks[i], kB, s, test_b[i] + e, val_b));
    }
  }
  return trials;
}

TEST(TunedTest, SelectionNoiseWidensTheCiOfTheOptimalK) {
  for (SelectUnit unit : {SelectUnit::kSeed, SelectUnit::kPoint}) {
    SCOPED_TRACE(SelectUnitName(unit));
    absl::StatusOr<TunedAnalysis> stable =
        AnalyzeTuned(NoisyOrStable(false, unit), Options(), Tune(unit));
    absl::StatusOr<TunedAnalysis> noisy =
        AnalyzeTuned(NoisyOrStable(true, unit), Options(), Tune(unit));
    ASSERT_TRUE(stable.ok() && noisy.ok());
    const OptimalK& s = stable->series[0].optimal;
    const OptimalK& n = noisy->series[0].optimal;
    // Stable: k = 2 in every resample.
    EXPECT_EQ(s.best.label, "2");
    EXPECT_DOUBLE_EQ(s.best_freq, 1.0);
    EXPECT_EQ(s.ci_lo, 2);
    EXPECT_EQ(s.ci_hi, 2);
    // Noisy: the argmax flips between 2 and 4 across resamples.
    EXPECT_LT(n.best_freq, 0.95);
    EXPECT_GT(n.argmax_freq.count("2") + n.argmax_freq.count("4"), 1u);
    EXPECT_EQ(n.ci_lo, 2);
    EXPECT_EQ(n.ci_hi, 4);
    // The k = 2 point's CI widens too.
    const CellStats& ps = PointAt(stable->series[0], 2).stats;
    const CellStats& pn = PointAt(noisy->series[0], 2).stats;
    EXPECT_GT(pn.ci_hi - pn.ci_lo, 10 * (ps.ci_hi - ps.ci_lo + 1e-6));
    // Holding the selection fixed (lr A, what kPoint selects on all seeds)
    // would hide that: its CI is the point.
    const UntunedCurve& fixed = UntunedAt(*noisy, "lr=0.001");
    ASSERT_EQ(fixed.optimal.size(), 1u);
    EXPECT_EQ(fixed.optimal[0].best.label, "2");
    EXPECT_EQ(fixed.optimal[0].ci_lo, 2);
    EXPECT_EQ(fixed.optimal[0].ci_hi, 2);
  }
  // kPoint's point estimate keeps A at k = 2 (mean validation 0.71 > 0.65).
  absl::StatusOr<TunedAnalysis> point =
      AnalyzeTuned(NoisyOrStable(true, SelectUnit::kPoint), Options(),
                   Tune(SelectUnit::kPoint));
  ASSERT_TRUE(point.ok());
  EXPECT_EQ(PointAt(point->series[0], 2).chosen_count.at("lr=0.001"), 6);
  EXPECT_EQ(point->series[0].optimal.best.label, "2");
  // kSeed: seeds 0-2 chose B, so k = 2 averages 0.30 and 0.70.
  absl::StatusOr<TunedAnalysis> seed =
      AnalyzeTuned(NoisyOrStable(true, SelectUnit::kSeed), Options(), Tune());
  ASSERT_TRUE(seed.ok());
  const TunedPoint& k2 = PointAt(seed->series[0], 2);
  EXPECT_EQ(k2.chosen_count.at("lr=0.01"), 3);
  EXPECT_EQ(k2.chosen_count.at("lr=0.001"), 3);
  EXPECT_NEAR(k2.stats.mean, 0.50 + 0.001, 1e-9);
  EXPECT_EQ(seed->series[0].optimal.best.label, "4");
}

// The best lr moves with k: the chosen configuration is reported per k, and
// the untuned curves are one per fixed lr, each with its own optimal k.
TEST(TunedTest, ChosenHyperparametersPerKAndTheUntunedCurves) {
  std::vector<TrialPoint> trials;
  for (int m : {1, 2}) {
    for (int k : {1, 8}) {
      for (int64_t s = 0; s < 3; ++s) {
        // k = 1 likes lr A, k = 8 likes lr B.
        const double a = k == 1 ? 0.6 : 0.3, b = k == 1 ? 0.2 : 0.7;
        trials.push_back(Trial(m, k, kA, s, a, a));
        trials.push_back(Trial(m, k, kB, s, b, b));
      }
    }
  }
  absl::StatusOr<TunedAnalysis> a = AnalyzeTuned(trials, Options(), Tune());
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->series.size(), 2u);  // M = 1, 2
  for (const TunedSeries& s : a->series) {
    EXPECT_EQ(PointAt(s, 1).chosen_count.at("lr=0.001"), 3);
    EXPECT_EQ(PointAt(s, 8).chosen_count.at("lr=0.01"), 3);
    EXPECT_EQ(s.optimal.best.label, "8");
    EXPECT_NEAR(s.optimal.best_mean, 0.7, 1e-12);
  }
  ASSERT_EQ(a->untuned.size(), 2u);
  EXPECT_EQ(UntunedAt(*a, "lr=0.001").optimal[0].best.label, "1");
  EXPECT_EQ(UntunedAt(*a, "lr=0.01").optimal[0].best.label, "8");
  EXPECT_EQ(UntunedAt(*a, "lr=0.01").values["lr"], kB);
  EXPECT_EQ(a->trials_used, 24);

  const nlohmann::json j = ToJson(*a);
  EXPECT_EQ(j["kind"], "tuned");
  EXPECT_EQ(j["tune"], nlohmann::json::array({"lr"}));
  EXPECT_EQ(j["select_by"], "val_acc");
  EXPECT_EQ(j["select_per"], "seed");
  EXPECT_EQ(j["tuned"].size(), 2u);
  EXPECT_EQ(j["tuned"][0]["optimal"]["best"], 8);
  EXPECT_EQ(j["tuned"][0]["points"][0]["chosen_count"]["lr=0.001"], 3);
  EXPECT_EQ(j["untuned"][1]["config"], "lr=0.01");
  EXPECT_EQ(j["untuned"][1]["optimal"][0]["best"], 8);
}

// A seed without the selection metric at one configuration selects among
// the others; trials that are not succeeded are left out.
TEST(TunedTest, MissingValuesAndUnfinishedTrials) {
  std::vector<TrialPoint> trials;
  for (int64_t s = 0; s < 2; ++s) {
    trials.push_back(Trial(1, 1, kA, s, 0.5, 0.5));
    trials.push_back(Trial(1, 1, kB, s, 0.9, 0.9));
  }
  trials[1].results.erase("val_acc");  // seed 0 at B: no validation value
  trials[3].state = store::TrialState::kFailed;  // seed 1 at B
  absl::StatusOr<TunedAnalysis> a = AnalyzeTuned(trials, Options(), Tune());
  ASSERT_TRUE(a.ok()) << a.status();
  const TunedPoint& p = PointAt(a->series[0], 1);
  EXPECT_EQ(p.chosen_count.at("lr=0.001"), 2);
  EXPECT_NEAR(p.stats.mean, 0.5, 1e-12);
  EXPECT_EQ(a->trials_used, 2);
  EXPECT_EQ(a->series[0].optimal.seeds, 2);
}

// A sampled sweep raced by ASHA (docs/sampled-axes.md): a configuration
// stopped at a rung (kPruned) may carry a value from its partial run (here
// better than any finished one); it is never selected, and the selection is
// among the configurations that finished.
TEST(TunedTest, AshaStoppedConfigurationsNeverWin) {
  std::vector<TrialPoint> trials;
  for (int64_t s = 0; s < 3; ++s) {
    trials.push_back(Trial(1, 2, kA, s, 0.6, 0.6));
    TrialPoint stopped = Trial(1, 2, kB, s, 0.95, 0.95);
    stopped.state = store::TrialState::kPruned;
    trials.push_back(stopped);
  }
  for (SelectUnit unit : {SelectUnit::kSeed, SelectUnit::kPoint}) {
    absl::StatusOr<TunedAnalysis> a =
        AnalyzeTuned(trials, Options(), Tune(unit));
    ASSERT_TRUE(a.ok()) << a.status();
    const TunedPoint& p = PointAt(a->series[0], 2);
    EXPECT_EQ(p.chosen_count.at("lr=0.001"), 3);
    EXPECT_EQ(p.chosen_count.count("lr=0.01"), 0u);
    EXPECT_NEAR(p.stats.mean, 0.6, 1e-12);
    EXPECT_EQ(a->trials_used, 3);
  }
}

TEST(TunedTest, RefusesWhatCannotBeTuned) {
  std::vector<TrialPoint> trials = {Trial(1, 1, kA, 0, 0.5, 0.5),
                                    Trial(1, 1, kB, 0, 0.6, 0.6)};
  TuneOptions none = Tune();
  none.tune.clear();
  EXPECT_EQ(AnalyzeTuned(trials, Options(), none).status().code(),
            absl::StatusCode::kInvalidArgument);
  TuneOptions axis = Tune();
  axis.tune = {"top_k"};
  absl::Status st = AnalyzeTuned(trials, Options(), axis).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("'top_k' is the x axis"));
  TuneOptions twice = Tune();
  twice.tune = {"lr", "lr"};
  EXPECT_THAT(
      std::string(AnalyzeTuned(trials, Options(), twice).status().message()),
      HasSubstr("named twice"));
  // Two trials in one (cell, seed, configuration): they differ in width.
  trials.push_back(Trial(1, 1, kA, 0, 0.7, 0.7));
  trials.back().params["width"] = 0.5;
  trials.back().trial_id = "wide";
  st = AnalyzeTuned(trials, Options(), Tune()).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("differ in width"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("wide"));
  EXPECT_FALSE(ParseSelectUnit("seeds").ok());
  EXPECT_EQ(*ParseSelectUnit("point"), SelectUnit::kPoint);
}

}  // namespace
}  // namespace smoe::analysis
