// Copyright 2026 SMoE Lab authors.
//
// Scheduler per-trial actions and sweep annotations (scheduler_actions.cc) on
// FakeClock + InMemoryStore, and the annotations surviving a restart.
#include <string>

#include "coordinator/scheduler.h"
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

}  // namespace
}  // namespace smoe::coordinator
