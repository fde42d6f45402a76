// Copyright 2026 SMoE Lab authors.
//
// Scheduler per-trial actions and sweep annotations (scheduler_actions.cc) on
// FakeClock + InMemoryStore, and the annotations surviving a restart.
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "coordinator/scheduler.h"
#include "coordinator/views/sweep_read_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/in_memory_store.h"

namespace smoe::coordinator {
namespace {

using store::TrialState;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kSweep[] =
    "name: acts\nkind: sraven\ngrid:\n  M: [1, 2, 3]\nfixed: {steps: 10}\n"
    "retries: 0\n";

class SchedulerActionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Restart();
    ASSERT_TRUE(sched_->SubmitSweep(kSweep, false).ok());
  }
  void Restart() {
    sched_.reset();
    auto s = Scheduler::Create(&store_, &clock_, {});
    ASSERT_TRUE(s.ok()) << s.status();
    sched_ = std::move(*s);
  }
  TrialState State(const std::string& id) { return store_.GetTrial(id)->state; }
  std::string TrialId(int ordinal) {
    return (*sched_->ListTrials("acts"))[ordinal].trial_id;
  }

  store::InMemoryStore store_;
  FakeClock clock_;
  std::unique_ptr<Scheduler> sched_;
};

TEST_F(SchedulerActionsTest, CancelAndRetryOneTrial) {
  const std::string pending = TrialId(0);
  ASSERT_TRUE(sched_->CancelTrial(pending).ok());
  EXPECT_EQ(State(pending), TrialState::kCancelled);
  // The other trials are untouched.
  EXPECT_EQ(State(TrialId(1)), TrialState::kPending);
  // Cancelling again: not possible in that state, and says so.
  absl::Status again = sched_->CancelTrial(pending);
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.message(), HasSubstr("cancelled"));
  ASSERT_TRUE(sched_->RetryTrial(pending).ok());
  EXPECT_EQ(State(pending), TrialState::kPending);
  EXPECT_EQ(sched_->RetryTrial(pending).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(sched_->CancelTrial("acts/0123456789abcdef").code(),
            absl::StatusCode::kNotFound);
}

TEST_F(SchedulerActionsTest, CancellingARunningTrialEndsItsAttempt) {
  WorkerInfo w;
  w.hostname = "h";
  w.slots = 1;
  auto reg = sched_->Register(w);
  ASSERT_TRUE(reg.ok());
  auto leases = sched_->Lease(reg->worker_id, 1, 0);
  ASSERT_TRUE(leases.ok());
  ASSERT_EQ(leases->size(), 1u);
  const std::string id = (*leases)[0].trial_id;
  ASSERT_TRUE(sched_->CancelTrial(id).ok());
  EXPECT_EQ(State(id), TrialState::kCancelled);
  auto attempts = store_.ListAttempts(id);
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].outcome, store::AttemptOutcome::kCancelled);
  EXPECT_EQ((*attempts)[0].message, "trial cancelled");
}

TEST_F(SchedulerActionsTest, RetryFailedTrialGetsAFreshBudget) {
  WorkerInfo w;
  w.hostname = "h";
  w.slots = 1;
  auto reg = sched_->Register(w);
  ASSERT_TRUE(reg.ok());
  auto leases = sched_->Lease(reg->worker_id, 1, 0);
  ASSERT_TRUE(leases.ok() && leases->size() == 1u);
  const LeaseGrant g = (*leases)[0];
  ASSERT_TRUE(sched_
                  ->Fail(reg->worker_id, g.trial_id, g.attempt,
                         FailReason::kError, 1, "boom")
                  .ok());
  ASSERT_EQ(State(g.trial_id), TrialState::kFailed);
  ASSERT_TRUE(sched_->RetryTrial(g.trial_id).ok());
  EXPECT_EQ(State(g.trial_id), TrialState::kPending);
  EXPECT_EQ(store_.GetTrial(g.trial_id)->error_count, 0);
}

TEST_F(SchedulerActionsTest, RetryInACancelledSweepIsRefused) {
  ASSERT_TRUE(sched_->CancelSweep("acts").ok());
  absl::Status st = sched_->RetryTrial(TrialId(0));
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("retry the sweep"));
}

