// Copyright 2026 SMoE Lab authors.
#include "worker/eval/skillmix/metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "worker/eval/skillmix/data.h"
#include "worker/eval/skillmix/grading.h"
#include "worker/eval/skillmix/testdata_util.h"

namespace smoe::skillmix {
namespace {

using ::smoe::skillmix::testing::TestdataPath;
using ::testing::ElementsAre;
using Json = nlohmann::json;

TEST(MetricsTest, MajorityVoteRoundsHalfToEven) {
  EXPECT_THAT(MajorityVote({{1, 0, 1, 0.5}, {1, 0, 0, 0.5}, {0, 0, 1, 0.5}}),
              ElementsAre(1, 0, 1, 0));
  // Two voters split: mean 0.5 -> 0 (numpy rint), 1.5 -> 2.
  EXPECT_THAT(MajorityVote({{1, 1}, {0, 2}}), ElementsAre(0, 2));
}

TEST(MetricsTest, ScoreMethodsOnOneItem) {
  // k = 2: skills (1, 1), rest (1, 0, 1): S = 2, R = 2.
  const std::vector<double> q = {1, 1, 1, 0, 1};
  EXPECT_EQ(ScorePoints(q, 2, ScoreMethod::kAllPointsEarnedBinary), 0.0);
  EXPECT_EQ(ScorePoints(q, 2, ScoreMethod::kAllSkillsAndGoodRest), 1.0);
  EXPECT_EQ(ScorePoints(q, 2, ScoreMethod::kAverageOverSkillsFiltered), 0.0);
  EXPECT_EQ(ScorePoints(q, 2, ScoreMethod::kSum), 4.0);
  EXPECT_EQ(ScorePoints(q, 2, ScoreMethod::kSumOverSkills), 2.0);
  EXPECT_DOUBLE_EQ(ScorePoints(q, 2, ScoreMethod::kRescaledSum),
                   std::pow(0.8, 5));
  EXPECT_DOUBLE_EQ(ScorePoints(q, 2, ScoreMethod::kAverage), 0.8);
  EXPECT_EQ(ScorePoints(q, 2, ScoreMethod::kAverageOverSkills), 1.0);
  EXPECT_EQ(ScorePoints(q, 2, ScoreMethod::kSumOverSkillsFiltered), 0.0);
  EXPECT_EQ(ScorePoints(q, 2, ScoreMethod::kSplitSkillsVsRestBinary), 2.0);
  const std::vector<double> full = {1, 0, 1, 1, 1};  // S = 1, R = 3
  EXPECT_DOUBLE_EQ(
      ScorePoints(full, 2, ScoreMethod::kAverageOverSkillsFiltered), 0.5);
  EXPECT_EQ(ScorePoints(full, 2, ScoreMethod::kAllSkillsAndGoodRest), 0.0);
}

TEST(MetricsTest, MeanAndStandardError) {
  const MeanSe m = MeanAndStandardError({0, 1, 1, 1, 0});
  EXPECT_DOUBLE_EQ(m.mean, 0.6);
  EXPECT_DOUBLE_EQ(m.se, std::sqrt(0.3) / std::sqrt(5.0));
  EXPECT_EQ(m.n, 5);
  EXPECT_TRUE(std::isnan(MeanAndStandardError({1}).se));
}

TEST(MetricsTest, RejectsWrongPointCounts) {
  const PointsTensor bad = {{{{1, 1, 1}}}};
  EXPECT_EQ(PerCombinationScores(bad, 2, ScoreMethod::kSum).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// End to end on the reference's recorded gpt-4 runs: raw grader outputs ->
// our table parser -> final points -> vote -> max/mean -> mean ± s.e.,
// against metrics_golden.json (computed by make_metrics_golden.py from the
// reference parser's recorded points).
TEST(MetricsTest, ReproducesRecordedRunMetrics) {
  auto fx_text = ReadFileToString(TestdataPath("reference_fixtures.json"));
  auto golden_text = ReadFileToString(TestdataPath("metrics_golden.json"));
  ASSERT_TRUE(fx_text.ok() && golden_text.ok());
  const Json fx = Json::parse(*fx_text);
  const Json golden = Json::parse(*golden_text);
  const int k = golden["k"].get<int>();
  const int n = golden["num_combinations"].get<int>();
  const std::vector<std::string> runs = {"k3_s10_vdefault_r2",
                                         "k3_s10_vdefault_r3"};
  const std::vector<std::string> graders = {"by_gpt-4_on_text_1_1_gpt",
                                            "by_gpt-4_on_text_1_2_gpt",
                                            "by_gpt-4_on_text_1_3_gpt"};
  PointsTensor points(
      n, std::vector<std::vector<std::vector<double>>>(
             runs.size(), std::vector<std::vector<double>>(graders.size())));
  int filled = 0;
  for (const Json& rec : fx["grading_records"]) {
    if (rec["student_model"] != "gpt-4") continue;
    const size_t g =
        std::find(runs.begin(), runs.end(), rec["run"]) - runs.begin();
    const size_t r =
        std::find(graders.begin(), graders.end(), rec["grader_dir"]) -
        graders.begin();
    const int c = rec["row"].get<int>();
    ASSERT_LT(g, runs.size());
    ASSERT_LT(r, graders.size());
    const ParsedGrade parsed =
        ParseGradeTable(rec["grader_output"].get<std::string>());
    points[c][g][r] =
        FinalPoints(parsed.points, k, rec["student_answer"].get<std::string>());
    ++filled;
  }
  ASSERT_EQ(filled, 30);
  for (const auto& [agg_name, agg] :
       std::map<std::string, GenerationAggregation>{
           {"max", GenerationAggregation::kMax},
           {"mean", GenerationAggregation::kMean}}) {
    auto metrics = AggregateMetrics(points, k, agg);
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    for (ScoreMethod m : AllScoreMethods()) {
      const Json& want = golden[agg_name][std::string(ScoreMethodName(m))];
      auto per_c = PerCombinationScores(points, k, m, agg);
      ASSERT_TRUE(per_c.ok());
      const auto want_c = want["per_combination"].get<std::vector<double>>();
      ASSERT_EQ(per_c->size(), want_c.size());
      for (size_t c = 0; c < want_c.size(); ++c) {
        EXPECT_NEAR((*per_c)[c], want_c[c], 1e-12) << ScoreMethodName(m);
      }
      EXPECT_NEAR(metrics->at(m).mean, want["mean"].get<double>(), 1e-12)
          << agg_name << " " << ScoreMethodName(m);
      EXPECT_NEAR(metrics->at(m).se, want["se"].get<double>(), 1e-12)
          << agg_name << " " << ScoreMethodName(m);
    }
  }
  // The paper's three headline numbers for this run (max over generations).
  auto metrics = AggregateMetrics(points, k);
  ASSERT_TRUE(metrics.ok());
  EXPECT_NEAR(metrics->at(ScoreMethod::kAllPointsEarnedBinary).mean, 0.6,
              1e-12);
  EXPECT_NEAR(metrics->at(ScoreMethod::kAverageOverSkillsFiltered).mean,
              13.0 / 15.0, 1e-12);
}

}  // namespace
}  // namespace smoe::skillmix
