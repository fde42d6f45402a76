// Copyright 2026 SMoE Lab authors.
#include "coordinator/trial_logs.h"

#include <string>

#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/in_memory_store.h"
#include "store/store_test_util.h"

namespace smoe::coordinator {
namespace {

using ::smoe::store::testing::MakeAttempt;
using ::smoe::store::testing::MakeSweep;
using ::smoe::store::testing::MakeTrial;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class TrialLogsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::WriteBatch b;
    b.sweeps.push_back(MakeSweep("s"));
    b.trials.push_back(MakeTrial("s", 0));
    b.trials.push_back(MakeTrial("s", 1));
    trial_ = b.trials[0].trial_id;
    fresh_ = b.trials[1].trial_id;
    store::AttemptRecord a1 = MakeAttempt(trial_, 1);
    a1.outcome = store::AttemptOutcome::kFailed;
    b.attempts = {a1, MakeAttempt(trial_, 2)};  // attempt 2 is running
    ASSERT_TRUE(store_.Commit(b).ok());
  }

  store::InMemoryStore store_;
  FakeClock clock_;
  TrialLogs logs_{&store_, &clock_};
  std::string trial_, fresh_;
};

TEST_F(TrialLogsTest, EndedAttemptReadsItsStoredTail) {
  ASSERT_TRUE(logs_.PutFinal(trial_, 1, "boom\n", 5).ok());
  absl::StatusOr<TrialLogView> v = logs_.Read(trial_, 1);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->attempt, 1);
  EXPECT_THAT(v->attempts, ElementsAre(1, 2));
  EXPECT_FALSE(v->running);
  EXPECT_EQ(v->text, "boom\n");
  EXPECT_EQ(v->total_bytes, 5);
  EXPECT_EQ(v->as_of, clock_.Now());
  EXPECT_FALSE(logs_.Wanted(trial_, 1));
}

TEST_F(TrialLogsTest, RunningAttemptIsWantedAndShowsTheLiveTail) {
  absl::StatusOr<TrialLogView> v = logs_.Read(trial_, 0);  // the latest
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->attempt, 2);
  EXPECT_TRUE(v->running);
  EXPECT_EQ(v->text, "");
  EXPECT_EQ(v->as_of, absl::UnixEpoch());  // nothing received yet
  EXPECT_TRUE(logs_.Wanted(trial_, 2));
  clock_.Advance(absl::Seconds(1));
  logs_.PutLive(trial_, 2, "step 1\nstep 2\n", 1000);
  v = logs_.Read(trial_, 2);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->text, "step 1\nstep 2\n");
  EXPECT_EQ(v->total_bytes, 1000);
  EXPECT_EQ(v->as_of, clock_.Now());
  // Nobody asks for a while: no longer wanted.
  clock_.Advance(TrialLogs::kWantWindow + absl::Seconds(1));
  EXPECT_FALSE(logs_.Wanted(trial_, 2));
  // The final tail replaces the live one.
  ASSERT_TRUE(logs_.PutFinal(trial_, 2, "final\n", 2000).ok());
  EXPECT_EQ(logs_.Read(trial_, 2)->text, "final\n");
}

TEST_F(TrialLogsTest, ErrorsNameTheTrialAndAttempts) {
  absl::StatusOr<TrialLogView> v = logs_.Read(trial_, 7);
  ASSERT_TRUE(absl::IsNotFound(v.status()));
  EXPECT_THAT(std::string(v.status().message()),
              HasSubstr("has no attempt 7 (attempts: 1, 2)"));
  EXPECT_TRUE(absl::IsNotFound(logs_.Read("s/ffffffffffffffff", 0).status()));
  v = logs_.Read(trial_, -1);
  ASSERT_TRUE(absl::IsInvalidArgument(v.status()));
  EXPECT_THAT(std::string(v.status().message()), HasSubstr("attempt"));
  // A trial that never ran: attempt 0 and no log; a numbered attempt is not
  // found.
  v = logs_.Read(fresh_, 0);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->attempt, 0);
  EXPECT_TRUE(v->attempts.empty());
  EXPECT_TRUE(absl::IsNotFound(logs_.Read(fresh_, 1).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(
      logs_.PutFinal("s/ffffffffffffffff", 1, "", 0)));
}

TEST_F(TrialLogsTest, StoredTextIsCutToItsLastBytesAtALineStart) {
  std::string big;
  for (int i = 0; i < 20000; ++i) big += "line " + std::to_string(i) + "\n";
  ASSERT_TRUE(logs_.PutFinal(trial_, 1, big, 123456).ok());
  const std::string text = logs_.Read(trial_, 1)->text;
  EXPECT_LE(text.size(), TrialLogs::kMaxTextBytes);
  EXPECT_EQ(text.substr(0, 5), "line ");
  EXPECT_EQ(text.substr(text.size() - 11), "line 19999\n");
  // One long line is cut, never inside a UTF-8 sequence.
  const std::string cut =
      LastBytesAtLineStart(std::string(10, 'a') + "\xc3\xa9\xc3\xa9", 3);
  EXPECT_EQ(cut, "\xc3\xa9");
  EXPECT_EQ(LastBytesAtLineStart("short\n", 100), "short\n");
}

}  // namespace
}  // namespace smoe::coordinator
