// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/http/http_actions.h
//
// The dashboard's state-changing routes (admins only, CSRF-checked by the
// gate in coordinator/http/http_auth.h before they run) and GET /api/session:
//
//   GET  /api/session                   {"name", "role", "csrf", "admin"}
//   POST /api/sweeps                    {"spec_yaml": "...", "dry_run": bool}
//                                       -> {"sweep_id", "kind", "dry_run",
//                                       "new_trials", "existing_trials",
//                                       "total_trials"}; a refused file is
//                                       400 {"error", "problems": [...]} with
//                                       every problem (Scheduler::SubmitSweep)
//   POST /api/sweeps/{id}/extend        {"axis": "M", "values": [5, 6]} ->
//                                       {"sweep_id", "new_trials"}
//   POST /api/sweeps/{id}/cancel        {"cancelled": n}
//   POST /api/sweeps/{id}/retry         {"include_cancelled": bool}? ->
//                                       {"requeued": n}
//   POST /api/sweeps/{id}/archive       {"archived": bool} (default true)
//   PUT  /api/sweeps/{id}/annotations   {"notes": "...", "tags": [...]}
//                                       (either or both)
//   DELETE /api/sweeps/{id}             {"sweep_id", "deleted_trials": n};
//                                       409 while trials are pending or
//                                       running (Scheduler::DeleteSweep)
//   POST /api/trials/{id}/cancel        {"state": "cancelled"}
//   POST /api/trials/{id}/retry         {"state": "pending"}
//
// The same Scheduler calls as the gRPC service (coordinator/grpc/), so both
// transports refuse the same input with the same message.
// Errors are JSON {"error": ...}: 400 bad input (naming the field), 404
// unknown sweep or trial, 409 not possible in the current state, 503 store
// failing (coordinator/api/http_status.h). Every action is logged with the
// token's name (never the token).
//
// Thread safety: the handlers are safe for concurrent use.
#ifndef SMOE_COORDINATOR_HTTP_HTTP_ACTIONS_H_
#define SMOE_COORDINATOR_HTTP_HTTP_ACTIONS_H_

#include "coordinator/http/http_reply.h"
#include "coordinator/scheduler.h"
#include "coordinator/tokens.h"

namespace smoe::coordinator {

// Registers the routes above through `add`. Neither pointer is owned.
void AddActionRoutes(const AddHttpRoute& add, Scheduler* scheduler,
                     TokenRegistry* tokens);

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_HTTP_HTTP_ACTIONS_H_
