// Copyright 2026 SMoE Lab authors.
//
// File: worker/daemon/gateway_client.h
//
// The daemon's view of the coordinator's WorkerGateway service, behind an
// interface so the daemon is unit-tested with a fake. Requests and replies are
// the smoe.v1 messages; errors are absl::Status with the gRPC code (UNAVAILABLE
// / DEADLINE_EXCEEDED: coordinator unreachable; NOT_FOUND: unknown worker, it
// must re-register; FAILED_PRECONDITION: stale attempt).
#ifndef SMOE_WORKER_DAEMON_GATEWAY_CLIENT_H_
#define SMOE_WORKER_DAEMON_GATEWAY_CLIENT_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/smoe.pb.h"

namespace smoe::worker {

// One method per WorkerGateway RPC. Implementations are thread-compatible
// (the daemon calls them from its one loop thread), except PutCheckpoint,
// which the daemon's checkpoint uploader thread calls concurrently with the
// others (the gRPC implementation is thread-safe).
class GatewayClient {
 public:
  virtual ~GatewayClient() = default;

  virtual absl::StatusOr<v1::RegisterResponse> Register(
      const v1::RegisterRequest& req) = 0;
  virtual absl::StatusOr<v1::LeaseResponse> Lease(
      const v1::LeaseRequest& req) = 0;
  virtual absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest& req) = 0;
  virtual absl::StatusOr<v1::ReportMetricsResponse> ReportMetrics(
      const v1::ReportMetricsRequest& req) = 0;
  virtual absl::StatusOr<v1::CompleteResponse> Complete(
      const v1::CompleteRequest& req) = 0;
  virtual absl::StatusOr<v1::FailResponse> Fail(const v1::FailRequest& req) = 0;

  // Streams the file at `path` as the checkpoint `header` describes (ids,
  // step, file_name, total_bytes, sha256; no data) in kBlobChunkBytes
  // chunks. `cancel` (may be null) is polled between chunks: once true the
  // upload is abandoned with Cancelled. The default (a coordinator or fake
  // without checkpoint storage) answers Unimplemented.
  virtual absl::StatusOr<v1::PutCheckpointResponse> PutCheckpoint(
      const v1::CheckpointChunk& header, const std::string& path,
      const std::atomic<bool>* cancel);
  // Downloads the stored checkpoint `req` names into `dest_path` (created or
  // truncated) and returns its header (step, file_name, total_bytes,
  // sha256). The caller verifies the file. Default: Unimplemented.
  virtual absl::StatusOr<v1::CheckpointChunk> GetCheckpoint(
      const v1::GetCheckpointRequest& req, const std::string& dest_path);
};

struct GrpcGatewayOptions {
  std::string address = "127.0.0.1:50051";  // host:port of the coordinator
  std::string token;                        // API token (never logged)
  // PEM root certificates; empty = plaintext (insecure channel).
  std::string tls_root_certs_pem;
  absl::Duration call_timeout = absl::Seconds(10);  // deadline of every call
  // Checkpoint uploads are paced to at most this many bytes per second
  // (`smoe worker --checkpoint-upload-mbps`), so they do not crowd out a
  // training job's own traffic on a shared NIC; 0 = as fast as the link goes.
  double upload_bytes_per_s = 0;
};

// How long an upload that has sent `sent` bytes after `elapsed` waits before
// its next chunk so that it stays at or under `bytes_per_s` (0 = unlimited:
// never waits).
absl::Duration UploadPaceDelay(int64_t sent, absl::Duration elapsed,
                               double bytes_per_s);

// Deadline of a checkpoint transfer of `bytes`: `base` plus one second per
// 8 MiB (a 2 GiB blob gets about 4.5 minutes), plus the paced duration when
// uploads are limited to `bytes_per_s` (> 0).
absl::Duration TransferTimeout(absl::Duration base, int64_t bytes,
                               double bytes_per_s = 0);

// Creates the gRPC implementation. The channel connects lazily, so this
// succeeds while the coordinator is down (calls then fail UNAVAILABLE).
// InvalidArgument for an empty address or token.
absl::StatusOr<std::unique_ptr<GatewayClient>> NewGrpcGatewayClient(
    const GrpcGatewayOptions& options);

}  // namespace smoe::worker

#endif  // SMOE_WORKER_DAEMON_GATEWAY_CLIENT_H_
