// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/http/artifact_routes.h
//
// The dashboard API's artifact routes (issue 18 item 2), behind the same
// token check as every /api route (http_server.cc's pre-routing handler):
//   GET /api/trials/{id}/artifacts
//       {"trial_id", "artifacts": [{"name","kind","bytes","sha256","step",
//        "created_ms","url"}]}
//   GET /api/trials/{id}/artifacts/{name}
//       the bytes, as an attachment; checkpoints carry their SHA-256 in
//       the `X-Checksum-Sha256` header (and as the ETag) so a client can
//       verify them.
#ifndef SMOE_COORDINATOR_HTTP_ARTIFACT_ROUTES_H_
#define SMOE_COORDINATOR_HTTP_ARTIFACT_ROUTES_H_

#include "coordinator/checkpoint_store.h"
#include "coordinator/http/http_reply.h"
#include "store/experiment_store.h"

namespace smoe::coordinator {

// Registers the routes through `add` (http_server.cc's, which lists them for
// the access table, coordinator/api/access.h); call before any catch-all /api
// route. `checkpoints` may be null. Neither pointer is owned.
void RegisterArtifactRoutes(const AddHttpRoute& add,
                            store::ExperimentStore* store,
                            CheckpointStore* checkpoints);

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_HTTP_ARTIFACT_ROUTES_H_
