// Copyright 2026 SMoE Lab authors.
#include "worker/daemon/attempt_log.h"

#include <errno.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/logging.h"
#include "common/utf8.h"

namespace smoe::worker {

SecretRedactor::SecretRedactor(std::vector<std::string> secrets) {
  for (std::string& s : secrets) {
    if (s.size() >= 6) secrets_.push_back(std::move(s));
  }
  std::sort(secrets_.begin(), secrets_.end(),
            [](const std::string& a, const std::string& b) {
              return a.size() > b.size();
            });
  secrets_.erase(std::unique(secrets_.begin(), secrets_.end()), secrets_.end());
}

bool SecretRedactor::IsSecretName(absl::string_view name) {
  const std::string upper = absl::AsciiStrToUpper(name);
  for (const char* word :
       {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY"}) {
    if (absl::StrContains(upper, word)) return true;
  }
  return absl::EndsWith(upper, "_KEY");
}

SecretRedactor SecretRedactor::FromEnvironment(char** envp) {
  std::vector<std::string> secrets;
  for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
    absl::string_view kv(*e);
    const size_t eq = kv.find('=');
    if (eq == absl::string_view::npos) continue;
    if (IsSecretName(kv.substr(0, eq))) {
      secrets.emplace_back(kv.substr(eq + 1));
    }
  }
  return SecretRedactor(std::move(secrets));
}

std::string SecretRedactor::Redact(std::string text) const {
  for (const std::string& s : secrets_) {
    if (absl::StrContains(text, s)) {
      absl::StrReplaceAll({{s, "[REDACTED]"}}, &text);
    }
  }
  return text;
}

absl::StatusOr<std::unique_ptr<AttemptLog>> AttemptLog::Open(
    const std::string& trial_dir, int attempt, int64_t max_bytes,
    const SecretRedactor* redactor) {
  const std::string dir = trial_dir + "/logs";
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::InternalError(
        absl::StrCat("cannot create directory '", dir, "': ", strerror(errno)));
  }
  const std::string path = absl::StrCat(dir, "/attempt-", attempt, ".log");
  std::FILE* f = std::fopen(path.c_str(), "ae");
  if (f == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot open '", path, "': ", strerror(errno)));
  }
  struct stat st;
  const int64_t size = fstat(fileno(f), &st) == 0 ? st.st_size : 0;
  return std::unique_ptr<AttemptLog>(new AttemptLog(
      path, std::max<int64_t>(max_bytes, 1024), redactor, f, size));
}

AttemptLog::AttemptLog(std::string path, int64_t max_bytes,
                       const SecretRedactor* redactor, std::FILE* file,
                       int64_t file_bytes)
    : path_(std::move(path)),
      max_bytes_(max_bytes),
      redactor_(redactor),
      file_(file),
      file_bytes_(file_bytes),
      total_bytes_(file_bytes) {}

AttemptLog::~AttemptLog() {
  if (file_ != nullptr) std::fclose(file_);
}

void AttemptLog::Rotate() {
  if (file_ != nullptr) std::fclose(file_);
  file_ = nullptr;
  const std::string old = path_ + ".1";
  if (std::rename(path_.c_str(), old.c_str()) != 0) {
    SMOE_LOG(WARNING) << "cannot rotate '" << path_ << "': " << strerror(errno);
  }
  file_ = std::fopen(path_.c_str(), "we");
  file_bytes_ = 0;
  if (file_ == nullptr && !write_error_logged_) {
    write_error_logged_ = true;
    SMOE_LOG(WARNING) << "cannot reopen '" << path_ << "': " << strerror(errno);
  }
}

void AttemptLog::Append(absl::string_view raw) {
  // Cut on a character boundary; bytes that are not UTF-8 (a Latin-1
  // message, a cut character) become U+FFFD here, where they enter: the log
  // tail travels in proto3 strings and JSON (issue 36 item 1).
  const size_t keep = Utf8CutBefore(raw, kMaxLineBytes);
  std::string line = ToValidUtf8(raw.substr(0, keep));
  if (raw.size() > keep) {
    absl::StrAppend(&line, " [... ", raw.size() - keep, " bytes cut]");
  }
  if (redactor_ != nullptr) line = redactor_->Redact(std::move(line));
  line.push_back('\n');
  const int64_t n = static_cast<int64_t>(line.size());
  if (file_bytes_ > 0 && file_bytes_ + n > max_bytes_) Rotate();
  if (file_ != nullptr) {
    if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() &&
        !write_error_logged_) {
      write_error_logged_ = true;
      SMOE_LOG(WARNING) << "cannot write '" << path_
                        << "': " << strerror(errno);
    }
  }
  file_bytes_ += n;
  total_bytes_ += n;
  tail_ += line;
  if (tail_.size() > 2 * kTailBytes) {
    // Keep about kTailBytes, from a line start.
    size_t cut = Utf8CharStartAtOrAfter(tail_, tail_.size() - kTailBytes);
    const size_t nl = tail_.find('\n', cut);
    if (nl != std::string::npos && nl + 1 < tail_.size()) cut = nl + 1;
    tail_.erase(0, cut);
  }
}

void AttemptLog::Flush() {
  if (file_ != nullptr) std::fflush(file_);
}

LogTailText AttemptLog::Tail(size_t max_bytes) const {
  max_bytes = std::min(max_bytes, kTailBytes);
  LogTailText out;
  out.total_bytes = total_bytes_;
  if (tail_.size() <= max_bytes) {
    out.text = tail_;  // starts at a line start
    return out;
  }
  out.text =
      tail_.substr(Utf8CharStartAtOrAfter(tail_, tail_.size() - max_bytes));
  // Start after the first line break, unless that drops everything.
  const size_t nl = out.text.find('\n');
  if (nl != std::string::npos && nl + 1 < out.text.size()) {
    out.text.erase(0, nl + 1);
  }
  return out;
}

}  // namespace smoe::worker
