// Copyright 2026 SMoE Lab authors.
//
// File: common/logging.h
//
// Minimal leveled logging to stderr, one line per message:
//
//   I20261122 14:03:07.123456 scheduler.cc:88] leased trial t0007 to w3
//
// Abseil 20220623 has no absl/log, and the trainer must build on GPU machines
// without glog, so the project keeps this small logger. Severity threshold
// comes from SMOE_LOG_LEVEL (DEBUG, INFO, WARNING, ERROR; default INFO) or
// SetMinLogLevel(). Secrets (API tokens) must never be passed to the logger:
// use RedactSecret() when a value might be one.
//
// Thread safety: messages from concurrent threads never interleave within a
// line.
#ifndef SMOE_COMMON_LOGGING_H_
#define SMOE_COMMON_LOGGING_H_

#include <sstream>
#include <string>

#include "absl/strings/string_view.h"

namespace smoe {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Sets the minimum severity that is written. Thread-safe.
void SetMinLogLevel(LogLevel level);
// Returns the current minimum severity.
LogLevel MinLogLevel();

// Returns "<redacted:N chars>" so a secret's presence can be logged, never its
// value.
std::string RedactSecret(absl::string_view secret);

// A status line (a progress bar) kept at the bottom of the terminal. On a
// terminal stderr, SetStatusLine redraws it in place ("\r\033[K" + line), and
// every log line or WriteAboveStatusLine text is written above it with the
// status redrawn below, in one write, so log lines never overwrite the bar
// nor the bar a log line. When stderr is not a terminal, SetStatusLine writes
// `line` and a newline each time it changes. EndStatusLine leaves the last
// status on its own line and forgets it. Thread-safe.
void SetStatusLine(absl::string_view line);
void EndStatusLine();
// Writes `text` (a newline is added when missing) above the status line.
void WriteAboveStatusLine(absl::string_view text);

namespace logging_internal {

// One log line; written to stderr in the destructor.
class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;

  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

// Sends the status line and log lines to `fd`, treated as a terminal or not
// (tests).
void SetStatusOutputForTest(int fd, bool terminal);

// Swallows the stream expression when the level is disabled.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace logging_internal
}  // namespace smoe

#define SMOE_LOG_LEVEL_DEBUG ::smoe::LogLevel::kDebug
#define SMOE_LOG_LEVEL_INFO ::smoe::LogLevel::kInfo
#define SMOE_LOG_LEVEL_WARNING ::smoe::LogLevel::kWarning
#define SMOE_LOG_LEVEL_ERROR ::smoe::LogLevel::kError

// SMOE_LOG(INFO) << "message"; levels DEBUG, INFO, WARNING, ERROR.
#define SMOE_LOG(level)                                                  \
  (SMOE_LOG_LEVEL_##level < ::smoe::MinLogLevel())                       \
      ? (void)0                                                          \
      : ::smoe::logging_internal::Voidify() &                            \
            ::smoe::logging_internal::LogMessage(SMOE_LOG_LEVEL_##level, \
                                                 __FILE__, __LINE__)     \
                .stream()

#endif  // SMOE_COMMON_LOGGING_H_
