// Copyright 2026 SMoE Lab authors.
//
// Adaptive sweeps through the real Scheduler (docs/adaptive-sweeps.md):
// ASHA prunes and promotes from the reported metrics, a pruned trial is
// stopped through the heartbeat and resumes when promoted, errors are
// retried rather than pruned, refine adds points and resolves, and a
// restart (the same store, a fresh Scheduler) takes no decision twice.
// FakeClock, no sleeps; InMemoryStore and SqliteStore.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/stats.h"
#include "common/clock.h"
#include "coordinator/scheduler.h"
#include "coordinator/views/search_summary.h"
#include "coordinator/views/sweep_read_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "store/in_memory_store.h"
#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace smoe::coordinator {
namespace {

using store::AttemptOutcome;
using store::TrialState;
using ::testing::HasSubstr;

// 4 trials (top_k 1, 2, 4, 8), 40 steps, rungs at 10 and 20 (eta 2).
constexpr char kAsha[] =
    "name: a\nkind: sraven\ngrid:\n  top_k: [1, 2, 4, 8]\n"
    "fixed: {steps: 40, device: cpu}\nretries: 2\n"
    "search: {strategy: asha, metric: ood_acc, min_steps: 10, "
    "reduction: 2}\n";

class SchedulerSearchTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      auto s = store::SqliteStore::Open(dir_.File("store.db"));
      ASSERT_TRUE(s.ok()) << s.status();
      sqlite_ = std::move(*s);
      store_ = sqlite_.get();
    } else {
      store_ = &memory_;
    }
    Restart();
  }

  void Restart() {
    sched_.reset();
    SchedulerOptions opts;
    opts.lease_timeout = absl::Seconds(30);
    // Every incremental plan is checked against the plan from every trial.
    opts.verify_search_plans = true;
    auto s = Scheduler::Create(store_, &clock_, opts);
    ASSERT_TRUE(s.ok()) << s.status();
    sched_ = std::move(*s);
  }

  std::string AddWorker(int slots) {
    WorkerInfo w;
    w.hostname = "host";
    w.slots = slots;
    auto r = sched_->Register(w);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->worker_id : "";
  }

  // The trial id of the point with top_k = k.
  std::string TrialOf(int k) {
    const std::vector<store::TrialRecord> trials = *sched_->ListTrials("a");
    for (const store::TrialRecord& t : trials) {
      if (nlohmann::json::parse(t.params_json).at("top_k") == k) {
        return t.trial_id;
      }
    }
    ADD_FAILURE() << "no trial with top_k " << k;
    return "";
  }

  store::TrialRecord Trial(int k) { return *store_->GetTrial(TrialOf(k)); }

  absl::Status Report(const std::string& worker, int k, int attempt,
                      int64_t step, double value) {
    store::MetricRecord m;
    m.name = "eval/ood_acc";
    m.step = step;
    m.value = value;
    return sched_->ReportMetrics(worker, TrialOf(k), attempt, {m});
  }

  std::vector<store::DecisionRecord> Log(const std::string& sweep = "a") {
    return *store_->ListDecisions(sweep, 0, 0);
  }

  // "prune k=1 rung 0" lines of the decision log, for readable asserts.
  std::vector<std::string> LogLines() {
    std::map<std::string, int> k_of;
    for (int k : {1, 2, 4, 8}) k_of[TrialOf(k)] = k;
    std::vector<std::string> out;
    for (const store::DecisionRecord& d : Log()) {
      out.push_back(absl::StrCat(d.action, " k=", k_of[d.trial_id], " rung ",
                                 d.rung, d.final ? " final" : ""));
    }
    return out;
  }

  // The dashboard's search summary read from the read model's snapshot
  // (the HTTP route) is the one read from the scheduler's records (issue
  // 35), for every number of decisions shown. Device-hours count running
  // attempts until the real now: compared apart, within a second's worth
  // (or 1e-6 of the value: the fake clock's hours since its epoch are many).
  // `model`: one kept across changes (its snapshots refreshed, the
  // labeler of their trials reused); none: a new one.
  void ExpectSnapshotSummarySame(const std::string& sweep,
                                 SweepReadModel* model = nullptr) {
    std::unique_ptr<SweepReadModel> own;
    if (model == nullptr) {
      own = std::make_unique<SweepReadModel>(sched_.get(), store_);
      model = own.get();
    }
    auto got = model->Get(sweep);
    ASSERT_TRUE(got.ok()) << got.status();
    for (int limit : {0, 1, 3, 50, 200}) {
      auto old_path = views::ReadSearchJson(sched_.get(), store_, sweep, limit);
      auto new_path = views::ReadSearchJson(sched_.get(), store_, sweep, limit,
                                            got->second.get());
      ASSERT_TRUE(old_path.ok()) << old_path.status();
      ASSERT_TRUE(new_path.ok()) << new_path.status();
      nlohmann::json a = *old_path, b = *new_path;
      for (const char* f :
           {"device_hours_used", "device_hours_full_grid_estimate"}) {
        if (a[f].is_number() || b[f].is_number()) {
          ASSERT_TRUE(a[f].is_number() && b[f].is_number()) << f;
          const double x = a[f].get<double>();
          EXPECT_NEAR(x, b[f].get<double>(),
                      std::max(1.0 / 3600, 1e-6 * std::abs(x)))
              << f;
        }
        a.erase(f);
        b.erase(f);
      }
      EXPECT_EQ(a.dump(), b.dump()) << "limit " << limit;
    }
  }

  std::set<std::string> Cancelled(const std::string& worker,
                                  const std::vector<RunningReport>& running) {
    auto hb = sched_->Heartbeat(worker, running, false);
    EXPECT_TRUE(hb.ok()) << hb.status();
    std::set<std::string> out;
    for (const auto& [id, attempt] : hb->cancel) out.insert(id);
    return out;
  }

  store::testing::ScopedTempDir dir_;
  FakeClock clock_;
  store::InMemoryStore memory_;
  std::unique_ptr<store::SqliteStore> sqlite_;
  store::ExperimentStore* store_ = nullptr;
  std::unique_ptr<Scheduler> sched_;
};

