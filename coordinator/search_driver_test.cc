// Copyright 2026 SMoE Lab authors.
#include "coordinator/search_driver.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::coordinator {
namespace {

using store::TrialRecord;
using store::TrialState;

SweepSpec AshaSpec() {
  auto spec = ParseSweepYaml(
      "name: a\nkind: sraven\ngrid:\n  M: [1, 2]\n  top_k: [1, 2, 4, 8]\n"
      "fixed: {steps: 40, device: cpu}\n"
      "search: {strategy: asha, metric: ood_acc, min_steps: 10, "
      "reduction: 2, group_by: [M]}\n");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

std::vector<TrialRecord> Trials(const SweepSpec& spec, TrialState state) {
  std::vector<TrialRecord> out;
  for (const ExpandedTrial& e : ExpandGrid(spec)) {
    TrialRecord t;
    t.trial_id = e.trial_id;
    t.sweep_id = spec.name;
    t.params_json = e.params.dump();
    t.seed = e.seed;
    t.state = state;
    out.push_back(t);
  }
  return out;
}

std::string Key(const SearchPlan& p) {
  std::string out;
  for (const TrialChange& c : p.changes) {
    absl::StrAppend(&out, c.trial_id, "->", store::TrialStateName(c.next), ";");
  }
  for (const store::DecisionRecord& d : p.decisions) {
    absl::StrAppend(&out, d.trial_id, ":", d.action, ":", d.rung, ":", d.final,
                    ":", d.reason, ";");
  }
  return out;
}

TEST(SearchDriverTest, GridSweepsPlanNothing) {
  auto spec = ParseSweepYaml(
      "name: g\nkind: sraven\ngrid:\n  top_k: [1, 2]\nfixed: {steps: 10}\n");
  ASSERT_TRUE(spec.ok());
  SearchInputs in;
  in.spec = &*spec;
  in.trials = Trials(*spec, TrialState::kRunning);
  EXPECT_FALSE(IsAdaptive(*spec));
  EXPECT_TRUE(PlanSearch(in).empty());
}

TEST(SearchDriverTest, MetricNamesMatchWithOrWithoutEvalPrefix) {
  EXPECT_TRUE(IsSearchMetric("ood_acc", "ood_acc"));
  EXPECT_TRUE(IsSearchMetric("ood_acc", "eval/ood_acc"));
  EXPECT_FALSE(IsSearchMetric("ood_acc", "eval/test_acc"));
  EXPECT_FALSE(IsSearchMetric("", "ood_acc"));
}

TEST(SearchDriverTest, SameRecordsInAnyOrderGiveTheSamePlan) {
  const SweepSpec spec = AshaSpec();
  SearchInputs in;
  in.spec = &spec;
  in.trials = Trials(spec, TrialState::kRunning);
  // Every trial reports at steps 1 and 10 (rung 0), some at 20 (rung 1).
  int i = 0;
  for (const TrialRecord& t : in.trials) {
    const double v = 0.1 * static_cast<double>((i * 7) % 8);
    in.reports.push_back({t.trial_id, 1, 1, v / 2});
    in.reports.push_back({t.trial_id, 1, 10, v});
    if (i % 3 == 0) in.reports.push_back({t.trial_id, 1, 20, v + 0.05});
    ++i;
  }
  const SearchPlan plan = PlanSearch(in);
  EXPECT_FALSE(plan.changes.empty());
  EXPECT_EQ(plan.decisions.size() >= plan.changes.size(), true);
  std::mt19937 rng(7);
  for (int round = 0; round < 5; ++round) {
    SearchInputs shuffled = in;
    std::shuffle(shuffled.trials.begin(), shuffled.trials.end(), rng);
    std::shuffle(shuffled.reports.begin(), shuffled.reports.end(), rng);
    EXPECT_EQ(Key(PlanSearch(shuffled)), Key(plan));
  }
}

TEST(SearchDriverTest, AppliedDecisionsAreNotPlannedAgain) {
  const SweepSpec spec = AshaSpec();
  SearchInputs in;
  in.spec = &spec;
  in.trials = Trials(spec, TrialState::kRunning);
  int i = 0;
  for (const TrialRecord& t : in.trials) {
    in.reports.push_back({t.trial_id, 1, 10, 0.1 * (i++ % 4)});
  }
  const SearchPlan first = PlanSearch(in);
  ASSERT_FALSE(first.changes.empty());
  // Apply it as the scheduler does: state changes and the log.
  for (const TrialChange& c : first.changes) {
    for (TrialRecord& t : in.trials) {
      if (t.trial_id == c.trial_id) t.state = c.next;
    }
  }
  for (const store::DecisionRecord& d : first.decisions) {
    in.last[d.trial_id] = {d.action, d.rung, d.final};
  }
  EXPECT_TRUE(PlanSearch(in).empty()) << Key(PlanSearch(in));
}

TEST(SearchDriverTest, FailedTrialsDoNotHoldRungsOpen) {
  const SweepSpec spec = AshaSpec();
  SearchInputs in;
  in.spec = &spec;
  in.trials = Trials(spec, TrialState::kRunning);
  // In group M=1, one trial failed for good; the other three reported.
  std::vector<std::string> m1;
  for (TrialRecord& t : in.trials) {
    if (nlohmann::json::parse(t.params_json).at("M") == 1) {
      m1.push_back(t.trial_id);
    }
  }
  ASSERT_EQ(m1.size(), 4u);
  for (TrialRecord& t : in.trials) {
    if (t.trial_id == m1[0]) t.state = TrialState::kFailed;
  }
  in.reports.push_back({m1[1], 1, 10, 0.9});
  in.reports.push_back({m1[2], 1, 10, 0.5});
  in.reports.push_back({m1[3], 1, 10, 0.1});
  const SearchPlan plan = PlanSearch(in);
  int final_prunes = 0;
  for (const store::DecisionRecord& d : plan.decisions) {
    EXPECT_NE(d.trial_id, m1[0]);
    if (d.action == "prune" && d.final) ++final_prunes;
  }
  EXPECT_EQ(final_prunes, 2);  // keep 1 of 3: the rung is complete
}

// The median rule's prunes are final: a pruned trial whose value now beats
// the median (slower, worse trials arrived) is not resumed; before, it went
// pruned -> pending -> pruned as the median moved.
TEST(SearchDriverTest, MedianPrunesAreNotUndoneWhenTheMedianMoves) {
  auto spec = ParseSweepYaml(
      "name: m\nkind: sraven\ngrid:\n  top_k: [1, 2, 3, 4, 5, 6, 7, 8]\n"
      "fixed: {steps: 100, device: cpu}\n"
      "search: {strategy: median, metric: ood_acc, min_steps: 10}\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  SearchInputs in;
  in.spec = &*spec;
  in.trials = Trials(*spec, TrialState::kRunning);
  ASSERT_EQ(in.trials.size(), 8u);
  std::vector<double> level = {0.9, 0.9, 0.9, 0.3};
  for (size_t i = 0; i < 4; ++i) {
    in.reports.push_back({in.trials[i].trial_id, 1, 10, level[i]});
  }
  for (size_t i = 4; i < 8; ++i) in.trials[i].state = TrialState::kPending;
  SearchPlan plan = PlanSearch(in);
  ASSERT_EQ(plan.changes.size(), 1u);
  EXPECT_EQ(plan.changes[0].trial_id, in.trials[3].trial_id);
  ASSERT_EQ(plan.decisions.size(), 1u);
  EXPECT_TRUE(plan.decisions[0].final);
  in.trials[3].state = TrialState::kPruned;
  in.last[in.trials[3].trial_id] = {"prune", -1, true};
  // Four worse trials report: 0.3 now beats the median of the others.
  for (size_t i = 4; i < 8; ++i) {
    in.trials[i].state = TrialState::kRunning;
    in.reports.push_back({in.trials[i].trial_id, 1, 10, 0.05});
  }
  plan = PlanSearch(in);
  for (const TrialChange& c : plan.changes) {
    EXPECT_NE(c.trial_id, in.trials[3].trial_id) << "the pruned trial flipped";
  }
  for (const store::DecisionRecord& d : plan.decisions) {
    EXPECT_NE(d.trial_id, in.trials[3].trial_id) << d.action << d.reason;
  }
}

}  // namespace
}  // namespace smoe::coordinator
