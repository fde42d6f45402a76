// Copyright 2026 SMoE Lab authors.
#include "common/clock.h"

#include <atomic>
#include <thread>

#include "gtest/gtest.h"

namespace smoe {
namespace {

TEST(FakeClockTest, StartsAtGivenTimeAndAdvances) {
  const absl::Time start = absl::FromUnixSeconds(1000);
  FakeClock clock(start);
  EXPECT_EQ(clock.Now(), start);
  clock.Advance(absl::Seconds(5));
  EXPECT_EQ(clock.Now(), start + absl::Seconds(5));
  clock.Advance(absl::Seconds(-3));  // ignored: time never goes backwards
  EXPECT_EQ(clock.Now(), start + absl::Seconds(5));
  clock.SetTime(start);  // ignored for the same reason
  EXPECT_EQ(clock.Now(), start + absl::Seconds(5));
  clock.SetTime(start + absl::Minutes(1));
  EXPECT_EQ(clock.Now(), start + absl::Minutes(1));
}

TEST(FakeClockTest, SleepForWakesOnlyWhenAdvancedFarEnough) {
  FakeClock clock;
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    clock.SleepFor(absl::Seconds(10));
    woke = true;
  });
  // The sleeper cannot wake before the clock reaches +10 s. Advancing only
  // after it has registered keeps the test free of timing assumptions.
  clock.TEST_AwaitSleepers(1);
  clock.Advance(absl::Seconds(4));
  clock.Advance(absl::Seconds(4));
  EXPECT_FALSE(woke.load());
  clock.Advance(absl::Seconds(10));
  sleeper.join();
  EXPECT_TRUE(woke.load());
}

TEST(RealClockTest, IsMonotonicEnoughAndNearSystemTime) {
  Clock* clock = Clock::Real();
  const absl::Time a = clock->Now();
  const absl::Time b = clock->Now();
  EXPECT_LE(a, b);
  EXPECT_LT(absl::AbsDuration(a - absl::Now()), absl::Seconds(5));
}

}  // namespace
}  // namespace smoe