TEST_P(SchedulerSearchTest, AshaPrunesPromotesResumesAndFinishes) {
  auto sub = sched_->SubmitSweep(kAsha, false);
  ASSERT_TRUE(sub.ok()) << sub.status();
  ASSERT_EQ(sub->new_trials, 4);
  const std::string w = AddWorker(4);
  auto leases = sched_->Lease(w, 4, 0);
  ASSERT_TRUE(leases.ok());
  ASSERT_EQ(leases->size(), 4u);
  std::vector<RunningReport> running;
  for (const LeaseGrant& g : *leases) running.push_back({g.trial_id, 1});

  // Rung 0 (step 10): k=1 first, alone: paused (not final).
  ASSERT_TRUE(Report(w, 1, 1, 10, 0.1).ok());
  EXPECT_EQ(Trial(1).state, TrialState::kPruned);
  // Other metrics (not the search metric) of running trials are stored as
  // before and decide nothing.
  store::MetricRecord loss;
  loss.name = "train/loss";
  loss.step = 10;
  loss.value = 1.0;
  ASSERT_TRUE(sched_->ReportMetrics(w, TrialOf(2), 1, {loss}).ok());
  ASSERT_TRUE(Report(w, 2, 1, 10, 0.4).ok());  // keep 1 of 2: k=2 passes
  ASSERT_TRUE(Report(w, 4, 1, 10, 0.3).ok());  // keep 1 of 3: k=4 paused
  EXPECT_EQ(Trial(4).state, TrialState::kPruned);
  // k=8 completes the rung: keep 2 of 4 -> k=4 is promoted back.
  ASSERT_TRUE(Report(w, 8, 1, 10, 0.2).ok());
  EXPECT_EQ(Trial(4).state, TrialState::kPending);
  EXPECT_EQ(Trial(8).state, TrialState::kPruned);
  EXPECT_EQ(Trial(2).state, TrialState::kRunning);
  // One batch per report; within one, trial-id order.
  std::vector<std::string> lines = LogLines();
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_THAT(std::vector<std::string>(lines.begin(), lines.begin() + 3),
              ::testing::ElementsAre("prune k=1 rung 0", "promote k=2 rung 0",
                                     "prune k=4 rung 0"));
  // k=1's pause became final: logged again, without a state change.
  EXPECT_THAT(std::vector<std::string>(lines.begin() + 3, lines.end()),
              ::testing::UnorderedElementsAre("promote k=4 rung 0",
                                              "prune k=8 rung 0 final",
                                              "prune k=1 rung 0 final"));
  for (const store::DecisionRecord& d : Log()) {
    if (d.trial_id != TrialOf(8)) continue;
    EXPECT_EQ(d.value, 0.2);
    EXPECT_EQ(d.cutoff, 0.3);
    EXPECT_THAT(d.reason, HasSubstr("rung 0"));
  }
  // Pruned attempts ended as `pruned`, with no error budget spent.
  for (int k : {1, 8}) {
    EXPECT_EQ(store_->ListAttempts(TrialOf(k))->at(0).outcome,
              AttemptOutcome::kPruned);
    EXPECT_EQ(Trial(k).error_count, 0);
    EXPECT_EQ(Trial(k).preempt_count, 0);
  }
  auto view = sched_->GetSweep("a");
  EXPECT_EQ(view->counts.pruned, 2);
  EXPECT_EQ(view->counts.pending, 1);
  ExpectSnapshotSummarySame("a");

  // The heartbeat stops the pruned (and the re-queued) attempts.
  EXPECT_EQ(Cancelled(w, running),
            (std::set<std::string>{TrialOf(1), TrialOf(4), TrialOf(8)}));
  // Their trainers exit; the worker's reports are stale and refused.
  EXPECT_EQ(
      sched_->Fail(w, TrialOf(1), 1, FailReason::kCancelled, 75, "").code(),
      absl::StatusCode::kFailedPrecondition);
  // k=4 is not leased to the worker while its old attempt still stops there.
  EXPECT_TRUE(sched_->Lease(w, 3, 0)->empty());
  EXPECT_TRUE(Cancelled(w, {{TrialOf(2), 1}}).empty());
  auto resumed = sched_->Lease(w, 3, 0);
  ASSERT_TRUE(resumed.ok());
  ASSERT_EQ(resumed->size(), 1u);
  EXPECT_EQ((*resumed)[0].trial_id, TrialOf(4));
  EXPECT_EQ((*resumed)[0].attempt, 2);

  // Rung 1 (step 20): k=2 first, paused until k=4 reports; then k=2 wins.
  ASSERT_TRUE(Report(w, 2, 1, 20, 0.5).ok());
  EXPECT_EQ(Trial(2).state, TrialState::kPruned);
  ASSERT_TRUE(Report(w, 4, 2, 20, 0.45).ok());
  EXPECT_EQ(Trial(2).state, TrialState::kPending);
  EXPECT_EQ(Trial(4).state, TrialState::kPruned);
  lines = LogLines();
  EXPECT_THAT(
      std::vector<std::string>(lines.end() - 3, lines.end()),
      ::testing::UnorderedElementsAre("prune k=2 rung 1", "promote k=2 rung 1",
                                      "prune k=4 rung 1 final"));
  EXPECT_EQ(lines[lines.size() - 3], "prune k=2 rung 1");
  EXPECT_TRUE(
      Cancelled(w, {{TrialOf(2), 1}, {TrialOf(4), 2}}).count(TrialOf(4)));
  EXPECT_TRUE(Cancelled(w, {}).empty());
  auto again = sched_->Lease(w, 4, 0);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ((*again)[0].trial_id, TrialOf(2));
  ASSERT_TRUE(Report(w, 2, 2, 40, 0.6).ok());
  ASSERT_TRUE(sched_->Complete(w, TrialOf(2), 2, {{"ood_acc", 0.6}}, 1).ok());

  view = sched_->GetSweep("a");
  EXPECT_EQ(view->record.state, store::SweepState::kCompleted);
  EXPECT_EQ(view->counts.succeeded, 1);
  EXPECT_EQ(view->counts.pruned, 3);
  auto usage = sched_->GetSearchUsage("a");
  ASSERT_TRUE(usage.ok());
  EXPECT_EQ(usage->full_grid_trial_steps, 4 * 40);
  EXPECT_EQ(usage->trial_steps_used, 40 + 20 + 10 + 10);

  // A restart recomputes every decision from the store and takes none again.
  const size_t decisions = Log().size();
  Restart();
  EXPECT_EQ(Log().size(), decisions);
  EXPECT_EQ(sched_->GetSweep("a")->counts.pruned, 3);
  EXPECT_EQ(sched_->GetSweep("a")->record.state, store::SweepState::kCompleted);
}

