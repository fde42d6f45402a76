// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/http/worker_routes.h
//
// The dashboard API's worker routes (issue 31 item 7), behind the same token
// check as every /api route:
//   GET  /api/workers[?all=1]   the workers table (views/workers_view.h)
//       {"workers":[{worker_id, hostname, state, draining, paused, cpus, gpus,
//       gpus_used,
//        slots, slots_used, labels, kinds, registered_ms, last_heartbeat_ms,
//        heartbeat_age_s, trial_ids}], "as_of_ms", "lost_after_s", "hidden"}
//   POST /api/workers/{worker}/drain   admin; CSRF-checked for cookie
//       sessions: {"worker_id", "draining": true}; 404 for an unknown worker.
#ifndef SMOE_COORDINATOR_HTTP_WORKER_ROUTES_H_
#define SMOE_COORDINATOR_HTTP_WORKER_ROUTES_H_

#include "coordinator/http/http_reply.h"
#include "coordinator/scheduler.h"
#include "coordinator/tokens.h"
#include "coordinator/views/workers_view.h"
#include "nlohmann/json.hpp"

namespace smoe::coordinator {

// The table as GET /api/workers answers it.
nlohmann::json WorkersTableJson(const WorkersTable& table);

// Registers the routes through `add` (http_server.cc's). Not owned.
void RegisterWorkerRoutes(const AddHttpRoute& add, Scheduler* scheduler,
                          TokenRegistry* tokens);

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_HTTP_WORKER_ROUTES_H_
