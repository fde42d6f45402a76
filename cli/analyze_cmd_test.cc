// Copyright 2026 SMoE Lab authors.
//
// Unit tests of `smoe analyze`'s text tables (the numbers come from
// analysis/, tested there).
#include "cli/analyze_cmd.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/analyze.h"
#include "analysis/skillmix_tables.h"
#include "analysis/test_trials.h"
#include "cli/search_show.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::cli {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
namespace an = smoe::analysis;

TEST(AnalyzeFormatTest, AnalysisTable) {
  const json a =
      an::AnalyzeSweep(an::test_trials::Grid(3), an::AggregateOptions{});
  const std::string table = FormatAnalysisTable(a);
  EXPECT_THAT(table, HasSubstr("Optimal top_k per M and attention"));
  EXPECT_THAT(table, HasSubstr("hyla"));
  // Issue 31 item 6: no per-N "predicted k*" (always T); the note instead.
  EXPECT_THAT(table, Not(HasSubstr("predicted k*")));
  EXPECT_THAT(table, HasSubstr("note: E(k, N) is smallest at k = T for any "
                               "fitted a, b >= 0"));
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

// One seed: no s.e.m., CI or P(best) are printed; the table says n = 1.
TEST(AnalyzeFormatTest, OneSeedSaysNEquals1) {
  const std::string one = FormatAnalysisTable(
      an::AnalyzeSweep(an::test_trials::Grid(1), an::AggregateOptions{}));
  EXPECT_THAT(one, HasSubstr("(n = 1)"));
  EXPECT_THAT(one, HasSubstr("n = 1: one seed per point, so no s.e.m., no CI "
                             "and no P"));
  EXPECT_THAT(one, Not(HasSubstr("+- 0.")));  // no mean +- s.e.m. row
  EXPECT_THAT(one, Not(HasSubstr("[")));      // no CI column values
  const std::string three = FormatAnalysisTable(
      an::AnalyzeSweep(an::test_trials::Grid(3), an::AggregateOptions{}));
  EXPECT_THAT(three, Not(HasSubstr("n = 1")));
  EXPECT_THAT(three, HasSubstr("+- 0."));
  EXPECT_THAT(three, HasSubstr("[4, 4]"));  // hyla M = 2: k = 4 every time
}

// A theory fit with R^2 < 0 is printed with its R^2 and flagged as not
// meaningful.
TEST(AnalyzeFormatTest, NegativeR2IsFlaggedNotMeaningful) {
  std::vector<an::TrialPoint> trials;
  for (int k : {1, 2, 4, 8}) {
    for (int seed : {0, 1}) {
      trials.push_back(an::test_trials::Trial(1, k, "hyla", seed, 0.1));
      trials.push_back(an::test_trials::Trial(3, k, "hyla", seed, 0.9));
    }
  }
  const std::string table =
      FormatAnalysisTable(an::AnalyzeSweep(trials, an::AggregateOptions{}));
  EXPECT_THAT(table, HasSubstr("R^2 = -"));
  EXPECT_THAT(table, HasSubstr("not meaningful: R^2 < 0"));
  // A fit with R^2 >= 0 carries no flag.
  std::vector<an::TrialPoint> exact;
  for (int n : {1, 2}) {
    for (int k : {1, 2, 4}) {
      for (int seed : {0, 1}) {
        exact.push_back(an::test_trials::Trial(
            n, k, "hyla", seed, 1 - an::TotalError(0.002, 3.0, k, n, 8, 1000)));
      }
    }
  }
  const std::string good =
      FormatAnalysisTable(an::AnalyzeSweep(exact, an::AggregateOptions{}));
  EXPECT_THAT(good, HasSubstr("R^2 = 1.000"));
  EXPECT_THAT(good, Not(HasSubstr("not meaningful")));
  EXPECT_THAT(good, HasSubstr("note: E(k, N) is smallest at k = T"));
}

// Issue 31 item 6: an axis the sweep does not vary is refused, naming the
// swept parameters (and a near miss); unnamed axes are not checked.
TEST(AnalyzeAxesTest, RefusesAnAxisTheSweepDoesNotVary) {
  const std::vector<an::TrialPoint> trials = an::test_trials::Grid(2);
  EXPECT_EQ(SweptParams(trials),
            (std::vector<std::string>{"M", "attention", "top_k"}));
  AnalyzeFlags ok;
  EXPECT_TRUE(CheckAnalysisAxes(trials, ok, "s").ok());
  ok.x = "top_k";
  ok.series = "M";
  ok.facet = "attention";
  EXPECT_TRUE(CheckAnalysisAxes(trials, ok, "s").ok());
  AnalyzeFlags lr;
  lr.x = "lr";
  const absl::Status s = CheckAnalysisAxes(trials, lr, "demo");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(s.message()),
            "--x: 'lr' is not a swept parameter of sweep demo; its swept "
            "parameters: M, attention, top_k");
  AnalyzeFlags typo;
  typo.series = "topk";
  EXPECT_THAT(std::string(CheckAnalysisAxes(trials, typo, "s").message()),
              HasSubstr("--series: 'topk' is not a swept parameter of sweep s "
                        "(did you mean 'top_k'?)"));
  // A fixed parameter (num_experts = 8 everywhere) is not an axis either.
  AnalyzeFlags fixed;
  fixed.facet = "num_experts";
  EXPECT_THAT(std::string(CheckAnalysisAxes(trials, fixed, "s").message()),
              HasSubstr("--facet: 'num_experts' is not a swept parameter"));
  EXPECT_TRUE(CheckAnalysisAxes({}, lr, "s").ok());  // no trials yet
}

