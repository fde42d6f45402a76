// Copyright 2026 SMoE Lab authors.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/blob_file.h"
#include "common/logging.h"
#include "proto/auth.h"
#include "proto/rpc_status.h"
#include "proto/smoe.grpc.pb.h"
#include "proto/utf8_fields.h"
#include "worker/daemon/gateway_client.h"

namespace smoe::worker {

absl::StatusOr<v1::PutCheckpointResponse> GatewayClient::PutCheckpoint(
    const v1::CheckpointChunk&, const std::string&, const std::atomic<bool>*) {
  return absl::UnimplementedError("checkpoint storage not supported");
}

absl::StatusOr<v1::CheckpointChunk> GatewayClient::GetCheckpoint(
    const v1::GetCheckpointRequest&, const std::string&) {
  return absl::UnimplementedError("checkpoint storage not supported");
}

absl::Duration UploadPaceDelay(int64_t sent, absl::Duration elapsed,
                               double bytes_per_s) {
  if (bytes_per_s <= 0 || sent <= 0) return absl::ZeroDuration();
  const absl::Duration due =
      absl::Seconds(static_cast<double>(sent) / bytes_per_s);
  return due > elapsed ? due - elapsed : absl::ZeroDuration();
}

absl::Duration TransferTimeout(absl::Duration base, int64_t bytes,
                               double bytes_per_s) {
  absl::Duration d = base + absl::Seconds(bytes / (8 << 20));
  if (bytes_per_s > 0) {
    d += absl::Seconds(static_cast<double>(bytes) / bytes_per_s);
  }
  return d;
}

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

  absl::StatusOr<v1::PutCheckpointResponse> PutCheckpoint(
      const v1::CheckpointChunk& header, const std::string& path,
      const std::atomic<bool>* cancel) override {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
    }
    grpc::ClientContext ctx;
    proto::PrepareClientContext(
        &ctx, options_.token,
        TransferTimeout(options_.call_timeout, header.total_bytes(),
                        options_.upload_bytes_per_s));
    v1::PutCheckpointResponse resp;
    std::unique_ptr<grpc::ClientWriter<v1::CheckpointChunk>> writer(
        stub_->PutCheckpoint(&ctx, &resp));
    bool ok = writer->Write(header);
    std::vector<char> buf(kBlobChunkBytes);
    int64_t sent = 0;
    const absl::Time start = absl::Now();
    auto superseded = [&] { return cancel != nullptr && cancel->load(); };
    while (ok && in) {
      // Paced: wait (in slices, so a newer checkpoint still cancels it
      // promptly) until the bytes sent fit under the rate.
      for (absl::Duration d = UploadPaceDelay(sent, absl::Now() - start,
                                              options_.upload_bytes_per_s);
           d > absl::ZeroDuration() && !superseded();
           d = UploadPaceDelay(sent, absl::Now() - start,
                               options_.upload_bytes_per_s)) {
        absl::SleepFor(std::min(d, absl::Milliseconds(50)));
      }
      if (superseded()) {
        ctx.TryCancel();
        writer->Finish().ok();
        return absl::CancelledError("checkpoint upload superseded");
      }
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      const std::streamsize n = in.gcount();
      if (n <= 0) break;
      v1::CheckpointChunk chunk;
      chunk.set_data(buf.data(), static_cast<size_t>(n));
      ok = writer->Write(chunk);
      sent += n;
    }
    writer->WritesDone();
    grpc::Status s = writer->Finish();
    if (!s.ok()) return proto::FromGrpcStatus(s);
    if (sent != header.total_bytes()) {
      return absl::DataLossError(
          absl::StrCat("sent ", sent, " of ", header.total_bytes(), " bytes"));
    }
    return resp;
  }

  absl::StatusOr<v1::CheckpointChunk> GetCheckpoint(
      const v1::GetCheckpointRequest& req,
      const std::string& dest_path) override {
    grpc::ClientContext ctx;
    // The size is unknown until the header: allow the largest blob.
    proto::PrepareClientContext(
        &ctx, options_.token,
        TransferTimeout(options_.call_timeout, int64_t{2} << 30));
    std::unique_ptr<grpc::ClientReader<v1::CheckpointChunk>> reader(
        stub_->GetCheckpoint(&ctx, req));
    std::ofstream out(dest_path, std::ios::binary | std::ios::trunc);
    if (!out) {
      ctx.TryCancel();
      reader->Finish().ok();
      return absl::InternalError(
          absl::StrCat("cannot create '", dest_path, "'"));
    }
    v1::CheckpointChunk header, chunk;
    bool have_header = reader->Read(&header);
    while (have_header && reader->Read(&chunk)) {
      out.write(chunk.data().data(),
                static_cast<std::streamsize>(chunk.data().size()));
    }
    out.flush();
    const bool written = static_cast<bool>(out);
    out.close();
    grpc::Status s = reader->Finish();
    if (!s.ok()) return proto::FromGrpcStatus(s);
    if (!have_header) return absl::DataLossError("empty checkpoint stream");
    if (!written) {
      return absl::InternalError(
          absl::StrCat("cannot write '", dest_path, "'"));
    }
    return header;
  }

 private:
  template <typename Req, typename Resp>
  absl::StatusOr<Resp> Call(const Req& req,
                            grpc::Status (v1::WorkerGateway::Stub::*method)(
                                grpc::ClientContext*, const Req&, Resp*)) {
    grpc::ClientContext ctx;
    proto::PrepareClientContext(&ctx, options_.token, options_.call_timeout);
    Resp resp;
    // A string field that is not UTF-8 makes the coordinator refuse the
    // whole call (INTERNAL) however often it is retried (issue 36 item 1):
    // replace the bad bytes here, the last point before the wire.
    grpc::Status s;
    if (const std::string bad = proto::FirstInvalidUtf8Field(req);
        !bad.empty()) {
      Req fixed = req;
      const int n = proto::MakeStringFieldsValidUtf8(&fixed);
      SMOE_LOG(WARNING) << "replaced bytes that are not UTF-8 in " << n
                        << " field(s) of a " << Req::descriptor()->name()
                        << " (first: " << bad << ")";
      s = (stub_.get()->*method)(&ctx, fixed, &resp);
    } else {
      s = (stub_.get()->*method)(&ctx, req, &resp);
    }
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
