// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/api/operations.h
//
// The coordinator's API, stated once: every operation with its HTTP method
// and path, its gRPC method, the role it needs and a one-line summary. From
// this table
//   - the HTTP server registers its routes (coordinator/http/http_server.cc
//   looks
//     each handler's method and pattern up here by Op),
//   - the access table is read (coordinator/api/access.h),
//   - the OpenAPI document's paths, summaries, tags and roles are generated
//     (coordinator/api/openapi.h; the per-operation schemas stay hand-written
//     there, keyed by the operation's name).
// The id patterns (a sweep id, a trial id, an artifact name) are written here
// and nowhere else.
//
// Adding an operation: one row here, one view function (coordinator/views/
// for a read) and a serialiser per transport (docs/development.md).
//
// Thread safety: the table is immutable.
#ifndef SMOE_COORDINATOR_API_OPERATIONS_H_
#define SMOE_COORDINATOR_API_OPERATIONS_H_

#include <string>
#include <vector>

namespace smoe::coordinator {

// What a call needs: nothing (public), or a token whose role allows it.
enum class Access { kPublic, kViewer, kWorker, kAdmin };

namespace api {

// The id patterns, as regular expressions without anchors or groups.
// A sweep id is the sweep's name; a trial id is "<sweep id>/<16 hex>".
inline constexpr char kSweepIdRegex[] = "[a-z0-9][a-z0-9._-]{0,63}";
inline constexpr char kTrialHexRegex[] = "[0-9a-f]{16}";
inline constexpr char kArtifactNameRegex[] = "[A-Za-z0-9._-]{1,200}";
// A worker id (ValidateWorkerInfo's rule; may hold '/', sent as %2F).
inline constexpr char kWorkerIdRegex[] = "[A-Za-z0-9._:/-]{1,128}";

// One enumerator per operation; the table below has exactly one row each.
enum class Op {
  // Kubernetes probes (gRPC health service).
  kHealthCheck,
  kHealthWatch,
  // Session and description (HTTP only).
  kHealthz,
  kLoginPage,
  kLogin,
  kLogout,
  kOpenApi,
  kSession,
  // Reads.
  kListSweeps,
  kGetSweep,
  kWatchSweep,
  kGetCurves,
  kGetAnalysis,
  kGetTunedAnalysis,
  kGetSkillMix,
  kGetSearch,
  kGetTrialMetrics,
  kListArtifacts,
  kGetArtifact,
  kGetTrialLogs,
  kListWorkers,
  // Actions.
  kSubmitSweep,
  kCancelSweep,
  kRetrySweep,
  kExtendSweep,
  kArchiveSweep,
  kAnnotateSweep,
  kDeleteSweep,
  kCancelTrial,
  kRetryTrial,
  kDrainWorker,
  // The worker daemon (gRPC only).
  kRegister,
  kLease,
  kHeartbeat,
  kReportMetrics,
  kComplete,
  kFail,
  kPutCheckpoint,
  kGetCheckpoint,
  // HTTP catch-alls, matched last: unknown API routes (404 for viewers) and
  // the web app's files.
  kUnknownApiRoute,
  kWebApp,  // keep last: OperationOf() indexes by Op up to it
};

struct Operation {
  Op op;
  // The operation's name: the gRPC method's name where there is one; the
  // key of its hand-written schema in the OpenAPI document.
  const char* name;
  // "GET" | "POST" | "PUT" | "DELETE"; nullptr when not served over HTTP.
  const char* http_method;
  // The HTTP path as an OpenAPI template: {sweep} is a sweep id,
  // {sweep}/{trial} a trial id, {name} an artifact name, {worker} a worker
  // id. The catch-alls hold
  // their regular expression instead. nullptr when not served over HTTP.
  const char* http_path;
  // The full gRPC path ("/smoe.v1.Coordinator/GetSweep"); nullptr when not
  // served over gRPC.
  const char* grpc_method;
  Access access;
  // The OpenAPI tag ("session" | "read" | "actions"); nullptr: not described
  // in the OpenAPI document (gRPC only, or a catch-all).
  const char* tag;
  const char* summary;
};

// Every operation. The HTTP ones are in match order: the first whose method
// and pattern match a request applies (the catch-alls come last).
const std::vector<Operation>& Operations();

// The row of `op` (every Op has one).
const Operation& OperationOf(Op op);

// The regular expression an HTTP route is registered with: the path template
// with {sweep}/{trial} as one group (the full trial id), {sweep}, {name} and
// {worker} as a group each. REQUIRES: op.http_path != nullptr.
std::string HttpPattern(const Operation& op);

// The inverse of HttpPattern for a registered pattern: the OpenAPI template.
// Patterns without groups come back unchanged.
std::string OpenApiPathOf(const std::string& pattern);

}  // namespace api
}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_API_OPERATIONS_H_