TEST_P(SchedulerSearchTest, RestartMidSweepTakesNoDecisionTwice) {
  ASSERT_TRUE(sched_->SubmitSweep(kAsha, false).ok());
  std::string w = AddWorker(4);
  ASSERT_EQ(sched_->Lease(w, 4, 0)->size(), 4u);
  ASSERT_TRUE(Report(w, 1, 1, 10, 0.1).ok());
  ASSERT_TRUE(Report(w, 2, 1, 10, 0.4).ok());
  const std::vector<std::string> before = LogLines();
  ASSERT_EQ(before.size(), 2u);
  Restart();  // as after kill -9: only what was committed is there
  EXPECT_EQ(LogLines(), before);
  EXPECT_EQ(Trial(1).state, TrialState::kPruned);
  EXPECT_EQ(Trial(2).state, TrialState::kRunning);
  // The worker keeps its leases across the restart; the sweep goes on.
  ASSERT_TRUE(Report(w, 4, 1, 10, 0.3).ok());
  ASSERT_TRUE(Report(w, 8, 1, 10, 0.2).ok());
  Restart();
  Restart();
  EXPECT_THAT(LogLines(),
              ::testing::UnorderedElementsAre(
                  "prune k=1 rung 0", "promote k=2 rung 0", "prune k=4 rung 0",
                  "promote k=4 rung 0", "prune k=8 rung 0 final",
                  "prune k=1 rung 0 final"));
}

TEST_P(SchedulerSearchTest, ErroredTrialsAreRetriedNotPruned) {
  ASSERT_TRUE(sched_->SubmitSweep(kAsha, false).ok());
  const std::string w = AddWorker(4);
  ASSERT_EQ(sched_->Lease(w, 4, 0)->size(), 4u);
  // k=1 errors before rung 0; the others report.
  ASSERT_TRUE(
      sched_->Fail(w, TrialOf(1), 1, FailReason::kError, 1, "boom").ok());
  ASSERT_TRUE(Report(w, 2, 1, 10, 0.4).ok());
  ASSERT_TRUE(Report(w, 4, 1, 10, 0.3).ok());
  ASSERT_TRUE(Report(w, 8, 1, 10, 0.2).ok());
  // k=1 is retried, and holds rung 0 open: nothing there is final.
  EXPECT_EQ(Trial(1).state, TrialState::kPending);
  EXPECT_EQ(Trial(1).error_count, 1);
  for (const store::DecisionRecord& d : Log()) {
    EXPECT_NE(d.trial_id, TrialOf(1));
    EXPECT_FALSE(d.final) << d.reason;
  }
  // Its retry reports a winning value: it passes, and keep = 2 of 4.
  auto retry = sched_->Lease(w, 4, 0);
  ASSERT_TRUE(retry.ok());
  std::string retried;
  for (const LeaseGrant& g : *retry) {
    if (g.trial_id == TrialOf(1)) retried = g.trial_id;
  }
  ASSERT_FALSE(retried.empty());
  ASSERT_TRUE(Report(w, 1, 2, 10, 0.9).ok());
  EXPECT_EQ(Trial(1).state, TrialState::kRunning);
  EXPECT_EQ(Trial(2).state, TrialState::kRunning);
  EXPECT_EQ(Trial(4).state, TrialState::kPruned);
  EXPECT_EQ(Trial(8).state, TrialState::kPruned);
  // Their pauses became final once k=1's retry completed the rung.
  std::map<std::string, store::DecisionRecord> last;
  for (const store::DecisionRecord& d : Log()) last[d.trial_id] = d;
  for (int k : {4, 8}) {
    EXPECT_EQ(last[TrialOf(k)].action, "prune");
    EXPECT_TRUE(last[TrialOf(k)].final);
  }
  EXPECT_EQ(last[TrialOf(1)].action, "promote");
}

