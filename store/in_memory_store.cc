// Copyright 2026 SMoE Lab authors.
//
// File: store/in_memory_store.cc

#include "store/in_memory_store.h"

#include <algorithm>
#include <limits>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "store/store_util.h"

namespace smoe::store {
namespace {

using internal::Truncate;

SweepRecord Normalized(SweepRecord r) {
  r.created_at = Truncate(r.created_at);
  r.updated_at = Truncate(r.updated_at);
  return r;
}

TrialRecord Normalized(TrialRecord r) {
  r.lease_expires_at = Truncate(r.lease_expires_at);
  r.created_at = Truncate(r.created_at);
  r.updated_at = Truncate(r.updated_at);
  return r;
}

AttemptRecord Normalized(AttemptRecord r) {
  r.started_at = Truncate(r.started_at);
  r.ended_at = Truncate(r.ended_at);
  return r;
}

WorkerRecord Normalized(WorkerRecord r) {
  r.registered_at = Truncate(r.registered_at);
  r.last_heartbeat_at = Truncate(r.last_heartbeat_at);
  return r;
}

}  // namespace

bool InMemoryStore::TrialKnown(
    const std::string& id,
    const std::set<absl::string_view>& batch_trials) const {
  return batch_trials.count(id) > 0 || trials_.find(id) != trials_.end();
}

absl::Status InMemoryStore::Validate(const WriteBatch& batch) const {
  std::set<absl::string_view> batch_sweeps;
  std::set<absl::string_view> batch_trials;
  for (const SweepRecord& s : batch.sweeps) {
    SMOE_RETURN_IF_ERROR(internal::CheckNonEmptyId("sweep", s.sweep_id));
    batch_sweeps.insert(s.sweep_id);
  }
  for (const TrialRecord& t : batch.trials) {
    SMOE_RETURN_IF_ERROR(internal::CheckNonEmptyId("trial", t.trial_id));
    if (batch_sweeps.count(t.sweep_id) == 0 &&
        sweeps_.find(t.sweep_id) == sweeps_.end()) {
      return internal::MissingSweep(t);
    }
    batch_trials.insert(t.trial_id);
  }
  for (const AttemptRecord& a : batch.attempts) {
    if (!TrialKnown(a.trial_id, batch_trials)) return internal::MissingTrial(a);
  }
  for (const MetricRecord& m : batch.metrics) {
    if (!TrialKnown(m.trial_id, batch_trials)) return internal::MissingTrial(m);
  }
  for (const WorkerRecord& w : batch.workers) {
    SMOE_RETURN_IF_ERROR(internal::CheckNonEmptyId("worker", w.worker_id));
  }
  for (const WriteBatch::Result& r : batch.results) {
    if (!TrialKnown(r.trial_id, batch_trials)) return internal::MissingTrial(r);
  }
  for (const DecisionRecord& d : batch.decisions) {
    if (batch_sweeps.count(d.sweep_id) == 0 &&
        sweeps_.find(d.sweep_id) == sweeps_.end()) {
      return internal::MissingSweep(d);
    }
  }
  for (const CheckpointRecord& c : batch.checkpoints) {
    if (!TrialKnown(c.trial_id, batch_trials)) return internal::MissingTrial(c);
  }
  for (const TrialLogRecord& l : batch.trial_logs) {
    if (!TrialKnown(l.trial_id, batch_trials)) return internal::MissingTrial(l);
  }
  for (const std::string& id : batch.deleted_sweeps) {
    if (batch_sweeps.count(id) == 0 && sweeps_.find(id) == sweeps_.end()) {
      return internal::MissingDeletedSweep(id);
    }
  }
  return absl::OkStatus();
}

absl::Status InMemoryStore::Commit(const WriteBatch& batch) {
  absl::MutexLock lock(&mu_);
  SMOE_RETURN_IF_ERROR(Validate(batch));
  for (const SweepRecord& s : batch.sweeps) {
    auto it = sweeps_.find(s.sweep_id);
    if (it == sweeps_.end()) {
      sweeps_.emplace(s.sweep_id, StoredSweep{next_seq_++, Normalized(s)});
    } else {
      it->second.record = Normalized(s);
    }
  }
  for (const TrialRecord& t : batch.trials) {
    trials_[t.trial_id] = Normalized(t);
  }
  for (const AttemptRecord& a : batch.attempts) {
    attempts_[{a.trial_id, a.attempt}] = Normalized(a);
  }
  for (const MetricRecord& m : batch.metrics) {
    metrics_[{m.trial_id, m.name, m.step}] = m;
  }
  for (const WorkerRecord& w : batch.workers) {
    workers_[w.worker_id] = Normalized(w);
  }
  for (const WriteBatch::Result& r : batch.results) {
    results_[r.trial_id] = StoredResult{r.duration_s, r.values};
  }
  for (DecisionRecord d : batch.decisions) {
    d.seq = decisions_.empty() ? 1 : decisions_.back().seq + 1;
    d.at = Truncate(d.at);
    decisions_.push_back(std::move(d));
  }
  for (const CheckpointRecord& c : batch.checkpoints) {
    CheckpointRecord n = c;
    n.created_at = Truncate(n.created_at);
    checkpoints_[{c.trial_id, c.step}] = std::move(n);
  }
  for (const auto& key : batch.deleted_checkpoints) checkpoints_.erase(key);
  for (const TrialLogRecord& l : batch.trial_logs) {
    TrialLogRecord n = l;
    n.updated_at = Truncate(n.updated_at);
    trial_logs_[{l.trial_id, l.attempt}] = std::move(n);
  }
  for (const std::string& id : batch.deleted_sweeps) DeleteSweepLocked(id);
  return absl::OkStatus();
}

void InMemoryStore::DeleteSweepLocked(const std::string& sweep_id) {
  std::set<std::string> ids;
  for (auto it = trials_.begin(); it != trials_.end();) {
    if (it->second.sweep_id == sweep_id) {
      ids.insert(it->first);
      it = trials_.erase(it);
    } else {
      ++it;
    }
  }
  // Rows keyed by (trial_id, ...); a linear pass per table (tests only).
  auto erase_rows = [&ids](auto* rows) {
    for (auto it = rows->begin(); it != rows->end();) {
      it = ids.count(std::get<0>(it->first)) ? rows->erase(it) : ++it;
    }
  };
  erase_rows(&attempts_);
  erase_rows(&metrics_);
  erase_rows(&checkpoints_);
  erase_rows(&trial_logs_);
  for (const std::string& id : ids) results_.erase(id);
  decisions_.erase(std::remove_if(decisions_.begin(), decisions_.end(),
                                  [&](const DecisionRecord& d) {
                                    return d.sweep_id == sweep_id;
                                  }),
                   decisions_.end());
  sweeps_.erase(sweep_id);
}

absl::StatusOr<std::vector<DecisionRecord>> InMemoryStore::ListDecisions(
    absl::string_view sweep_id, int64_t after_seq, int64_t limit) {
  absl::MutexLock lock(&mu_);
  std::vector<DecisionRecord> out;
  for (const DecisionRecord& d : decisions_) {
    if (d.sweep_id != sweep_id || d.seq <= after_seq) continue;
    if (limit > 0 && static_cast<int64_t>(out.size()) >= limit) break;
    out.push_back(d);
  }
  return out;
}

absl::StatusOr<int64_t> InMemoryStore::CountDecisions(
    absl::string_view sweep_id) {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(std::count_if(
      decisions_.begin(), decisions_.end(),
      [&](const DecisionRecord& d) { return d.sweep_id == sweep_id; }));
}

absl::StatusOr<std::vector<DecisionRecord>> InMemoryStore::ListLastDecisions(
    absl::string_view sweep_id, int64_t limit) {
  return ListDecisionsBefore(sweep_id, std::numeric_limits<int64_t>::max(),
                             limit);
}

absl::StatusOr<std::vector<DecisionRecord>> InMemoryStore::ListDecisionsBefore(
    absl::string_view sweep_id, int64_t before_seq, int64_t limit) {
  absl::MutexLock lock(&mu_);
  std::vector<DecisionRecord> out;
  for (auto it = decisions_.rbegin();
       it != decisions_.rend() && static_cast<int64_t>(out.size()) < limit;
       ++it) {
    if (it->sweep_id == sweep_id && it->seq < before_seq) out.push_back(*it);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

absl::StatusOr<SweepRecord> InMemoryStore::GetSweep(
    absl::string_view sweep_id) {
  absl::MutexLock lock(&mu_);
  auto it = sweeps_.find(sweep_id);
  if (it == sweeps_.end()) {
    return absl::NotFoundError(absl::StrCat("no sweep '", sweep_id, "'"));
  }
  return it->second.record;
}

absl::StatusOr<TrialRecord> InMemoryStore::GetTrial(
    absl::string_view trial_id) {
  absl::MutexLock lock(&mu_);
  auto it = trials_.find(trial_id);
  if (it == trials_.end()) {
    return absl::NotFoundError(absl::StrCat("no trial '", trial_id, "'"));
  }
  return it->second;
}

absl::StatusOr<std::vector<SweepRecord>> InMemoryStore::ListSweeps() {
  absl::MutexLock lock(&mu_);
  std::vector<const StoredSweep*> sorted;
  sorted.reserve(sweeps_.size());
  for (const auto& [id, s] : sweeps_) sorted.push_back(&s);
  std::sort(sorted.begin(), sorted.end(),
            [](const StoredSweep* a, const StoredSweep* b) {
              return std::tie(a->record.created_at, a->seq) <
                     std::tie(b->record.created_at, b->seq);
            });
  std::vector<SweepRecord> out;
  out.reserve(sorted.size());
  for (const StoredSweep* s : sorted) out.push_back(s->record);
  return out;
}

std::vector<const TrialRecord*> InMemoryStore::SortedTrials(
    absl::string_view sweep_id) const {
  std::vector<const TrialRecord*> sorted;
  for (const auto& [id, t] : trials_) {
    if (sweep_id.empty() || t.sweep_id == sweep_id) sorted.push_back(&t);
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const TrialRecord* a, const TrialRecord* b) {
              return std::tie(a->sweep_id, a->ordinal, a->trial_id) <
                     std::tie(b->sweep_id, b->ordinal, b->trial_id);
            });
  return sorted;
}

absl::StatusOr<std::vector<TrialRecord>> InMemoryStore::ListTrials(
    absl::string_view sweep_id) {
  absl::MutexLock lock(&mu_);
  std::vector<TrialRecord> out;
  for (const TrialRecord* t : SortedTrials(sweep_id)) out.push_back(*t);
  return out;
}

absl::StatusOr<std::vector<AttemptRecord>> InMemoryStore::ListAttempts(
    absl::string_view trial_id) {
  absl::MutexLock lock(&mu_);
  std::vector<AttemptRecord> out;
  auto it = attempts_.lower_bound(
      {std::string(trial_id), std::numeric_limits<int>::min()});
  for (; it != attempts_.end() && it->first.first == trial_id; ++it) {
    out.push_back(it->second);
  }
  return out;
}

absl::StatusOr<std::vector<WorkerRecord>> InMemoryStore::ListWorkers() {
  absl::MutexLock lock(&mu_);
  std::vector<WorkerRecord> out;
  out.reserve(workers_.size());
  for (const auto& [id, w] : workers_) out.push_back(w);
  return out;
}

absl::StatusOr<std::vector<MetricRecord>> InMemoryStore::ListMetrics(
    absl::string_view trial_id, std::optional<std::string> name) {
  absl::MutexLock lock(&mu_);
  std::vector<MetricRecord> out;
  auto it = metrics_.lower_bound({std::string(trial_id), name.value_or(""),
                                  std::numeric_limits<int64_t>::min()});
  for (; it != metrics_.end() && std::get<0>(it->first) == trial_id; ++it) {
    if (name.has_value() && std::get<1>(it->first) != *name) break;
    out.push_back(it->second);
  }
  return out;
}

absl::StatusOr<std::vector<TrialSummary>> InMemoryStore::ListSummaries(
    absl::string_view sweep_id) {
  absl::MutexLock lock(&mu_);
  std::vector<TrialSummary> out;
  for (const TrialRecord* t : SortedTrials(sweep_id)) {
    out.push_back(SummaryLocked(*t));
  }
  return out;
}

absl::StatusOr<std::vector<TrialSummary>> InMemoryStore::ListSummariesOf(
    absl::string_view sweep_id, const std::vector<std::string>& trial_ids) {
  absl::MutexLock lock(&mu_);
  std::vector<const TrialRecord*> found;
  for (const std::string& id : trial_ids) {
    auto it = trials_.find(id);
    if (it != trials_.end() && it->second.sweep_id == sweep_id) {
      found.push_back(&it->second);
    }
  }
  std::sort(found.begin(), found.end(),
            [](const TrialRecord* a, const TrialRecord* b) {
              return std::tie(a->ordinal, a->trial_id) <
                     std::tie(b->ordinal, b->trial_id);
            });
  found.erase(std::unique(found.begin(), found.end()), found.end());
  std::vector<TrialSummary> out;
  for (const TrialRecord* t : found) out.push_back(SummaryLocked(*t));
  return out;
}

TrialSummary InMemoryStore::SummaryLocked(const TrialRecord& t) const {
  TrialSummary s;
  s.trial_id = t.trial_id;
  s.sweep_id = t.sweep_id;
  s.params_json = t.params_json;
  s.seed = t.seed;
  s.state = t.state;
  s.attempt = t.attempt;
  s.worker_id = t.worker_id;
  if (s.worker_id.empty()) {
    auto a = attempts_.find({t.trial_id, t.attempt});
    if (a != attempts_.end()) s.worker_id = a->second.worker_id;
  }
  auto r = results_.find(t.trial_id);
  if (r != results_.end()) {
    s.duration_s = r->second.duration_s;
    s.results = r->second.values;
  }
  s.last_error = t.last_error;
  for (int n = t.attempt; n >= 1; --n) {
    auto a = attempts_.find({t.trial_id, n});
    if (a != attempts_.end() && a->second.outcome != AttemptOutcome::kRunning) {
      s.last_exit_code = a->second.exit_code;
      break;
    }
  }
  return s;
}

absl::StatusOr<std::vector<CheckpointRecord>> InMemoryStore::ListCheckpoints(
    absl::string_view trial_id) {
  absl::MutexLock lock(&mu_);
  std::vector<CheckpointRecord> out;
  for (const auto& [key, c] : checkpoints_) {
    if (trial_id.empty() || key.first == trial_id) out.push_back(c);
  }
  return out;
}

absl::StatusOr<std::vector<TrialLogRecord>> InMemoryStore::ListTrialLogs(
    absl::string_view trial_id) {
  absl::MutexLock lock(&mu_);
  std::vector<TrialLogRecord> out;
  for (auto it = trial_logs_.lower_bound({std::string(trial_id), 0});
       it != trial_logs_.end() && it->first.first == trial_id; ++it) {
    out.push_back(it->second);
  }
  return out;
}

}  // namespace smoe::store
