// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/connection_budget.h
//
// One budget of client connections shared by the coordinator's two
// transports (issue 36): per client address and in total. The
// dashboard (coordinator/http/http_connections.h) takes one unit per admitted
// HTTP connection, for as long as it is open (SSE streams included); gRPC
// (coordinator/grpc/service_impl.cc) takes one unit per call in progress,
// for as long as the call runs (a WatchSweep stream for its life), from the
// address in the call's peer. So an address that holds its whole budget in
// HTTP connections gets RESOURCE_EXHAUSTED on its gRPC calls, and the
// reverse: 503 on new HTTP connections.
//
// What is not shared, and why: gRPC 1.51 (Debian 12) has no hook at accept
// time (its resource quota's connection limit came in a later release, and a
// connection handed in by descriptor, grpcpp/server_posix.h, bypasses the
// server credentials that check tokens before a body is read): an idle gRPC
// connection, or one still in its handshake, takes no unit; those are bounded
// by the handshake timeout and the idle GOAWAY (server.cc). A gRPC call is
// counted once its headers passed the token check and its request was read,
// so the budget bounds concurrent work per address, not the bytes of a
// request (bounded per method, grpc_auth.h). grpc.health.v1 and GET /healthz
// take no unit (probes are never starved).
//
// Thread safety: every method is thread-safe.
#ifndef SMOE_COORDINATOR_CONNECTION_BUDGET_H_
#define SMOE_COORDINATOR_CONNECTION_BUDGET_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace smoe::coordinator {

struct ConnectionBudgetLimits {
  // Units per client address: HTTP connections + gRPC calls. <= 0: no cap.
  int per_address = 64;
  // Units in all. <= 0: no cap. Above the dashboard's own total cap (496
  // connections, which evicts slow connections for newcomers before this
  // is reached), so that gRPC keeps at least 80 units when the dashboard is
  // full.
  int total = 576;
};

class ConnectionBudget {
 public:
  explicit ConnectionBudget(ConnectionBudgetLimits limits = {})
      : limits_(limits) {}
  ConnectionBudget(const ConnectionBudget&) = delete;
  ConnectionBudget& operator=(const ConnectionBudget&) = delete;

  // Takes one unit for `address` (a numeric host: "127.0.0.1", "::1") on
  // behalf of `transport` ("http", "grpc"). ResourceExhausted naming the
  // address, what it holds over each transport and the cap (or the total
  // and its cap) when either is reached; nothing is taken then.
  absl::Status Acquire(absl::string_view address, absl::string_view transport);
  // Gives back a unit Acquire took for the same address and transport.
  void Release(absl::string_view address, absl::string_view transport);

  // Units `address` holds now (both transports), and all addresses.
  int held(absl::string_view address) const;
  int total() const;
  // Acquire calls refused so far.
  int64_t refused() const;
  const ConnectionBudgetLimits& limits() const { return limits_; }

 private:
  struct Held {
    int http = 0;
    int grpc = 0;
  };
  const ConnectionBudgetLimits limits_;
  mutable absl::Mutex mu_;
  std::map<std::string, Held, std::less<>> held_ ABSL_GUARDED_BY(mu_);
  int total_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
};

// The numeric host of a gRPC peer string: "ipv4:127.0.0.1:5000" ->
// "127.0.0.1", "ipv6:[::1]:5000" -> "::1", "ipv6:%5B::1%5D:5000" -> "::1";
// anything else is returned whole ("unix:/path").
std::string GrpcPeerAddress(absl::string_view peer);

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_CONNECTION_BUDGET_H_
