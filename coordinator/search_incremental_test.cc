// Copyright 2026 SMoE Lab authors.
//
// Incremental search planning (issue 35 item 2; SchedulerOptions::
// incremental_search): random replays of adaptive sweeps through the real
// Scheduler with reports, errors, lost leases, completions and restarts.
// The plan from every trial is the oracle twice over: every incremental plan
// is checked against it as it is taken (verify_search_plans: a difference
// fails the transition with Internal), and the whole replay's decision log
// and final trial states equal those of the same replay planned from every
// trial each time. FakeClock, InMemoryStore, no sleeps, no timing.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/rng.h"
#include "coordinator/scheduler.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "store/in_memory_store.h"

namespace smoe::coordinator {
namespace {

struct Outcome {
  std::vector<std::string> decisions;  // action trial rung final reason
  std::map<std::string, store::TrialState> states;
  int reports = 0;
  int prunes = 0;
};

// Replays `search` over M {1,2,3} x top_k {1,2,4,8} x 3 seeds (36 trials,
// 80 steps, an evaluation every 10) with `slots` slots; every random choice
// comes from `seed`, so two runs that the scheduler answers alike make the
// same calls.
Outcome Replay(const std::string& search, uint64_t seed, bool incremental,
               int slots) {
  Outcome out;
  store::InMemoryStore store;
  FakeClock clock;
  SchedulerOptions opts;
  opts.lease_timeout = absl::Seconds(30);
  opts.incremental_search = incremental;
  opts.verify_search_plans = incremental;
  auto created = Scheduler::Create(&store, &clock, opts);
  EXPECT_TRUE(created.ok()) << created.status();
  if (!created.ok()) return out;
  std::unique_ptr<Scheduler> sched = std::move(*created);
  const std::string yaml = absl::StrCat(
      "name: a\nkind: sraven\ngrid:\n  M: [1, 2, 3]\n  top_k: [1, 2, 4, 8]\n"
      "fixed: {steps: 80, device: cpu}\nseeds: [0, 1, 2]\nretries: 3\n"
      "search: ",
      search, "\n");
  auto sub = sched->SubmitSweep(yaml, false);
  EXPECT_TRUE(sub.ok()) << sub.status();
  if (!sub.ok()) return out;
  WorkerInfo info;
  info.hostname = "w";
  info.slots = slots;
  std::string worker = sched->Register(info)->worker_id;
  Rng rng = Rng::ForStream(seed, {0x7265706c6179ULL});
  struct Run {
    int attempt = 0;
    int64_t step = 0;
    double level = 0;
  };
  std::map<std::string, Run> running;
  std::map<std::string, int64_t> progress;  // checkpointed step per trial
  for (int tick = 0; tick < 400; ++tick) {
    std::vector<RunningReport> hb;
    for (const auto& [id, r] : running) hb.push_back({id, r.attempt});
    auto reply = sched->Heartbeat(worker, hb, false);
    if (!reply.ok()) {
      // Lost: the worker re-registers (its leases were expired).
      worker = sched->Register(info)->worker_id;
      running.clear();
      continue;
    }
    for (const auto& [id, attempt] : reply->cancel) running.erase(id);
    const int free = slots - static_cast<int>(running.size());
    if (free > 0) {
      auto grants = sched->Lease(worker, free, 0);
      EXPECT_TRUE(grants.ok()) << grants.status();
      if (!grants.ok()) break;
      for (const LeaseGrant& g : *grants) {
        const nlohmann::json p = nlohmann::json::parse(g.params_json);
        const double m = p.at("M").get<double>();
        const double k = p.at("top_k").get<double>();
        // Best k grows with M; seeds add noise.
        const double level =
            0.9 - 0.02 * (k - 2 * m) * (k - 2 * m) / 8 + 0.01 * g.seed;
        running[g.trial_id] = {g.attempt, progress[g.trial_id], level};
      }
    }
    if (running.empty()) break;
    clock.Advance(absl::Seconds(1));
    std::vector<std::string> ids;
    for (const auto& [id, r] : running) ids.push_back(id);
    for (const std::string& id : ids) {
      auto it = running.find(id);
      if (it == running.end()) continue;
      Run& r = it->second;
      const uint64_t event = rng.UniformInt(100);
      if (event < 3) {  // a trainer error (retried, or failed for good)
        absl::Status s =
            sched->Fail(worker, id, r.attempt, FailReason::kError, 1, "boom");
        EXPECT_FALSE(absl::IsInternal(s)) << s;
        running.erase(it);
        continue;
      }
      if (event < 5) continue;  // slow this tick
      r.step += 10;
      store::MetricRecord m;
      m.name = "eval/ood_acc";
      m.step = r.step;
      m.value = r.level * (1 - 0.5 / (1 + r.step / 10.0)) +
                0.005 * rng.UniformDouble();
      m.attempt = r.attempt;
      absl::Status s = sched->ReportMetrics(worker, id, r.attempt, {m});
      EXPECT_FALSE(absl::IsInternal(s)) << s;
      if (!s.ok()) {  // pruned by an earlier report of this tick
        running.erase(id);
        ++out.prunes;
        continue;
      }
      ++out.reports;
      progress[id] = r.step;
      if (r.step >= 80) {
        s = sched->Complete(worker, id, r.attempt, {{"ood_acc", m.value}}, 1);
        EXPECT_FALSE(absl::IsInternal(s)) << s;
        running.erase(id);
      }
    }
    if (rng.UniformInt(40) == 0) {
      // The worker goes silent past its lease: its trials are re-queued.
      clock.Advance(absl::Seconds(40));
      EXPECT_TRUE(sched->ExpireLeases().ok());
    }
    if (rng.UniformInt(60) == 0) {
      // A coordinator restart: the plan from every trial, then incremental.
      running.clear();
      sched.reset();
      auto again = Scheduler::Create(&store, &clock, opts);
      EXPECT_TRUE(again.ok()) << again.status();
      if (!again.ok()) return out;
      sched = std::move(*again);
      worker = sched->Register(info)->worker_id;
    }
  }
  auto decisions = store.ListDecisions("a", 0, 0);
  EXPECT_TRUE(decisions.ok());
  for (const store::DecisionRecord& d : *decisions) {
    out.decisions.push_back(absl::StrCat(d.action, " ", d.trial_id, " ", d.rung,
                                         " ", d.final, " ", d.reason));
  }
  auto trials = store.ListTrials("a");
  EXPECT_TRUE(trials.ok());
  if (trials.ok()) {
    for (const store::TrialRecord& t : *trials) {
      out.states[t.trial_id] = t.state;
    }
  }
  return out;
}

class SearchIncrementalTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SearchIncrementalTest, EveryReplayAgreesWithThePlanFromEveryTrial) {
  int decided = 0;
  // Budgeted sweeps: planned incrementally until the budget is spent, then
  // from every trial; the replays cross that point.
  const bool budgeted =
      GetParam().find("budget_gpu_hours") != std::string::npos;
  int budget_decisions = 0, other_decisions = 0;
  std::map<std::string, int> actions;  // decisions by action, every seed
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    const int slots = 2 + static_cast<int>(seed % 3) * 5;
    const Outcome inc = Replay(GetParam(), seed, true, slots);
    const Outcome full = Replay(GetParam(), seed, false, slots);
    EXPECT_EQ(inc.decisions, full.decisions);
    EXPECT_EQ(inc.states, full.states);
    EXPECT_EQ(inc.reports, full.reports);
    EXPECT_GT(inc.reports, 0);
    decided += static_cast<int>(inc.decisions.size());
    for (const std::string& d : inc.decisions) {
      ++actions[d.substr(0, d.find(' '))];
    }
    for (const std::string& d : inc.decisions) {
      if (d.find("budget_gpu_hours") != std::string::npos) {
        ++budget_decisions;
      } else {
        ++other_decisions;
      }
    }
  }
  EXPECT_GT(decided, 0);
  if (budgeted) {
    EXPECT_GT(budget_decisions, 0);
    EXPECT_GT(other_decisions, 0);
  }
  if (GetParam().find("refine") != std::string::npos) {
    // The replays reach refine's proposals and settled groups (and, with
    // early stopping, prunes), so the incremental refine plan is compared
    // where it matters.
    EXPECT_GT(actions["add"], 0);
    EXPECT_GT(actions["resolved"] + actions["unresolved"] + actions["budget"],
              0);
    if (GetParam().find("early_stop") != std::string::npos) {
      EXPECT_GT(actions["prune"], 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Policies, SearchIncrementalTest,
    ::testing::Values(
        "{strategy: asha, metric: ood_acc, min_steps: 10, reduction: 2, "
        "group_by: [M]}",
        "{strategy: asha, metric: ood_acc, min_steps: 10, reduction: 3, "
        "smooth_evals: 2, group_by: [M]}",
        "{strategy: asha, metric: ood_acc, min_steps: 10, reduction: 2, "
        "aggregate_seeds: true, group_by: [M]}",
        "{strategy: asha, metric: ood_acc, min_steps: 10, reduction: 2, "
        "keep_neighbors: top_k, group_by: [M]}",
        "{strategy: asha, metric: ood_acc, min_steps: 20, reduction: 2}",
        "{strategy: median, metric: ood_acc, min_steps: 20, group_by: [M]}",
        "{strategy: median, metric: ood_acc, mode: min, min_steps: 0}",
        "{strategy: median, metric: ood_acc, min_steps: 10, "
        "group_by: [top_k]}",
        "{strategy: asha, metric: ood_acc, min_steps: 10, reduction: 2, "
        "group_by: [M], budget_gpu_hours: 0.02}",
        "{strategy: median, metric: ood_acc, min_steps: 20, group_by: [M], "
        "budget_gpu_hours: 0.02}",
        // Refine: a group re-decided when its points change, proposals
        // granted over every group's kept decision (budget, add_seeds,
        // tolerance, early_stop asha, a GPU-hour budget spent mid-replay).
        "{strategy: refine, metric: ood_acc, axis: top_k, bounds: [1, 8], "
        "group_by: [M]}",
        "{strategy: refine, metric: ood_acc, axis: top_k, bounds: [1, 8], "
        "group_by: [M], add_seeds: 2, budget: 60}",
        "{strategy: refine, metric: ood_acc, mode: min, axis: top_k, "
        "bounds: [1, 8], add_seeds: 1}",
        "{strategy: refine, metric: ood_acc, axis: top_k, bounds: [1, 8], "
        "group_by: [M], add_seeds: 1, tolerance: 0.01}",
        "{strategy: refine, metric: ood_acc, axis: top_k, bounds: [1, 8], "
        "group_by: [M], add_seeds: 1, early_stop: asha, min_steps: 10, "
        "reduction: 2}",
        "{strategy: refine, metric: ood_acc, axis: top_k, bounds: [1, 8], "
        "group_by: [M], budget: 50, early_stop: asha, min_steps: 20, "
        "reduction: 3, smooth_evals: 2}",
        "{strategy: refine, metric: ood_acc, axis: top_k, bounds: [1, 8], "
        "group_by: [M], add_seeds: 1, budget_gpu_hours: 0.1}",
        "{strategy: refine, metric: ood_acc, axis: top_k, bounds: [1, 8], "
        "group_by: [M], early_stop: asha, min_steps: 10, reduction: 2, "
        "budget_gpu_hours: 0.02}"));

}  // namespace
}  // namespace smoe::coordinator
