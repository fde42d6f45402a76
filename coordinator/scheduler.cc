// Copyright 2026 SMoE Lab authors.
#include "coordinator/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "trials/command_kind.h"

namespace smoe::coordinator {
namespace {

using store::AttemptOutcome;
using store::AttemptRecord;
using store::TrialRecord;
using store::TrialState;
using store::WriteBatch;
using sweeps::Axis;
using sweeps::CommandSpec;
using sweeps::CountPoints;
using sweeps::ExpandedTrial;
using sweeps::ExpandGrid;
using sweeps::ExtendAxis;
using sweeps::ParseOptions;
using sweeps::ParseSweepYaml;
using sweeps::Resources;
using sweeps::SameSchema;
using sweeps::SweepSpec;
using sweeps::SweepSpecToYaml;
using sweeps::ValidateTrialParams;

constexpr size_t kMaxChangeLog = 200000;

// True when refine would see the same point (NaN values equal).
bool SameRefinePoint(const analysis::search::RefinePoint& x,
                     const analysis::search::RefinePoint& y) {
  return x.group == y.group && x.x == y.x && x.seed == y.seed &&
         x.done == y.done && x.pending == y.pending && x.stopped == y.stopped &&
         (x.value == y.value || (std::isnan(x.value) && std::isnan(y.value)));
}

void Count(StateCounts* c, TrialState s, int delta) {
  switch (s) {
    case TrialState::kPending:
      c->pending += delta;
      break;
    case TrialState::kRunning:
      c->running += delta;
      break;
    case TrialState::kSucceeded:
      c->succeeded += delta;
      break;
    case TrialState::kFailed:
      c->failed += delta;
      break;
    case TrialState::kCancelled:
      c->cancelled += delta;
      break;
    case TrialState::kPruned:
      c->pruned += delta;
      break;
  }
}

store::SweepState DerivedState(const store::SweepRecord& r,
                               const StateCounts& c) {
  if (r.state == store::SweepState::kCancelled) return r.state;
  return c.pending + c.running > 0 ? store::SweepState::kActive
                                   : store::SweepState::kCompleted;
}

// An ended attempt's device-hours (views/search_summary.h): wall time x
// max(1, gpus_per_trial); 0 for a running one.
double AttemptDeviceHours(const SweepSpec& spec, const AttemptRecord& a) {
  if (a.outcome == AttemptOutcome::kRunning || a.ended_at <= a.started_at) {
    return 0;
  }
  return absl::ToDoubleHours(a.ended_at - a.started_at) *
         std::max(1, spec.resources.gpus_per_trial);
}

// `value` for an error message: at most 64 characters, then its length.
std::string Quote(absl::string_view value) {
  if (value.size() <= 64) return absl::StrCat("'", value, "'");
  return absl::StrCat("'", value.substr(0, 64), "...' (", value.size(),
                      " bytes)");
}

// A name made of [A-Za-z0-9._:/-] (plus `extra`), 1..max_len characters.
absl::Status CheckName(absl::string_view field, absl::string_view value,
                       size_t max_len, absl::string_view extra = "") {
  if (value.empty() || value.size() > max_len) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": must be 1..", max_len, " characters, got ", Quote(value)));
  }
  for (char c : value) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                    c == '-' || c == ':' || c == '/' ||
                    extra.find(c) != absl::string_view::npos;
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": only letters, digits and '._:/-", extra,
                       "' are allowed, got ", Quote(value)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateWorkerInfo(const WorkerInfo& info) {
  if (!info.worker_id.empty()) {
    SMOE_RETURN_IF_ERROR(
        CheckName("worker_id", info.worker_id, kMaxWorkerIdLength));
  }
  if (!info.hostname.empty()) {
    SMOE_RETURN_IF_ERROR(
        CheckName("hostname", info.hostname, kMaxHostnameLength));
  }
  if (info.slots < 1 || info.slots > kMaxWorkerSlots) {
    return absl::InvalidArgumentError(absl::StrCat(
        "slots: must be 1..", kMaxWorkerSlots, ", got ", info.slots));
  }
  if (info.gpus < 0 || info.gpus > kMaxWorkerGpus) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpus: must be 0..", kMaxWorkerGpus, ", got ", info.gpus));
  }
  if (info.cpus < 0 || info.cpus > kMaxWorkerCpus) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpus: must be 0..", kMaxWorkerCpus, ", got ", info.cpus));
  }
  if (info.labels.size() > kMaxWorkerLabels) {
    return absl::InvalidArgumentError(absl::StrCat(
        "labels: at most ", kMaxWorkerLabels, ", got ", info.labels.size()));
  }
  for (const auto& [k, v] : info.labels) {
    SMOE_RETURN_IF_ERROR(CheckName("labels key", k, kMaxLabelLength));
    if (v.size() > kMaxLabelLength) {
      return absl::InvalidArgumentError(
          absl::StrCat("labels[", k, "]: at most ", kMaxLabelLength,
                       " characters, got ", Quote(v)));
    }
  }
  if (info.kinds.size() > kMaxWorkerKinds) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kinds: at most ", kMaxWorkerKinds, ", got ", info.kinds.size()));
  }
  for (const std::string& k : info.kinds) {
    SMOE_RETURN_IF_ERROR(CheckName("kinds", k, 32));
  }
  return absl::OkStatus();
}

absl::Status ValidateMetricName(absl::string_view name) {
  return trials::ValidateMetricName(name);
}

Scheduler::Scheduler(store::ExperimentStore* store, Clock* clock,
                     SchedulerOptions options)
    : store_(store), clock_(clock), options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(
    store::ExperimentStore* store, Clock* clock, SchedulerOptions options) {
  std::unique_ptr<Scheduler> s(new Scheduler(store, clock, std::move(options)));
  SMOE_RETURN_IF_ERROR(s->Load());
  return s;
}

absl::Status Scheduler::Load() {
  absl::MutexLock lock(&mu_);
  return LoadLocked(nullptr);
}

void Scheduler::FailStop(const absl::Status& why) {
  absl::MutexLock commit_lock(&commit_mu_);
  if (failed_flag_.load()) return;
  failed_ = absl::UnavailableError(why.message());
  failed_flag_.store(true);
  SMOE_LOG(ERROR) << failed_;
}

absl::Status Scheduler::Recover() {
  absl::MutexLock lock(&mu_);
  {
    absl::MutexLock commit_lock(&commit_mu_);
    if (!failed_flag_.load()) return absl::OkStatus();
    // Failed: no new leader starts (WaitDurable returns failed_ first).
    if (leader_active_) return absl::UnavailableError("a commit is in flight");
  }
  // Entries are reset in place, never erased while durable: WatchSweep
  // waits holding a pointer to its sweep's entry.
  std::map<std::string, int64_t> versions;
  for (auto& [id, s] : sweeps_) {
    versions[id] = std::max(s.version, s.durable.version);
    const uint64_t incarnation = s.incarnation;
    s = SweepEntry();
    s.incarnation = incarnation;
  }
  trials_.clear();
  running_.clear();
  workers_.clear();
  queue_.clear();
  uncaptured_.clear();
  const absl::Status st = LoadLocked(&versions);
  // Sweeps whose creation never became durable are not in the store (no
  // watcher can wait on them).
  for (auto it = sweeps_.begin(); it != sweeps_.end();) {
    it = it->second.record.sweep_id.empty() ? sweeps_.erase(it) : ++it;
  }
  if (!st.ok()) return st;
  absl::MutexLock commit_lock(&commit_mu_);
  lost_tickets_.emplace_back(durable_ticket_, last_ticket_);
  durable_ticket_ = last_ticket_;
  failed_ = absl::OkStatus();
  failed_flag_.store(false);
  SMOE_LOG(INFO) << "store commits work again: state reloaded from the store; "
                    "accepting work";
  return absl::OkStatus();
}

absl::Status Scheduler::LoadLocked(
    const std::map<std::string, int64_t>* min_versions) {
  const absl::Time now = clock_->Now();
  SMOE_ASSIGN_OR_RETURN(std::vector<store::SweepRecord> sweeps,
                        store_->ListSweeps());
  const ParseOptions unlimited = ParseOptions::Stored();
  for (store::SweepRecord& r : sweeps) {
    SweepEntry e;
    auto spec = ParseSweepYaml(r.spec_yaml, unlimited);
    if (!spec.ok()) {
      return absl::DataLossError(
          absl::StrCat("stored spec of sweep ", r.sweep_id,
                       " does not parse: ", spec.status().message()));
    }
    e.spec = std::move(*spec);
    e.record = std::move(r);
    const std::string id = e.record.sweep_id;
    SweepEntry& slot = sweeps_[id];
    // Recover() keeps each entry's incarnation (watchers wait on it).
    e.incarnation = slot.incarnation != 0 ? slot.incarnation : ++incarnations_;
    slot = std::move(e);
  }
  SMOE_ASSIGN_OR_RETURN(std::vector<store::WorkerRecord> workers,
                        store_->ListWorkers());
  for (store::WorkerRecord& w : workers) {
    // Workers reconnect on their own; give them a fresh heartbeat window.
    w.last_heartbeat_at = now;
    workers_[w.worker_id].record = std::move(w);
  }
  SMOE_ASSIGN_OR_RETURN(std::vector<TrialRecord> trials,
                        store_->ListTrials(""));
  trials_.reserve(trials_.size() + trials.size());
  for (TrialRecord& t : trials) {
    if (t.state == TrialState::kRunning) {
      // A fresh window so a worker that survived our restart keeps its lease.
      t.lease_expires_at =
          now + std::max(options_.lease_timeout, options_.restart_grace);
    }
    ApplyTrialLocked(std::move(t));
  }
  // Adaptive sweeps: reload the search mirrors and apply what the recorded
  // metrics decide that is not applied yet (nothing, unless the policy
  // changed; a decision and its state change commit together).
  for (auto& [id, s] : sweeps_) {
    if (!IsAdaptive(s.spec)) continue;
    SMOE_RETURN_IF_ERROR(LoadSearchLocked(&s));
    WriteBatch b;
    SMOE_RETURN_IF_ERROR(PlanSearchLocked(&s, &b));
    if (b.empty()) continue;
    SMOE_RETURN_IF_ERROR(store_->Commit(b));
    for (const TrialRecord& t : b.trials) ApplyTrialLocked(t);
  }
  for (auto& [id, s] : sweeps_) {
    const store::SweepState derived = DerivedState(s.record, s.counts);
    if (derived != s.record.state) {
      s.record.state = derived;
      WriteBatch b;
      b.sweeps.push_back(s.record);
      SMOE_RETURN_IF_ERROR(store_->Commit(b));
    }
  }
  if (min_versions != nullptr) {
    for (auto& [id, s] : sweeps_) {
      auto it = min_versions->find(id);
      if (it != min_versions->end()) {
        s.version = std::max(s.version, it->second + 1);
        s.changes.clear();  // watchers get a full snapshot
      }
    }
  }
  // Everything loaded is durable.
  for (const auto& [id, s] : sweeps_) uncaptured_.insert(id);
  PublishLocked(CaptureLocked());
  SMOE_LOG(INFO) << "scheduler loaded " << sweeps_.size() << " sweeps, "
                 << trials_.size() << " trials, " << running_.size()
                 << " running, " << workers_.size() << " workers";
  return absl::OkStatus();
}

