// Copyright 2026 SMoE Lab authors.
//
// File: common/log_limiter.h
//
// LogLimiter: at most one log line per period for a recurring event (a failed
// store commit, a refused token), so a fault or an attacker cannot fill the
// log. Allow() says whether to log now and how many events were suppressed
// since the last line that was allowed:
//
//   int64_t suppressed = 0;
//   if (limiter.Allow(absl::Now(), &suppressed)) {
//     SMOE_LOG(WARNING) << "refused call (" << suppressed << " more since)";
//   }
//
// Thread safety: safe for concurrent use.
#ifndef SMOE_COMMON_LOG_LIMITER_H_
#define SMOE_COMMON_LOG_LIMITER_H_

#include <cstdint>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace smoe {

class LogLimiter {
 public:
  explicit LogLimiter(absl::Duration period) : period_(period) {}

  // Counts one event at `now`. Returns true (log it) when the previous allowed
  // event is at least one period old; `*suppressed` (may be null) is then the
  // number of events not logged since. Returns false otherwise.
  bool Allow(absl::Time now, int64_t* suppressed = nullptr) {
    absl::MutexLock lock(&mu_);
    ++total_;
    if (now - last_ < period_) {
      ++suppressed_;
      return false;
    }
    if (suppressed != nullptr) *suppressed = suppressed_;
    suppressed_ = 0;
    last_ = now;
    return true;
  }

  // Events counted so far (allowed or not).
  int64_t total() const {
    absl::MutexLock lock(&mu_);
    return total_;
  }

 private:
  const absl::Duration period_;
  mutable absl::Mutex mu_;
  absl::Time last_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int64_t suppressed_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t total_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace smoe

#endif  // SMOE_COMMON_LOG_LIMITER_H_
