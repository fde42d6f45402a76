// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/views/workers_view.h
//
// The workers table (issue 31 item 7): every registered worker with its
// capacity, what it runs, its labels and kinds, and a state a person can act
// on — ready, paused (heartbeating but leasing nothing, with the reason its
// daemon gives, e.g. a full work dir), draining, stopped (drained, then silent
// with no trials: the daemon exited as a drain ends) or lost (silent for longer
// than the lease timeout otherwise: its trials have been, or are about to be,
// re-queued). `smoe workers` (gRPC ListWorkers) and the dashboard's workers
// page (GET /api/workers) serialise the same rows.
//
// Thread safety: pure functions.
#ifndef SMOE_COORDINATOR_VIEWS_WORKERS_VIEW_H_
#define SMOE_COORDINATOR_VIEWS_WORKERS_VIEW_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "coordinator/scheduler.h"

namespace smoe::coordinator {

enum class WorkerState { kReady, kDraining, kStopped, kLost, kPaused };

// "ready" | "draining" | "stopped" | "lost" | "paused".
const char* WorkerStateName(WorkerState state);

struct WorkerRow {
  WorkerSnapshot worker;
  WorkerState state = WorkerState::kReady;
  absl::Duration heartbeat_age;  // now - last heartbeat, >= 0
};

struct WorkersTable {
  std::vector<WorkerRow> rows;
  absl::Time as_of;
  absl::Duration lost_after;
  int hidden = 0;  // silent for longer than kForgetLostAfter, left out
};

// Lost and stopped workers stay in the table this long after their last
// heartbeat; older ones are counted in `hidden` unless `all` is asked.
inline constexpr absl::Duration kForgetLostAfter = absl::Hours(24);

// The table at `now`: a worker whose last heartbeat is older than
// `lost_after` is stopped when it was draining and holds no trial, lost
// otherwise; a heartbeating one is draining when it was asked to drain (or
// drains itself), paused when its heartbeat says why it leases nothing (its
// work dir cannot be written), otherwise ready. Rows sort ready and draining
// workers first (by id), then the silent ones, the most recently heard from
// first.
WorkersTable ReadWorkersTable(std::vector<WorkerSnapshot> workers,
                              absl::Time now, absl::Duration lost_after,
                              bool all);

// Convenience: the scheduler's workers at its clock's now, lost after its
// lease timeout.
WorkersTable ReadWorkersTable(Scheduler& scheduler, bool all);

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_VIEWS_WORKERS_VIEW_H_
