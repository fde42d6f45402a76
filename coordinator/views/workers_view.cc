// Copyright 2026 SMoE Lab authors.
#include "coordinator/views/workers_view.h"

#include <algorithm>
#include <utility>

namespace smoe::coordinator {
namespace {

bool Silent(WorkerState s) {
  return s == WorkerState::kLost || s == WorkerState::kStopped;
}

}  // namespace

const char* WorkerStateName(WorkerState state) {
  switch (state) {
    case WorkerState::kReady:
      return "ready";
    case WorkerState::kDraining:
      return "draining";
    case WorkerState::kStopped:
      return "stopped";
    case WorkerState::kPaused:
      return "paused";
    case WorkerState::kLost:
      return "lost";
  }
  return "ready";
}

WorkersTable ReadWorkersTable(std::vector<WorkerSnapshot> workers,
                              absl::Time now, absl::Duration lost_after,
                              bool all) {
  WorkersTable table;
  table.as_of = now;
  table.lost_after = lost_after;
  for (WorkerSnapshot& w : workers) {
    WorkerRow row;
    row.heartbeat_age =
        std::max(absl::ZeroDuration(), now - w.record.last_heartbeat_at);
    if (row.heartbeat_age > lost_after) {
      row.state = w.record.draining && w.trial_ids.empty()
                      ? WorkerState::kStopped
                      : WorkerState::kLost;
      if (!all && row.heartbeat_age > kForgetLostAfter) {
        ++table.hidden;
        continue;
      }
    } else if (w.record.draining) {
      row.state = WorkerState::kDraining;
    } else if (!w.paused.empty()) {
      row.state = WorkerState::kPaused;
    }
    row.worker = std::move(w);
    table.rows.push_back(std::move(row));
  }
  std::stable_sort(table.rows.begin(), table.rows.end(),
                   [](const WorkerRow& a, const WorkerRow& b) {
                     const bool al = Silent(a.state), bl = Silent(b.state);
                     if (al != bl) return bl;
                     if (al) {
                       if (a.heartbeat_age != b.heartbeat_age) {
                         return a.heartbeat_age < b.heartbeat_age;
                       }
                     }
                     return a.worker.record.worker_id <
                            b.worker.record.worker_id;
                   });
  return table;
}

WorkersTable ReadWorkersTable(Scheduler& scheduler, bool all) {
  return ReadWorkersTable(scheduler.ListWorkers(), scheduler.Now(),
                          scheduler.options().lease_timeout, all);
}

}  // namespace smoe::coordinator
