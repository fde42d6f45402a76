// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/http_server.h
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
//
// Auth: every /api/ route needs the API token, as `Authorization: Bearer T`
// or the cookie set by POST /login; compared in constant time; 401 otherwise.
// The token is never logged or echoed.
//
// This file holds routing, auth, query-parameter parsing and JSON only. The
// data comes from the read model (coordinator/sweep_read_model.h): a per-sweep
// snapshot of ExperimentStore::ListSummaries at the sweep's durable version,
// incremental aggregators, and responses cached per (sweep version, query),
// so repeated requests against a 100k-trial sweep cost a lookup. The trials
// table's filter/sort/page is coordinator/trial_table.h.
//
// Thread safety: Start/Shutdown from one thread; each connection is served
// by a thread of its own (up to HttpServerOptions::max_connections). SSE
// streams wait in bounded steps and end on client disconnect or Shutdown().
#ifndef SMOE_COORDINATOR_HTTP_SERVER_H_
#define SMOE_COORDINATOR_HTTP_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/checkpoint_store.h"
#include "coordinator/scheduler.h"
#include "store/experiment_store.h"

namespace smoe::coordinator {

struct HttpServerOptions {
  // host:port; port 0 picks a free port (see HttpServer::port()).
  std::string listen = "127.0.0.1:8080";
  // Connection threads kept ready; each open connection (and SSE stream)
  // holds one while it is open.
  int threads = 24;
  // Open connections served at once: threads are added on demand up to this
  // many, so slow or idle clients do not starve /healthz or /api (beyond it,
  // new connections wait for a thread).
  int max_connections = 512;
  // Concurrent SSE streams allowed in all and per client address (503 with
  // Retry-After beyond); in all at most max_connections - 16.
  int max_event_streams = 64;
  int max_event_streams_per_client = 8;
  // SSE: how long one wait for a change lasts, and the keep-alive period.
  absl::Duration event_poll = absl::Milliseconds(500);
  absl::Duration event_keepalive = absl::Seconds(10);
  // Bootstrap resamples for the curves and the optimal-k CI.
  int bootstrap_samples = 1000;
  // Checkpoint artifacts (coordinator/artifact_routes.h); null = none
  // listed. Not owned.
  CheckpointStore* checkpoints = nullptr;
};

class HttpServer {
 public:
  // Binds and starts serving. Neither pointer is owned; both must outlive
  // the server. Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      Scheduler* scheduler, store::ExperimentStore* store, std::string token,
      const HttpServerOptions& options);
  ~HttpServer();

  int port() const;
  // "http://127.0.0.1:<port>/" (a wildcard host becomes 127.0.0.1).
  std::string url() const;
  // The bound address as DescribeBind() writes it.
  std::string bind_description() const;
  // Stops accepting, ends SSE streams, joins the threads. Idempotent.
  void Shutdown();

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
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

#endif  // SMOE_COORDINATOR_HTTP_SERVER_H_
