// Copyright 2026 SMoE Lab authors.
//
// File: worker/daemon/attempt_log.h
//
// One attempt's log on the worker (docs/logs-and-system-metrics.md): the
// trainer's stderr lines and the stdout lines that are not JSON-lines events
// (events become metrics; they are not repeated here), one line per line, in
// the order the daemon read them (stdout and stderr are separate pipes, so
// lines of the two streams written within one daemon tick may swap). Lines
// of ranks other than 0 start with "[rank R] ".
//
//   <trial dir>/logs/attempt-<N>.log      the newest bytes
//   <trial dir>/logs/attempt-<N>.log.1    the bytes before (rotated)
//
// Bounded: when the file would pass `max_bytes` it is renamed to ".1"
// (replacing the older one) and a new file starts, so an attempt keeps at
// most 2 x max_bytes on disk. The last kTailBytes are also kept in memory for
// Tail(), which the daemon ships to the coordinator when the attempt ends and
// when a reader asks for a running attempt's log.
//
// Secrets: every line passes a SecretRedactor first, so the values of
// secret-looking environment variables (tokens, API keys, passwords) never
// reach the file, the coordinator or its database.
//
// Thread-compatible: the daemon's loop thread owns it.
#ifndef SMOE_WORKER_DAEMON_ATTEMPT_LOG_H_
#define SMOE_WORKER_DAEMON_ATTEMPT_LOG_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace smoe::worker {

// Replaces known secret values in text with "[REDACTED]".
class SecretRedactor {
 public:
  SecretRedactor() = default;
  // Values shorter than 6 characters are ignored (they would redact
  // ordinary words).
  explicit SecretRedactor(std::vector<std::string> secrets);

  // The values of the variables in `envp` (NAME=VALUE, null-terminated)
  // whose upper-cased name contains TOKEN, SECRET, PASSWORD, PASSWD,
  // CREDENTIAL or API_KEY, or ends in _KEY.
  static SecretRedactor FromEnvironment(char** envp);

  static bool IsSecretName(absl::string_view name);

  std::string Redact(std::string text) const;
  size_t size() const { return secrets_.size(); }

 private:
  std::vector<std::string> secrets_;  // longest first
};

struct LogTailText {
  std::string text;         // the last bytes, from a line start
  int64_t total_bytes = 0;  // bytes the log has had in all
};

class AttemptLog {
 public:
  static constexpr int64_t kDefaultMaxBytes = 4 << 20;  // per file
  static constexpr size_t kTailBytes = 64 << 10;
  // Longer lines are cut (with a note) before they are written.
  static constexpr size_t kMaxLineBytes = 16 << 10;

  // Opens (appending to) <trial_dir>/logs/attempt-<attempt>.log, creating the
  // logs directory. `redactor` may be null; it must outlive the log.
  // Errors: Internal naming the path.
  static absl::StatusOr<std::unique_ptr<AttemptLog>> Open(
      const std::string& trial_dir, int attempt, int64_t max_bytes,
      const SecretRedactor* redactor);
  ~AttemptLog();
  AttemptLog(const AttemptLog&) = delete;
  AttemptLog& operator=(const AttemptLog&) = delete;

  // Appends one line ('\n' added), redacted. A write error is logged once
  // and the line kept in the in-memory tail only.
  void Append(absl::string_view line);
  // Writes buffered bytes to the file.
  void Flush();

  // The last `max_bytes` (at most kTailBytes) of the log, starting at a line
  // boundary (a single line longer than that is cut at its start).
  LogTailText Tail(size_t max_bytes = kTailBytes) const;
  int64_t total_bytes() const { return total_bytes_; }
  const std::string& path() const { return path_; }

 private:
  AttemptLog(std::string path, int64_t max_bytes,
             const SecretRedactor* redactor, std::FILE* file,
             int64_t file_bytes);
  void Rotate();

  const std::string path_;
  const int64_t max_bytes_;
  const SecretRedactor* const redactor_;
  std::FILE* file_;
  int64_t file_bytes_;       // bytes in the current file
  int64_t total_bytes_ = 0;  // bytes appended by this object
  std::string tail_;         // the last 1-2 x kTailBytes appended
  bool write_error_logged_ = false;
};

}  // namespace smoe::worker

#endif  // SMOE_WORKER_DAEMON_ATTEMPT_LOG_H_