void Scheduler::ApplyTrialLocked(TrialRecord next) {
  auto sit = sweeps_.find(next.sweep_id);
  if (sit == sweeps_.end()) return;  // store guarantees the parent exists
  SweepEntry& sweep = sit->second;
  auto it = trials_.find(next.trial_id);
  if (it != trials_.end()) {
    const TrialRecord& prev = it->second;
    Count(&sweep.counts, prev.state, -1);
    if (prev.state == TrialState::kPending) sweep.pending.erase(prev.ordinal);
    if (prev.state == TrialState::kRunning) {
      running_.erase(prev.trial_id);
      auto w = workers_.find(prev.worker_id);
      if (w != workers_.end()) w->second.leased.erase(prev.trial_id);
    }
  }
  Count(&sweep.counts, next.state, +1);
  if (next.state == TrialState::kPending) sweep.pending.insert(next.ordinal);
  if (next.state == TrialState::kRunning) {
    running_.insert(next.trial_id);
    workers_[next.worker_id].leased.insert(next.trial_id);
  }
  if (sweep.trial_ids.size() <= static_cast<size_t>(next.ordinal)) {
    sweep.trial_ids.resize(static_cast<size_t>(next.ordinal) + 1);
  }
  sweep.trial_ids[static_cast<size_t>(next.ordinal)] = next.trial_id;
  ++sweep.version;
  sweep.changes.emplace_back(sweep.version, next.trial_id);
  if (sweep.changes.size() > kMaxChangeLog) sweep.changes.pop_front();
  uncaptured_.insert(next.sweep_id);
  if (sweep.search_indexed) {
    // A trial the index does not know (an extension) makes the next plan
    // one from every trial, which re-indexes; a refine sweep's index takes
    // it in (refine adds points as it goes).
    if (sweep.search_info.count(next.trial_id)) {
      sweep.search_dirty.insert(next.trial_id);
    } else if (sweep.refine != nullptr &&
               SearchMaxSteps(sweep.spec, 1, [&](size_t) { return &next; }) ==
                   sweep.search_max_steps) {
      // A refine point (or an extension's trial) joins the refine index:
      // its group is re-decided by the next plan. (One whose steps could
      // change the sweep's training length re-indexes instead.)
      SearchTrialInfo info = SearchInfoOf(sweep.spec, next);
      if (info.has_axis) {
        sweep.refine->Join(info.group, next.trial_id, info.axis, next.seed);
      }
      sweep.search_info.emplace(next.trial_id, std::move(info));
      sweep.search_dirty.insert(next.trial_id);
    } else {
      sweep.search_indexed = false;
    }
  }
  // One lookup (the find above): 10^6 trials at a restart or a submit.
  if (it != trials_.end()) {
    it->second = std::move(next);
  } else {
    std::string id = next.trial_id;
    trials_.emplace(std::move(id), std::move(next));
  }
}

Scheduler::Captured Scheduler::CaptureLocked() {
  Captured out;
  out.reserve(uncaptured_.size());
  for (const std::string& id : uncaptured_) {
    const SweepEntry& s = sweeps_.at(id);
    out.push_back(CapturedSweep{
        id, s.incarnation, DurableSweep{true, s.version, s.record, s.counts}});
  }
  uncaptured_.clear();
  return out;
}

void Scheduler::PublishLocked(Captured captured) {
  // Captures are published in commit order (one leader at a time), so each
  // is at least as new as what it replaces. WatchSweep's condition is
  // re-evaluated when mu_ is released.
  // A sweep deleted (or deleted and re-created) since its capture is not
  // the captured one any more.
  for (CapturedSweep& c : captured) {
    auto it = sweeps_.find(c.sweep_id);
    if (it == sweeps_.end() || it->second.incarnation != c.incarnation) {
      continue;
    }
    it->second.durable = std::move(c.durable);
  }
}

absl::Status Scheduler::EnqueueLocked(const WriteBatch& batch) {
  if (batch.empty()) return absl::OkStatus();
  if (!options_.group_commit) return store_->Commit(batch);
  queue_.push_back(batch);
  ++last_ticket_;
  return absl::OkStatus();
}

absl::Status Scheduler::WaitDurable(uint64_t ticket) {
  absl::MutexLock lock(&commit_mu_);
  while (true) {
    if (!failed_.ok()) return failed_;
    for (const auto& [after, upto] : lost_tickets_) {
      if (ticket > after && ticket <= upto) {
        return absl::UnavailableError(
            "the coordinator's store could not commit this change (it was "
            "not saved); retry");
      }
    }
    if (durable_ticket_ >= ticket) return absl::OkStatus();
    if (leader_active_) {
      commit_cv_.Wait(&commit_mu_);
      continue;
    }
    // Become the leader: commit everything queued so far in one transaction.
    leader_active_ = true;
    commit_mu_.Unlock();
    std::vector<WriteBatch> batches;
    uint64_t upto = 0;
    Captured captured;
    {
      absl::MutexLock state_lock(&mu_);
      batches.swap(queue_);
      upto = last_ticket_;
      captured = CaptureLocked();
    }
    WriteBatch merged;
    for (WriteBatch& b : batches) {
      auto move_into = [](auto& dst, auto& src) {
        dst.insert(dst.end(), std::make_move_iterator(src.begin()),
                   std::make_move_iterator(src.end()));
      };
      move_into(merged.sweeps, b.sweeps);
      move_into(merged.trials, b.trials);
      move_into(merged.attempts, b.attempts);
      move_into(merged.metrics, b.metrics);
      move_into(merged.workers, b.workers);
      move_into(merged.results, b.results);
      move_into(merged.decisions, b.decisions);
      move_into(merged.deleted_sweeps, b.deleted_sweeps);  // applied last
    }
    const absl::Status st =
        merged.empty() ? absl::OkStatus() : store_->Commit(merged);
    if (st.ok()) {
      // Readers see the new state only now that the store has it.
      absl::MutexLock state_lock(&mu_);
      PublishLocked(std::move(captured));
    }
    commit_mu_.Lock();
    leader_active_ = false;
    ++group_commits_;
    if (st.ok()) {
      durable_ticket_ = std::max(durable_ticket_, upto);
    } else {
      // Memory is ahead of the store now: stop accepting work until
      // Recover() reloads the store (fail-stop; nothing acknowledged is
      // lost).
      failed_ = absl::UnavailableError(absl::StrCat(
          "coordinator store commit failed; refusing work until commits "
          "succeed again (the coordinator retries on its own): ",
          st.message()));
      failed_flag_.store(true);
      SMOE_LOG(ERROR) << failed_;
    }
    commit_cv_.SignalAll();
  }
}

absl::StatusOr<Scheduler::SweepEntry*> Scheduler::FindSweepLocked(
    const std::string& sweep_id) {
  auto it = sweeps_.find(sweep_id);
  if (it == sweeps_.end()) {
    return absl::NotFoundError(absl::StrCat("no sweep '", sweep_id, "'"));
  }
  return &it->second;
}

absl::StatusOr<Scheduler::SweepEntry*> Scheduler::FindDurableSweepLocked(
    const std::string& sweep_id) {
  auto it = sweeps_.find(sweep_id);
  if (it == sweeps_.end() || !it->second.durable.exists) {
    return absl::NotFoundError(absl::StrCat("no sweep '", sweep_id, "'"));
  }
  return &it->second;
}

absl::Status Scheduler::CommitAndApplyLocked(const WriteBatch& batch) {
  if (batch.empty()) return absl::OkStatus();
  // Synchronous mode commits here; group mode queues it for WaitDurable().
  SMOE_RETURN_IF_ERROR(EnqueueLocked(batch));
  for (const store::SweepRecord& s : batch.sweeps) {
    auto it = sweeps_.find(s.sweep_id);
    if (it != sweeps_.end()) {
      it->second.record = s;
      ++it->second.version;
      uncaptured_.insert(s.sweep_id);
    }
  }
  for (const store::WorkerRecord& w : batch.workers) {
    workers_[w.worker_id].record = w;
  }
  for (const TrialRecord& t : batch.trials) ApplyTrialLocked(t);
  // Sweep state is derived from its trials; persist it when it changes.
  std::set<std::string> touched;
  for (const TrialRecord& t : batch.trials) touched.insert(t.sweep_id);
  for (const std::string& id : touched) {
    SweepEntry& s = sweeps_.at(id);
    const store::SweepState derived = DerivedState(s.record, s.counts);
    if (derived != s.record.state) {
      store::SweepRecord r = s.record;
      r.state = derived;
      r.updated_at = clock_->Now();
      WriteBatch b;
      b.sweeps.push_back(r);
      // Derived data: recomputed on load, so a failure here loses nothing.
      if (absl::Status st = EnqueueLocked(b); !st.ok()) {
        SMOE_LOG(WARNING) << "sweep state update failed: " << st;
        continue;
      }
      s.record = r;
      ++s.version;
      uncaptured_.insert(id);
    }
  }
  return absl::OkStatus();
}

std::string Scheduler::UnschedulableLocked(const SweepEntry& s) const {
  if (s.record.state != store::SweepState::kActive || s.pending.empty()) {
    return "";
  }
  const Resources& r = s.spec.resources;
  const absl::Time now = clock_->Now();
  int live = 0, of_kind = 0, labelled = 0, max_gpus = 0, max_slots = 0;
  for (const auto& [id, w] : workers_) {
    const store::WorkerRecord& rec = w.record;
    if (rec.draining || now - rec.last_heartbeat_at > options_.lease_timeout) {
      continue;
    }
    ++live;
    if (std::find(rec.kinds.begin(), rec.kinds.end(), s.spec.kind) ==
        rec.kinds.end()) {
      continue;
    }
    ++of_kind;
    bool labels_match = true;
    for (const auto& [key, value] : r.labels) {
      auto it = rec.labels.find(key);
      labels_match =
          labels_match && it != rec.labels.end() && it->second == value;
    }
    if (!labels_match) continue;
    ++labelled;
    if (r.slots <= rec.slots && r.gpus_per_trial <= rec.gpus) return "";
    max_gpus = std::max(max_gpus, rec.gpus);
    max_slots = std::max(max_slots, rec.slots);
  }
  if (live == 0) return "no worker is connected";
  if (of_kind == 0 && s.spec.kind == trials::kCommandKind) {
    return absl::StrCat(
        "no connected worker runs kind command (", live,
        " connected; a worker runs user programs only when started with "
        "`smoe worker --allow-command DIR`, DIR holding ",
        s.spec.command.program, ")");
  }
  if (of_kind == 0) {
    return absl::StrCat(
        "no connected worker runs kind ", s.spec.kind, " (", live,
        " connected; start one with `smoe worker --kinds ", s.spec.kind, "`)");
  }
  if (labelled == 0) {
    std::vector<std::string> want;
    for (const auto& [key, value] : r.labels) {
      want.push_back(absl::StrCat(key, "=", value));
    }
    return absl::StrCat("no connected worker of kind ", s.spec.kind,
                        " has the labels ", absl::StrJoin(want, ","));
  }
  return absl::StrCat("each trial needs ", r.gpus_per_trial, " GPU(s) and ",
                      r.slots, " slot(s); the connected workers that run kind ",
                      s.spec.kind, " have at most ", max_gpus, " GPU(s) and ",
                      max_slots, " slot(s)");
}

SweepView Scheduler::ViewLocked(const SweepEntry& s) const {
  SweepView v{s.record, s.spec, s.counts, s.version, UnschedulableLocked(s)};
  return v;
}

