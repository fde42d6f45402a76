// Copyright 2026 SMoE Lab authors.
#include <grpcpp/grpcpp.h>

#include "proto/auth.h"
#include "proto/rpc_status.h"
#include "proto/smoe.grpc.pb.h"
#include "worker/daemon/gateway_client.h"

namespace smoe::worker {
namespace {

class GrpcGatewayClient final : public GatewayClient {
 public:
  explicit GrpcGatewayClient(const GrpcGatewayOptions& options)
      : options_(options) {
    std::shared_ptr<grpc::ChannelCredentials> creds;
    if (options.tls_root_certs_pem.empty()) {
      creds = grpc::InsecureChannelCredentials();
    } else {
      grpc::SslCredentialsOptions ssl;
      ssl.pem_root_certs = options.tls_root_certs_pem;
      creds = grpc::SslCredentials(ssl);
    }
    grpc::ChannelArguments args;
    // Reconnect quickly after a coordinator restart; the daemon does its own
    // backoff between calls.
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
    channel_ = grpc::CreateCustomChannel(options.address, creds, args);
    stub_ = v1::WorkerGateway::NewStub(channel_);
  }

  absl::StatusOr<v1::RegisterResponse> Register(
      const v1::RegisterRequest& req) override {
    return Call(req, &v1::WorkerGateway::Stub::Register);
  }
  absl::StatusOr<v1::LeaseResponse> Lease(
      const v1::LeaseRequest& req) override {
    return Call(req, &v1::WorkerGateway::Stub::Lease);
  }
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest& req) override {
    return Call(req, &v1::WorkerGateway::Stub::Heartbeat);
  }
  absl::StatusOr<v1::ReportMetricsResponse> ReportMetrics(
      const v1::ReportMetricsRequest& req) override {
    return Call(req, &v1::WorkerGateway::Stub::ReportMetrics);
  }
  absl::StatusOr<v1::CompleteResponse> Complete(
      const v1::CompleteRequest& req) override {
    return Call(req, &v1::WorkerGateway::Stub::Complete);
  }
  absl::StatusOr<v1::FailResponse> Fail(const v1::FailRequest& req) override {
    return Call(req, &v1::WorkerGateway::Stub::Fail);
  }

 private:
  template <typename Req, typename Resp>
  absl::StatusOr<Resp> Call(const Req& req,
                            grpc::Status (v1::WorkerGateway::Stub::*method)(
                                grpc::ClientContext*, const Req&, Resp*)) {
    grpc::ClientContext ctx;
    proto::PrepareClientContext(&ctx, options_.token, options_.call_timeout);
    Resp resp;
    grpc::Status s = (stub_.get()->*method)(&ctx, req, &resp);
    if (!s.ok()) return proto::FromGrpcStatus(s);
    return resp;
  }

  GrpcGatewayOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::WorkerGateway::Stub> stub_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<GatewayClient>> NewGrpcGatewayClient(
    const GrpcGatewayOptions& options) {
  if (options.address.empty()) {
    return absl::InvalidArgumentError("coordinator address is empty");
  }
  if (options.token.empty()) {
    return absl::InvalidArgumentError("API token is empty");
  }
  return std::unique_ptr<GatewayClient>(new GrpcGatewayClient(options));
}

}  // namespace smoe::worker