TEST_F(SchedulerActionsTest, AnnotationsAreValidatedAndSurviveARestart) {
  Scheduler::SweepAnnotation a;
  a.notes = "k=4 wins at M=1";
  a.tags = std::vector<std::string>{"paper", "hyla", "paper"};
  auto v = sched_->AnnotateSweep("acts", a);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_THAT(v->record.tags, ElementsAre("paper", "hyla"));
  Scheduler::SweepAnnotation archive;
  archive.archived = true;
  ASSERT_TRUE(sched_->AnnotateSweep("acts", archive).ok());
  Restart();
  auto after = sched_->GetSweep("acts");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->record.notes, "k=4 wins at M=1");
  EXPECT_THAT(after->record.tags, ElementsAre("paper", "hyla"));
  EXPECT_TRUE(after->record.archived);

  Scheduler::SweepAnnotation bad;
  bad.tags = std::vector<std::string>{"has space"};
  absl::Status st = sched_->AnnotateSweep("acts", bad).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("tags: 'has space'"));
  bad.tags.reset();
  bad.notes = std::string(9000, 'x');
  st = sched_->AnnotateSweep("acts", bad).status();
  EXPECT_THAT(st.message(), HasSubstr("notes: 9000 bytes"));
  EXPECT_EQ(sched_->AnnotateSweep("nope", a).status().code(),
            absl::StatusCode::kNotFound);
}

// Runs every trial of "acts" on one worker: the first succeeds with a metric
// and a result, the second fails, the third is cancelled.
void FinishAll(Scheduler* sched) {
  WorkerInfo w;
  w.hostname = "h";
  w.slots = 1;
  auto reg = sched->Register(w);
  ASSERT_TRUE(reg.ok());
  for (int i = 0; i < 2; ++i) {
    auto leases = sched->Lease(reg->worker_id, 1, 0);
    ASSERT_TRUE(leases.ok() && leases->size() == 1u);
    const LeaseGrant g = (*leases)[0];
    if (i == 0) {
      store::MetricRecord m;
      m.trial_id = g.trial_id;
      m.name = "train/loss";
      m.step = 5;
      m.value = 0.5;
      m.attempt = g.attempt;
      ASSERT_TRUE(
          sched->ReportMetrics(reg->worker_id, g.trial_id, g.attempt, {m})
              .ok());
      ASSERT_TRUE(sched
                      ->Complete(reg->worker_id, g.trial_id, g.attempt,
                                 {{"ood_acc", 0.5}}, 1.0)
                      .ok());
    } else {
      ASSERT_TRUE(sched
                      ->Fail(reg->worker_id, g.trial_id, g.attempt,
                             FailReason::kError, 1, "boom")
                      .ok());
    }
  }
  ASSERT_TRUE(sched->CancelSweep("acts").ok());
}

TEST_F(SchedulerActionsTest, DeleteIsRefusedWhileTrialsAreLive) {
  WorkerInfo w;
  w.hostname = "h";
  w.slots = 1;
  auto reg = sched_->Register(w);
  ASSERT_TRUE(reg.ok());
  ASSERT_TRUE(sched_->Lease(reg->worker_id, 1, 0).ok());
  absl::Status st = sched_->DeleteSweep("acts").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(),
              HasSubstr("sweep 'acts' has 3 live trials (2 pending, 1 "
                        "running); cancel it first (smoe sweep cancel acts)"));
  EXPECT_TRUE(store_.GetSweep("acts").ok());
  EXPECT_TRUE(sched_->GetSweep("acts").ok());
  EXPECT_EQ(sched_->ListTrials("acts")->size(), 3u);
  // An unknown sweep is NotFound, naming it.
  st = sched_->DeleteSweep("nope").status();
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(st.message(), HasSubstr("'nope'"));
}

TEST_F(SchedulerActionsTest,
       DeletingAFinishedSweepRemovesItFromStoreAndMemory) {
  FinishAll(sched_.get());
  const std::string done = TrialId(0);
  const int64_t old_version = sched_->GetSweep("acts")->version;
  ASSERT_FALSE(store_.ListMetrics(done, std::nullopt)->empty());
  auto deleted = sched_->DeleteSweep("acts");
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(deleted->sweep_id, "acts");
  EXPECT_EQ(deleted->trial_ids.size(), 3u);
  EXPECT_EQ(deleted->trial_ids[0], done);
  // Gone from the store...
  EXPECT_TRUE(absl::IsNotFound(store_.GetSweep("acts").status()));
  EXPECT_TRUE(store_.ListTrials("acts")->empty());
  EXPECT_TRUE(store_.ListMetrics(done, std::nullopt)->empty());
  EXPECT_TRUE(store_.ListAttempts(done)->empty());
  // ...and from every view of the scheduler.
  EXPECT_TRUE(absl::IsNotFound(sched_->GetSweep("acts").status()));
  EXPECT_TRUE(absl::IsNotFound(sched_->ListTrials("acts").status()));
  EXPECT_TRUE(sched_->ListSweeps().empty());
  EXPECT_TRUE(absl::IsNotFound(sched_->CancelTrial(done)));
  EXPECT_TRUE(absl::IsNotFound(sched_->DeleteSweep("acts").status()));
  EXPECT_TRUE(absl::IsNotFound(
      sched_->WatchSweep("acts", 0, absl::ZeroDuration()).status()));
  // Re-submitted under the same name: a new sweep, all pending, whose
  // versions continue above the deleted one's.
  auto again = sched_->SubmitSweep(kSweep, false);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->new_trials, 3);
  auto view = sched_->GetSweep("acts");
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->counts.pending, 3);
  EXPECT_GT(view->version, old_version);
  EXPECT_EQ(State(done), TrialState::kPending);
  EXPECT_TRUE(store_.ListMetrics(done, std::nullopt)->empty());
  // A restart loads the new sweep only.
  Restart();
  EXPECT_EQ(sched_->ListSweeps().size(), 1u);
  EXPECT_EQ(sched_->GetSweep("acts")->counts.pending, 3);
}