SweepView Scheduler::DurableViewLocked(const SweepEntry& s) const {
  // `unschedulable` is not versioned: it follows the workers' heartbeats,
  // read live.
  SweepView v{s.durable.record, s.spec, s.durable.counts, s.durable.version,
              UnschedulableLocked(s)};
  return v;
}

namespace {
// New points for a cancelled sweep would stay pending forever (a cancelled
// sweep leases nothing): refuse, naming the way to resume it.
absl::Status CancelledSweepError(const std::string& sweep_id, int added) {
  return absl::FailedPreconditionError(absl::StrCat(
      "sweep '", sweep_id, "' is cancelled: its ", added,
      " new point(s) would never run; resume it first with `smoe sweep retry ",
      sweep_id, " --include-cancelled`, then submit or extend again"));
}
}  // namespace

namespace {
// Bounds what one Fail stores (the gRPC server accepts 64 MB; the worker
// daemon sends <= 8 KB): the head and the tail (where a stderr tail ends) are
// kept, cut on UTF-8 character boundaries.
std::string CapFailMessage(const std::string& m) {
  constexpr size_t kMax = 16 << 10, kHead = 4 << 10, kTail = 11 << 10;
  if (m.size() <= kMax) return m;
  auto continuation = [&m](size_t i) {
    return i < m.size() && (static_cast<unsigned char>(m[i]) & 0xC0) == 0x80;
  };
  size_t head = kHead;
  while (head > 0 && continuation(head)) --head;
  size_t tail = m.size() - kTail;
  while (continuation(tail)) ++tail;
  return absl::StrCat(m.substr(0, head), "\n[... ", tail - head,
                      " bytes cut ...]\n", m.substr(tail));
}
}  // namespace

absl::Status Scheduler::AddTrialsLocked(
    SweepEntry* sweep, const std::vector<ExpandedTrial>& points,
    WriteBatch* batch, int* added) {
  const absl::Time now = clock_->Now();
  int64_t ordinal = static_cast<int64_t>(sweep->trial_ids.size());
  for (const ExpandedTrial& p : points) {
    if (trials_.count(p.trial_id)) continue;
    TrialRecord t;
    t.trial_id = p.trial_id;
    t.sweep_id = sweep->record.sweep_id;
    t.ordinal = ordinal++;
    t.params_json = p.params.dump();
    t.seed = p.seed;
    t.state = TrialState::kPending;
    t.gpus = sweep->spec.resources.gpus_per_trial;
    t.created_at = now;
    t.updated_at = now;
    batch->trials.push_back(std::move(t));
    ++*added;
  }
  return absl::OkStatus();
}

// ---- user API ---------------------------------------------------------------

absl::StatusOr<SubmitResult> Scheduler::SubmitSweepLocked(
    const std::string& yaml, const SweepSpec& spec,
    const std::vector<ExpandedTrial>& points, bool dry_run) {
  const absl::Time now = clock_->Now();
  auto it = sweeps_.find(spec.name);
  SubmitResult result;
  if (it == sweeps_.end()) {
    if (dry_run) {
      result.sweep.record.sweep_id = spec.name;
      result.sweep.record.kind = spec.kind;
      result.sweep.spec = spec;
      result.sweep.counts.pending = static_cast<int>(points.size());
      result.new_trials = static_cast<int>(points.size());
      return result;
    }
    SweepEntry entry;
    entry.record.sweep_id = spec.name;
    entry.record.kind = spec.kind;
    entry.record.spec_yaml = yaml;
    entry.record.priority = spec.priority;
    entry.record.max_error_retries = spec.retries;
    entry.record.state = store::SweepState::kActive;
    entry.record.created_at = now;
    entry.record.updated_at = now;
    entry.spec = spec;
    WriteBatch batch;
    batch.sweeps.push_back(entry.record);
    int added = 0;
    SMOE_RETURN_IF_ERROR(AddTrialsLocked(&entry, points, &batch, &added));
    SMOE_RETURN_IF_ERROR(EnqueueLocked(batch));
    SweepEntry& e = sweeps_[spec.name];
    e = std::move(entry);
    e.incarnation = ++incarnations_;
    if (auto d = deleted_versions_.find(spec.name);
        d != deleted_versions_.end()) {
      // Continue above the deleted sweep's versions with a gap, so a watcher
      // or cache still at an old version gets a full snapshot.
      e.version = d->second + 1;
      deleted_versions_.erase(d);
    }
    if (trials_.size() + batch.trials.size() >
        trials_.bucket_count() * trials_.max_load_factor()) {
      trials_.reserve(trials_.size() + batch.trials.size());  // one rehash
    }
    for (const TrialRecord& t : batch.trials) ApplyTrialLocked(t);
    if (e.counts.total() == 0) e.record.state = store::SweepState::kCompleted;
    uncaptured_.insert(spec.name);
    result.sweep = ViewLocked(e);
    result.new_trials = added;
    SMOE_LOG(INFO) << "sweep " << spec.name << " submitted: " << added
                   << " trials";
    return result;
  }
  // Re-submission: merge into the existing sweep.
  SweepEntry& e = it->second;
  if (e.spec.kind != spec.kind) {
    return absl::FailedPreconditionError(absl::StrCat(
        "sweep '", spec.name, "' exists with kind ", e.spec.kind,
        "; re-submitted with kind ", spec.kind, " (use a new name)"));
  }
  if (e.spec.command != spec.command ||
      !SameSchema(e.spec.command_kind, spec.command_kind)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "sweep '", spec.name,
        "' exists with a different command or params declaration; use a new "
        "name"));
  }
  if (e.spec.fixed != spec.fixed) {
    return absl::FailedPreconditionError(absl::StrCat(
        "sweep '", spec.name, "' exists with different fixed params (",
        e.spec.fixed.dump(), " vs ", spec.fixed.dump(),
        "); use a new name, or `smoe sweep extend` for axes"));
  }
  std::vector<std::string> old_axes, new_axes;
  for (const Axis& a : e.spec.grid) old_axes.push_back(a.name);
  for (const Axis& a : spec.grid) new_axes.push_back(a.name);
  std::sort(old_axes.begin(), old_axes.end());
  std::sort(new_axes.begin(), new_axes.end());
  if (old_axes != new_axes) {
    return absl::FailedPreconditionError(
        absl::StrCat("sweep '", spec.name,
                     "' exists with different grid axes; use a new name"));
  }
  // Sampled axes: the same declaration and seed (the draws are a function
  // of both); the union of draws, like axis values: the larger count.
  if (e.spec.sample != spec.sample || e.spec.sample_seed != spec.sample_seed) {
    return absl::FailedPreconditionError(absl::StrCat(
        "sweep '", spec.name,
        "' exists with a different sample declaration or sample_seed; use a "
        "new name, or `smoe sweep extend ",
        spec.name, " --samples N` for more draws"));
  }
  SweepSpec merged = e.spec;
  merged.samples = std::max(e.spec.samples, spec.samples);
  for (const Axis& a : spec.grid) {
    SMOE_RETURN_IF_ERROR(ExtendAxis(&merged, a.name, a.values, options_.parse));
  }
  std::vector<nlohmann::json> seeds(spec.seeds.begin(), spec.seeds.end());
  SMOE_RETURN_IF_ERROR(ExtendAxis(&merged, "seeds", seeds, options_.parse));
  merged.retries = spec.retries;
  merged.priority = spec.priority;
  const std::vector<ExpandedTrial> merged_points = ExpandGrid(merged);
  WriteBatch batch;
  int added = 0;
  SMOE_RETURN_IF_ERROR(AddTrialsLocked(&e, merged_points, &batch, &added));
  if (added > 0 && e.record.state == store::SweepState::kCancelled) {
    return CancelledSweepError(spec.name, added);
  }
  result.existing_trials = static_cast<int>(merged_points.size()) - added;
  result.new_trials = added;
  if (dry_run) {
    result.sweep = ViewLocked(e);
    return result;
  }
  store::SweepRecord r = e.record;
  r.spec_yaml = SweepSpecToYaml(merged);
  r.priority = merged.priority;
  r.max_error_retries = merged.retries;
  if (r.state == store::SweepState::kCompleted && added > 0) {
    r.state = store::SweepState::kActive;
  }
  r.updated_at = now;
  batch.sweeps.push_back(r);
  SMOE_RETURN_IF_ERROR(CommitAndApplyLocked(batch));
  e.spec = std::move(merged);
  e.search_indexed = false;  // the next plan re-reads the spec
  result.sweep = ViewLocked(e);
  return result;
}

std::vector<SweepView> Scheduler::ListSweeps() {
  absl::MutexLock lock(&mu_);
  std::vector<SweepView> out;
  for (const auto& [id, s] : sweeps_) {
    if (s.durable.exists) out.push_back(DurableViewLocked(s));
  }
  std::sort(out.begin(), out.end(), [](const SweepView& a, const SweepView& b) {
    return a.record.created_at < b.record.created_at;
  });
  return out;
}

absl::StatusOr<SweepView> Scheduler::GetSweep(const std::string& sweep_id) {
  absl::MutexLock lock(&mu_);
  SMOE_ASSIGN_OR_RETURN(SweepEntry * sweep, FindDurableSweepLocked(sweep_id));
  return DurableViewLocked(*sweep);
}

absl::StatusOr<std::vector<TrialRecord>> Scheduler::ListTrials(
    const std::string& sweep_id) {
  absl::MutexLock lock(&mu_);
  SMOE_ASSIGN_OR_RETURN(SweepEntry * sweep, FindSweepLocked(sweep_id));
  std::vector<TrialRecord> out;
  out.reserve(sweep->trial_ids.size());
  for (const std::string& id : sweep->trial_ids) {
    out.push_back(trials_.at(id));
  }
  return out;
}

absl::StatusOr<int> Scheduler::CancelSweepLocked(const std::string& sweep_id) {
  SMOE_ASSIGN_OR_RETURN(SweepEntry * sweep, FindSweepLocked(sweep_id));
  SweepEntry& s = *sweep;
  const absl::Time now = clock_->Now();
  WriteBatch batch;
  int n = 0;
  for (const std::string& id : s.trial_ids) {
    const TrialRecord& t = trials_.at(id);
    if (t.state == TrialState::kPending) {
      TrialRecord u = t;
      u.state = TrialState::kCancelled;
      u.updated_at = now;
      batch.trials.push_back(u);
      ++n;
    } else if (t.state == TrialState::kRunning) {
      EndAttemptLocked(t, AttemptOutcome::kCancelled, TrialState::kCancelled, 0,
                       "sweep cancelled", &batch);
      ++n;
    }
  }
  store::SweepRecord r = s.record;
  r.state = store::SweepState::kCancelled;
  r.updated_at = now;
  batch.sweeps.push_back(r);
  SMOE_RETURN_IF_ERROR(CommitAndApplyLocked(batch));
  SMOE_LOG(INFO) << "sweep " << sweep_id << " cancelled (" << n << " trials)";
  return n;
}

