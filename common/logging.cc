// Copyright 2026 SMoE Lab authors.
#include "common/logging.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace smoe {
namespace {

LogLevel LevelFromEnv() {
  const char* env = std::getenv("SMOE_LOG_LEVEL");
  if (env == nullptr) return LogLevel::kInfo;
  const std::string v = absl::AsciiStrToUpper(env);
  if (v == "DEBUG") return LogLevel::kDebug;
  if (v == "WARNING") return LogLevel::kWarning;
  if (v == "ERROR") return LogLevel::kError;
  return LogLevel::kInfo;
}

std::atomic<int>& MinLevel() {
  static std::atomic<int> level{static_cast<int>(LevelFromEnv())};
  return level;
}

char LevelChar(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return 'D';
    case LogLevel::kInfo:
      return 'I';
    case LogLevel::kWarning:
      return 'W';
    case LogLevel::kError:
      return 'E';
  }
  return '?';
}

// The status line (SetStatusLine) and where it and log lines go.
struct StatusState {
  absl::Mutex mu;
  int fd ABSL_GUARDED_BY(mu) = STDERR_FILENO;
  int terminal ABSL_GUARDED_BY(mu) = -1;  // -1: ask isatty(fd) once
  std::string line ABSL_GUARDED_BY(mu);   // shown now (terminal) or last
  bool shown ABSL_GUARDED_BY(mu) = false;
};

StatusState& Status() {
  static StatusState* state = new StatusState();
  return *state;
}

bool IsTerminalLocked(StatusState& st) ABSL_EXCLUSIVE_LOCKS_REQUIRED(st.mu) {
  if (st.terminal < 0) st.terminal = ::isatty(st.fd) ? 1 : 0;
  return st.terminal == 1;
}

void WriteAll(int fd, const std::string& text) {
  // One write(2) per call keeps concurrent lines whole.
  ssize_t unused = ::write(fd, text.data(), text.size());
  (void)unused;
}

// Writes `text` (whole lines) above the status line, which is redrawn below.
void WriteLines(const std::string& text) {
  StatusState& st = Status();
  absl::MutexLock lock(&st.mu);
  if (st.shown && IsTerminalLocked(st)) {
    WriteAll(st.fd, absl::StrCat("\r\033[K", text, st.line));
  } else {
    WriteAll(st.fd, text);
  }
}

}  // namespace

void SetStatusLine(absl::string_view line) {
  StatusState& st = Status();
  absl::MutexLock lock(&st.mu);
  if (IsTerminalLocked(st)) {
    if (st.shown && st.line == line) return;
    WriteAll(st.fd, absl::StrCat("\r\033[K", line));
    st.shown = true;
  } else if (st.line != line) {
    WriteAll(st.fd, absl::StrCat(line, "\n"));
  }
  st.line = std::string(line);
}

void EndStatusLine() {
  StatusState& st = Status();
  absl::MutexLock lock(&st.mu);
  if (st.shown && IsTerminalLocked(st)) WriteAll(st.fd, "\n");
  st.shown = false;
  st.line.clear();
}

void WriteAboveStatusLine(absl::string_view text) {
  std::string lines(text);
  if (lines.empty() || lines.back() != '\n') lines.push_back('\n');
  WriteLines(lines);
}

namespace logging_internal {

void SetStatusOutputForTest(int fd, bool terminal) {
  StatusState& st = Status();
  absl::MutexLock lock(&st.mu);
  st.fd = fd;
  st.terminal = terminal ? 1 : 0;
  st.shown = false;
  st.line.clear();
}

}  // namespace logging_internal

void SetMinLogLevel(LogLevel level) {
  MinLevel().store(static_cast<int>(level));
}

LogLevel MinLogLevel() { return static_cast<LogLevel>(MinLevel().load()); }

std::string RedactSecret(absl::string_view secret) {
  return absl::StrCat("<redacted:", secret.size(), " chars>");
}

namespace logging_internal {

LogMessage::LogMessage(LogLevel level, const char* file, int line)
    : level_(level) {
  const char* base = std::strrchr(file, '/');
  base = base == nullptr ? file : base + 1;
  stream_ << LevelChar(level)
          << absl::FormatTime("%Y%m%d %H:%M:%E6S", absl::Now(),
                              absl::UTCTimeZone())
          << ' ' << base << ':' << line << "] ";
}

LogMessage::~LogMessage() {
  stream_ << '\n';
  WriteLines(stream_.str());
  (void)level_;
}

}  // namespace logging_internal
}  // namespace smoe
