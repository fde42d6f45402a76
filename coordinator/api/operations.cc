// Copyright 2026 SMoE Lab authors.
#include "coordinator/api/operations.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace smoe::coordinator::api {

const std::vector<Operation>& Operations() {
  constexpr Access kPublic = Access::kPublic;
  constexpr Access kViewer = Access::kViewer;
  constexpr Access kWorker = Access::kWorker;
  constexpr Access kAdmin = Access::kAdmin;
  static const auto* const kTable = new std::vector<Operation>{
      // Kubernetes probes carry no token.
      {Op::kHealthCheck, "Check", nullptr, nullptr,
       "/grpc.health.v1.Health/Check", kPublic, nullptr, "Health check"},
      {Op::kHealthWatch, "Watch", nullptr, nullptr,
       "/grpc.health.v1.Health/Watch", kPublic, nullptr, "Health stream"},
      {Op::kHealthz, "Healthz", "GET", "/healthz", nullptr, kPublic, "session",
       "Liveness"},
      {Op::kLoginPage, "LoginPage", "GET", "/login", nullptr, kPublic,
       "session", "The sign-in page"},
      // Sign-in and sign-out change only the caller's own session; they are
      // checked for a foreign Origin (coordinator/http/http_auth.h).
      {Op::kLogin, "Login", "POST", "/login", nullptr, kPublic, "session",
       "Sign in: sets the HttpOnly session cookie"},
      {Op::kLogout, "Logout", "POST", "/logout", nullptr, kPublic, "session",
       "Sign out: clears the session cookie"},
      // The API's description: routes and roles, no data.
      {Op::kOpenApi, "OpenApi", "GET", "/api/openapi.json", nullptr, kPublic,
       "session", "This description"},
      // Reads.
      {Op::kSession, "GetSession", "GET", "/api/session", nullptr, kViewer,
       "session",
       "The signed-in token's name and role, and the CSRF token for actions"},
      {Op::kListSweeps, "ListSweeps", "GET", "/api/sweeps",
       "/smoe.v1.Coordinator/ListSweeps", kViewer, "read",
       "Every sweep with its counts and axes"},
      {Op::kGetSweep, "GetSweep", "GET", "/api/sweeps/{sweep}",
       "/smoe.v1.Coordinator/GetSweep", kViewer, "read",
       "A sweep and one page of its trials table"},
      {Op::kGetCurves, "GetCurves", "GET", "/api/sweeps/{sweep}/curves",
       nullptr, kViewer, "read",
       "Mean, s.e.m. and bootstrap CI over seeds of a metric against a "
       "parameter, and the optimal x per line"},
      {Op::kGetAnalysis, "GetAnalysis", "GET", "/api/sweeps/{sweep}/analysis",
       nullptr, kViewer, "read",
       "Curves, optimal x with CIs, and the E(k, N) fit"},
      {Op::kGetTunedAnalysis, "GetTunedAnalysis", "GET",
       "/api/sweeps/{sweep}/analysis/tuned", nullptr, kViewer, "read",
       "The optimal x when each x gets its own tuned hyperparameters "
       "(selected on the validation split), beside each fixed "
       "configuration"},
      {Op::kGetSkillMix, "GetSkillMix", "GET", "/api/sweeps/{sweep}/skillmix",
       nullptr, kViewer, "read",
       "Skill-Mix tables (mean, s.e., n per cell) per metric, with the best "
       "row per column"},
      {Op::kWatchSweep, "WatchSweep", "GET", "/api/sweeps/{sweep}/events",
       "/smoe.v1.Coordinator/WatchSweep", kViewer, "read",
       "Server-Sent Events: `hello`, then a `sweep` event per change with the "
       "counts and the changed trials' rows"},
      {Op::kGetSearch, "GetSearch", "GET", "/api/sweeps/{sweep}/search",
       nullptr, kViewer, "read",
       "An adaptive sweep's search: strategy, trial-steps used, pruned "
       "trials, decisions with reasons"},
      {Op::kGetTrialMetrics, "GetTrialMetrics", "GET",
       "/api/trials/{sweep}/{trial}/metrics",
       "/smoe.v1.Coordinator/GetTrialMetrics", kViewer, "read",
       "A trial's metric series (downsampled), its attempts and parameters"},
      {Op::kListArtifacts, "ListArtifacts", "GET",
       "/api/trials/{sweep}/{trial}/artifacts",
       "/smoe.v1.Coordinator/ListArtifacts", kViewer, "read",
       "A trial's stored checkpoints and result files"},
      {Op::kGetArtifact, "GetArtifact", "GET",
       "/api/trials/{sweep}/{trial}/artifacts/{name}",
       "/smoe.v1.Coordinator/GetArtifact", kViewer, "read",
       "Download one artifact"},
      {Op::kGetTrialLogs, "GetTrialLogs", "GET",
       "/api/trials/{sweep}/{trial}/logs", "/smoe.v1.Coordinator/GetTrialLogs",
       kViewer, "read",
       "One attempt's log: the trainer's stderr and non-event stdout (the "
       "last 64 KiB; secrets redacted). Reading a running attempt asks its "
       "worker for a fresh tail (about one heartbeat later)"},
      {Op::kListWorkers, "ListWorkers", "GET", "/api/workers",
       "/smoe.v1.Coordinator/ListWorkers", kViewer, "read",
       "Every worker: capacity and use, labels, kinds, last heartbeat, the "
       "trials it runs, and its state (ready, draining, stopped, lost)"},
      // Actions; over HTTP CSRF-checked (coordinator/http/http_auth.h).
      {Op::kSubmitSweep, "SubmitSweep", "POST", "/api/sweeps",
       "/smoe.v1.Coordinator/SubmitSweep", kAdmin, "actions",
       "Submit a sweep file (or, with dry_run, validate it): every problem "
       "in the file, or the trials it adds"},
      {Op::kCancelSweep, "CancelSweep", "POST", "/api/sweeps/{sweep}/cancel",
       "/smoe.v1.Coordinator/CancelSweep", kAdmin, "actions",
       "Cancel every pending and running trial"},
      {Op::kRetrySweep, "RetrySweep", "POST", "/api/sweeps/{sweep}/retry",
       "/smoe.v1.Coordinator/RetrySweep", kAdmin, "actions",
       "Re-queue the failed (and optionally cancelled) trials"},
      {Op::kExtendSweep, "ExtendSweep", "POST", "/api/sweeps/{sweep}/extend",
       "/smoe.v1.Coordinator/ExtendSweep", kAdmin, "actions",
       "Add values to one axis of a sweep's grid (or seeds), or draw more "
       "sampled configurations (samples); never duplicates a point"},
      {Op::kArchiveSweep, "ArchiveSweep", "POST", "/api/sweeps/{sweep}/archive",
       nullptr, kAdmin, "actions",
       "Archive (or unarchive) a sweep: hidden from the sweeps list by "
       "default"},
      {Op::kAnnotateSweep, "AnnotateSweep", "PUT",
       "/api/sweeps/{sweep}/annotations", "/smoe.v1.Coordinator/AnnotateSweep",
       kAdmin, "actions", "Set a sweep's notes and/or tags"},
      {Op::kDeleteSweep, "DeleteSweep", "DELETE", "/api/sweeps/{sweep}",
       "/smoe.v1.Coordinator/DeleteSweep", kAdmin, "actions",
       "Delete a finished sweep and all its data"},
      {Op::kCancelTrial, "CancelTrial", "POST",
       "/api/trials/{sweep}/{trial}/cancel", nullptr, kAdmin, "actions",
       "Cancel a pending or running trial"},
      {Op::kRetryTrial, "RetryTrial", "POST",
       "/api/trials/{sweep}/{trial}/retry", nullptr, kAdmin, "actions",
       "Re-queue a failed or cancelled trial"},
      {Op::kDrainWorker, "DrainWorker", "POST", "/api/workers/{worker}/drain",
       "/smoe.v1.Coordinator/DrainWorker", kAdmin, "actions",
       "Drain a worker: it leases nothing more; its trials checkpoint and "
       "resume elsewhere; then it exits"},
      // The worker daemon.
      {Op::kRegister, "Register", nullptr, nullptr,
       "/smoe.v1.WorkerGateway/Register", kWorker, nullptr, "A worker joins"},
      {Op::kLease, "Lease", nullptr, nullptr, "/smoe.v1.WorkerGateway/Lease",
       kWorker, nullptr, "A worker takes trials"},
      {Op::kHeartbeat, "Heartbeat", nullptr, nullptr,
       "/smoe.v1.WorkerGateway/Heartbeat", kWorker, nullptr,
       "A worker keeps its leases"},
      {Op::kReportMetrics, "ReportMetrics", nullptr, nullptr,
       "/smoe.v1.WorkerGateway/ReportMetrics", kWorker, nullptr,
       "A worker sends trial events"},
      {Op::kComplete, "Complete", nullptr, nullptr,
       "/smoe.v1.WorkerGateway/Complete", kWorker, nullptr,
       "A trial succeeded"},
      {Op::kFail, "Fail", nullptr, nullptr, "/smoe.v1.WorkerGateway/Fail",
       kWorker, nullptr, "An attempt failed"},
      {Op::kPutCheckpoint, "PutCheckpoint", nullptr, nullptr,
       "/smoe.v1.WorkerGateway/PutCheckpoint", kWorker, nullptr,
       "A worker uploads a checkpoint"},
      {Op::kGetCheckpoint, "GetCheckpoint", nullptr, nullptr,
       "/smoe.v1.WorkerGateway/GetCheckpoint", kWorker, nullptr,
       "A worker downloads a checkpoint to resume"},
      // Unknown API routes answer 404 to signed-in viewers only.
      {Op::kUnknownApiRoute, "UnknownApiRoute", "GET", "/api/.*", nullptr,
       kViewer, nullptr, "404 for an unknown API route"},
      // The web app's files hold no data.
      {Op::kWebApp, "WebApp", "GET", "/.*", nullptr, kPublic, nullptr,
       "The embedded web app"},
  };
  return *kTable;
}