TEST_P(SchedulerSearchTest, RefineAddsNeighboursAndResolves) {
  const std::string yaml =
      "name: r\nkind: sraven\ngrid:\n  top_k: [2, 4]\n"
      "fixed: {steps: 10, device: cpu}\nseeds: [0, 1]\n"
      "search: {strategy: refine, metric: ood_acc, axis: top_k, "
      "bounds: [1, 8]}\n";
  auto sub = sched_->SubmitSweep(yaml, false);
  ASSERT_TRUE(sub.ok()) << sub.status();
  ASSERT_EQ(sub->new_trials, 4);
  const std::string w = AddWorker(8);
  // A unimodal curve peaking at k = 4, seed 1 slightly above seed 0.
  auto value = [](int k, int64_t seed) {
    const std::map<int, double> v = {{2, 0.5}, {3, 0.6}, {4, 0.7}, {5, 0.62}};
    return v.at(k) + 0.01 * static_cast<double>(seed);
  };
  auto run_all = [&]() {
    auto leases = sched_->Lease(w, 8, 0);
    ASSERT_TRUE(leases.ok());
    for (const LeaseGrant& g : *leases) {
      const int k = nlohmann::json::parse(g.params_json).at("top_k");
      ASSERT_TRUE(sched_
                      ->Complete(w, g.trial_id, g.attempt,
                                 {{"ood_acc", value(k, g.seed)}}, 1)
                      .ok());
    }
  };
  run_all();
  // x* = 4: its neighbours 3 and 5 were added, with both seeds.
  std::multiset<int> ks;
  const std::vector<store::TrialRecord> trials = *sched_->ListTrials("r");
  for (const store::TrialRecord& t : trials) {
    ks.insert(nlohmann::json::parse(t.params_json).at("top_k").get<int>());
  }
  EXPECT_EQ(ks, (std::multiset<int>{2, 2, 3, 3, 4, 4, 5, 5}));
  auto log = Log("r");
  ASSERT_EQ(log.size(), 4u);
  for (const store::DecisionRecord& d : log) {
    EXPECT_EQ(d.action, "add");
    EXPECT_THAT(d.reason, HasSubstr("x*=4"));
  }
  EXPECT_EQ(sched_->GetSweep("r")->record.state, store::SweepState::kActive);
  run_all();
  log = Log("r");
  ASSERT_EQ(log.size(), 5u);
  EXPECT_EQ(log.back().action, "resolved");
  EXPECT_EQ(log.back().rung, 4);
  EXPECT_TRUE(log.back().final);
  EXPECT_EQ(sched_->GetSweep("r")->record.state, store::SweepState::kCompleted);
  EXPECT_EQ(sched_->GetSweep("r")->counts.succeeded, 8);
  auto usage = sched_->GetSearchUsage("r");
  ASSERT_TRUE(usage.ok());
  EXPECT_EQ(usage->full_grid_trial_steps, 8 * 2 * 10);  // k 1..8 x 2 seeds
  EXPECT_EQ(usage->trial_steps_used, 8 * 10);
  Restart();
  EXPECT_EQ(Log("r").size(), 5u);
}

