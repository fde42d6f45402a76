// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/grpc/grpc_auth.h
//
// Token and role checking at the gRPC transport, before any request body is
// read, and the per-method request size limits.
//
// The services also check the token (service_impl.cc), but a handler runs
// only after gRPC has read and parsed the whole request: an unauthenticated
// client could make the coordinator hold (and parse) up to the transport's
// message limit per call (issue 16: 12 parallel 60 MiB calls took it from 23
// to 516 MB). TokenServerCredentials installs an auth metadata processor that
// runs when the call's headers arrive: a call without the right
// `authorization: Bearer <token>` is refused there with UNAUTHENTICATED and
// its stream is reset, so its body is never buffered beyond the HTTP/2
// flow-control window. The token's role is checked there too, against the
// access table (coordinator/api/access.h): a viewer or worker token calling an
// admin method is refused with PERMISSION_DENIED naming the role needed, and
// a method missing from the table is refused for everyone. grpc.health.v1
// stays public (Kubernetes probes).
//
// Refusals are logged at most once per 10 s with the count of the others.
//
// Thread safety: TokenAuthChecker is safe for concurrent use.
#ifndef SMOE_COORDINATOR_GRPC_GRPC_AUTH_H_
#define SMOE_COORDINATOR_GRPC_GRPC_AUTH_H_

#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/log_limiter.h"
#include "coordinator/tokens.h"

namespace smoe::coordinator {

// The largest request any method accepts (the transport's receive limit).
inline constexpr size_t kMaxLargeRequestBytes = 32 << 20;
// The limit of every method that carries no bulk data (Register, Lease and
// the read/cancel calls).
inline constexpr size_t kMaxSmallRequestBytes = 64 << 10;
// Heartbeat, Complete and Fail: they may carry attempt log tails (64 KiB
// each; docs/logs-and-system-metrics.md).
inline constexpr size_t kMaxMediumRequestBytes = 1 << 20;

// The request size limit of the gRPC method named by its name or full path
// ("Register", "/smoe.v1.WorkerGateway/Register"): kMaxLargeRequestBytes for
// ReportMetrics, SubmitSweep and ExtendSweep, kMaxMediumRequestBytes for
// Heartbeat, Complete and Fail, kMaxSmallRequestBytes for the others.
size_t MaxRequestBytes(absl::string_view method);

// ResourceExhausted naming the method, the size and the limit when
// `request_bytes` exceeds MaxRequestBytes(method).
absl::Status CheckRequestSize(absl::string_view method, size_t request_bytes);

class TokenAuthChecker {
 public:
  // `tokens` is not owned and must outlive the checker.
  explicit TokenAuthChecker(TokenRegistry* tokens);

  // OK when `method` (the call's :path) is public (grpc.health.v1), or
  // `authorization` is "Bearer <token>" for a token whose role the access
  // table allows for `method`. Unauthenticated for a missing or unknown
  // token (never echoing what was sent), PermissionDenied naming the role
  // needed for a token of the wrong role or a method without a table row.
  // Refusals are counted and logged (rate-limited).
  absl::Status Check(absl::string_view method, absl::string_view authorization);
  // The same from a server call's metadata (the services check again).
  absl::Status CheckMetadata(
      absl::string_view method,
      const std::multimap<grpc::string_ref, grpc::string_ref>& metadata);

  // The principal of a call's "authorization: Bearer <token>" metadata, or
  // nullopt.
  std::optional<Principal> Caller(
      const std::multimap<grpc::string_ref, grpc::string_ref>& metadata);

  // Calls refused so far.
  int64_t refused() const { return log_.total(); }

 private:
  TokenRegistry* const tokens_;
  LogLimiter log_{absl::Seconds(10)};
};

// Server credentials (plaintext, or TLS when both PEM strings are non-empty)
// whose calls pass `checker` before any message is read. `checker` must
// outlive the server.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TokenServerCredentials(
    TokenAuthChecker* checker, const std::string& cert_pem,
    const std::string& key_pem);

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_GRPC_GRPC_AUTH_H_
