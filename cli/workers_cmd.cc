// Copyright 2026 SMoE Lab authors.
#include "cli/workers_cmd.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "cli/sweep_cmds.h"
#include "proto/rpc_status.h"

namespace smoe::cli {
namespace {

namespace pb = smoe::v1;
using Stub = pb::Coordinator::Stub;

const char* StateName(pb::WorkerState s) {
  switch (s) {
    case pb::WORKER_STATE_DRAINING:
      return "draining";
    case pb::WORKER_STATE_LOST:
      return "lost";
    case pb::WORKER_STATE_STOPPED:
      return "stopped";
    case pb::WORKER_STATE_PAUSED:
      return "paused";
    default:
      return "ready";
  }
}

std::string UsedOf(int used, int total) {
  return absl::StrCat(used, "/", total);
}

}  // namespace

std::string FormatHeartbeatAge(int64_t last_ms, int64_t as_of_ms) {
  if (last_ms <= 0) return "never";
  const absl::Duration age =
      absl::Milliseconds(std::max<int64_t>(0, as_of_ms - last_ms));
  return absl::StrCat(FormatEta(age), " ago");
}

void PrintWorkers(const pb::ListWorkersResponse& resp, std::ostream& out,
                  int max_trials) {
  std::vector<std::vector<std::string>> rows;
  int ready = 0, paused = 0, draining = 0, stopped = 0, lost = 0, used = 0,
      slots = 0;
  std::vector<std::string> reasons;
  for (const pb::WorkerStatus& w : resp.workers()) {
    switch (w.state()) {
      case pb::WORKER_STATE_DRAINING:
        ++draining;
        break;
      case pb::WORKER_STATE_LOST:
        ++lost;
        break;
      case pb::WORKER_STATE_STOPPED:
        ++stopped;
        break;
      case pb::WORKER_STATE_PAUSED:
        ++paused;
        reasons.push_back(
            absl::StrCat("paused: ", w.worker_id(), ": ", w.paused()));
        break;
      default:
        ++ready;
    }
    if (w.state() == pb::WORKER_STATE_READY ||
        w.state() == pb::WORKER_STATE_PAUSED ||
        w.state() == pb::WORKER_STATE_DRAINING) {
      used += w.slots_used();
      slots += w.slots();
    }
    std::vector<std::string> labels;
    for (const auto& [k, v] : w.labels())
      labels.push_back(absl::StrCat(k, "=", v));
    std::sort(labels.begin(), labels.end());
    std::string trials = "-";
    if (w.trial_ids_size() > 0) {
      const int shown = std::min(w.trial_ids_size(), max_trials);
      trials = absl::StrJoin(w.trial_ids().begin(),
                             w.trial_ids().begin() + shown, ",");
      if (shown < w.trial_ids_size()) {
        absl::StrAppend(&trials, " +", w.trial_ids_size() - shown, " more");
      }
    }
    rows.push_back({w.worker_id(), w.hostname().empty() ? "-" : w.hostname(),
                    StateName(w.state()), UsedOf(w.slots_used(), w.slots()),
                    UsedOf(w.gpus_used(), w.gpus()),
                    w.kinds().empty() ? "-" : absl::StrJoin(w.kinds(), ","),
                    labels.empty() ? "-" : absl::StrJoin(labels, ","),
                    FormatHeartbeatAge(w.last_heartbeat_ms(), resp.as_of_ms()),
                    trials});
  }
  if (!rows.empty()) {
    PrintTable({"WORKER", "HOST", "STATE", "SLOTS", "GPUS", "KINDS", "LABELS",
                "HEARTBEAT", "TRIALS"},
               rows, out);
  }
  out << resp.workers_size() << " worker"
      << (resp.workers_size() == 1 ? "" : "s") << ": " << ready << " ready, "
      << (paused > 0 ? absl::StrCat(paused, " paused, ") : "") << draining
      << " draining, " << stopped << " stopped, " << lost << " lost; " << used
      << "/" << slots << " slots in use";
  if (resp.hidden() > 0) {
    out << "; " << resp.hidden()
        << " silent for more than a day not shown (smoe workers --all)";
  }
  out << "\n";
  for (const std::string& r : reasons) out << r << "\n";
  if (lost > 0) {
    out << "lost: no heartbeat for more than "
        << FormatEta(absl::Milliseconds(resp.lost_after_ms()))
        << " (the lease timeout); their trials are re-queued\n";
  }
}

int WorkersCmd(CoordinatorClient& client, bool all, std::ostream& out) {
  pb::ListWorkersRequest req;
  req.set_all(all);
  pb::ListWorkersResponse resp;
  if (int rc = Call(client, &Stub::ListWorkers, req, &resp)) {
    return rc;
  }
  PrintWorkers(resp, out);
  return kExitOk;
}

int DrainWorkerCmd(CoordinatorClient& client, const std::string& worker_id,
                   std::ostream& out) {
  pb::DrainWorkerRequest req;
  req.set_worker_id(worker_id);
  pb::DrainWorkerResponse resp;
  if (int rc = Call(client, &Stub::DrainWorker, req, &resp)) {
    return rc;
  }
  out << "worker " << worker_id
      << " draining: it leases nothing more; its trials checkpoint and are "
         "re-queued (they resume elsewhere); then its daemon exits\n";
  return kExitOk;
}

}  // namespace smoe::cli