// Refine + asha: refine decides which top_k exist, asha stops the losers of
// each (group, seed) early. Grid top_k 2, 4, 6 x seeds 0, 1, 40 steps, rungs
// 10 and 20 (eta 2), evaluations every 10 steps; the curve peaks at k = 4.
TEST_P(SchedulerSearchTest, RefineWithAshaStopsLosersAndResolves) {
  const std::string yaml =
      "name: ra\nkind: sraven\ngrid:\n  top_k: [2, 4, 6]\n"
      "fixed: {steps: 40, device: cpu}\nseeds: [0, 1]\n"
      "search: {strategy: refine, metric: ood_acc, axis: top_k, "
      "bounds: [1, 8], early_stop: asha, min_steps: 10, reduction: 2}\n";
  auto sub = sched_->SubmitSweep(yaml, false);
  ASSERT_TRUE(sub.ok()) << sub.status();
  ASSERT_EQ(sub->new_trials, 6);
  const std::string w = AddWorker(16);
  auto value = [](int k, int64_t seed, int64_t step) {
    const std::map<int, double> v = {
        {2, 0.5}, {3, 0.6}, {4, 0.7}, {5, 0.62}, {6, 0.55}};
    return v.at(k) * static_cast<double>(step) / 40 +
           0.01 * static_cast<double>(seed);
  };
  // A fake worker: each round it heartbeats (pruned attempts are cancelled),
  // leases what is pending and advances every running trial by 10 steps
  // from its checkpoint (a promoted trial resumes where it stopped).
  std::map<std::string, LeaseGrant> held;
  std::map<std::string, int64_t> progress;
  for (int round = 0; round < 40; ++round) {
    std::vector<RunningReport> running;
    for (const auto& [id, g] : held) running.push_back({id, g.attempt});
    for (const std::string& id : Cancelled(w, running)) held.erase(id);
    auto leases = sched_->Lease(w, 16, 0);
    ASSERT_TRUE(leases.ok()) << leases.status();
    for (const LeaseGrant& g : *leases) {
      held[g.trial_id] = g;
      // The lease asks the trainer to evaluate at the rungs (10, 20).
      const nlohmann::json p = nlohmann::json::parse(g.params_json);
      EXPECT_EQ(p.value("eval_rungs_from", 0), 10);
      EXPECT_EQ(p.value("eval_rungs_eta", 0), 2);
    }
    if (sched_->GetSweep("ra")->record.state != store::SweepState::kActive) {
      break;
    }
    clock_.Advance(absl::Seconds(10));
    std::vector<std::string> ids;
    for (const auto& [id, g] : held) ids.push_back(id);
    for (const std::string& id : ids) {
      if (store_->GetTrial(id)->state != TrialState::kRunning) continue;
      const LeaseGrant g = held.at(id);
      const int k = nlohmann::json::parse(g.params_json).at("top_k");
      const int64_t step = progress[id] += 10;
      store::MetricRecord m;
      m.name = "eval/ood_acc";
      m.step = step;
      m.value = value(k, g.seed, step);
      ASSERT_TRUE(sched_->ReportMetrics(w, id, g.attempt, {m}).ok());
      if (step == 40) {
        ASSERT_TRUE(
            sched_->Complete(w, id, g.attempt, {{"ood_acc", m.value}}, 1).ok());
        held.erase(id);
      }
    }
  }
  auto view = sched_->GetSweep("ra");
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->record.state, store::SweepState::kCompleted);
  // Refine added k = 3 and 5 (both seeds); only k = 4 ran to the end.
  std::map<int, std::multiset<std::string>> states;
  const std::vector<store::TrialRecord> all = *sched_->ListTrials("ra");
  for (const store::TrialRecord& t : all) {
    states[nlohmann::json::parse(t.params_json).at("top_k").get<int>()].insert(
        store::TrialStateName(t.state));
  }
  const std::multiset<std::string> pruned = {"pruned", "pruned"};
  EXPECT_EQ(states[4], (std::multiset<std::string>{"succeeded", "succeeded"}));
  for (int k : {2, 3, 5, 6}) EXPECT_EQ(states[k], pruned) << "k=" << k;
  EXPECT_EQ(states.size(), 5u);
  int adds = 0;
  const store::DecisionRecord* settled = nullptr;
  std::vector<store::DecisionRecord> log = Log("ra");
  for (const store::DecisionRecord& d : log) {
    adds += d.action == "add";
    if (d.trial_id.empty()) settled = &d;
  }
  EXPECT_EQ(adds, 4);
  ASSERT_NE(settled, nullptr);
  EXPECT_EQ(settled->action, "resolved");
  EXPECT_EQ(settled->rung, 4);
  EXPECT_THAT(settled->reason, HasSubstr("stopped early: 2, 3, 5, 6"));
  // Trial-steps: k=2, 3, 6 stopped at rung 0 (10 steps), k=5 at rung 1 (20),
  // k=4 ran 40; two seeds each. The full 1..8 grid: 8 x 2 x 40 = 640.
  auto usage = sched_->GetSearchUsage("ra");
  ASSERT_TRUE(usage.ok());
  EXPECT_EQ(usage->full_grid_trial_steps, 8 * 2 * 40);
  EXPECT_EQ(usage->trial_steps_used, 2 * (10 + 10 + 10 + 20 + 40));
  // The dashboard's view: rungs, the stopped points and refine's frontier.
  auto json = views::ReadSearchJson(sched_.get(), store_, "ra", 50);
  ASSERT_TRUE(json.ok()) << json.status();
  ExpectSnapshotSummarySame("ra");
  EXPECT_EQ((*json)["rungs"], nlohmann::json({10, 20}));
  EXPECT_EQ((*json)["pruned_points"].size(), 8u);
  for (const auto& p : (*json)["pruned_points"]) {
    EXPECT_TRUE(p["final"].get<bool>());
    EXPECT_NE(p["params"]["top_k"], 4);
  }
  ASSERT_EQ((*json)["frontier"].size(), 1u);
  const nlohmann::json& f = (*json)["frontier"][0];
  EXPECT_EQ(f["state"], "resolved");
  EXPECT_EQ(f["best"], 4);
  EXPECT_EQ(f["tried"], nlohmann::json({2, 3, 4, 5, 6}));
  EXPECT_EQ(f["stopped"], nlohmann::json({2, 3, 5, 6}));
  EXPECT_NEAR(f["means"]["4"].get<double>(), 0.705, 1e-9);
  // Device-hours: every attempt's wall time (fake clock, 10 s a round).
  EXPECT_EQ((*json)["device"], "slot");
  const double hours = (*json)["device_hours_used"].get<double>();
  EXPECT_GT(hours, 0);
  EXPECT_NEAR((*json)["device_hours_full_grid_estimate"].get<double>(),
              hours * 640 / 180, 1e-9);
  // Replayable: a restart recomputes the same decisions and takes none
  // again.
  Restart();
  EXPECT_EQ(Log("ra").size(), log.size());
  EXPECT_EQ(sched_->GetSweep("ra")->record.state,
            store::SweepState::kCompleted);
}

