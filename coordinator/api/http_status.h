// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/api/http_status.h
//
// The one mapping from an absl::Status to an HTTP status code, used by every
// HTTP handler of the coordinator (through coordinator/http/http_reply.h):
//
//   InvalidArgument, OutOfRange            400
//   Unauthenticated                        401
//   PermissionDenied                       403
//   NotFound                               404
//   FailedPrecondition, AlreadyExists,
//   Aborted, DataLoss                      409  (not possible in the current
//                                                state; for an artifact set
//                                                aside just now: list again)
//   Unavailable, ResourceExhausted         503  (a fail-stopped scheduler,
//                                                a store that cannot answer)
//   OK                                     200
//   anything else                          500
//
// Thread safety: a pure function.
#ifndef SMOE_COORDINATOR_API_HTTP_STATUS_H_
#define SMOE_COORDINATOR_API_HTTP_STATUS_H_

#include "absl/status/status.h"

namespace smoe::coordinator::api {

int HttpStatusOf(absl::StatusCode code);
inline int HttpStatusOf(const absl::Status& status) {
  return HttpStatusOf(status.code());
}

}  // namespace smoe::coordinator::api

#endif  // SMOE_COORDINATOR_API_HTTP_STATUS_H_