TEST_F(SchedulerActionsTest, DeleteWithoutGroupCommitAndAcrossARestart) {
  sched_.reset();
  SchedulerOptions o;
  o.group_commit = false;
  auto s = Scheduler::Create(&store_, &clock_, o);
  ASSERT_TRUE(s.ok());
  sched_ = std::move(*s);
  FinishAll(sched_.get());
  ASSERT_TRUE(sched_->DeleteSweep("acts").ok());
  Restart();
  EXPECT_TRUE(sched_->ListSweeps().empty());
  EXPECT_TRUE(absl::IsNotFound(sched_->GetSweep("acts").status()));
}

TEST_F(SchedulerActionsTest, AWatcherOfADeletedSweepGetsNotFound) {
  FinishAll(sched_.get());
  const int64_t version = sched_->GetSweep("acts")->version;
  absl::StatusOr<WatchResult> watched;
  std::thread watcher([&] {
    watched = sched_->WatchSweep("acts", version, absl::Seconds(30));
  });
  // The watcher may start before or after the delete: NotFound either way.
  ASSERT_TRUE(sched_->DeleteSweep("acts").ok());
  watcher.join();
  EXPECT_TRUE(absl::IsNotFound(watched.status())) << watched.status();
}

TEST_F(SchedulerActionsTest, DeleteListenersRunOnceDurableAndCanBeRemoved) {
  FinishAll(sched_.get());
  std::vector<std::string> seen;
  const int id = sched_->AddSweepDeletedListener([&](const DeletedSweep& d) {
    // Durable already: the store has no row of it.
    EXPECT_TRUE(absl::IsNotFound(store_.GetSweep(d.sweep_id).status()));
    seen.push_back(absl::StrCat(d.sweep_id, ":", d.trial_ids.size()));
  });
  EXPECT_FALSE(sched_->DeleteSweep("nope").ok());
  ASSERT_TRUE(sched_->DeleteSweep("acts").ok());
  EXPECT_THAT(seen, ElementsAre("acts:3"));
  sched_->RemoveSweepDeletedListener(id);
  ASSERT_TRUE(sched_->SubmitSweep(kSweep, false).ok());
  ASSERT_TRUE(sched_->CancelSweep("acts").ok());
  ASSERT_TRUE(sched_->DeleteSweep("acts").ok());
  EXPECT_EQ(seen.size(), 1u);
}

TEST_F(SchedulerActionsTest, TheReadModelForgetsADeletedSweep) {
  // "acts.x" shares a prefix with "acts": its entries stay.
  ASSERT_TRUE(sched_
                  ->SubmitSweep("name: acts.x\nkind: sraven\ngrid:\n  M: [1]\n"
                                "fixed: {steps: 10}\n",
                                false)
                  .ok());
  SweepReadModel model(sched_.get(), &store_);
  for (const std::string id : {"acts", "acts.x"}) {
    ASSERT_TRUE(model.Get(id).ok());
    model.CachePut(absl::StrCat("page\x1f", id, "\x1f", "q"), 1,
                   std::make_shared<const std::string>("body"));
    model.Aggregator(absl::StrCat("curves\x1f", id, "\x1f", "ood_acc"));
    EXPECT_EQ(model.EntriesOf(id), 3u) << id;
  }
  FinishAll(sched_.get());
  ASSERT_TRUE(sched_->DeleteSweep("acts").ok());
  EXPECT_EQ(model.EntriesOf("acts"), 0u);
  EXPECT_EQ(model.EntriesOf("acts.x"), 3u);
  EXPECT_TRUE(absl::IsNotFound(model.Get("acts").status()));
}

}  // namespace
}  // namespace smoe::coordinator