// search.budget_gpu_hours through the scheduler: the hours are the attempts'
// wall time (fake clock; slot-hours on CPU); once spent, the next search
// report prunes the never-started trials for good with the reason, the
// running ones finish, the sweep completes, and a restart (hours reloaded
// from the stored attempts) takes no decision again.
TEST_P(SchedulerSearchTest, GpuHourBudgetPrunesPendingTrials) {
  const std::string yaml =
      "name: a\nkind: sraven\ngrid:\n  top_k: [1, 2, 4, 8]\n"
      "fixed: {steps: 40, device: cpu}\nretries: 2\n"
      "search: {strategy: asha, metric: ood_acc, min_steps: 10, "
      "reduction: 2, budget_gpu_hours: 0.45}\n";
  ASSERT_TRUE(sched_->SubmitSweep(yaml, false).ok());
  const std::string w = AddWorker(2);
  auto leases = sched_->Lease(w, 2, 0);
  ASSERT_TRUE(leases.ok());
  ASSERT_EQ(leases->size(), 2u);
  std::set<int> leased;
  for (const LeaseGrant& g : *leases) {
    leased.insert(nlohmann::json::parse(g.params_json).at("top_k").get<int>());
  }
  ASSERT_TRUE(leased == (std::set<int>{1, 2}));  // grid order
  // Time passes with the worker heartbeating (leases of 30 s).
  auto pass = [&](int minutes, const std::vector<RunningReport>& running) {
    for (int i = 0; i < minutes * 4; ++i) {
      clock_.Advance(absl::Seconds(15));
      ASSERT_TRUE(Cancelled(w, running).empty());
    }
  };
  // Within budget: 2 running attempts x 10 min = 0.33 slot-hours.
  pass(10, {{TrialOf(1), 1}, {TrialOf(2), 1}});
  ASSERT_TRUE(Report(w, 1, 1, 10, 0.5).ok());
  EXPECT_EQ(Trial(4).state, TrialState::kPending);
  EXPECT_EQ(Trial(1).state, TrialState::kPruned);  // alone at rung 0
  // 10 + 20 min = 0.5 slot-hours >= 0.45 (k=1's ended attempt counts).
  EXPECT_EQ(Cancelled(w, {{TrialOf(1), 1}, {TrialOf(2), 1}}),
            (std::set<std::string>{TrialOf(1)}));
  pass(10, {{TrialOf(2), 1}});
  ASSERT_TRUE(Report(w, 2, 1, 10, 0.9).ok());
  EXPECT_EQ(Trial(2).state, TrialState::kRunning);  // promoted: runs on
  for (int k : {4, 8}) {
    EXPECT_EQ(Trial(k).state, TrialState::kPruned) << k;
    EXPECT_EQ(Trial(k).attempt, 0) << k;
  }
  int budget_decisions = 0;
  for (const store::DecisionRecord& d : Log()) {
    if (d.reason.find("budget_gpu_hours") == std::string::npos) continue;
    ++budget_decisions;
    EXPECT_EQ(d.action, "prune");
    EXPECT_TRUE(d.final);
    EXPECT_THAT(d.reason,
                HasSubstr("budget_gpu_hours 0.45 spent: 0.5 slot-hours used "
                          "(CPU sweep: slot-hours = attempts' wall time x 1 "
                          "slot, counted against the GPU-hour budget)"));
  }
  // k=4 and k=8 (not started); k=1 stays paused (rung 0: it lost to k=2).
  EXPECT_EQ(budget_decisions, 2);
  // The dashboard's search JSON carries the budget (and the smoothing) to
  // show next to the hours used.
  auto sj = views::ReadSearchJson(sched_.get(), store_, "a", 50);
  ASSERT_TRUE(sj.ok()) << sj.status();
  EXPECT_EQ((*sj)["budget_gpu_hours"], 0.45);
  ExpectSnapshotSummarySame("a");
  EXPECT_EQ((*sj)["smooth_evals"], 1);
  // Each trial decision names its trial by its parameters (issue 31 item 5).
  int labelled = 0;
  for (const auto& d : (*sj)["decisions"]) {
    if (d["trial_id"].get<std::string>().empty()) continue;
    EXPECT_THAT(d["trial_label"].get<std::string>(),
                ::testing::MatchesRegex("top_k=[0-9]+( seed [0-9]+)?"))
        << d.dump();
    ++labelled;
  }
  EXPECT_GT(labelled, 0);
  EXPECT_TRUE(sched_->Lease(w, 2, 0)->empty());  // nothing starts
  const size_t logged = Log().size();
  Restart();
  EXPECT_EQ(Log().size(), logged);
  const absl::Status done =
      sched_->Complete(w, TrialOf(2), 1, {{"ood_acc", 0.9}}, 1);
  ASSERT_TRUE(done.ok()) << done;
  EXPECT_EQ(sched_->GetSweep("a")->record.state, store::SweepState::kCompleted);
}

// The search summary from the read model's snapshot (the HTTP route's)
// is the one from the scheduler's records on an asha sweep with several
// axes and seeds (labels name what varies), pauses, promotions and final
// prunes, at each stage (issue 35).
TEST_P(SchedulerSearchTest, SearchSummaryFromTheSnapshotIsTheSame) {
  const std::string yaml =
      "name: sv\nkind: sraven\ngrid:\n  top_k: [1, 2, 4, 8]\n  M: [1, 2]\n"
      "fixed: {steps: 40, device: cpu}\nseeds: [0, 1]\n"
      "search: {strategy: asha, metric: ood_acc, min_steps: 10, "
      "reduction: 2}\n";
  ASSERT_TRUE(sched_->SubmitSweep(yaml, false).ok());
  SweepReadModel model(sched_.get(), store_);
  ExpectSnapshotSummarySame("sv");
  ExpectSnapshotSummarySame("sv", &model);
  const std::string w = AddWorker(16);
  auto leases = sched_->Lease(w, 16, 0);
  ASSERT_TRUE(leases.ok());
  ASSERT_EQ(leases->size(), 16u);
  int i = 0;
  for (const LeaseGrant& g : *leases) {
    store::MetricRecord m;
    m.name = "eval/ood_acc";
    m.step = 10;
    m.value = 0.1 + 0.01 * ((i * 7) % 16);
    ASSERT_TRUE(sched_->ReportMetrics(w, g.trial_id, g.attempt, {m}).ok());
    ExpectSnapshotSummarySame("sv", &model);
    if (++i % 5 == 0) ExpectSnapshotSummarySame("sv");
  }
  clock_.Advance(absl::Minutes(3));
  for (const LeaseGrant& g : *leases) {
    (void)sched_->Complete(w, g.trial_id, g.attempt, {{"ood_acc", 0.5}}, 1);
  }
  ASSERT_FALSE(Log("sv").empty());
  ExpectSnapshotSummarySame("sv");
  ExpectSnapshotSummarySame("sv", &model);
  // GetSearchUsage (from the state counts and the reports) is the pass over
  // every trial: succeeded ones all 40 steps, the others their last report.
  int64_t used = 0;
  auto trials = sched_->ListTrials("sv");
  ASSERT_TRUE(trials.ok()) << trials.status();
  for (const store::TrialRecord& t : *trials) {
    if (t.state == TrialState::kSucceeded) {
      used += 40;
      continue;
    }
    int64_t reached = 0;
    auto metrics = store_->ListMetrics(t.trial_id, std::nullopt);
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    for (const store::MetricRecord& m : *metrics) {
      if (m.name == "eval/ood_acc") reached = std::max(reached, m.step);
    }
    used += std::min<int64_t>(reached, 40);
  }
  auto usage = sched_->GetSearchUsage("sv");
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->trial_steps_used, used);
  EXPECT_GT(used, 0);
  EXPECT_EQ(usage->full_grid_trial_steps, 16 * 40);
}