absl::StatusOr<int> Scheduler::RetrySweepLocked(const std::string& sweep_id,
                                                bool include_cancelled) {
  SMOE_ASSIGN_OR_RETURN(SweepEntry * sweep, FindSweepLocked(sweep_id));
  SweepEntry& s = *sweep;
  const absl::Time now = clock_->Now();
  WriteBatch batch;
  int n = 0;
  for (const std::string& id : s.trial_ids) {
    const TrialRecord& t = trials_.at(id);
    if (t.state == TrialState::kFailed ||
        (include_cancelled && t.state == TrialState::kCancelled)) {
      TrialRecord u = t;
      u.state = TrialState::kPending;
      u.error_count = 0;
      u.preempt_count = 0;
      u.worker_id.clear();
      u.updated_at = now;
      batch.trials.push_back(u);
      ++n;
    }
  }
  store::SweepRecord r = s.record;
  r.state = n > 0 || s.counts.pending + s.counts.running > 0
                ? store::SweepState::kActive
                : store::SweepState::kCompleted;
  r.updated_at = now;
  batch.sweeps.push_back(r);
  SMOE_RETURN_IF_ERROR(CommitAndApplyLocked(batch));
  return n;
}

absl::StatusOr<int> Scheduler::ExtendSweepLocked(
    const std::string& sweep_id, const std::string& axis,
    const std::vector<nlohmann::json>& values) {
  SMOE_ASSIGN_OR_RETURN(SweepEntry * sweep, FindSweepLocked(sweep_id));
  SweepEntry& s = *sweep;
  SweepSpec next = s.spec;
  SMOE_RETURN_IF_ERROR(ExtendAxis(&next, axis, values, options_.parse));
  WriteBatch batch;
  int added = 0;
  SMOE_RETURN_IF_ERROR(AddTrialsLocked(&s, ExpandGrid(next), &batch, &added));
  if (added > 0 && s.record.state == store::SweepState::kCancelled) {
    return CancelledSweepError(sweep_id, added);
  }
  store::SweepRecord r = s.record;
  r.spec_yaml = SweepSpecToYaml(next);
  if (added > 0 && r.state == store::SweepState::kCompleted) {
    r.state = store::SweepState::kActive;
  }
  r.updated_at = clock_->Now();
  batch.sweeps.push_back(r);
  SMOE_RETURN_IF_ERROR(CommitAndApplyLocked(batch));
  s.spec = std::move(next);
  s.search_indexed = false;  // the next plan re-reads the spec
  return added;
}

absl::StatusOr<WatchResult> Scheduler::WatchSweep(const std::string& sweep_id,
                                                  int64_t since,
                                                  absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  SMOE_ASSIGN_OR_RETURN(SweepEntry * sweep, FindDurableSweepLocked(sweep_id));
  const uint64_t incarnation = sweep->incarnation;
  // The entry is looked up again after every wait: DeleteSweep erases it.
  auto current = [this, &sweep_id,
                  incarnation]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    auto it = sweeps_.find(sweep_id);
    return it == sweeps_.end() || it->second.incarnation != incarnation
               ? nullptr
               : &it->second;
  };
  // Wakes when PublishLocked() makes a newer version durable, or when the
  // sweep is deleted.
  auto changed = [&current, since]() {
    const SweepEntry* e = current();
    return e == nullptr || e->durable.version > since;
  };
  WatchResult result;
  result.timed_out = !mu_.AwaitWithTimeout(absl::Condition(&changed), timeout);
  const SweepEntry* s = current();
  if (s == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("sweep '", sweep_id, "' was deleted"));
  }
  result.sweep = DurableViewLocked(*s);
  if (result.timed_out) return result;
  const int64_t upto = s->durable.version;
  std::set<std::string> ids;
  if (since <= 0 || s->changes.empty() ||
      s->changes.front().first > since + 1) {
    ids.insert(s->trial_ids.begin(), s->trial_ids.end());  // full snapshot
  } else {
    for (auto c = s->changes.rbegin();
         c != s->changes.rend() && c->first > since; ++c) {
      if (c->first <= upto) ids.insert(c->second);
    }
  }
  for (const std::string& id : ids) result.changed.push_back(trials_.at(id));
  std::sort(result.changed.begin(), result.changed.end(),
            [](const TrialRecord& a, const TrialRecord& b) {
              return a.ordinal < b.ordinal;
            });
  return result;
}

absl::Status Scheduler::DrainWorkerLocked(const std::string& worker_id) {
  auto it = workers_.find(worker_id);
  if (it == workers_.end()) {
    return absl::NotFoundError(absl::StrCat("no worker '", worker_id, "'"));
  }
  WriteBatch batch;
  store::WorkerRecord w = it->second.record;
  w.draining = true;
  batch.workers.push_back(w);
  return CommitAndApplyLocked(batch);
}

// ---- worker API -------------------------------------------------------------

absl::StatusOr<Registration> Scheduler::RegisterLocked(const WorkerInfo& info) {
  SMOE_RETURN_IF_ERROR(ValidateWorkerInfo(info));
  const absl::Time now = clock_->Now();
  store::WorkerRecord w;
  auto it =
      info.worker_id.empty() ? workers_.end() : workers_.find(info.worker_id);
  if (it != workers_.end()) {
    w = it->second.record;  // reconnect: keep identity and registration time
  } else {
    w.worker_id =
        info.worker_id.empty()
            ? absl::StrCat("w-", info.hostname.empty() ? "host" : info.hostname,
                           "-", absl::Hex(absl::ToUnixMicros(now) & 0xffffff),
                           "-", ++worker_seq_)
            : info.worker_id;
    w.registered_at = now;
  }
  w.hostname = info.hostname;
  w.cpus = info.cpus;
  w.gpus = info.gpus;
  w.slots = info.slots;
  w.labels = info.labels;
  w.kinds =
      info.kinds.empty() ? std::vector<std::string>{"sraven"} : info.kinds;
  w.draining = false;
  w.last_heartbeat_at = now;
  WriteBatch batch;
  batch.workers.push_back(w);
  SMOE_RETURN_IF_ERROR(CommitAndApplyLocked(batch));
  SMOE_LOG(INFO) << "worker " << w.worker_id << " registered (" << w.slots
                 << " slots, " << w.gpus << " GPUs)";
  return Registration{w.worker_id, options_.heartbeat_interval,
                      options_.lease_timeout};
}

std::pair<int, int> Scheduler::UsedByLocked(const WorkerEntry& worker) const {
  int used_slots = 0, used_gpus = 0;
  for (const std::string& id : worker.leased) {
    auto t = trials_.find(id);
    if (t == trials_.end()) continue;
    used_gpus += t->second.gpus;
    auto sw = sweeps_.find(t->second.sweep_id);
    used_slots +=
        sw == sweeps_.end() ? 1 : std::max(1, sw->second.spec.resources.slots);
  }
  return {used_slots, used_gpus};
}

std::vector<WorkerSnapshot> Scheduler::ListWorkers() {
  absl::MutexLock lock(&mu_);
  std::vector<WorkerSnapshot> out;
  out.reserve(workers_.size());
  for (const auto& [id, w] : workers_) {
    WorkerSnapshot s;
    s.record = w.record;
    std::tie(s.slots_used, s.gpus_used) = UsedByLocked(w);
    s.trial_ids.assign(w.leased.begin(), w.leased.end());  // std::set: sorted
    s.paused = w.paused;
    out.push_back(std::move(s));
  }
  return out;
}

absl::StatusOr<std::vector<LeaseGrant>> Scheduler::LeaseLocked(
    const std::string& worker_id, int free_slots, int free_gpus) {
  SMOE_RETURN_IF_ERROR(ExpireLeasesLocked());
  auto wit = workers_.find(worker_id);
  if (wit == workers_.end()) {
    return absl::NotFoundError(
        absl::StrCat("unknown worker '", worker_id, "': register again"));
  }
  WorkerEntry& worker = wit->second;
  const absl::Time now = clock_->Now();
  worker.record.last_heartbeat_at = now;
  // What the worker asks for is capped by what it registered, less what it
  // already runs: a worker cannot take more than its capacity in one call
  // (issue 16 item 9: a 1-slot worker got 32 leases).
  {
    const auto [used_slots, used_gpus] = UsedByLocked(worker);
    free_slots = std::min(free_slots, worker.record.slots - used_slots);
    free_gpus = std::min(free_gpus, worker.record.gpus - used_gpus);
  }
  std::vector<LeaseGrant> grants;
  if (worker.record.draining) return grants;
  const std::set<std::string> kinds(worker.record.kinds.begin(),
                                    worker.record.kinds.end());
  // Per-sweep cursor into its pending set and running count as grants accrue.
  struct Candidate {
    SweepEntry* sweep;
    std::set<int64_t>::const_iterator next;
    int running;
  };
  std::vector<Candidate> cands;
  for (auto& [id, s] : sweeps_) {
    if (s.record.state != store::SweepState::kActive || s.pending.empty() ||
        !kinds.count(s.spec.kind)) {
      continue;
    }
    bool labels_match = true;
    for (const auto& [key, value] : s.spec.resources.labels) {
      auto it = worker.record.labels.find(key);
      labels_match = labels_match && it != worker.record.labels.end() &&
                     it->second == value;
    }
    if (!labels_match) continue;
    cands.push_back({&s, s.pending.begin(), s.counts.running});
  }
  WriteBatch batch;
  while (free_slots > 0 && !cands.empty()) {
    auto best = cands.end();
    for (auto c = cands.begin(); c != cands.end(); ++c) {
      const Resources& r = c->sweep->spec.resources;
      if (c->next == c->sweep->pending.end() || r.slots > free_slots ||
          r.gpus_per_trial > free_gpus) {
        continue;
      }
      if (best == cands.end() ||
          c->sweep->record.priority > best->sweep->record.priority ||
          (c->sweep->record.priority == best->sweep->record.priority &&
           (c->running < best->running ||
            (c->running == best->running &&
             c->sweep->record.created_at < best->sweep->record.created_at)))) {
        best = c;
      }
    }
    if (best == cands.end()) break;
    SweepEntry& s = *best->sweep;
    const std::string& tid = s.trial_ids[static_cast<size_t>(*best->next)];
    ++best->next;
    if (worker.stopping.count(tid) > 0) continue;  // old attempt still there
    ++best->running;
    TrialRecord t = trials_.at(tid);
    t.state = TrialState::kRunning;
    t.attempt += 1;
    t.worker_id = worker_id;
    t.lease_expires_at = now + options_.lease_timeout;
    t.updated_at = now;
    AttemptRecord a;
    a.trial_id = t.trial_id;
    a.attempt = t.attempt;
    a.worker_id = worker_id;
    a.outcome = AttemptOutcome::kRunning;
    a.started_at = now;
    batch.trials.push_back(t);
    batch.attempts.push_back(a);
    grants.push_back(LeaseGrant{
        t.trial_id, t.sweep_id, t.attempt, s.spec.kind, t.seed,
        LeaseParamsJson(s.spec, t.params_json), s.spec.resources.gpus_per_trial,
        s.spec.resources.ep_size, t.lease_expires_at, s.spec.resources.slots,
        s.spec.resources.progress_timeout_s, CommandSpec{}, ""});
    grants.back().keep_final_checkpoint = s.spec.keep_final_checkpoint;
    if (s.spec.kind == trials::kCommandKind) {
      grants.back().command = s.spec.command;
      grants.back().defaults_json =
          trials::Defaults(s.spec.command_kind).dump();
    }
    free_slots -= s.spec.resources.slots;
    free_gpus -= s.spec.resources.gpus_per_trial;
  }
  SMOE_RETURN_IF_ERROR(CommitAndApplyLocked(batch));
  return grants;
}