// Issue 31 item 6: no E(k, N) fit (no theory block) off SRAVEN's top_k x M.
TEST(AnalyzeFormatTest, NoTheoryBlockForOtherKindsOrAxes) {
  an::AggregateOptions command;
  command.kind = "command";
  command.facet = "";
  const std::string text =
      FormatAnalysisTable(an::AnalyzeSweep(an::test_trials::Grid(2), command));
  EXPECT_THAT(text, Not(HasSubstr("theory fit")));
  an::AggregateOptions by_attention;
  by_attention.series = "attention";
  by_attention.facet = "";
  EXPECT_THAT(FormatAnalysisTable(
                  an::AnalyzeSweep(an::test_trials::Grid(2), by_attention)),
              Not(HasSubstr("theory fit")));
  EXPECT_THAT(FormatAnalysisTable(an::AnalyzeSweep(an::test_trials::Grid(2),
                                                   an::AggregateOptions{})),
              HasSubstr("theory fit"));
}

// Issue 31 item 5: pruned trials are named in the analysis, and decisions
// name the parameters that tell the trials apart.
smoe::v1::GetSweepResponse AshaResponse() {
  smoe::v1::GetSweepResponse r;
  auto* g = r.mutable_sweep()->mutable_spec()->add_grid();
  g->set_name("top_k");
  auto* m = r.mutable_sweep()->mutable_spec()->add_grid();
  m->set_name("M");
  int n = 0;
  for (int k : {1, 2, 4}) {
    for (int seed : {0, 1}) {
      auto* t = r.add_trials();
      t->set_trial_id(absl::StrCat("s/", std::string(15, 'a'), n++));
      t->set_params_json(absl::StrCat(R"({"M":2,"top_k":)", k, "}"));
      t->set_seed(seed);
      t->set_state(k == 1                  ? smoe::v1::TRIAL_STATE_SUCCEEDED
                   : (k == 2 && seed == 0) ? smoe::v1::TRIAL_STATE_SUCCEEDED
                                           : smoe::v1::TRIAL_STATE_PRUNED);
    }
  }
  return r;
}

TEST(AnalyzeFormatTest, PrunedTrialsAreNamedInTheNote) {
  const smoe::v1::GetSweepResponse r = AshaResponse();
  const PrunedSummary p = SummarizePruned(r, "top_k");
  EXPECT_EQ(p.trials, 3);
  EXPECT_THAT(p.all_pruned, ::testing::ElementsAre("4"));
  const std::string note = FormatPrunedNote(p, "top_k");
  EXPECT_THAT(note, HasSubstr("note: 3 trial(s) were pruned by the search"));
  EXPECT_THAT(note, HasSubstr("best top_k is the best among the trials"));
  EXPECT_THAT(note, HasSubstr("every trial was pruned at top_k = 4"));
  EXPECT_EQ(
      FormatPrunedNote(SummarizePruned(smoe::v1::GetSweepResponse(), "top_k"),
                       "top_k"),
      "");
}

TEST(SearchShowTest, DecisionsNameTheParametersThatVary) {
  const smoe::v1::GetSweepResponse r = AshaResponse();
  const TrialLabels labels = LabelTrials(r);
  // M is the same everywhere: left out; two seeds: named.
  EXPECT_EQ(labels.at(r.trials(3).trial_id()), "top_k=2 seed 1");
  smoe::v1::Decision d;
  d.set_seq(7);
  d.set_trial_id(r.trials(3).trial_id());
  d.set_action("prune");
  d.set_final(true);
  d.set_reason("rung 0 at step 10: 0.3 < cutoff 0.5");
  EXPECT_EQ(FormatDecision(d, labels),
            absl::StrCat("#7 top_k=2 seed 1 (", std::string(15, 'a'),
                         "3) prune (final): rung 0 at step 10: 0.3 < cutoff "
                         "0.5"));
  // Unknown trial: its id; a group decision: its group.
  d.set_trial_id("s/unknown");
  EXPECT_THAT(FormatDecision(d, labels), HasSubstr("#7 s/unknown prune"));
  d.set_trial_id("");
  d.set_group("M=2");
  EXPECT_THAT(FormatDecision(d, labels), HasSubstr("#7 group M=2 prune"));
}

}  // namespace
}  // namespace smoe::cli
