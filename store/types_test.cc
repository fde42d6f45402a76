// Copyright 2026 SMoE Lab authors.
//
// File: store/types_test.cc

#include "store/types.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::store {
namespace {

using ::testing::HasSubstr;

TEST(TypesTest, TrialStateNamesRoundTrip) {
  for (int i = 0; i <= 5; ++i) {
    const auto s = static_cast<TrialState>(i);
    auto parsed = ParseTrialState(TrialStateName(s));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_STREQ(TrialStateName(TrialState::kSucceeded), "succeeded");
  EXPECT_STREQ(TrialStateName(TrialState::kPruned), "pruned");
}

TEST(TypesTest, AttemptOutcomeNamesRoundTrip) {
  for (int i = 0; i <= 8; ++i) {
    const auto o = static_cast<AttemptOutcome>(i);
    auto parsed = ParseAttemptOutcome(AttemptOutcomeName(o));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, o);
  }
  EXPECT_STREQ(AttemptOutcomeName(AttemptOutcome::kPreempted), "preempted");
}

TEST(TypesTest, SweepStateNamesRoundTrip) {
  for (int i = 0; i <= 2; ++i) {
    const auto s = static_cast<SweepState>(i);
    auto parsed = ParseSweepState(SweepStateName(s));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, s);
  }
}

TEST(TypesTest, UnknownNamesAreInvalidArgumentNamingTheValue) {
  auto t = ParseTrialState("Pending");  // names are case-sensitive
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("'Pending'"));
  auto o = ParseAttemptOutcome("");
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  auto s = ParseSweepState("done");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("'done'"));
}

TEST(TypesTest, IsTerminal) {
  EXPECT_FALSE(IsTerminal(TrialState::kPending));
  EXPECT_FALSE(IsTerminal(TrialState::kRunning));
  EXPECT_TRUE(IsTerminal(TrialState::kSucceeded));
  EXPECT_TRUE(IsTerminal(TrialState::kFailed));
  EXPECT_TRUE(IsTerminal(TrialState::kCancelled));
  EXPECT_FALSE(IsTerminal(TrialState::kPruned));  // can be promoted
}

}  // namespace
}  // namespace smoe::store
