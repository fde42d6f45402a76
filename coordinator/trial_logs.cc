// Copyright 2026 SMoE Lab authors.
#include "coordinator/trial_logs.h"

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace smoe::coordinator {

std::string LastBytesAtLineStart(std::string text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t cut = text.size() - max_bytes;
  const size_t nl = text.find('\n', cut);
  if (nl != std::string::npos && nl + 1 < text.size()) {
    cut = nl + 1;
  } else {
    // One long line: do not start inside a UTF-8 sequence.
    while (cut < text.size() &&
           (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
      ++cut;
    }
  }
  text.erase(0, cut);
  return text;
}

void TrialLogs::DropOldLocked(absl::Time now) {
  for (auto it = wanted_.begin(); it != wanted_.end();) {
    it = now - it->second > kWantWindow ? wanted_.erase(it) : std::next(it);
  }
  // A live tail nobody finalised (the attempt was lost) is kept for an
  // hour: a reader of a lost attempt still sees its last tail.
  for (auto it = live_.begin(); it != live_.end();) {
    it = now - it->second.at > absl::Hours(1) ? live_.erase(it) : std::next(it);
  }
}

bool TrialLogs::Wanted(const std::string& trial_id, int attempt) {
  absl::MutexLock lock(&mu_);
  auto it = wanted_.find({trial_id, attempt});
  return it != wanted_.end() && clock_->Now() - it->second <= kWantWindow;
}

void TrialLogs::PutLive(const std::string& trial_id, int attempt,
                        std::string text, int64_t total_bytes) {
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  DropOldLocked(now);
  live_[{trial_id, attempt}] = Live{
      LastBytesAtLineStart(std::move(text), kMaxTextBytes), total_bytes, now};
}

absl::Status TrialLogs::PutFinal(const std::string& trial_id, int attempt,
                                 std::string text, int64_t total_bytes) {
  store::TrialLogRecord r;
  r.trial_id = trial_id;
  r.attempt = attempt;
  r.text = LastBytesAtLineStart(std::move(text), kMaxTextBytes);
  r.total_bytes = std::max<int64_t>(total_bytes, 0);
  r.updated_at = clock_->Now();
  store::WriteBatch b;
  b.trial_logs.push_back(std::move(r));
  SMOE_RETURN_IF_ERROR(store_->Commit(b));
  absl::MutexLock lock(&mu_);
  live_.erase({trial_id, attempt});
  wanted_.erase({trial_id, attempt});
  return absl::OkStatus();
}

absl::StatusOr<TrialLogView> TrialLogs::Read(const std::string& trial_id,
                                             int attempt) {
  if (attempt < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("attempt: must be >= 0 (0 = the latest), got ", attempt));
  }
  SMOE_RETURN_IF_ERROR(store_->GetTrial(trial_id).status());
  SMOE_ASSIGN_OR_RETURN(std::vector<store::AttemptRecord> attempts,
                        store_->ListAttempts(trial_id));
  TrialLogView v;
  v.trial_id = trial_id;
  for (const store::AttemptRecord& a : attempts)
    v.attempts.push_back(a.attempt);
  if (attempts.empty()) {
    if (attempt != 0) {
      return absl::NotFoundError(absl::StrCat(
          "trial '", trial_id, "' has not run yet: no attempt ", attempt));
    }
    return v;
  }
  const store::AttemptRecord* chosen = &attempts.back();
  if (attempt != 0) {
    chosen = nullptr;
    for (const store::AttemptRecord& a : attempts) {
      if (a.attempt == attempt) chosen = &a;
    }
    if (chosen == nullptr) {
      return absl::NotFoundError(
          absl::StrCat("trial '", trial_id, "' has no attempt ", attempt,
                       " (attempts: ", absl::StrJoin(v.attempts, ", "), ")"));
    }
  }
  v.attempt = chosen->attempt;
  v.running = chosen->outcome == store::AttemptOutcome::kRunning;
  auto stored = [&]() -> absl::StatusOr<bool> {
    SMOE_ASSIGN_OR_RETURN(std::vector<store::TrialLogRecord> rows,
                          store_->ListTrialLogs(trial_id));
    for (const store::TrialLogRecord& r : rows) {
      if (r.attempt != v.attempt) continue;
      v.text = r.text;
      v.total_bytes = r.total_bytes;
      v.as_of = r.updated_at;
      return true;
    }
    return false;
  };
  if (!v.running) {
    SMOE_ASSIGN_OR_RETURN(bool found, stored());
    if (found) return v;
  }
  {
    const absl::Time now = clock_->Now();
    absl::MutexLock lock(&mu_);
    DropOldLocked(now);
    if (v.running) wanted_[{trial_id, v.attempt}] = now;
    if (auto it = live_.find({trial_id, v.attempt}); it != live_.end()) {
      v.text = it->second.text;
      v.total_bytes = it->second.total_bytes;
      v.as_of = it->second.at;
      return v;
    }
  }
  // Running, but its final tail is already stored (its report is on the
  // way to the scheduler).
  if (v.running) SMOE_RETURN_IF_ERROR(stored().status());
  return v;
}

void TrialLogs::Forget(const std::vector<std::string>& trial_ids) {
  absl::MutexLock lock(&mu_);
  for (const std::string& id : trial_ids) {
    live_.erase(live_.lower_bound({id, INT_MIN}),
                live_.upper_bound({id, INT_MAX}));
    wanted_.erase(wanted_.lower_bound({id, INT_MIN}),
                  wanted_.upper_bound({id, INT_MAX}));
  }
}

}  // namespace smoe::coordinator
