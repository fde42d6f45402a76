// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/http/http_connections.h
//
// BoundedHttpServer: a cpp-httplib server whose connections are bounded per
// client and in time (issue 16 item 3):
//
//   - at most `max_per_client` open connections per client address; the next
//     one is answered `503 Service Unavailable` (Retry-After) and closed
//     within 1 s, unless its request is `GET /healthz` (health probes are
//     never starved by their own address's connections);
//   - at most `max_total` admitted connections in all (issue 36 item 6: 30
//     addresses x 64 slow connections, each address under its cap, took
//     every thread and another address got nothing for 12 s). A connection
//     past it evicts one that is waiting for its client's bytes (idle, or
//     still sending its request) from the address with the most open
//     connections, oldest wait first, when that address has at least two
//     more than the newcomer's; else it is answered 503 (Retry-After) and
//     closed at once, unless `GET /healthz` has already arrived on it. Kept
//     below the thread count, so a newcomer always finds a thread to be
//     admitted or refused on, and a refusal never waits for the client;
//   - the connection budget shared with gRPC (coordinator/connection_budget.h,
//     when `budget` is set): each admitted connection also takes a unit of
//     its address's budget, which that address's gRPC calls use too; a
//     connection the budget refuses is answered like one over the
//     per-client cap (503, Retry-After, the budget's message; `GET /healthz`
//     still served);
//   - a total deadline for reading each request (request line, headers and
//     the body, at most payload_max_length): cpp-httplib 0.11's read timeout
//     is per read(), so a client sending one byte every few seconds kept its
//     connection and thread forever. Past the deadline the connection is
//     closed.
//
// It replaces cpp-httplib's per-connection loop (the private virtual
// Server::process_and_close_socket, which Server's accept loop calls for each
// connection) with the same keep-alive loop over a socket stream of its own
// that enforces both limits, and hands each request to the library's
// process_request() as before. Responses (and SSE streams) are written with
// the server's write timeout, as before.
//
// Thread safety: connections are served concurrently; the counters are
// guarded.
#ifndef SMOE_COORDINATOR_HTTP_HTTP_CONNECTIONS_H_
#define SMOE_COORDINATOR_HTTP_HTTP_CONNECTIONS_H_

#include <httplib.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "coordinator/connection_budget.h"

namespace smoe::coordinator {

struct HttpConnectionLimits {
  // Open connections per client address (SSE streams included).
  int max_per_client = 64;
  // Time to read one whole request once its first byte arrived.
  absl::Duration request_deadline = absl::Seconds(10);
  // Open connections in all (0: no cap). Keep it below the connection
  // threads (HttpServerOptions::max_connections).
  int max_total = 0;
  // The budget shared with gRPC (not owned; null: none).
  ConnectionBudget* budget = nullptr;
};

class BoundedHttpServer : public httplib::Server {
 public:
  explicit BoundedHttpServer(HttpConnectionLimits limits = {})
      : limits_(limits) {}

  void set_limits(const HttpConnectionLimits& limits) { limits_ = limits; }

  // Raises the bound socket's listen backlog (cpp-httplib 0.11 listens with
  // a backlog of 5: a burst of connections overflowed it and waited for
  // 1 s SYN retransmits). After binding; false when it fails.
  bool RaiseListenBacklog(int backlog);

  // Connections refused for the per-client cap or the shared budget, and
  // closed at the request deadline, so far.
  int64_t refused_per_client() const;
  int64_t deadline_closed() const;
  // Connections evicted for a newcomer, and refused at the total cap.
  int64_t evicted() const;
  int64_t refused_total() const;
  // Open (admitted) connections now, in all.
  int total_connections() const;
  // Open connections of `address` now.
  int open_connections(const std::string& address) const;

 private:
  bool process_and_close_socket(socket_t sock) override;
  // One admitted connection. `waiting_since` (absl::ToUnixNanos; 0 = not
  // waiting) is set by its thread while it waits for the client's bytes.
  struct Conn {
    std::string client;
    socket_t sock;
    std::atomic<int64_t> waiting_since{0};
    bool evicted = false;  // guarded by mu_
  };
  // Waits until `sock` has data (true) or the keep-alive timeout passes or
  // the server stops (false).
  bool WaitForRequest(socket_t sock, Conn* conn) const;
  // At the total cap: shuts down the connection to evict for a newcomer
  // from an address with `newcomer_open` connections (see the file
  // comment); false when there is none.
  bool EvictForLocked(int newcomer_open) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  HttpConnectionLimits limits_;
  mutable absl::Mutex mu_;
  std::map<std::string, int> open_ ABSL_GUARDED_BY(mu_);
  // Admitted connections; a socket stays here until just before it is
  // closed, so an eviction never shuts down a reused descriptor.
  std::map<socket_t, std::shared_ptr<Conn>> conns_ ABSL_GUARDED_BY(mu_);
  int64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t refused_total_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t evicted_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t deadline_closed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_HTTP_HTTP_CONNECTIONS_H_