absl::StatusOr<HeartbeatReply> Scheduler::HeartbeatLocked(
    const std::string& worker_id, const std::vector<RunningReport>& running,
    bool draining, const std::string& paused) {
  auto wit = workers_.find(worker_id);
  if (wit == workers_.end()) {
    return absl::NotFoundError(
        absl::StrCat("unknown worker '", worker_id, "': register again"));
  }
  const absl::Time now = clock_->Now();
  WorkerEntry& w = wit->second;
  w.record.last_heartbeat_at = now;
  w.paused = paused.substr(0, kMaxPausedLength);
  if (draining && !w.record.draining) {
    WriteBatch batch;
    store::WorkerRecord r = w.record;
    r.draining = true;
    batch.workers.push_back(r);
    SMOE_RETURN_IF_ERROR(CommitAndApplyLocked(batch));
  }
  HeartbeatReply reply;
  std::set<std::string> stopping;
  for (const RunningReport& r : running) {
    auto it = trials_.find(r.trial_id);
    if (it != trials_.end() && it->second.state == TrialState::kRunning &&
        it->second.worker_id == worker_id && it->second.attempt == r.attempt) {
      // Lease extensions live in memory only: a restarted coordinator grants
      // every running lease a fresh window anyway.
      it->second.lease_expires_at = now + options_.lease_timeout;
    } else {
      reply.cancel.emplace_back(r.trial_id, r.attempt);
      stopping.insert(r.trial_id);
    }
  }
  w.stopping = std::move(stopping);
  reply.drain = w.record.draining;
  return reply;
}

absl::StatusOr<TrialRecord*> Scheduler::CurrentAttemptLocked(
    const std::string& worker_id, const std::string& trial_id, int attempt) {
  auto it = trials_.find(trial_id);
  if (it == trials_.end()) {
    return absl::NotFoundError(absl::StrCat("no trial '", trial_id, "'"));
  }
  TrialRecord& t = it->second;
  if (t.state != TrialState::kRunning || t.attempt != attempt ||
      t.worker_id != worker_id) {
    return absl::FailedPreconditionError(absl::StrCat(
        "stale attempt: trial ", trial_id, " attempt ", attempt, " of worker ",
        worker_id, " is not current (trial is ", store::TrialStateName(t.state),
        ", attempt ", t.attempt,
        t.worker_id.empty() ? "" : absl::StrCat(" on ", t.worker_id), ")"));
  }
  return &t;
}

absl::Status Scheduler::CheckCurrentAttempt(const std::string& worker_id,
                                            const std::string& trial_id,
                                            int attempt) {
  absl::MutexLock lock(&mu_);
  return CurrentAttemptLocked(worker_id, trial_id, attempt).status();
}

void Scheduler::EndAttemptLocked(const TrialRecord& trial,
                                 AttemptOutcome outcome, TrialState next_state,
                                 int exit_code, const std::string& message,
                                 WriteBatch* batch) {
  const absl::Time now = clock_->Now();
  AttemptRecord a;
  a.trial_id = trial.trial_id;
  a.attempt = trial.attempt;
  a.worker_id = trial.worker_id;
  a.outcome = outcome;
  a.exit_code = exit_code;
  a.message = CapFailMessage(message);
  a.started_at = trial.updated_at;  // the lease time (set when leased)
  a.ended_at = now;
  TrialRecord t = trial;
  t.state = next_state;
  t.worker_id.clear();
  t.updated_at = now;
  if (outcome == AttemptOutcome::kFailed || outcome == AttemptOutcome::kHung) {
    ++t.error_count;
  }
  if (outcome == AttemptOutcome::kPreempted ||
      outcome == AttemptOutcome::kLost) {
    ++t.preempt_count;
  }
  if (!message.empty() && outcome != AttemptOutcome::kSucceeded) {
    t.last_error = message;
  }
  batch->attempts.push_back(a);
  batch->trials.push_back(t);
}

absl::Status Scheduler::ReportMetricsLocked(
    const std::string& worker_id, const std::string& trial_id, int attempt,
    const std::vector<store::MetricRecord>& metrics) {
  SMOE_ASSIGN_OR_RETURN(TrialRecord * t,
                        CurrentAttemptLocked(worker_id, trial_id, attempt));
  WriteBatch batch;
  batch.metrics.reserve(metrics.size());
  for (store::MetricRecord m : metrics) {
    if (m.name.empty() || m.step < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metric: name must be non-empty and step >= 0 (got name=",
          Quote(m.name), ", step=", m.step, ")"));
    }
    SMOE_RETURN_IF_ERROR(ValidateMetricName(m.name));
    m.trial_id = t->trial_id;
    m.attempt = attempt;
    batch.metrics.push_back(std::move(m));
  }
  SweepEntry& sweep = sweeps_.at(t->sweep_id);
  if (IsAdaptive(sweep.spec)) {
    bool search_metric = false;
    for (const store::MetricRecord& m : batch.metrics) {
      search_metric =
          search_metric || IsSearchMetric(sweep.spec.search.metric, m.name);
    }
    if (search_metric && !StopsEarly(sweep.spec)) {
      // Refine decides on final results only (Complete); the reports count
      // for the trial-steps used.
      MirrorSearchLocked(&sweep, batch);
    } else if (search_metric) {
      // The decision commits with the report that caused it.
      SMOE_RETURN_IF_ERROR(PlanSearchLocked(&sweep, &batch));
      return CommitAndApplyLocked(batch);
    }
  }
  return EnqueueLocked(batch);
}

absl::Status Scheduler::CompleteLocked(
    const std::string& worker_id, const std::string& trial_id, int attempt,
    const std::map<std::string, double>& results, double duration_s) {
  // Checked before anything is applied: a value the store refuses (NaN binds
  // as NULL into the NOT NULL trials.duration_s) would fail the commit and
  // stop the scheduler.
  if (!std::isfinite(duration_s) || duration_s < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "duration_s: must be a finite number >= 0, got ", duration_s));
  }
  SMOE_ASSIGN_OR_RETURN(TrialRecord * t,
                        CurrentAttemptLocked(worker_id, trial_id, attempt));
  WriteBatch batch;
  EndAttemptLocked(*t, AttemptOutcome::kSucceeded, TrialState::kSucceeded, 0,
                   "", &batch);
  batch.results.push_back({trial_id, duration_s, results});
  SMOE_RETURN_IF_ERROR(PlanSearchForBatchLocked(&batch));
  return CommitAndApplyLocked(batch);
}

absl::Status Scheduler::FailLocked(const std::string& worker_id,
                                   const std::string& trial_id, int attempt,
                                   FailReason reason, int exit_code,
                                   const std::string& message) {
  SMOE_ASSIGN_OR_RETURN(TrialRecord * t,
                        CurrentAttemptLocked(worker_id, trial_id, attempt));
  const SweepEntry& sweep = sweeps_.at(t->sweep_id);
  WriteBatch batch;
  switch (reason) {
    case FailReason::kError:
    case FailReason::kHung: {
      const bool exhausted = t->error_count + 1 > sweep.spec.retries;
      EndAttemptLocked(*t,
                       reason == FailReason::kHung ? AttemptOutcome::kHung
                                                   : AttemptOutcome::kFailed,
                       exhausted ? TrialState::kFailed : TrialState::kPending,
                       exit_code, message, &batch);
      break;
    }
    case FailReason::kPreempted:
    case FailReason::kCancelled: {
      const bool exhausted = t->preempt_count + 1 > options_.max_preemptions;
      EndAttemptLocked(*t, AttemptOutcome::kPreempted,
                       exhausted ? TrialState::kFailed : TrialState::kPending,
                       exit_code, message, &batch);
      break;
    }
    case FailReason::kBadSpec:
      EndAttemptLocked(*t, AttemptOutcome::kBadSpec, TrialState::kFailed,
                       exit_code, message, &batch);
      break;
  }
  SMOE_RETURN_IF_ERROR(PlanSearchForBatchLocked(&batch));
  return CommitAndApplyLocked(batch);
}

absl::Status Scheduler::ExpireLeases() {
  return Mutate<absl::Status>([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ExpireLeasesLocked();
  });
}

