// Copyright 2026 SMoE Lab authors.
#include "common/log_limiter.h"

#include <gtest/gtest.h>

namespace smoe {
namespace {

TEST(LogLimiterTest, OneLinePerPeriodWithTheSuppressedCount) {
  LogLimiter limiter(absl::Seconds(10));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  int64_t suppressed = -1;
  EXPECT_TRUE(limiter.Allow(t0, &suppressed));
  EXPECT_EQ(suppressed, 0);
  // A burst within the period: nothing logged.
  for (int i = 1; i <= 99; ++i) {
    EXPECT_FALSE(limiter.Allow(t0 + absl::Milliseconds(i * 10), &suppressed));
  }
  EXPECT_TRUE(limiter.Allow(t0 + absl::Seconds(10), &suppressed));
  EXPECT_EQ(suppressed, 99);
  EXPECT_FALSE(limiter.Allow(t0 + absl::Seconds(11)));
  EXPECT_TRUE(limiter.Allow(t0 + absl::Seconds(25), &suppressed));
  EXPECT_EQ(suppressed, 1);
  EXPECT_EQ(limiter.total(), 103);
}

}  // namespace
}  // namespace smoe