// The snapshot path keeps its labeler, pruned positions and pruned trials'
// last prunes per sweep between requests (issue 35): with a read model kept
// across changes it still equals the records path after trials are added
// (new seeds: labels now name the seed, learned from the new rows only),
// after more prunes among the new trials, and after the sweep is deleted
// and one of the same name (another grid) is submitted.
TEST_P(SchedulerSearchTest,
       SearchSummaryFromTheSnapshotFollowsExtendsAndNewSweeps) {
  const std::string yaml =
      "name: sx\nkind: sraven\ngrid:\n  top_k: [1, 2, 4, 8]\n"
      "fixed: {steps: 40, device: cpu}\nseeds: [0]\n"
      "search: {strategy: asha, metric: ood_acc, min_steps: 10, "
      "reduction: 2}\n";
  ASSERT_TRUE(sched_->SubmitSweep(yaml, false).ok());
  SweepReadModel model(sched_.get(), store_);
  const std::string w = AddWorker(32);
  int i = 0;
  auto report_all = [&]() {
    auto leases = sched_->Lease(w, 32, 0);
    ASSERT_TRUE(leases.ok()) << leases.status();
    for (const LeaseGrant& g : *leases) {
      store::MetricRecord m;
      m.name = "eval/ood_acc";
      m.step = 10;
      m.value = 0.1 + 0.01 * ((i++ * 7) % 16);
      ASSERT_TRUE(sched_->ReportMetrics(w, g.trial_id, g.attempt, {m}).ok());
      ExpectSnapshotSummarySame("sx", &model);
    }
  };
  report_all();
  const int64_t before = static_cast<int64_t>(Log("sx").size());
  EXPECT_GT(before, 0);
  auto labels = [&]() {
    auto got = model.Get("sx");
    EXPECT_TRUE(got.ok()) << got.status();
    auto sj = views::ReadSearchJson(sched_.get(), store_, "sx", 200,
                                    got.ok() ? got->second.get() : nullptr);
    EXPECT_TRUE(sj.ok()) << sj.status();
    std::set<std::string> out;
    for (const nlohmann::json& d : (*sj)["decisions"]) {
      out.insert(d["trial_label"].get<std::string>());
    }
    return out;
  };
  EXPECT_TRUE(labels().count("top_k=1") || labels().count("top_k=2") ||
              labels().count("top_k=4") || labels().count("top_k=8"));
  auto extended = sched_->ExtendSweep("sx", "seeds", {1, 2});
  ASSERT_TRUE(extended.ok()) << extended.status();
  EXPECT_EQ(*extended, 8);
  ExpectSnapshotSummarySame("sx", &model);
  // The seeds vary now: every label names one.
  for (const std::string& l : labels()) EXPECT_THAT(l, HasSubstr("seed "));
  report_all();
  EXPECT_GT(static_cast<int64_t>(Log("sx").size()), before);
  ExpectSnapshotSummarySame("sx");
  ASSERT_TRUE(sched_->CancelSweep("sx").ok());
  ExpectSnapshotSummarySame("sx", &model);
  auto deleted = sched_->DeleteSweep("sx");
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(
      sched_
          ->SubmitSweep("name: sx\nkind: sraven\ngrid:\n  top_k: [2, 4]\n"
                        "  M: [1, 2]\nfixed: {steps: 40, device: cpu}\n"
                        "seeds: [0]\nsearch: {strategy: asha, metric: ood_acc, "
                        "min_steps: 10, reduction: 2}\n",
                        false)
          .ok());
  ExpectSnapshotSummarySame("sx", &model);
  report_all();
  ExpectSnapshotSummarySame("sx");
  for (const std::string& l : labels()) EXPECT_THAT(l, HasSubstr("M="));
}

