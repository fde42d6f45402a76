// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/http/log_routes.h
//
// The dashboard API's attempt-log route (coordinator/trial_logs.h), behind the
// same token check as every /api route:
//   GET /api/trials/{id}/logs[?attempt=N]
//       {"trial_id","attempt","attempts":[...],"running","as_of_ms",
//        "total_bytes","text"}; 404 for an unknown trial or attempt, 400 for
//       an attempt that is not a number >= 0.
// Kept apart from trial_logs.h so that only the HTTP server's sources include
// httplib.
#ifndef SMOE_COORDINATOR_HTTP_LOG_ROUTES_H_
#define SMOE_COORDINATOR_HTTP_LOG_ROUTES_H_

#include "coordinator/http/http_reply.h"
#include "coordinator/trial_logs.h"

namespace smoe::coordinator {

// Registers the route through `add` (http_server.cc's, which lists it for the
// access table, coordinator/api/access.h). `logs` is not owned; null: the route
// answers 404.
void RegisterLogRoutes(const AddHttpRoute& add, TrialLogs* logs);

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_HTTP_LOG_ROUTES_H_