absl::Duration MonotonicNow() {
  return absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

absl::Status Scheduler::ExpireLeasesLocked() {
  const absl::Time now = clock_->Now();
  const absl::Duration mono =
      options_.monotonic ? options_.monotonic() : now - absl::UnixEpoch();
  if (expiry_wall_ != absl::InfinitePast()) {
    const absl::Duration mono_gap = mono - expiry_mono_;
    // Lease deadlines are wall times (sent to workers, kept in the store)
    // that measure monotonic time: when the wall clock stepped, they move
    // with it.
    const absl::Duration step = (now - expiry_wall_) - mono_gap;
    if (absl::AbsDuration(step) > absl::Seconds(1) && !running_.empty()) {
      SMOE_LOG(WARNING) << "the wall clock stepped by " << step
                        << " since the last lease check; " << running_.size()
                        << " lease deadline(s) moved with it";
      for (const std::string& id : running_) {
        trials_.at(id).lease_expires_at += step;
      }
    }
    if (mono_gap > options_.stall_grace_after && !running_.empty()) {
      SMOE_LOG(WARNING) << "lease expiry did not run for " << mono_gap
                        << " (the coordinator was paused or stalled); "
                        << running_.size() << " running lease(s) get a fresh "
                        << options_.lease_timeout << " instead of expiring";
      for (const std::string& id : running_) {
        TrialRecord& t = trials_.at(id);
        t.lease_expires_at =
            std::max(t.lease_expires_at, now + options_.lease_timeout);
      }
    }
  }
  expiry_wall_ = now;
  expiry_mono_ = mono;
  WriteBatch batch;
  for (const std::string& id : running_) {
    const TrialRecord& t = trials_.at(id);
    if (t.lease_expires_at > now) continue;
    const bool exhausted = t.preempt_count + 1 > options_.max_preemptions;
    SMOE_LOG(WARNING) << "lease of " << id << " attempt " << t.attempt << " on "
                      << t.worker_id << " expired; re-queued";
    EndAttemptLocked(
        t, AttemptOutcome::kLost,
        exhausted ? TrialState::kFailed : TrialState::kPending, 0,
        absl::StrCat("lease expired: worker ", t.worker_id, " went silent"),
        &batch);
  }
  SMOE_RETURN_IF_ERROR(PlanSearchForBatchLocked(&batch));
  return CommitAndApplyLocked(batch);
}

// ---- adaptive sweeps (search_driver.h)
// ---------------------------------------

absl::Status Scheduler::LoadSearchLocked(SweepEntry* s) {
  s->reports.clear();
  s->finals.clear();
  s->last.clear();
  const std::string& metric = s->spec.search.metric;
  for (const std::string& id : s->trial_ids) {
    if (id.empty()) continue;
    SMOE_ASSIGN_OR_RETURN(std::vector<store::MetricRecord> ms,
                          store_->ListMetrics(id, std::nullopt));
    for (const store::MetricRecord& m : ms) {
      if (!IsSearchMetric(metric, m.name)) continue;
      s->reports[id].push_back({id, m.attempt, m.step, m.value});
    }
  }
  if (s->spec.search.strategy == "refine") {
    SMOE_ASSIGN_OR_RETURN(std::vector<store::TrialSummary> rows,
                          store_->ListSummaries(s->record.sweep_id));
    for (const store::TrialSummary& r : rows) {
      for (const auto& [name, value] : r.results) {
        if (IsSearchMetric(metric, name)) s->finals[r.trial_id] = value;
      }
    }
  }
  s->ended_device_hours = 0;
  if (s->spec.search.budget_gpu_hours > 0) {
    for (const std::string& id : s->trial_ids) {
      if (id.empty()) continue;
      SMOE_ASSIGN_OR_RETURN(std::vector<AttemptRecord> attempts,
                            store_->ListAttempts(id));
      for (const AttemptRecord& a : attempts) {
        s->ended_device_hours += AttemptDeviceHours(s->spec, a);
      }
    }
  }
  SMOE_ASSIGN_OR_RETURN(std::vector<store::DecisionRecord> log,
                        store_->ListDecisions(s->record.sweep_id, 0, 0));
  for (const store::DecisionRecord& d : log) {
    if (d.trial_id.empty()) {
      s->last[GroupKey(d.group)] = {d.action, d.rung, d.final};
    } else if (d.action != "add") {
      s->last[d.trial_id] = {d.action, d.rung, d.final};
    }
  }
  return absl::OkStatus();
}

void Scheduler::MirrorSearchLocked(SweepEntry* s, const WriteBatch& batch) {
  const std::string& sweep_id = s->record.sweep_id;
  const std::string& metric = s->spec.search.metric;
  auto ours = [&](const std::string& trial_id) {
    auto it = trials_.find(trial_id);
    return it != trials_.end() && it->second.sweep_id == sweep_id;
  };
  for (const store::MetricRecord& m : batch.metrics) {
    if (IsSearchMetric(metric, m.name) && ours(m.trial_id)) {
      s->reports[m.trial_id].push_back(
          {m.trial_id, m.attempt, m.step, m.value});
    }
  }
  for (const WriteBatch::Result& r : batch.results) {
    if (!ours(r.trial_id)) continue;
    for (const auto& [name, value] : r.values) {
      if (IsSearchMetric(metric, name)) s->finals[r.trial_id] = value;
    }
  }
  if (s->spec.search.budget_gpu_hours > 0) {
    for (const AttemptRecord& a : batch.attempts) {
      if (ours(a.trial_id)) {
        s->ended_device_hours += AttemptDeviceHours(s->spec, a);
      }
    }
  }
}

double Scheduler::DeviceHoursLocked(const SweepEntry& s,
                                    const std::vector<TrialRecord>& trials) {
  double hours = s.ended_device_hours;
  const absl::Time now = clock_->Now();
  for (const TrialRecord& t : trials) {
    // A running attempt counts until now (its lease time is updated_at).
    if (t.state == TrialState::kRunning && now > t.updated_at) {
      hours += absl::ToDoubleHours(now - t.updated_at) *
               std::max(1, s.spec.resources.gpus_per_trial);
    }
  }
  return hours;
}

absl::Status Scheduler::PlanSearchLocked(SweepEntry* s, WriteBatch* batch) {
  if (!IsAdaptive(s->spec)) return absl::OkStatus();
  const std::string& sweep_id = s->record.sweep_id;
  MirrorSearchLocked(s, *batch);
  // A cancelled sweep runs nothing: no promotion back to pending, no points.
  if (s->record.state == store::SweepState::kCancelled) {
    return absl::OkStatus();
  }
  const auto plan_start = std::chrono::steady_clock::now();
  SearchInputs in;
  std::map<std::string, size_t> index;
  SearchPlan plan;
  bool subset =
      s->refine != nullptr
          ? IncrementalRefinePlanLocked(s, *batch, &in, &index, &plan)
          : (s->asha != nullptr || s->median != nullptr) &&
                IncrementalStoppingPlanLocked(s, *batch, &in, &index, &plan);
  if (!subset) {
    in = SearchInputs();
    index.clear();
    subset = SearchInputsLocked(s, *batch, true, &in, &index);
    // A refine index (just built: every group undecided) starts from the
    // group decisions of this plan; the trials this plan changes or adds
    // are marked when applied, so their groups are decided again.
    std::map<std::string, RefineGroupState> decided;
    plan = PlanSearch(in, s->refine != nullptr ? &decided : nullptr);
    if (s->refine != nullptr) {
      SweepEntry::RefineIndex& refine = *s->refine;
      for (auto& [label, state] : decided) {
        auto g = refine.groups.find(label);
        if (g == refine.groups.end() || !refine.rebuild.count(label) ||
            g->second.ids.size() != state.points.size()) {
          continue;
        }
        g->second.points = std::move(state.points);
        g->second.plan = std::move(state.plan);
        g->second.planned = true;
        refine.points += g->second.plan.points;
        if (!g->second.plan.wants.empty()) refine.wanting.insert(label);
        refine.rebuild.erase(label);
      }
    }
  }
  ++plan_timing_.plans;
  plan_timing_.total +=
      absl::FromChrono(std::chrono::steady_clock::now() - plan_start);
  if (subset && options_.verify_search_plans) {
    // The oracle: the plan from every trial (what a restart computes).
    SearchInputs all;
    std::map<std::string, size_t> all_index;
    SearchInputsLocked(s, *batch, false, &all, &all_index);
    const std::string diff = PlanDifference(plan, PlanSearch(all));
    if (!diff.empty()) {
      return absl::InternalError(
          absl::StrCat("sweep ", sweep_id,
                       ": the incremental search plan differs from the "
                       "plan from every trial: ",
                       diff));
    }
  }
  if (plan.empty()) return absl::OkStatus();
  const absl::Time now = clock_->Now();
  const size_t attempts_before = batch->attempts.size();
  for (const TrialChange& c : plan.changes) {
    TrialRecord cur = in.trials[index.at(c.trial_id)];
    if (c.next == TrialState::kPruned && cur.state == TrialState::kRunning) {
      // Stopped through the worker's next heartbeat (its attempt is no
      // longer current): the trainer checkpoints and exits.
      EndAttemptLocked(cur, AttemptOutcome::kPruned, TrialState::kPruned, 0,
                       "pruned by the sweep's search policy", batch);
      batch->trials.back().last_error = cur.last_error;
    } else {
      cur.state = c.next;
      cur.updated_at = now;
      batch->trials.push_back(cur);
    }
  }
  if (s->spec.search.budget_gpu_hours > 0) {
    // The attempts this plan ended (prunes of running trials), mirrored as
    // MirrorSearchLocked mirrors the batch's others.
    for (size_t i = attempts_before; i < batch->attempts.size(); ++i) {
      s->ended_device_hours += AttemptDeviceHours(s->spec, batch->attempts[i]);
    }
  }
  if (!plan.add.empty() && s->record.state != store::SweepState::kCancelled) {
    std::vector<ExpandedTrial> valid;
    for (const ExpandedTrial& e : plan.add) {
      absl::Status v = ValidateTrialParams(s->spec.kind, e.params);
      if (!v.ok()) {
        SMOE_LOG(WARNING) << "sweep " << sweep_id << ": refine point "
                          << e.params.dump() << " is not a valid trial: " << v;
        continue;
      }
      valid.push_back(e);
    }
    int added = 0;
    SMOE_RETURN_IF_ERROR(AddTrialsLocked(s, valid, batch, &added));
  }
  for (store::DecisionRecord& d : plan.decisions) {
    d.sweep_id = sweep_id;
    d.at = now;
    if (d.trial_id.empty()) {
      s->last[GroupKey(d.group)] = {d.action, d.rung, d.final};
    } else if (d.action != "add") {
      s->last[d.trial_id] = {d.action, d.rung, d.final};
    }
    SMOE_LOG(INFO) << "sweep " << sweep_id << ": " << d.action << " "
                   << (d.trial_id.empty() ? d.group : d.trial_id) << ": "
                   << d.reason;
    batch->decisions.push_back(std::move(d));
  }
  return absl::OkStatus();
}

bool Scheduler::TakeSearchChangesLocked(SweepEntry* s, const WriteBatch& batch,
                                        SearchChanges* changes) {
  if (!options_.incremental_search || !s->search_indexed) return false;
  if (BudgetMaybeSpentLocked(*s, batch)) return false;
  const std::string& sweep_id = s->record.sweep_id;
  changes->trials = &trials_;
  // The trials changed since the last plan, by the batch's trial records,
  // search-metric reports (mirrored in s->reports) or results (s->finals).
  changes->ids = s->search_dirty;
  for (const TrialRecord& t : batch.trials) {
    if (t.sweep_id != sweep_id) continue;
    if (!s->search_info.count(t.trial_id)) return false;
    changes->ids.insert(t.trial_id);
    changes->overlay[t.trial_id] = &t;  // the batch's last record of it
  }
  for (const store::MetricRecord& m : batch.metrics) {
    if (s->search_info.count(m.trial_id)) changes->ids.insert(m.trial_id);
  }
  for (const WriteBatch::Result& r : batch.results) {
    if (s->search_info.count(r.trial_id)) changes->ids.insert(r.trial_id);
  }
  s->search_dirty.clear();
  return true;
}

bool Scheduler::IncrementalStoppingPlanLocked(
    SweepEntry* s, const WriteBatch& batch, SearchInputs* in,
    std::map<std::string, size_t>* index, SearchPlan* plan) {
  SearchChanges changes;
  if (!TakeSearchChangesLocked(s, batch, &changes)) return false;
  const std::set<std::string>& changed = changes.ids;
  auto record = [&](const std::string& id) -> const TrialRecord& {
    return changes.Record(id);
  };
  const std::vector<analysis::search::Report> none;
  analysis::search::IncrementalAsha* asha = s->asha.get();
  analysis::search::IncrementalMedian* median = s->median.get();
  for (const std::string& id : changed) {
    const TrialRecord& t = record(id);
    if (!ConsideredBySearch(t.state)) {
      if (asha != nullptr) asha->Remove(id);
      if (median != nullptr) median->Remove(id);
      continue;
    }
    auto r = s->reports.find(id);
    const std::vector<analysis::search::Report>& rs =
        r != s->reports.end() ? r->second : none;
    if (asha != nullptr) {
      const SearchTrialInfo& info = s->search_info.at(id);
      analysis::search::Trial facts;
      facts.config = info.config;
      facts.has_axis = info.has_axis;
      facts.axis = info.axis;
      facts.rest = info.rest;
      asha->Set(id, info.group, rs, &facts);
    }
    if (median != nullptr) median->Set(id, s->search_info.at(id).group, rs);
  }
  in->spec = &s->spec;
  in->max_steps = s->search_max_steps;
  const std::set<std::string> affected =
      asha != nullptr ? asha->TakeAffected() : median->TakeAffected();
  for (const std::string& id : affected) {
    if (asha != nullptr ? !asha->Has(id) : !median->Has(id)) continue;
    const TrialRecord& t = record(id);
    (*index)[id] = in->trials.size();
    in->trials.push_back(t);
    const bool errored = t.state == TrialState::kPending && t.error_count > 0;
    auto l = s->last.find(id);
    AppendStoppingDecision(
        t,
        asha != nullptr
            ? asha->Decide(id, errored)
            : median->Decide(id, errored, t.state == TrialState::kPruned),
        l == s->last.end() ? nullptr : &l->second, plan);
  }
  return true;
}

bool Scheduler::IncrementalRefinePlanLocked(
    SweepEntry* s, const WriteBatch& batch, SearchInputs* in,
    std::map<std::string, size_t>* index, SearchPlan* plan) {
  namespace search = analysis::search;
  SearchChanges changes;
  if (s->refine == nullptr || !TakeSearchChangesLocked(s, batch, &changes)) {
    return false;
  }
  const std::set<std::string>& changed = changes.ids;
  auto record = [&](const std::string& id) -> const TrialRecord& {
    return changes.Record(id);
  };
  SweepEntry::RefineIndex& refine = *s->refine;
  // The trials whose refine point may change: the changed ones and those
  // whose stopping decision may have changed.
  std::set<std::string> touched = changed;
  in->spec = &s->spec;
  in->max_steps = s->search_max_steps;
  search::IncrementalAsha* asha = s->asha.get();
  const std::vector<search::Report> none;
  auto raced = [&](const TrialRecord& t) {
    return std::find(s->spec.seeds.begin(), s->spec.seeds.end(), t.seed) !=
           s->spec.seeds.end();
  };
  if (asha != nullptr) {
    // early_stop: asha, as IncrementalStoppingPlanLocked over the stopping
    // groups (label and seed) of the sweep's seeds' trials.
    for (const std::string& id : changed) {
      const TrialRecord& t = record(id);
      if (!raced(t)) continue;
      if (!ConsideredBySearch(t.state)) {
        asha->Remove(id);
        continue;
      }
      auto r = s->reports.find(id);
      asha->Set(id, RefineStopGroup(s->search_info.at(id).group, t.seed),
                r != s->reports.end() ? r->second : none);
    }
    for (const std::string& id : asha->TakeAffected()) {
      if (!asha->Has(id)) continue;
      const TrialRecord& t = record(id);
      (*index)[id] = in->trials.size();
      in->trials.push_back(t);
      touched.insert(id);
      const bool errored = t.state == TrialState::kPending && t.error_count > 0;
      auto l = s->last.find(id);
      AppendStoppingDecision(t, asha->Decide(id, errored),
                             l == s->last.end() ? nullptr : &l->second, plan);
    }
  }
  // Refine sees the states the stopping changes lead to.
  std::map<std::string, TrialState> next;
  for (const TrialChange& c : plan->changes) next[c.trial_id] = c.next;
  auto point = [&](const std::string& label, const std::string& id, int64_t x) {
    const TrialRecord& t = record(id);
    auto n = next.find(id);
    const TrialState state = n != next.end() ? n->second : t.state;
    search::RefinePoint p;
    p.group = label;
    p.x = x;
    p.seed = t.seed;
    if (state == TrialState::kPruned && asha != nullptr && asha->Has(id)) {
      // Stopped for good: the stopping decision is a final prune.
      const search::Decision d = asha->Decide(
          id, t.state == TrialState::kPending && t.error_count > 0);
      p.stopped = d.action == search::Action::kPrune && d.final;
    }
    p.pending = state == TrialState::kPending ||
                state == TrialState::kRunning ||
                (state == TrialState::kPruned && !p.stopped);
    auto f = s->finals.find(id);
    p.done = state == TrialState::kSucceeded && f != s->finals.end();
    if (p.done) p.value = f->second;
    return p;
  };
  // The points of the touched trials (changed, or with a stopping decision
  // that may have changed; the others' are as kept), and the groups where
  // one differs; groups to rebuild get every point afresh.
  std::set<std::string> redo;
  for (const std::string& id : touched) {
    const SearchTrialInfo& info = s->search_info.at(id);
    if (!info.has_axis || refine.rebuild.count(info.group)) continue;
    auto it = refine.groups.find(info.group);
    if (it == refine.groups.end()) continue;
    SweepEntry::RefineIndex::Group& g = it->second;
    const size_t i = static_cast<size_t>(
        std::lower_bound(g.ids.begin(), g.ids.end(), id) - g.ids.begin());
    if (i == g.ids.size() || g.ids[i] != id) continue;  // not a point
    search::RefinePoint p = point(info.group, id, info.axis);
    if (!SameRefinePoint(p, g.points[i])) {
      g.points[i] = std::move(p);
      redo.insert(info.group);
    }
  }
  for (const std::string& label : refine.rebuild) {
    auto it = refine.groups.find(label);
    if (it == refine.groups.end()) continue;
    SweepEntry::RefineIndex::Group& g = it->second;
    for (size_t i = 0; i < g.ids.size(); ++i) {
      g.points[i] = point(label, g.ids[i], s->search_info.at(g.ids[i]).axis);
    }
    redo.insert(label);
  }
  refine.rebuild.clear();
  const search::RefineConfig config = RefineConfigOf(s->spec);
  for (const std::string& label : redo) {
    SweepEntry::RefineIndex::Group& g = refine.groups.at(label);
    refine.points -= g.planned ? g.plan.points : 0;
    g.plan = search::DecideRefineGroup(config, label, g.points);
    g.planned = true;
    refine.points += g.plan.points;
    if (g.plan.wants.empty()) {
      refine.wanting.erase(label);
    } else {
      refine.wanting.insert(label);
    }
  }
  std::vector<const std::string*> labels;
  std::vector<const search::RefineGroupPlan*> wanting;
  for (const std::string& label : refine.wanting) {
    labels.push_back(&label);
    wanting.push_back(&refine.groups.at(label).plan);
  }
  search::RefineGrant grant =
      search::GrantRefine(config, wanting, refine.points);
  for (const search::RefineProposal& p : grant.proposals) {
    // The new point copies the params of the group's first trial by id.
    const SweepEntry::RefineIndex::Group& g = refine.groups.at(p.group);
    const nlohmann::json params = nlohmann::json::parse(
        record(*g.ids.begin()).params_json, nullptr, false);
    AppendRefineProposal(s->spec, p, params, plan);
  }
  // The settled states to log: of the re-decided groups and of those left
  // with an ungranted proposal (any other group's state is what an earlier
  // plan logged).
  std::map<std::string, search::RefineGroup> budget;
  for (auto& [i, reason] : grant.budget) {
    search::RefineGroup g = wanting[i]->group;
    g.state = search::RefineState::kBudget;
    g.reason = std::move(reason);
    redo.insert(g.group);
    budget.emplace(*labels[i], std::move(g));
  }
  for (const std::string& label : redo) {
    auto b = budget.find(label);
    auto g = refine.groups.find(label);
    if (b == budget.end() && g == refine.groups.end()) continue;
    auto l = s->last.find(GroupKey(label));
    AppendRefineGroupDecision(
        s->spec, b != budget.end() ? b->second : g->second.plan.group,
        l == s->last.end() ? nullptr : &l->second, plan);
  }
  return true;
}

bool Scheduler::SearchInputsLocked(SweepEntry* s, const WriteBatch& batch,
                                   bool allow_subset, SearchInputs* in,
                                   std::map<std::string, size_t>* index) {
  const std::string& sweep_id = s->record.sweep_id;
  const bool per_group = options_.incremental_search && PlansPerGroup(s->spec);
  in->spec = &s->spec;
  if (per_group && s->search_indexed && allow_subset) {
    // The groups with a trial changed since the last plan or in `batch`.
    std::set<std::string> groups;
    bool known = true;
    auto touch = [&](const std::string& id) {
      auto it = s->search_info.find(id);
      if (it != s->search_info.end()) groups.insert(it->second.group);
      return it != s->search_info.end();
    };
    for (const std::string& id : s->search_dirty) touch(id);
    for (const TrialRecord& t : batch.trials) {
      if (t.sweep_id == sweep_id && !touch(t.trial_id)) known = false;
    }
    for (const store::MetricRecord& m : batch.metrics) touch(m.trial_id);
    for (const WriteBatch::Result& r : batch.results) touch(r.trial_id);
    // A spent GPU-hour budget prunes the pending trials of every group:
    // planned from every trial.
    if (known && !BudgetMaybeSpentLocked(*s, batch)) {
      s->search_dirty.clear();
      in->info = &s->search_info;
      in->max_steps = s->search_max_steps;
      for (const std::string& g : groups) {
        for (const std::string& id : s->search_groups.at(g)) {
          (*index)[id] = in->trials.size();
          in->trials.push_back(trials_.at(id));
          auto r = s->reports.find(id);
          if (r != s->reports.end()) {
            in->reports.insert(in->reports.end(), r->second.begin(),
                               r->second.end());
          }
          auto l = s->last.find(id);
          if (l != s->last.end()) in->last.insert(*l);
        }
      }
      for (const TrialRecord& t : batch.trials) {
        if (t.sweep_id != sweep_id) continue;
        auto it = index->find(t.trial_id);
        if (it != index->end()) in->trials[it->second] = t;
      }
      return true;
    }
  }
  // The state `batch` leads to: memory, overlaid with the batch's trials.
  for (const std::string& id : s->trial_ids) {
    if (id.empty()) continue;
    (*index)[id] = in->trials.size();
    in->trials.push_back(trials_.at(id));
  }
  for (const TrialRecord& t : batch.trials) {
    if (t.sweep_id != sweep_id) continue;
    auto it = index->find(t.trial_id);
    if (it == index->end()) {
      (*index)[t.trial_id] = in->trials.size();
      in->trials.push_back(t);
    } else {
      in->trials[it->second] = t;
    }
  }
  for (const auto& [id, rs] : s->reports) {
    in->reports.insert(in->reports.end(), rs.begin(), rs.end());
  }
  in->finals = s->finals;
  in->last = s->last;
  if (s->spec.search.budget_gpu_hours > 0) {
    in->device_hours_used = DeviceHoursLocked(*s, in->trials);
  }
  const bool indexes =
      options_.incremental_search &&
      (PlansPerGroup(s->spec) || s->spec.search.strategy == "refine");
  if (indexes && allow_subset) {
    if (BudgetSpent(*in)) {
      // Spent for good (device-hours only grow; a spec change re-indexes):
      // every later plan is from every trial, so no index to keep up.
      s->search_indexed = false;
      s->search_dirty.clear();
      s->asha.reset();
      s->median.reset();
      s->refine.reset();
    } else {
      IndexSearchLocked(s, in->trials);
      in->info = &s->search_info;
    }
  }
  return false;
}

bool Scheduler::BudgetMaybeSpentLocked(const SweepEntry& s,
                                       const WriteBatch& batch) {
  const double budget = s.spec.search.budget_gpu_hours;
  if (!(budget > 0)) return false;
  const std::string& sweep_id = s.record.sweep_id;
  const absl::Time now = clock_->Now();
  const int gpus = std::max(1, s.spec.resources.gpus_per_trial);
  double hours = s.ended_device_hours;
  auto add = [&](const TrialRecord& t) {
    if (t.state == TrialState::kRunning && now > t.updated_at) {
      hours += absl::ToDoubleHours(now - t.updated_at) * gpus;
    }
  };
  std::set<std::string> in_batch;
  for (const TrialRecord& t : batch.trials) {
    if (t.sweep_id != sweep_id) continue;
    if (in_batch.insert(t.trial_id).second) {
      // The batch's last record of a trial is the state it leads to.
      const TrialRecord* last = &t;
      for (const TrialRecord& u : batch.trials) {
        if (u.trial_id == t.trial_id) last = &u;
      }
      add(*last);
    }
  }
  for (const std::string& id : running_) {
    if (in_batch.count(id)) continue;
    auto it = trials_.find(id);
    if (it != trials_.end() && it->second.sweep_id == sweep_id) {
      add(it->second);
    }
  }
  return hours >= budget * (1 - 1e-9);
}

void Scheduler::SweepEntry::RefineIndex::Join(const std::string& label,
                                              const std::string& id, int64_t x,
                                              int64_t seed) {
  Group& g = groups[label];
  const auto at = std::lower_bound(g.ids.begin(), g.ids.end(), id);
  if (at != g.ids.end() && *at == id) return;
  // Its point is computed when the group is rebuilt (the next plan).
  analysis::search::RefinePoint p;
  p.group = label;
  p.x = x;
  p.seed = seed;
  g.points.insert(g.points.begin() + (at - g.ids.begin()), std::move(p));
  g.ids.insert(at, id);
  rebuild.insert(label);
}

void Scheduler::IndexSearchLocked(SweepEntry* s,
                                  const std::vector<TrialRecord>& trials) {
  s->search_info.clear();
  s->search_groups.clear();
  s->search_dirty.clear();
  std::vector<const TrialRecord*> by_ordinal;
  by_ordinal.reserve(trials.size());
  for (const TrialRecord& t : trials) by_ordinal.push_back(&t);
  std::sort(by_ordinal.begin(), by_ordinal.end(),
            [](const TrialRecord* a, const TrialRecord* b) {
              return a->ordinal < b->ordinal;
            });
  s->asha.reset();
  s->median.reset();
  s->refine.reset();
  const bool refine = s->spec.search.strategy == "refine";
  if (refine) s->refine = std::make_shared<SweepEntry::RefineIndex>();
  for (const TrialRecord* t : by_ordinal) {
    SearchTrialInfo info = SearchInfoOf(s->spec, *t);
    if (!refine) {
      s->search_groups[info.group].push_back(t->trial_id);
    } else if (info.has_axis) {
      s->refine->groups[info.group].ids.push_back(t->trial_id);
    }
    s->search_info.emplace(t->trial_id, std::move(info));
  }
  s->search_max_steps = SearchMaxSteps(s->spec, trials);
  s->search_indexed = true;
  if (refine) {
    // Every group's points are built by the next plan (unless the plan
    // from every trial that follows hands them over).
    for (auto& [label, g] : s->refine->groups) {
      std::sort(g.ids.begin(), g.ids.end());
      g.points.resize(g.ids.size());
      s->refine->rebuild.insert(label);
    }
  }
  if (refine && s->spec.search.early_stop == "asha") {
    // Refine's early stopping: the sweep's seeds' trials race within their
    // stopping group (RefineStopGroup).
    const analysis::search::AshaConfig c =
        AshaConfigOf(s->spec, s->search_max_steps);
    const std::vector<analysis::search::Report> none;
    s->asha = std::make_shared<analysis::search::IncrementalAsha>(c);
    std::vector<analysis::search::IncrementalAsha::Initial> initial;
    std::vector<std::string> stop_groups;
    stop_groups.reserve(by_ordinal.size());
    for (const TrialRecord* t : by_ordinal) {
      if (!ConsideredBySearch(t->state) ||
          std::find(s->spec.seeds.begin(), s->spec.seeds.end(), t->seed) ==
              s->spec.seeds.end()) {
        continue;
      }
      stop_groups.push_back(
          RefineStopGroup(s->search_info.at(t->trial_id).group, t->seed));
      auto r = s->reports.find(t->trial_id);
      initial.push_back({&t->trial_id, nullptr,
                         r != s->reports.end() ? &r->second : &none, nullptr});
    }
    for (size_t i = 0; i < initial.size(); ++i) {
      initial[i].group = &stop_groups[i];
    }
    s->asha->Load(initial);
    return;
  }
  if (refine) return;
  if (!options_.incremental_stopping) return;
  if (s->spec.search.strategy == "median") {
    analysis::search::MedianConfig c;
    c.mode = analysis::search::ParseMode(s->spec.search.mode);
    c.min_steps = s->spec.search.min_steps;
    c.max_steps = s->search_max_steps;
    const std::vector<analysis::search::Report> none;
    s->median = std::make_shared<analysis::search::IncrementalMedian>(c);
    std::vector<analysis::search::IncrementalMedian::Initial> initial;
    initial.reserve(by_ordinal.size());
    for (const TrialRecord* t : by_ordinal) {
      if (!ConsideredBySearch(t->state)) continue;
      auto r = s->reports.find(t->trial_id);
      initial.push_back({&t->trial_id, &s->search_info.at(t->trial_id).group,
                         r != s->reports.end() ? &r->second : &none});
    }
    s->median->Load(initial);
  }
  if (s->spec.search.strategy == "asha") {
    const analysis::search::AshaConfig c =
        AshaConfigOf(s->spec, s->search_max_steps);
    if (analysis::search::IncrementalAsha::Supports(c)) {
      const std::vector<analysis::search::Report> none;
      s->asha = std::make_shared<analysis::search::IncrementalAsha>(c);
      std::vector<analysis::search::IncrementalAsha::Initial> initial;
      std::vector<analysis::search::Trial> facts(by_ordinal.size());
      initial.reserve(by_ordinal.size());
      for (size_t i = 0; i < by_ordinal.size(); ++i) {
        const TrialRecord* t = by_ordinal[i];
        if (!ConsideredBySearch(t->state)) continue;
        const SearchTrialInfo& info = s->search_info.at(t->trial_id);
        if (c.aggregate_seeds) facts[i].config = info.config;
        if (c.keep_neighbors) {
          facts[i].has_axis = info.has_axis;
          facts[i].axis = info.axis;
          facts[i].rest = info.rest;
        }
        auto r = s->reports.find(t->trial_id);
        initial.push_back({&t->trial_id, &info.group,
                           r != s->reports.end() ? &r->second : &none,
                           &facts[i]});
      }
      s->asha->Load(initial);
    }
  }
}

absl::Status Scheduler::PlanSearchForBatchLocked(WriteBatch* batch) {
  std::set<std::string> touched;
  for (const TrialRecord& t : batch->trials) touched.insert(t.sweep_id);
  for (const WriteBatch::Result& r : batch->results) {
    auto it = trials_.find(r.trial_id);
    if (it != trials_.end()) touched.insert(it->second.sweep_id);
  }
  for (const std::string& id : touched) {
    auto it = sweeps_.find(id);
    if (it == sweeps_.end()) continue;
    SMOE_RETURN_IF_ERROR(PlanSearchLocked(&it->second, batch));
  }
  return absl::OkStatus();
}

Scheduler::SearchPlanTiming Scheduler::GetSearchPlanTiming() {
  absl::MutexLock lock(&mu_);
  return plan_timing_;
}

absl::StatusOr<SearchUsage> Scheduler::GetSearchUsage(
    const std::string& sweep_id) {
  absl::MutexLock lock(&mu_);
  SMOE_ASSIGN_OR_RETURN(SweepEntry * s, FindDurableSweepLocked(sweep_id));
  SearchUsage u;
  if (!IsAdaptive(s->spec)) return u;
  // O(trials that reported), not O(trials): this runs under mu_ on every
  // dashboard refresh of an adaptive sweep (issue 35). Succeeded trials
  // count all their steps (s->counts: the sweep's trials by state); the
  // others the last step they reported, which only trials with reports
  // have. The steps from the first trial (by ordinal) that has them.
  const int64_t steps = SearchMaxSteps(
      s->spec, s->trial_ids.size(), [&](size_t i) -> const TrialRecord* {
        const std::string& id = s->trial_ids[i];
        return id.empty() ? nullptr : &trials_.at(id);
      });
  u.trial_steps_used = static_cast<int64_t>(s->counts.succeeded) * steps;
  for (const auto& [id, reports] : s->reports) {
    auto t = trials_.find(id);
    if (t == trials_.end() || t->second.sweep_id != sweep_id ||
        t->second.state == TrialState::kSucceeded) {
      continue;
    }
    int64_t reached = 0;
    for (const auto& r : reports) reached = std::max(reached, r.step);
    u.trial_steps_used += std::min(reached, steps);
  }
  int64_t points = CountPoints(s->spec);
  if (s->spec.search.strategy == "refine") {
    for (const Axis& a : s->spec.grid) {
      if (a.name != s->spec.search.axis || a.values.empty()) continue;
      points = points / static_cast<int64_t>(a.values.size()) *
               (s->spec.search.bounds_hi - s->spec.search.bounds_lo + 1);
    }
  }
  u.full_grid_trial_steps = points * steps;
  return u;
}

// ---- public wrappers: run under mu_, then wait until durable ---------------

absl::StatusOr<SubmitResult> Scheduler::SubmitSweep(const std::string& yaml,
                                                    bool dry_run) {
  // Parsing, validation and expansion (a SHA-256 per point) need no state:
  // they run before the lock, so a large file does not stop leases and
  // heartbeats (300,000 seeds held the scheduler 13 s; issue 36 item 8).
  SMOE_ASSIGN_OR_RETURN(const SweepSpec spec,
                        ParseSweepYaml(yaml, options_.parse));
  const std::vector<ExpandedTrial> points = ExpandGrid(spec);
  return Mutate<absl::StatusOr<SubmitResult>>(
      [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return SubmitSweepLocked(yaml, spec, points, dry_run);
      });
}

absl::StatusOr<int> Scheduler::CancelSweep(const std::string& sweep_id) {
  return Mutate<absl::StatusOr<int>>([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return CancelSweepLocked(sweep_id);
  });
}

absl::StatusOr<int> Scheduler::RetrySweep(const std::string& sweep_id,
                                          bool include_cancelled) {
  return Mutate<absl::StatusOr<int>>([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return RetrySweepLocked(sweep_id, include_cancelled);
  });
}

absl::StatusOr<int> Scheduler::ExtendSweep(
    const std::string& sweep_id, const std::string& axis,
    const std::vector<nlohmann::json>& values) {
  return Mutate<absl::StatusOr<int>>([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ExtendSweepLocked(sweep_id, axis, values);
  });
}

absl::Status Scheduler::DrainWorker(const std::string& worker_id) {
  return Mutate<absl::Status>([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return DrainWorkerLocked(worker_id);
  });
}

absl::StatusOr<Registration> Scheduler::Register(const WorkerInfo& info) {
  return Mutate<absl::StatusOr<Registration>>(
      [&]()
          ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return RegisterLocked(info); });
}

