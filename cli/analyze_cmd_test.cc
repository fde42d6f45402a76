// Copyright 2026 SMoE Lab authors.
//
// Unit tests of `smoe analyze`'s text tables (the numbers come from
// analysis/, tested there).
#include "cli/analyze_cmd.h"

#include <string>
#include <vector>

#include "analysis/analyze.h"
#include "analysis/skillmix_tables.h"
#include "analysis/test_trials.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::cli {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
namespace an = smoe::analysis;

TEST(AnalyzeFormatTest, AnalysisTable) {
  const json a =
      an::AnalyzeSweep(an::test_trials::Grid(3), an::AggregateOptions{});
  const std::string table = FormatAnalysisTable(a);
  EXPECT_THAT(table, HasSubstr("Optimal top_k per M and attention"));
  EXPECT_THAT(table, HasSubstr("hyla"));
  EXPECT_THAT(table, HasSubstr("predicted k*"));
  // Empty input formats without failing.
  const json empty = an::AnalyzeSweep({}, an::AggregateOptions{});
  EXPECT_THAT(FormatAnalysisTable(empty), HasSubstr("no succeeded trials"));
}

// Best EPT per k_skills in text: the best and the runner-up after the slash.
TEST(AnalyzeFormatTest, SkillMixTables) {
  std::vector<an::TrialPoint> trials;
  auto add = [&](int ept, int k, double v) {
    an::TrialPoint t;
    t.params = {{"ept", ept}, {"k_skills", k}};
    t.state = store::TrialState::kSucceeded;
    t.results = {{"ratio_full_marks", v}, {"ratio_full_marks_se", 0.01}};
    trials.push_back(t);
  };
  add(1, 1, 0.5);
  add(2, 1, 0.5);
  add(4, 1, 0.1);
  add(1, 3, 0.1);  // k = 3: ept 4 best, ept 2 runner-up
  add(2, 3, 0.3);
  add(4, 3, 0.35);
  add(1, 5, 0.2);
  const auto tables = an::SkillMixTables(trials);
  const std::string text = FormatSkillMixTables(tables, "ept", "k_skills");
  EXPECT_THAT(text, HasSubstr("ratio_full_marks (mean +- s.e."));
  EXPECT_THAT(text, HasSubstr("k_skills = 3      ept = 4    0.350 +- 0.010"));
  EXPECT_THAT(text, HasSubstr("/  ept = 2    0.300 +- 0.010"));
  EXPECT_THAT(FormatSkillMixTables(tables, "ept", "k_skills", "skill_fraction"),
              HasSubstr("no succeeded trials with metric skill_fraction"));
}

}  // namespace
}  // namespace smoe::cli
