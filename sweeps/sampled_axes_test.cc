// Copyright 2026 SMoE Lab authors.
//
// Sampled axes (issue 33 items 1 and 4): the `sample:` block's parsing and
// validation, the draws' determinism and distributions, trial identity,
// `extend samples`, resubmission, asha's defaults and cost estimate. The
// scheduler path (submit, resubmit, ExtendSweep "samples"):
// coordinator/sampled_scheduler_test.cc.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sweeps/sweep_spec.h"
#include "sweeps/test_sweeps.h"

namespace smoe::sweeps {
namespace {

using nlohmann::json;
using test_sweeps::kSampled;
using test_sweeps::Parse;
using ::testing::HasSubstr;

std::string Error(const std::string& text) {
  auto spec = ParseSweepYaml(text);
  EXPECT_FALSE(spec.ok()) << "parsed: " << text;
  return spec.ok() ? "" : std::string(spec.status().message());
}

std::vector<std::string> Ids(const SweepSpec& spec) {
  std::vector<std::string> ids;
  for (const ExpandedTrial& t : ExpandGrid(spec)) ids.push_back(t.trial_id);
  return ids;
}

TEST(SampledAxesTest, ParsesTheBlockAndExpandsGridTimesDrawsTimesSeeds) {
  const SweepSpec spec = Parse(kSampled);
  ASSERT_EQ(spec.sample.size(), 4u);
  EXPECT_EQ(spec.sample[0].name, "lr");
  EXPECT_EQ(spec.sample[0].distribution, "loguniform");
  EXPECT_TRUE(spec.sample[0].log());
  EXPECT_FALSE(spec.sample[1].log());
  EXPECT_EQ(spec.samples, 8);
  EXPECT_EQ(spec.sample_seed, 7);
  EXPECT_EQ(AxisNames(spec),
            (std::vector<std::string>{"M", "top_k", "lr", "weight_decay",
                                      "warmup", "width"}));
  const std::vector<ExpandedTrial> points = ExpandGrid(spec);
  ASSERT_EQ(points.size(), 2u * 2u * 8u * 2u);
  EXPECT_EQ(CountPoints(spec), 64);
  // Every grid point x seed sees the same 8 configurations, in draw order.
  const std::vector<json> configs = SampleConfigs(spec);
  ASSERT_EQ(configs.size(), 8u);
  std::set<std::string> ids;
  for (size_t i = 0; i < points.size(); ++i) {
    const ExpandedTrial& t = points[i];
    const json& c = configs[(i / 2) % 8];
    for (const auto& [k, v] : c.items()) EXPECT_EQ(t.params[k], v) << k;
    EXPECT_EQ(t.seed, static_cast<int64_t>(i % 2));
    EXPECT_EQ(t.params["steps"], 1000);
    // The id is the content hash of the full params, as for grid points.
    EXPECT_EQ(t.trial_id, TrialId("tuned", "sraven", t.params, t.seed));
    ids.insert(t.trial_id);
  }
  EXPECT_EQ(ids.size(), points.size());
}

// The draws are the documented function of (seed, index, name): the values
// below were computed independently (Python: hashlib.sha256 of
// "smoe-sample:7:<i>:<name>", the first 8 bytes big-endian >> 11, / 2^53,
// then the distribution and "%.6g"), so they hold on any machine and
// library version.
TEST(SampledAxesTest, DrawsAreAFixedFunctionOfSeedIndexAndName) {
  const SweepSpec spec = Parse(kSampled);
  const std::vector<json> c = SampleConfigs(spec);
  ASSERT_GE(c.size(), 3u);
  EXPECT_EQ(c[0]["lr"].dump(), "0.000633461");
  EXPECT_EQ(c[1]["lr"].dump(), "0.00137981");
  EXPECT_EQ(c[2]["lr"].dump(), "0.000409122");
  EXPECT_EQ(c[0]["weight_decay"].dump(), "0.140394");
  EXPECT_EQ(c[1]["weight_decay"].dump(), "0.0725248");
  EXPECT_EQ(c[0]["warmup"], 77);
  EXPECT_EQ(c[1]["warmup"], 56);
  EXPECT_EQ(c[2]["warmup"], 376);
  EXPECT_TRUE(c[0]["warmup"].is_number_integer());
  // Parsing the same text again gives the same trials.
  EXPECT_EQ(Ids(Parse(kSampled)), Ids(spec));
  // Another seed, other draws (and ids); the default seed is the name's.
  std::string other = kSampled;
  other.replace(other.find("sample_seed: 7"), 14, "sample_seed: 8");
  EXPECT_NE(SampleConfigs(Parse(other))[0]["lr"], c[0]["lr"]);
  std::string unseeded = kSampled;
  unseeded.replace(unseeded.find("sample_seed: 7"), 14, "");
  const SweepSpec d = Parse(unseeded);
  EXPECT_EQ(d.sample_seed, DefaultSampleSeed("tuned"));
  EXPECT_EQ(DefaultSampleSeed("tuned-k-sampled"), 149244376723734);
}

TEST(SampledAxesTest, DistributionsStayInRangeWithTheirShape) {
  SampledAxis lr{"lr", "loguniform", 1e-4, 1e-2, {}};
  SampledAxis wd{"weight_decay", "uniform", 0.0, 0.2, {}};
  SampledAxis warm{"warmup", "int", 50, 500, {}};
  SampledAxis width{"width", "choice", json(), json(), {0.25, 0.5}};
  constexpr int kN = 4000;
  int below_geo_mid = 0;
  double wd_sum = 0;
  std::set<int64_t> warm_seen;
  std::map<double, int> width_seen;
  for (int i = 0; i < kN; ++i) {
    const double a = DrawSample(lr, 11, i).get<double>();
    ASSERT_GE(a, 1e-4);
    ASSERT_LE(a, 1e-2);
    // %.6g: at most 6 significant digits.
    ASSERT_EQ(json(a).dump(),
              json(std::stod(absl::StrFormat("%.6g", a))).dump());
    if (a < 1e-3) ++below_geo_mid;
    const double w = DrawSample(wd, 11, i).get<double>();
    ASSERT_GE(w, 0.0);
    ASSERT_LE(w, 0.2);
    wd_sum += w;
    const json k = DrawSample(warm, 11, i);
    ASSERT_TRUE(k.is_number_integer()) << k;
    ASSERT_GE(k.get<int64_t>(), 50);
    ASSERT_LE(k.get<int64_t>(), 500);
    warm_seen.insert(k.get<int64_t>());
    ++width_seen[DrawSample(width, 11, i).get<double>()];
  }
  // Log-uniform: half the mass below the geometric midpoint 1e-3 (a uniform
  // draw on [1e-4, 1e-2] would put 9% there). 4000 draws: s.d. 0.8%.
  EXPECT_NEAR(below_geo_mid / static_cast<double>(kN), 0.5, 0.04);
  EXPECT_NEAR(wd_sum / kN, 0.1, 0.01);
  // Both ends of the int range are drawn; most of the 451 values are.
  EXPECT_TRUE(warm_seen.count(50));
  EXPECT_TRUE(warm_seen.count(500));
  EXPECT_GT(warm_seen.size(), 440u);
  ASSERT_EQ(width_seen.size(), 2u);
  EXPECT_NEAR(width_seen[0.25] / static_cast<double>(kN), 0.5, 0.04);
}

TEST(SampledAxesTest, RoundTripsThroughTheStoredYaml) {
  const SweepSpec spec = Parse(kSampled);
  const std::string yaml = SweepSpecToYaml(spec);
  EXPECT_THAT(yaml, HasSubstr("sample_seed: 7"));
  const SweepSpec back = Parse(yaml);
  EXPECT_EQ(back.sample, spec.sample);
  EXPECT_EQ(back.samples, spec.samples);
  EXPECT_EQ(back.sample_seed, spec.sample_seed);
  EXPECT_EQ(Ids(back), Ids(spec));
  EXPECT_EQ(SweepSpecToYaml(back), yaml);
  // The default seed is written, so a stored sweep keeps its draws even if
  // the default's derivation changed.
  std::string unseeded = kSampled;
  unseeded.replace(unseeded.find("sample_seed: 7"), 14, "");
  EXPECT_THAT(
      SweepSpecToYaml(Parse(unseeded)),
      HasSubstr(absl::StrCat("sample_seed: ", DefaultSampleSeed("tuned"))));
  // A sweep without sampled axes is written as before.
  EXPECT_THAT(SweepSpecToYaml(Parse("name: g\nkind: sraven\ngrid: {M: [1]}\n")),
              ::testing::Not(HasSubstr("sample")));
}

TEST(SampledAxesTest, ExtendSamplesDrawsExactlyNMoreAndKeepsTheFirst) {
  const SweepSpec spec = Parse(kSampled);
  const std::vector<std::string> before = Ids(spec);
  SweepSpec a = spec;
  ASSERT_TRUE(ExtendAxis(&a, "samples", {4}).ok());
  EXPECT_EQ(a.samples, 12);
  const std::vector<std::string> after = Ids(a);
  std::set<std::string> old_ids(before.begin(), before.end());
  std::set<std::string> all(after.begin(), after.end());
  EXPECT_EQ(all.size(), after.size());
  // Every earlier trial is still there; exactly 4 draws x 4 grid points x
  // 2 seeds are new.
  for (const std::string& id : before) EXPECT_TRUE(all.count(id)) << id;
  EXPECT_EQ(all.size() - old_ids.size(), 4u * 4u * 2u);
  // The same extension from the same sweep draws the same configurations;
  // 8 + 4 equals 12 at once.
  SweepSpec b = spec;
  ASSERT_TRUE(ExtendAxis(&b, "samples", {4}).ok());
  EXPECT_EQ(Ids(b), after);
  SweepSpec twelve = spec;
  twelve.samples = 12;
  EXPECT_EQ(Ids(twelve), after);
  // Extending again adds further draws.
  ASSERT_TRUE(ExtendAxis(&b, "samples", {4}).ok());
  EXPECT_EQ(Ids(b).size(), after.size() + 32u);
}

TEST(SampledAxesTest, ExtendSamplesRefusesBadCountsAndUnsampledSweeps) {
  SweepSpec spec = Parse(kSampled);
  for (const std::vector<json>& bad :
       std::vector<std::vector<json>>{{0}, {-2}, {1.5}, {"x"}, {1, 2}}) {
    const absl::Status s = ExtendAxis(&spec, "samples", bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << json(bad);
    EXPECT_THAT(s.message(),
                HasSubstr("samples: expected one positive integer"));
    EXPECT_THAT(s.message(), HasSubstr(json(bad).dump()));
  }
  EXPECT_EQ(spec.samples, 8);
  ParseOptions small;
  small.max_points = 100;
  const absl::Status big = ExtendAxis(&spec, "samples", {100}, small);
  EXPECT_THAT(big.message(), HasSubstr("more than max 100"));
  SweepSpec grid = Parse("name: g\nkind: sraven\ngrid: {M: [1]}\n");
  EXPECT_THAT(ExtendAxis(&grid, "samples", {2}).message(),
              HasSubstr("has no sampled axes"));
}

// samples_total: up to T draws in all, the same draws as extending by the
// difference; at or below the current count nothing changes (a retried
// request adds nothing).
TEST(SampledAxesTest, ExtendToATotalIsIdempotent) {
  const SweepSpec spec = Parse(kSampled);  // samples: 8
  SweepSpec by_four = spec;
  ASSERT_TRUE(ExtendAxis(&by_four, "samples", {4}).ok());
  SweepSpec to_twelve = spec;
  ASSERT_TRUE(ExtendAxis(&to_twelve, "samples_total", {12}).ok());
  EXPECT_EQ(to_twelve.samples, 12);
  EXPECT_EQ(Ids(to_twelve), Ids(by_four));
  ASSERT_TRUE(ExtendAxis(&to_twelve, "samples_total", {12}).ok());
  ASSERT_TRUE(ExtendAxis(&to_twelve, "samples_total", {3}).ok());
  EXPECT_EQ(to_twelve.samples, 12);
  EXPECT_EQ(Ids(to_twelve), Ids(by_four));
  for (const std::vector<json>& bad :
       std::vector<std::vector<json>>{{0}, {1.5}, {"x"}, {1, 2}}) {
    const absl::Status s = ExtendAxis(&to_twelve, "samples_total", bad);
    EXPECT_THAT(s.message(),
                HasSubstr("samples_total: expected one positive integer"))
        << json(bad);
  }
  ParseOptions small;
  small.max_points = 100;
  EXPECT_THAT(ExtendAxis(&to_twelve, "samples_total", {101}, small).message(),
              HasSubstr("samples_total: 12 + 89 draws, more than max 100"));
  SweepSpec grid = Parse("name: g\nkind: sraven\ngrid: {M: [1]}\n");
  EXPECT_THAT(ExtendAxis(&grid, "samples_total", {2}).message(),
              HasSubstr("samples_total: sweep g has no sampled axes"));
}

TEST(SampledAxesTest, ValidationNamesTheFieldAndTheValue) {
  const std::string head = "name: v\nkind: sraven\ngrid: {M: [1]}\n";
  EXPECT_THAT(
      Error(head + "sample: {lr: {loguniform: [0, 0.1]}}\nsamples: 2\n"),
      HasSubstr("sample.lr.loguniform: lo must be > 0 (a log range), "
                "got 0"));
  EXPECT_THAT(
      Error(head + "sample: {lr: {uniform: [0.1, 0.01]}}\nsamples: 2\n"),
      HasSubstr("sample.lr.uniform: expected lo < hi, got [0.1, 0.01]"));
  EXPECT_THAT(
      Error(head +
            "sample: {weight_decay: {uniform: [-1, 0.2]}}\nsamples: 2\n"),
      HasSubstr("sample.weight_decay.uniform[0]: expected a value in"));
  EXPECT_THAT(Error(head + "sample: {top_k: {int: [1, 999]}}\nsamples: 2\n"),
              HasSubstr("sample.top_k.int[1]: expected"));
  EXPECT_THAT(
      Error(head + "sample: {warmup: {uniform: [10, 20]}}\nsamples: 2\n"),
      HasSubstr("sample.warmup.uniform: warmup is an integer "
                "parameter; sample it with int"));
  EXPECT_THAT(Error(head + "sample: {warmup: {int: [10, 20.5]}}\nsamples: 2\n"),
              HasSubstr("sample.warmup.int: expected [lo, hi] of integers, got "
                        "[10, 20.5]"));
  EXPECT_THAT(Error(head + "sample: {lr: {normal: [1, 2]}}\nsamples: 2\n"),
              HasSubstr("sample.lr: distribution 'normal' is not one of"));
  EXPECT_THAT(
      Error(head + "sample: {width: {choice: [0.25, 0.3]}}\nsamples: 2\n"),
      HasSubstr("sample.width.choice[1]: expected"));
  EXPECT_THAT(
      Error(head + "sample: {lrr: {uniform: [0.1, 0.2]}}\nsamples: 2\n"),
      HasSubstr("sample.lrr: unknown parameter 'lrr'"));
  EXPECT_THAT(Error(head + "sample: {M: {int: [1, 2]}}\nsamples: 2\n"),
              HasSubstr("sample.M: also a grid axis; give it in one place"));
  EXPECT_THAT(Error(head + "fixed: {lr: 0.1}\nsample: {lr: {uniform: [0.1, "
                           "0.2]}}\nsamples: 2\n"),
              HasSubstr("sample.lr: also a fixed param"));
  EXPECT_THAT(Error(head + "sample: {lr: {uniform: [0.1, 0.2]}}\n"),
              HasSubstr("samples: required with sample"));
  EXPECT_THAT(Error(head + "samples: 3\n"),
              HasSubstr("samples: given without sample"));
  EXPECT_THAT(Error(head + "sample: {lr: {uniform: [0.1, 0.2]}}\nsamples: 0\n"),
              HasSubstr("samples: value 0 out of range"));
  EXPECT_THAT(Error(head + "sample: {lr: {uniform: [0.1, 0.2]}}\nsamples: "
                           "2\nsample_seed: -1\n"),
              HasSubstr("sample_seed: value -1 out of range"));
  // Every drawn point is checked with the rules between parameters: a
  // warmup drawn at or above steps names the point.
  EXPECT_THAT(Error(head + "fixed: {steps: 100}\nsample: {warmup: {int: [50, "
                           "200]}}\nsamples: 20\n"),
              HasSubstr("must be smaller than steps=100"));
}

TEST(SampledAxesTest, RepeatedDrawsAreOneConfiguration) {
  const SweepSpec spec = Parse(
      "name: c\nkind: sraven\ngrid: {M: [1]}\nsample: {width: {choice: "
      "[0.25, 0.5]}}\nsamples: 16\n");
  const std::vector<json> configs = SampleConfigs(spec);
  EXPECT_EQ(configs.size(), 2u);
  EXPECT_EQ(CountPoints(spec), 2);
  EXPECT_EQ(ExpandGrid(spec).size(), 2u);
}

TEST(SampledAxesTest, AshaDefaultsRaceConfigurationsWithinEachGridPoint) {
  const std::string asha = std::string(kSampled) +
                           "search: {strategy: asha, metric: val_acc, "
                           "min_steps: 125, reduction: 2}\n";
  const SweepSpec spec = Parse(asha);
  EXPECT_EQ(spec.search.group_by, (std::vector<std::string>{"M", "top_k"}));
  EXPECT_TRUE(spec.search.aggregate_seeds);
  EXPECT_EQ(Parse(SweepSpecToYaml(spec)).search, spec.search);
  // Given explicitly, both are kept (false survives the stored form).
  const SweepSpec explicit_spec =
      Parse(std::string(kSampled) +
            "search: {strategy: asha, metric: val_acc, min_steps: 125, "
            "group_by: [M], aggregate_seeds: false}\n");
  EXPECT_EQ(explicit_spec.search.group_by, (std::vector<std::string>{"M"}));
  EXPECT_FALSE(explicit_spec.search.aggregate_seeds);
  EXPECT_FALSE(Parse(SweepSpecToYaml(explicit_spec)).search.aggregate_seeds);
  // A grid sweep keeps asha's old defaults.
  const SweepSpec grid = Parse(
      "name: g\nkind: sraven\ngrid: {M: [1, 2]}\nfixed: {steps: "
      "100}\nsearch: {strategy: asha, metric: val_acc, min_steps: 10}\n");
  EXPECT_TRUE(grid.search.group_by.empty());
  EXPECT_FALSE(grid.search.aggregate_seeds);
  EXPECT_THAT(Error(std::string(kSampled) +
                    "search: {strategy: asha, metric: val_acc, min_steps: "
                    "125, group_by: [lr]}\n"),
              HasSubstr("search.group_by[0]: 'lr' is a sampled axis"));
  EXPECT_THAT(Error(std::string(kSampled) +
                    "search: {strategy: refine, metric: val_acc, axis: "
                    "top_k}\n"),
              HasSubstr("search.strategy: refine does not take sampled axes"));
  // Median also races within grid points by default.
  EXPECT_EQ(Parse(std::string(kSampled) +
                  "search: {strategy: median, metric: val_acc}\n")
                .search.group_by,
            (std::vector<std::string>{"M", "top_k"}));
}

TEST(SampledAxesTest, AshaCostEstimate) {
  // 8 grid points, 8 configurations x 3 seeds each, rungs 125, 250, 500 of
  // 1000 steps, eta 2: per group 8 x 125 + 4 x 125 + 2 x 250 + 1 x 500 =
  // 2500 configuration-steps = 2.5 x one configuration's 1000.
  const SweepSpec spec = Parse(R"(
name: tk
kind: sraven
grid: {M: [1, 2], top_k: [1, 2, 4, 8]}
sample: {lr: {loguniform: [3e-4, 3e-2]}}
samples: 8
fixed: {steps: 1000, num_experts: 8}
seeds: [0, 1, 2]
search: {strategy: asha, metric: val_acc, min_steps: 125, reduction: 2}
)");
  auto cost = EstimateAshaCost(spec);
  ASSERT_TRUE(cost.ok()) << cost.status();
  // The same rungs as the asha policy's (coordinator/sampled_scheduler_test.cc
  // checks them against analysis::search::AshaRungs).
  EXPECT_EQ(cost->rungs, (std::vector<int64_t>{125, 250, 500}));
  EXPECT_EQ(cost->groups, 8);
  EXPECT_DOUBLE_EQ(cost->trial_steps, 8 * 3 * 2500.0);
  EXPECT_DOUBLE_EQ(cost->full_grid_trial_steps, 192 * 1000.0);
  EXPECT_DOUBLE_EQ(cost->untuned_grid_trial_steps, 24 * 1000.0);
  EXPECT_DOUBLE_EQ(cost->trial_steps / cost->untuned_grid_trial_steps, 2.5);
  // eta 3 from 111: rungs 111, 333, 999; 8 -> 2 -> 1 -> 1 units.
  SweepSpec three = spec;
  three.search.min_steps = 111;
  three.search.reduction = 3;
  cost = EstimateAshaCost(three);
  ASSERT_TRUE(cost.ok());
  EXPECT_EQ(cost->rungs, (std::vector<int64_t>{111, 333, 999}));
  EXPECT_DOUBLE_EQ(cost->trial_steps,
                   8 * 3 * (8 * 111.0 + 2 * 222.0 + 1 * 666.0 + 1 * 1.0));
  // Per trial (no aggregate_seeds): 24 units per group.
  SweepSpec per_trial = spec;
  per_trial.search.aggregate_seeds = false;
  cost = EstimateAshaCost(per_trial);
  ASSERT_TRUE(cost.ok());
  EXPECT_DOUBLE_EQ(cost->trial_steps,
                   8 * (24 * 125.0 + 12 * 125.0 + 6 * 250.0 + 3 * 500.0));
  SweepSpec grid_only = spec;
  grid_only.search.strategy = "grid";
  EXPECT_FALSE(EstimateAshaCost(grid_only).ok());
}

}  // namespace
}  // namespace smoe::sweeps