// The snapshot path reads the decision log backwards, a page (1,024) at a
// time, only until every pruned trial has met its last decision. A trial
// that shows up pruned later without a prune read since (here: its state
// set in a snapshot refreshed by hand, its prune logged 1,100 decisions
// before the newest) gets the prune from the log read whole; a new snapshot
// with it pruned reads back past the first page. Either way the point shows
// the value it was stopped at.
TEST_P(SchedulerSearchTest, SearchSummaryFindsAPruneLoggedBeforeItsFirstRead) {
  ASSERT_TRUE(sched_->SubmitSweep(kAsha, false).ok());
  const std::string victim = TrialOf(2);
  store::WriteBatch b;
  for (int i = 0; i < 1101; ++i) {
    store::DecisionRecord d;
    d.sweep_id = "a";
    d.trial_id = i == 0 ? victim : TrialOf(4);
    d.action = i == 0 ? "prune" : "promote";
    d.rung = 0;
    d.step = 10 + i;
    d.value = 0.25;
    d.cutoff = 0.5;
    d.final = i == 0;
    d.reason = absl::StrCat("logged ", i);
    d.at = clock_.Now();
    b.decisions.push_back(d);
  }
  ASSERT_TRUE(store_->Commit(b).ok());
  auto rows = store_->ListSummaries("a");
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::vector<analysis::TrialPoint> points = analysis::FromSummaries(*rows);
  auto first = std::make_shared<SweepSnapshot>();
  first->version = 1;
  for (size_t i = 0; i < rows->size(); ++i) {
    first->rows.push_back(MakeTrialRow((*rows)[i], points[i]));
  }
  first->index = std::make_shared<TrialIndex>(first->rows);
  for (int limit : {0, 2}) {
    auto sj =
        views::ReadSearchJson(sched_.get(), store_, "a", limit, first.get());
    ASSERT_TRUE(sj.ok()) << sj.status();
    EXPECT_EQ((*sj)["decisions_total"], 1101);
    EXPECT_EQ((*sj)["decisions"].size(), static_cast<size_t>(limit));
    EXPECT_TRUE((*sj)["pruned"].empty());
    EXPECT_TRUE((*sj)["pruned_points"].empty());
  }
  const size_t pos = *first->Find(victim);
  store::TrialSummary pruned = (*rows)[pos];
  pruned.state = TrialState::kPruned;
  auto expect_victim = [&](const SweepSnapshot& snap) {
    auto sj = views::ReadSearchJson(sched_.get(), store_, "a", 50, &snap);
    ASSERT_TRUE(sj.ok()) << sj.status();
    EXPECT_EQ((*sj)["pruned"], nlohmann::json::array({victim}));
    ASSERT_EQ((*sj)["pruned_points"].size(), 1u) << (*sj)["pruned_points"];
    EXPECT_EQ((*sj)["pruned_points"][0]["trial_id"], victim);
    EXPECT_EQ((*sj)["pruned_points"][0]["step"], 10);
    EXPECT_EQ((*sj)["pruned_points"][0]["value"], 0.25);
    EXPECT_EQ((*sj)["pruned_points"][0]["final"], true);
    EXPECT_EQ((*sj)["pruned_points"][0]["params"]["top_k"], 2);
    // The decisions shown (the newest 50) are top_k = 4's.
    ASSERT_EQ((*sj)["decisions"].size(), 50u);
    EXPECT_EQ((*sj)["decisions"][0]["trial_label"], "top_k=4");
    EXPECT_EQ((*sj)["decisions"][49]["reason"], "logged 1100");
  };
  auto second = std::make_shared<SweepSnapshot>(*first);
  second->version = 2;
  second->base_version = 1;
  second->rows.Set(pos,
                   MakeTrialRow(pruned, analysis::FromSummaries({pruned})[0]));
  second->changed = {pos};
  expect_victim(*second);
  // A reload: a new index, the victim pruned from the start.
  auto third = std::make_shared<SweepSnapshot>(*second);
  third->version = 3;
  third->base_version = -1;
  third->changed.clear();
  third->index = std::make_shared<TrialIndex>(third->rows);
  expect_victim(*third);
}

// Refine with a GPU-hour budget: the budget is spent when the first
// points finish, so the group that wants x* = 4's neighbours settles as
// `budget`; the dashboard's frontier shows it so (the recomputed frontier,
// which applies no budget, would say `exploring`).
TEST_P(SchedulerSearchTest,
       RefineFrontierShowsGroupsSettledByTheGpuHourBudget) {
  const std::string yaml =
      "name: rb\nkind: sraven\ngrid:\n  top_k: [2, 4]\n"
      "fixed: {steps: 10, device: cpu}\nseeds: [0, 1]\n"
      "search: {strategy: refine, metric: ood_acc, axis: top_k, "
      "bounds: [1, 8], budget_gpu_hours: 0.1}\n";
  ASSERT_TRUE(sched_->SubmitSweep(yaml, false).ok());
  const std::string w = AddWorker(4);
  auto leases = sched_->Lease(w, 4, 0);
  ASSERT_TRUE(leases.ok());
  ASSERT_EQ(leases->size(), 4u);
  std::vector<RunningReport> running;
  for (const LeaseGrant& g : *leases)
    running.push_back({g.trial_id, g.attempt});
  // 4 attempts x 5 minutes = 0.33 slot-hours >= 0.1.
  for (int i = 0; i < 20; ++i) {
    clock_.Advance(absl::Seconds(15));
    ASSERT_TRUE(Cancelled(w, running).empty());
  }
  for (const LeaseGrant& g : *leases) {
    const int k = nlohmann::json::parse(g.params_json).at("top_k");
    ASSERT_TRUE(sched_
                    ->Complete(w, g.trial_id, g.attempt,
                               {{"ood_acc", k == 4 ? 0.7 : 0.5}}, 1)
                    .ok());
  }
  EXPECT_EQ(sched_->ListTrials("rb")->size(), 4u);  // nothing added
  const std::vector<store::DecisionRecord> log = Log("rb");
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back().action, "budget");
  auto sj = views::ReadSearchJson(sched_.get(), store_, "rb", 50);
  ASSERT_TRUE(sj.ok()) << sj.status();
  ASSERT_EQ((*sj)["frontier"].size(), 1u);
  const nlohmann::json& row = (*sj)["frontier"][0];
  EXPECT_EQ(row["state"], "budget") << row.dump();
  EXPECT_EQ(row["settled"], "budget");
  EXPECT_THAT(row["settled_reason"].get<std::string>(),
              HasSubstr("budget_gpu_hours 0.1 spent"));
  EXPECT_EQ(row["best"], 4);
  EXPECT_EQ(sched_->GetSweep("rb")->record.state,
            store::SweepState::kCompleted);
}

INSTANTIATE_TEST_SUITE_P(Stores, SchedulerSearchTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Sqlite" : "InMemory";
                         });

}  // namespace
}  // namespace smoe::coordinator