const Operation& OperationOf(Op op) {
  static const auto* const kByOp = [] {
    auto* v = new std::vector<const Operation*>(
        static_cast<size_t>(Op::kWebApp) + 1, nullptr);
    for (const Operation& o : Operations()) {
      (*v)[static_cast<size_t>(o.op)] = &o;
    }
    return v;
  }();
  return *(*kByOp)[static_cast<size_t>(op)];
}

namespace {

std::string Group(absl::string_view regex) {
  return absl::StrCat("(", regex, ")");
}

}  // namespace

std::string HttpPattern(const Operation& op) {
  const std::string trial =
      Group(absl::StrCat(kSweepIdRegex, "/", kTrialHexRegex));
  return absl::StrReplaceAll(op.http_path,
                             {{"{sweep}/{trial}", trial},
                              {"{sweep}", Group(kSweepIdRegex)},
                              {"{name}", Group(kArtifactNameRegex)},
                              {"{worker}", Group(kWorkerIdRegex)}});
}

std::string OpenApiPathOf(const std::string& pattern) {
  return absl::StrReplaceAll(
      pattern, {{Group(absl::StrCat(kSweepIdRegex, "/", kTrialHexRegex)),
                 "{sweep}/{trial}"},
                {Group(kSweepIdRegex), "{sweep}"},
                {Group(kArtifactNameRegex), "{name}"},
                {Group(kWorkerIdRegex), "{worker}"}});
}

}  // namespace smoe::coordinator::api
