// Copyright 2026 SMoE Lab authors.
#include "common/logging.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
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

}  // namespace

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
  const std::string line = stream_.str();
  // One write(2) per line keeps concurrent lines whole.
  ssize_t unused = ::write(STDERR_FILENO, line.data(), line.size());
  (void)unused;
  (void)level_;
}

}  // namespace logging_internal
}  // namespace smoe