absl::StatusOr<std::vector<LeaseGrant>> Scheduler::Lease(
    const std::string& worker_id, int free_slots, int free_gpus) {
  return Mutate<absl::StatusOr<std::vector<LeaseGrant>>>(
      [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return LeaseLocked(worker_id, free_slots, free_gpus);
      });
}

absl::StatusOr<HeartbeatReply> Scheduler::Heartbeat(
    const std::string& worker_id, const std::vector<RunningReport>& running,
    bool draining, const std::string& paused) {
  return Mutate<absl::StatusOr<HeartbeatReply>>(
      [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return HeartbeatLocked(worker_id, running, draining, paused);
      });
}

absl::Status Scheduler::ReportMetrics(
    const std::string& worker_id, const std::string& trial_id, int attempt,
    const std::vector<store::MetricRecord>& metrics) {
  return Mutate<absl::Status>([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ReportMetricsLocked(worker_id, trial_id, attempt, metrics);
  });
}

absl::Status Scheduler::Complete(const std::string& worker_id,
                                 const std::string& trial_id, int attempt,
                                 const std::map<std::string, double>& results,
                                 double duration_s) {
  return Mutate<absl::Status>([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return CompleteLocked(worker_id, trial_id, attempt, results, duration_s);
  });
}

absl::Status Scheduler::Fail(const std::string& worker_id,
                             const std::string& trial_id, int attempt,
                             FailReason reason, int exit_code,
                             const std::string& message) {
  return Mutate<absl::Status>([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return FailLocked(worker_id, trial_id, attempt, reason, exit_code, message);
  });
}

int64_t Scheduler::group_commits() {
  absl::MutexLock lock(&commit_mu_);
  return group_commits_;
}

}  // namespace smoe::coordinator
