// Copyright 2026 SMoE Lab authors.
#include "coordinator/search_driver.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/search/asha.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::coordinator {
namespace {

using store::TrialRecord;
using store::TrialState;
using sweeps::ExpandedTrial;
using sweeps::ExpandGrid;
using sweeps::ParseSweepYaml;
using sweeps::SweepSpec;

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

// aggregate_seeds + keep_neighbors through the driver: top_k 1..6 x seeds
// 0, 1 in one group; the seed means rank k = 4 first and k = 1 second (eta
// 3: keep 2), so k = 3 and 5 go on as 4's neighbours and both seeds of k = 2
// and 6 are pruned for good. Any order of the records gives the same plan.
TEST(SearchDriverTest, AggregatedSeedsAndNeighboursPlanPerConfiguration) {
  auto spec = ParseSweepYaml(
      "name: a\nkind: sraven\ngrid:\n  top_k: [1, 2, 3, 4, 5, 6]\n"
      "fixed: {steps: 90, num_experts: 8, device: cpu}\nseeds: [0, 1]\n"
      "search: {strategy: asha, metric: ood_acc, min_steps: 10, "
      "aggregate_seeds: true, keep_neighbors: top_k}\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  SearchInputs in;
  in.spec = &*spec;
  in.trials = Trials(*spec, TrialState::kRunning);
  ASSERT_EQ(in.trials.size(), 12u);
  const std::map<int, double> mean = {{1, 0.8}, {2, 0.5}, {3, 0.6},
                                      {4, 0.9}, {5, 0.4}, {6, 0.7}};
  std::map<std::string, int> k_of;
  for (const TrialRecord& t : in.trials) {
    const int k = nlohmann::json::parse(t.params_json).at("top_k");
    k_of[t.trial_id] = k;
    // Seed 0 is 0.3 above the mean and seed 1 0.3 below: per trial, k = 5's
    // seed 0 (0.7) would beat k = 4's seed 1 (0.6).
    in.reports.push_back(
        {t.trial_id, 1, 10, mean.at(k) + (t.seed == 0 ? 0.3 : -0.3)});
  }
  const SearchPlan plan = PlanSearch(in);
  std::map<int, int> pruned;  // k -> seeds pruned
  for (const TrialChange& c : plan.changes) {
    EXPECT_EQ(c.next, TrialState::kPruned);
    ++pruned[k_of.at(c.trial_id)];
  }
  EXPECT_EQ(pruned, (std::map<int, int>{{2, 2}, {6, 2}}));
  for (const store::DecisionRecord& d : plan.decisions) {
    if (d.action != "prune") continue;
    EXPECT_TRUE(d.final) << d.reason;
    EXPECT_THAT(d.reason, ::testing::HasSubstr("(mean of 2 seeds)"));
  }
  std::mt19937 rng(3);
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

// search.smooth_evals: a rung's value is the mean of the trial's last N
// evaluations up to the rung, exactly as analysis/search DecideAsha with
// AshaConfig::smooth (the replay's pure policy), in any report order.
TEST(SearchDriverTest, SmoothEvalsRanksRungsByTheMeanOfTheLastEvaluations) {
  const std::string head =
      "name: s\nkind: sraven\ngrid:\n  top_k: [1, 2, 3]\n"
      "fixed: {steps: 40, device: cpu}\n"
      "search: {strategy: asha, metric: ood_acc, min_steps: 10, "
      "reduction: 3";
  auto plain = ParseSweepYaml(head + "}\n");
  auto smooth = ParseSweepYaml(head + ", smooth_evals: 3}\n");
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(smooth.ok()) << smooth.status();
  EXPECT_EQ(smooth->search.smooth_evals, 3);
  SearchInputs in;
  in.spec = &*plain;
  in.trials = Trials(*plain, TrialState::kRunning);
  ASSERT_EQ(in.trials.size(), 3u);
  // Trial 0 spikes at the rung (0.5, 0.5, 0.9: mean 0.633); trial 1 is
  // steady at 0.8; trial 2 is poor. One of three is kept (eta 3).
  const std::vector<std::vector<double>> curves = {
      {0.5, 0.5, 0.9}, {0.8, 0.8, 0.8}, {0.1, 0.1, 0.1}};
  for (size_t i = 0; i < 3; ++i) {
    for (size_t j = 0; j < 3; ++j) {
      in.reports.push_back({in.trials[i].trial_id, 1,
                            static_cast<int64_t>(4 + 3 * j), curves[i][j]});
    }
  }
  auto action_of = [](const SearchPlan& p, const std::string& id) {
    std::string out;
    for (const store::DecisionRecord& d : p.decisions) {
      if (d.trial_id == id) out = absl::StrCat(d.action, d.final ? "!" : "");
    }
    return out;
  };
  const SearchPlan single = PlanSearch(in);
  EXPECT_EQ(action_of(single, in.trials[0].trial_id), "promote");
  EXPECT_EQ(action_of(single, in.trials[1].trial_id), "prune!");
  in.spec = &*smooth;
  const SearchPlan averaged = PlanSearch(in);
  EXPECT_EQ(action_of(averaged, in.trials[0].trial_id), "prune!");
  EXPECT_EQ(action_of(averaged, in.trials[1].trial_id), "promote");
  for (const store::DecisionRecord& d : averaged.decisions) {
    if (d.trial_id == in.trials[1].trial_id) {
      EXPECT_DOUBLE_EQ(d.value, 0.8);
      EXPECT_EQ(d.step, 10);  // the rung's report; the value is the mean
    }
    if (d.trial_id == in.trials[0].trial_id) {
      EXPECT_NEAR(d.value, (0.5 + 0.5 + 0.9) / 3, 1e-12);
      EXPECT_NEAR(d.cutoff, 0.8, 1e-12);
    }
  }
  // The same decisions as the pure policy with smooth = 3.
  analysis::search::AshaConfig c;
  c.min_steps = 10;
  c.reduction = 3;
  c.max_steps = 40;
  c.smooth = 3;
  std::vector<analysis::search::Trial> pure;
  for (const TrialRecord& t : in.trials) pure.push_back({t.trial_id, ""});
  for (const analysis::search::Decision& d :
       analysis::search::DecideAsha(c, pure, in.reports)) {
    for (const store::DecisionRecord& r : averaged.decisions) {
      if (r.trial_id != d.trial_id) continue;
      EXPECT_EQ(r.action, d.action == analysis::search::Action::kPromote
                              ? "promote"
                              : "prune");
      EXPECT_EQ(r.reason, d.reason);
      EXPECT_EQ(r.rung, d.rung);
    }
  }
  // Deterministic: any order of the same records gives the same plan.
  std::mt19937 rng(11);
  for (int round = 0; round < 5; ++round) {
    SearchInputs shuffled = in;
    std::shuffle(shuffled.trials.begin(), shuffled.trials.end(), rng);
    std::shuffle(shuffled.reports.begin(), shuffled.reports.end(), rng);
    EXPECT_EQ(Key(PlanSearch(shuffled)), Key(averaged));
  }
}

// search.budget_gpu_hours: once the sweep's device-hours reach it, pending
// trials are pruned for good, a paused trial is not promoted, and each
// decision says why (slot-hours on CPU). Below it nothing changes.
TEST(SearchDriverTest, GpuHourBudgetStopsStartingAndPromoting) {
  auto spec = ParseSweepYaml(
      "name: b\nkind: sraven\ngrid:\n  top_k: [1, 2, 3, 4]\n"
      "fixed: {steps: 40, device: cpu}\n"
      "search: {strategy: asha, metric: ood_acc, min_steps: 10, "
      "reduction: 2, budget_gpu_hours: 1}\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_DOUBLE_EQ(spec->search.budget_gpu_hours, 1.0);
  SearchInputs in;
  in.spec = &*spec;
  in.trials = Trials(*spec, TrialState::kRunning);
  ASSERT_EQ(in.trials.size(), 4u);
  for (size_t i : {0, 1}) in.trials[i].attempt = 1;
  for (size_t i : {2, 3}) in.trials[i].state = TrialState::kPending;
  in.reports.push_back({in.trials[0].trial_id, 1, 10, 0.9});
  in.reports.push_back({in.trials[1].trial_id, 1, 10, 0.5});
  in.device_hours_used = 0.5;
  EXPECT_FALSE(BudgetSpent(in));
  SearchPlan plan = PlanSearch(in);
  ASSERT_EQ(plan.changes.size(), 1u);  // trial 1 paused: rung 0 incomplete
  EXPECT_EQ(plan.changes[0].trial_id, in.trials[1].trial_id);
  // Spent: the never-started trials are pruned for good, with the reason.
  in.device_hours_used = 1.25;
  EXPECT_TRUE(BudgetSpent(in));
  plan = PlanSearch(in);
  std::set<std::string> pruned;
  for (const TrialChange& c : plan.changes) {
    EXPECT_EQ(c.next, TrialState::kPruned);
    pruned.insert(c.trial_id);
  }
  EXPECT_EQ(pruned,
            (std::set<std::string>{in.trials[1].trial_id, in.trials[2].trial_id,
                                   in.trials[3].trial_id}));
  for (const store::DecisionRecord& d : plan.decisions) {
    if (d.trial_id == in.trials[2].trial_id) {
      EXPECT_EQ(d.action, "prune");
      EXPECT_TRUE(d.final);
      EXPECT_EQ(d.reason,
                "budget_gpu_hours 1 spent: 1.25 slot-hours used (CPU sweep: "
                "slot-hours = attempts' wall time x 1 slot, counted against "
                "the GPU-hour budget): not started");
    }
  }
  // A paused trial the rung would now promote stays pruned (final, once).
  in.device_hours_used = 0.5;
  in.trials[1].state = TrialState::kPruned;
  in.last[in.trials[1].trial_id] = {"prune", 0, false};
  for (size_t i : {2, 3}) {
    in.trials[i].state = TrialState::kRunning;
    in.trials[i].attempt = 1;
    in.reports.push_back({in.trials[i].trial_id, 1, 10, 0.1 * (i - 1)});
  }
  auto decision_for = [&](const SearchPlan& p, const std::string& id) {
    const store::DecisionRecord* out = nullptr;
    for (const store::DecisionRecord& d : p.decisions) {
      if (d.trial_id == id) out = &d;
    }
    return out;
  };
  plan = PlanSearch(in);  // within budget: promoted (keep 2 of 4)
  ASSERT_NE(decision_for(plan, in.trials[1].trial_id), nullptr);
  EXPECT_EQ(decision_for(plan, in.trials[1].trial_id)->action, "promote");
  in.device_hours_used = 3;
  plan = PlanSearch(in);
  const store::DecisionRecord* d = decision_for(plan, in.trials[1].trial_id);
  ASSERT_NE(d, nullptr) << Key(plan);
  EXPECT_EQ(d->action, "prune");
  EXPECT_TRUE(d->final);
  EXPECT_THAT(d->reason, ::testing::StartsWith(
                             "budget_gpu_hours 1 spent: 3 slot-hours used"));
  EXPECT_THAT(d->reason, ::testing::HasSubstr(": not promoted (rung 0"));
  for (const TrialChange& c : plan.changes) {
    EXPECT_NE(c.trial_id, in.trials[1].trial_id);
  }
  in.last[in.trials[1].trial_id] = {"prune", 0, true};
  EXPECT_EQ(decision_for(PlanSearch(in), in.trials[1].trial_id), nullptr);
}

// Refine with budget_gpu_hours: no point is added once the hours are spent;
// the group settles as `budget` with the hours in its reason (GPU sweep).
TEST(SearchDriverTest, GpuHourBudgetStopsRefineAddingPoints) {
  auto spec = ParseSweepYaml(
      "name: r\nkind: sraven\ngrid:\n  top_k: [1, 2]\n"
      "fixed: {steps: 40, device: cpu, num_experts: 8}\nseeds: [0, 1]\n"
      "resources: {gpus_per_trial: 2}\n"
      "search: {strategy: refine, metric: ood_acc, axis: top_k, "
      "bounds: [1, 4], budget_gpu_hours: 2.5}\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  SearchInputs in;
  in.spec = &*spec;
  in.trials = Trials(*spec, TrialState::kSucceeded);
  for (const TrialRecord& t : in.trials) {
    const int64_t k = nlohmann::json::parse(t.params_json).at("top_k");
    in.finals[t.trial_id] = (k == 2 ? 0.8 : 0.5) + 0.01 * t.seed;
  }
  in.device_hours_used = 2;
  SearchPlan plan = PlanSearch(in);
  ASSERT_EQ(plan.add.size(), 2u);  // top_k 3, seeds 0 and 1
  EXPECT_EQ(plan.add[0].params.at("top_k"), 3);
  in.device_hours_used = 2.5;
  plan = PlanSearch(in);
  EXPECT_TRUE(plan.add.empty());
  ASSERT_EQ(plan.decisions.size(), 1u) << Key(plan);
  EXPECT_EQ(plan.decisions[0].action, "budget");
  EXPECT_THAT(plan.decisions[0].reason,
              ::testing::HasSubstr("budget_gpu_hours 2.5 spent: 2.5 GPU-hours "
                                   "used (attempts' wall time x 2 GPUs): "
                                   "x*=2 not resolved"));
}

}  // namespace
}  // namespace smoe::coordinator
