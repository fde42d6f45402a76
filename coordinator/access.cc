// Copyright 2026 SMoE Lab authors.
#include "coordinator/access.h"

#include <regex>

#include "absl/strings/str_cat.h"

namespace smoe::coordinator {

const char* AccessName(Access access) {
  switch (access) {
    case Access::kPublic:
      return "public";
    case Access::kViewer:
      return "viewer";
    case Access::kWorker:
      return "worker";
    case Access::kAdmin:
      return "admin";
  }
  return "?";
}

bool Allows(Role role, Access required) {
  switch (required) {
    case Access::kPublic:
      return true;
    case Access::kViewer:
      return role == Role::kViewer || role == Role::kAdmin;
    case Access::kWorker:
      return role == Role::kWorker || role == Role::kAdmin;
    case Access::kAdmin:
      return role == Role::kAdmin;
  }
  return false;
}

const std::vector<GrpcRule>& GrpcAccessTable() {
  static const auto* const kTable = new std::vector<GrpcRule>{
      // Kubernetes probes carry no token.
      {"/grpc.health.v1.Health/Check", Access::kPublic},
      {"/grpc.health.v1.Health/Watch", Access::kPublic},
      // The CLI.
      {"/smoe.v1.Coordinator/SubmitSweep", Access::kAdmin},
      {"/smoe.v1.Coordinator/CancelSweep", Access::kAdmin},
      {"/smoe.v1.Coordinator/RetrySweep", Access::kAdmin},
      {"/smoe.v1.Coordinator/ExtendSweep", Access::kAdmin},
      {"/smoe.v1.Coordinator/AnnotateSweep", Access::kAdmin},
      {"/smoe.v1.Coordinator/DeleteSweep", Access::kAdmin},
      {"/smoe.v1.Coordinator/DrainWorker", Access::kAdmin},
      {"/smoe.v1.Coordinator/ListSweeps", Access::kViewer},
      {"/smoe.v1.Coordinator/GetSweep", Access::kViewer},
      {"/smoe.v1.Coordinator/WatchSweep", Access::kViewer},
      {"/smoe.v1.Coordinator/GetTrialMetrics", Access::kViewer},
      {"/smoe.v1.Coordinator/ListArtifacts", Access::kViewer},
      {"/smoe.v1.Coordinator/GetArtifact", Access::kViewer},
      {"/smoe.v1.Coordinator/GetTrialLogs", Access::kViewer},
      // The worker daemon.
      {"/smoe.v1.WorkerGateway/Register", Access::kWorker},
      {"/smoe.v1.WorkerGateway/Lease", Access::kWorker},
      {"/smoe.v1.WorkerGateway/Heartbeat", Access::kWorker},
      {"/smoe.v1.WorkerGateway/ReportMetrics", Access::kWorker},
      {"/smoe.v1.WorkerGateway/Complete", Access::kWorker},
      {"/smoe.v1.WorkerGateway/Fail", Access::kWorker},
      {"/smoe.v1.WorkerGateway/PutCheckpoint", Access::kWorker},
      {"/smoe.v1.WorkerGateway/GetCheckpoint", Access::kWorker},
  };
  return *kTable;
}

#define SMOE_SWEEP "([a-z0-9][a-z0-9._-]{0,63})"
#define SMOE_TRIAL "([a-z0-9][a-z0-9._-]{0,63}/[0-9a-f]{16})"

const std::vector<HttpRule>& HttpAccessTable() {
  static const auto* const kTable = new std::vector<HttpRule>{
      {"GET", "/healthz", Access::kPublic},
      {"GET", "/login", Access::kPublic},
      // Sign-in and sign-out change only the caller's own session; they are
      // checked for a foreign Origin (http_auth.h).
      {"POST", "/login", Access::kPublic},
      {"POST", "/logout", Access::kPublic},
      // The API's description: routes and roles, no data
      // (coordinator/openapi.h).
      {"GET", "/api/openapi.json", Access::kPublic},
      // Reads.
      {"GET", "/api/session", Access::kViewer},
      {"GET", "/api/sweeps", Access::kViewer},
      {"GET", "/api/sweeps/" SMOE_SWEEP, Access::kViewer},
      {"GET", "/api/sweeps/" SMOE_SWEEP "/curves", Access::kViewer},
      {"GET", "/api/sweeps/" SMOE_SWEEP "/analysis", Access::kViewer},
      {"GET", "/api/sweeps/" SMOE_SWEEP "/skillmix", Access::kViewer},
      {"GET", "/api/sweeps/" SMOE_SWEEP "/events", Access::kViewer},
      {"GET", "/api/sweeps/" SMOE_SWEEP "/search", Access::kViewer},
      {"GET", "/api/trials/" SMOE_TRIAL "/metrics", Access::kViewer},
      {"GET", "/api/trials/" SMOE_TRIAL "/artifacts", Access::kViewer},
      {"GET", "/api/trials/" SMOE_TRIAL "/artifacts/([A-Za-z0-9._-]{1,200})",
       Access::kViewer},
      {"GET", "/api/trials/" SMOE_TRIAL "/logs", Access::kViewer},
      // Actions (coordinator/http_actions.cc); CSRF-checked.
      {"POST", "/api/sweeps/" SMOE_SWEEP "/cancel", Access::kAdmin},
      {"POST", "/api/sweeps/" SMOE_SWEEP "/retry", Access::kAdmin},
      {"POST", "/api/sweeps/" SMOE_SWEEP "/archive", Access::kAdmin},
      {"PUT", "/api/sweeps/" SMOE_SWEEP "/annotations", Access::kAdmin},
      {"DELETE", "/api/sweeps/" SMOE_SWEEP, Access::kAdmin},
      {"POST", "/api/trials/" SMOE_TRIAL "/cancel", Access::kAdmin},
      {"POST", "/api/trials/" SMOE_TRIAL "/retry", Access::kAdmin},
      // Unknown API routes answer 404 to signed-in viewers only.
      {"GET", "/api/.*", Access::kViewer},
      // The web app's files hold no data.
      {"GET", "/.*", Access::kPublic},
  };
  return *kTable;
}

#undef SMOE_SWEEP
#undef SMOE_TRIAL

std::optional<Access> GrpcAccess(absl::string_view path) {
  for (const GrpcRule& r : GrpcAccessTable()) {
    if (path == r.method) return r.required;
  }
  return std::nullopt;
}

std::optional<Access> HttpAccess(absl::string_view method,
                                 absl::string_view path) {
  static const auto* const kRegexes = [] {
    auto* v = new std::vector<std::regex>();
    for (const HttpRule& r : HttpAccessTable()) v->emplace_back(r.pattern);
    return v;
  }();
  if (method == "HEAD") method = "GET";
  const std::string p(path);
  const std::vector<HttpRule>& table = HttpAccessTable();
  for (size_t i = 0; i < table.size(); ++i) {
    if (method == table[i].method && std::regex_match(p, (*kRegexes)[i])) {
      return table[i].required;
    }
  }
  return std::nullopt;
}

absl::Status Authorize(const std::optional<Principal>& who, Access required,
                       absl::string_view what) {
  if (required == Access::kPublic) return absl::OkStatus();
  if (!who.has_value()) {
    return absl::UnauthenticatedError(
        absl::StrCat(what, " needs an API token"));
  }
  if (Allows(who->role, required)) return absl::OkStatus();
  return absl::PermissionDeniedError(
      absl::StrCat(what, " needs role '", AccessName(required), "'; token '",
                   who->name, "' has role '", RoleName(who->role), "'"));
}

}  // namespace smoe::coordinator
