// Copyright 2026 SMoE Lab authors.
//
// File: common/clock.h
//
// An injectable source of time. Components that wait, expire or time out (lease
// expiry, heartbeats, retries with backoff) take a `Clock*` so that tests drive
// time with `FakeClock` and never sleep.
//
// Thread safety: all implementations are safe for concurrent use.
#ifndef SMOE_COMMON_CLOCK_H_
#define SMOE_COMMON_CLOCK_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace smoe {

// Clock is the interface. `Now()` is wall-clock time (absl::Time, UTC).
class Clock {
 public:
  virtual ~Clock() = default;

  // Returns the current time.
  virtual absl::Time Now() = 0;

  // Blocks the caller for `d` of this clock's time. FakeClock returns once
  // another thread has advanced it by at least `d`.
  virtual void SleepFor(absl::Duration d) = 0;

  // Returns a process-wide real clock. Never null; never deleted.
  static Clock* Real();
};

// RealClock reads the system clock and sleeps for real.
class RealClock final : public Clock {
 public:
  absl::Time Now() override;
  void SleepFor(absl::Duration d) override;
};

// FakeClock starts at a fixed instant and moves only when told to.
class FakeClock final : public Clock {
 public:
  // Starts at `start` (default: 2026-01-01T00:00:00Z).
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1767225600));

  absl::Time Now() override;
  // Waits until Advance()/SetTime() has moved the clock to Now() + d.
  void SleepFor(absl::Duration d) override;

  // Moves the clock forward by `d` (REQUIRES: d >= 0) and wakes sleepers.
  void Advance(absl::Duration d);
  // Sets the clock to `t`; earlier times are ignored (time never goes back).
  void SetTime(absl::Time t);

  // Blocks until at least `n` threads are inside SleepFor(). Lets a test
  // advance time only after a sleeper has computed its wake-up time.
  void TEST_AwaitSleepers(int n);

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  int sleepers_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace smoe

#endif  // SMOE_COMMON_CLOCK_H_
