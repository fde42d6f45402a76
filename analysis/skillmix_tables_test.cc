// Copyright 2026 SMoE Lab authors.
//
// Unit tests of the Skill-Mix tables.
#include "analysis/skillmix_tables.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::analysis {
namespace {

using nlohmann::json;

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
// runner-up next; an empty column has none; the JSON carries them.
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
  // The text form is tested in cli/analyze_cmd_test.cc.
}

}  // namespace
}  // namespace smoe::analysis
