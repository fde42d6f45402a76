// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/http/http_server.h
//
// The dashboard's HTTP server (cpp-httplib): the embedded web app and a
// read-only JSON API over the Scheduler and the ExperimentStore.
//
//   GET  /login                     login page (public)
//   POST /login                     token=... (form body) or {"token": ...}
//                                   (JSON); a token in the query string is
//                                   refused (400). Sets the HttpOnly
//                                   SameSite=Strict session cookie, an HMAC
//                                   of the token (never the token itself)
//   POST /logout                    clears it
//   GET  /healthz                   "ok" (public)
//   GET  /, /index.html, /assets/*  the embedded web app (public; it holds no
//                                   data)
//   GET  /api/sweeps                sweeps with counts and axes
//   GET  /api/sweeps/{id}           sweep + one page of the trials table:
//                                   ?offset=0&limit=100&sort=-r.ood_acc
//                                   &state=succeeded,failed&q=M=2 hyla
//   GET  /api/sweeps/{id}/curves    ?metric=ood_acc&x=top_k&series=M
//                                   &facet=attention : mean, s.e.m. and
//                                   bootstrap CI over seeds + optimal k
//   GET  /api/sweeps/{id}/analysis  ?metric=ood_acc : curves, optimal k, the
//                                   E(k, N) fit (analysis/)
//   GET  /api/sweeps/{id}/skillmix  ?rows=ept&cols=k_skills : tables
//   GET  /api/sweeps/{id}/events    Server-Sent Events: `sweep` events with
//                                   the counts and the changed trials' rows
//   GET  /api/trials/{id}/metrics   ?name=&max_points=2000 : metric series
//   GET  /api/session, POST/PUT     the signed-in role and CSRF token, and
//        /api/sweeps/{id}/...,      the admin actions (cancel, retry,
//        /api/trials/{id}/...       archive, notes/tags):
//                                   coordinator/http/http_actions.h
//
// Auth: every route has a row in the access table (coordinator/api/access.h);
// /api/ routes need a token of role viewer (reads) or admin (the actions of
// coordinator/http/http_actions.h), as `Authorization: Bearer T` or the session
// cookie set by POST /login; 401 without one, 403 naming the role needed.
// State-changing requests are checked for CSRF (coordinator/http/http_auth.h).
// The token is never logged or echoed.
//
// This file holds routing, auth, query-parameter parsing and JSON only. The
// data comes from the read model (coordinator/views/sweep_read_model.h): a
// per-sweep snapshot of ExperimentStore::ListSummaries at the sweep's durable
// version, incremental aggregators, and responses cached per (sweep version,
// query), so repeated requests against a 100k-trial sweep cost a lookup. The
// trials table's filter/sort/page is coordinator/views/trial_table.h.
//
// Thread safety: Start/Shutdown from one thread; each connection is served
// by a thread of its own (up to HttpServerOptions::max_connections). SSE
// streams wait in bounded steps and end on client disconnect or Shutdown().
#ifndef SMOE_COORDINATOR_HTTP_HTTP_SERVER_H_
#define SMOE_COORDINATOR_HTTP_HTTP_SERVER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/checkpoint_store.h"
#include "coordinator/connection_budget.h"
#include "coordinator/scheduler.h"
#include "coordinator/tokens.h"
#include "coordinator/trial_logs.h"
#include "store/experiment_store.h"

namespace smoe::coordinator {

struct HttpServerOptions {
  // host:port; port 0 picks a free port (see HttpServer::port()).
  std::string listen = "127.0.0.1:8080";
  // Connection threads kept ready; each open connection (and SSE stream)
  // holds one while it is open.
  int threads = 24;
  // Open connections served at once: threads are added on demand up to this
  // many, so slow or idle clients do not starve /healthz or /api. At most
  // this many - 16 are admitted; beyond that a newcomer evicts a connection
  // waiting for its client from the busiest address, or gets 503
  // (coordinator/http/http_connections.h).
  int max_connections = 512;
  // Open connections per client address (SSE streams included; 503 with
  // Retry-After beyond), and the time to read one whole request once its
  // first byte arrived (coordinator/http/http_connections.h).
  int max_connections_per_client = 64;
  // The connection budget shared with gRPC (coordinator/connection_budget.h;
  // not owned, null: none): each admitted connection takes a unit of its
  // address's budget.
  ConnectionBudget* budget = nullptr;
  absl::Duration request_deadline = absl::Seconds(10);
  // Concurrent SSE streams allowed in all and per client address (503 with
  // Retry-After beyond); in all at most max_connections - 16.
  int max_event_streams = 64;
  int max_event_streams_per_client = 8;
  // SSE: how long one wait for a change lasts, and the keep-alive period.
  // A stream of a sweep that is deleted gets `event: deleted` and ends.
  absl::Duration event_poll = absl::Milliseconds(500);
  absl::Duration event_keepalive = absl::Seconds(10);
  // Bootstrap resamples for the curves and the optimal-k CI.
  int bootstrap_samples = 1000;
  // Checkpoint artifacts (coordinator/http/artifact_routes.h); null = none
  // listed. Not owned.
  CheckpointStore* checkpoints = nullptr;
  // Attempt logs (coordinator/trial_logs.h); null = the logs route answers
  // 404. Not owned.
  TrialLogs* logs = nullptr;
};

class HttpServer {
 public:
  // Binds and starts serving. No pointer is owned; all must outlive the
  // server. `tokens` says who may do what (coordinator/tokens.h). The
  // overload with a bare token serves that token as the only (admin) one.
  // Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      Scheduler* scheduler, store::ExperimentStore* store,
      TokenRegistry* tokens, const HttpServerOptions& options);
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      Scheduler* scheduler, store::ExperimentStore* store, std::string token,
      const HttpServerOptions& options);
  ~HttpServer();

  int port() const;
  // Every registered route as (method, pattern); each has a row in the access
  // table (coordinator/api/access.h).
  const std::vector<std::pair<std::string, std::string>>& routes() const;
  // "http://127.0.0.1:<port>/" (a wildcard host becomes 127.0.0.1).
  std::string url() const;
  // The bound address as DescribeBind() writes it.
  std::string bind_description() const;
  // Stops accepting, ends SSE streams, joins the threads. Idempotent.
  void Shutdown();

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      Scheduler* scheduler, store::ExperimentStore* store,
      TokenRegistry* tokens, const HttpServerOptions& options,
      std::unique_ptr<TokenRegistry> owned);
  std::unique_ptr<Impl> impl_;
};

// Splits "host:port" (IPv6 as "[::1]:port"). An empty host (":8080") is
// 0.0.0.0, every interface. InvalidArgument when malformed.
absl::StatusOr<std::pair<std::string, int>> ParseListenAddress(
    const std::string& listen);

// What a log line says about a bound address: "127.0.0.1:8080", or for a
// wildcard host "0.0.0.0:8080 (all interfaces)" so the log never claims a
// loopback-only bind that is not.
std::string DescribeBind(const std::string& host, int port);

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_HTTP_HTTP_SERVER_H_
