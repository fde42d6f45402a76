// Copyright 2026 SMoE Lab authors.
//
// File: store/experiment_store.cc

#include "store/experiment_store.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "common/status_macros.h"

namespace smoe::store {

absl::StatusOr<std::vector<AttemptRecord>> ExperimentStore::ListSweepAttempts(
    absl::string_view sweep_id) {
  SMOE_ASSIGN_OR_RETURN(std::vector<TrialRecord> trials, ListTrials(sweep_id));
  std::vector<std::pair<std::string, const TrialRecord*>> by_id;
  by_id.reserve(trials.size());
  for (const TrialRecord& t : trials) by_id.emplace_back(t.trial_id, &t);
  std::sort(by_id.begin(), by_id.end());
  std::vector<AttemptRecord> out;
  for (const auto& [id, t] : by_id) {
    SMOE_ASSIGN_OR_RETURN(std::vector<AttemptRecord> a, ListAttempts(id));
    for (AttemptRecord& r : a) out.push_back(std::move(r));
  }
  return out;
}

absl::StatusOr<std::vector<AttemptRecord>>
ExperimentStore::ListSweepAttemptsWithPrefix(
    absl::string_view sweep_id, absl::string_view trial_id_prefix) {
  SMOE_ASSIGN_OR_RETURN(std::vector<AttemptRecord> all,
                        ListSweepAttempts(sweep_id));
  std::vector<AttemptRecord> out;
  for (AttemptRecord& a : all) {
    if (absl::StartsWith(a.trial_id, trial_id_prefix)) {
      out.push_back(std::move(a));
    }
  }
  return out;
}

absl::StatusOr<int64_t> ExperimentStore::CountDecisions(
    absl::string_view sweep_id) {
  SMOE_ASSIGN_OR_RETURN(std::vector<DecisionRecord> log,
                        ListDecisions(sweep_id, 0, 0));
  return static_cast<int64_t>(log.size());
}

absl::StatusOr<std::vector<DecisionRecord>> ExperimentStore::ListLastDecisions(
    absl::string_view sweep_id, int64_t limit) {
  if (limit <= 0) return std::vector<DecisionRecord>();
  SMOE_ASSIGN_OR_RETURN(std::vector<DecisionRecord> log,
                        ListDecisions(sweep_id, 0, 0));
  if (static_cast<int64_t>(log.size()) > limit) {
    log.erase(log.begin(), log.end() - limit);
  }
  return log;
}

absl::StatusOr<std::vector<DecisionRecord>>
ExperimentStore::ListDecisionsBefore(absl::string_view sweep_id,
                                     int64_t before_seq, int64_t limit) {
  if (limit <= 0) return std::vector<DecisionRecord>();
  SMOE_ASSIGN_OR_RETURN(std::vector<DecisionRecord> log,
                        ListDecisions(sweep_id, 0, 0));
  auto end = std::lower_bound(
      log.begin(), log.end(), before_seq,
      [](const DecisionRecord& d, int64_t seq) { return d.seq < seq; });
  auto begin = end - std::min<int64_t>(limit, end - log.begin());
  return std::vector<DecisionRecord>(std::make_move_iterator(begin),
                                     std::make_move_iterator(end));
}

}  // namespace smoe::store
