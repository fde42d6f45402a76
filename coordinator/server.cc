// Copyright 2026 SMoE Lab authors.
#include "coordinator/server.h"

#include <grpcpp/health_check_service_interface.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/api_token.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace smoe::coordinator {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read '", path, "'"));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

absl::StatusOr<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(
    const ServerOptions& options) {
  std::unique_ptr<CoordinatorServer> s(new CoordinatorServer());
  s->options_ = options;
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat(
        "cannot create data dir '", options.data_dir, "': ", ec.message()));
  }
  const std::string token_file = options.token_file.empty()
                                     ? options.data_dir + "/token"
                                     : options.token_file;
  SMOE_ASSIGN_OR_RETURN(s->token_,
                        LoadOrCreateTokenFile(token_file, &s->token_created_));
  store::SqliteOptions sqlite;
  sqlite.synchronous = options.synchronous;
  SMOE_ASSIGN_OR_RETURN(s->store_, store::SqliteStore::Open(
                                       options.data_dir + "/smoe.db", sqlite));
  SMOE_ASSIGN_OR_RETURN(
      s->scheduler_,
      Scheduler::Create(s->store_.get(), Clock::Real(), options.scheduler));
  s->coordinator_service_ = std::make_unique<CoordinatorServiceImpl>(
      s->scheduler_.get(), s->store_.get(), s->token_);
  s->gateway_service_ = std::make_unique<WorkerGatewayServiceImpl>(
      s->scheduler_.get(), s->token_);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (!options.tls_cert.empty() || !options.tls_key.empty()) {
    SMOE_ASSIGN_OR_RETURN(std::string cert, ReadFile(options.tls_cert));
    SMOE_ASSIGN_OR_RETURN(std::string key, ReadFile(options.tls_key));
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({key, cert});
    creds = grpc::SslServerCredentials(ssl);
  } else {
    creds = grpc::InsecureServerCredentials();
  }
  builder.AddListeningPort(options.listen, creds, &s->port_);
  // gRPC sets SO_REUSEPORT by default: a second coordinator on the same port
  // would bind too and receive a share of the first one's connections (with
  // its own database). Refuse a busy port instead (issue 20).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(s->coordinator_service_.get());
  builder.RegisterService(s->gateway_service_.get());
  builder.SetMaxReceiveMessageSize(64 << 20);
  // Clients (`smoe sweep watch`, cli/client.cc) ping idle streams every 30 s
  // to notice a dead connection; accept pings that often (gRPC's default
  // answers pings more often than every 5 min with GOAWAY).
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || s->port_ == 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on '", options.listen, "' (address in use or invalid)"));
  }
  s->server_->GetHealthCheckService()->SetServingStatus(true);
  if (!options.http_listen.empty()) {
    HttpServerOptions http = options.http;
    http.listen = options.http_listen;
    auto h = HttpServer::Start(s->scheduler_.get(), s->store_.get(), s->token_,
                               http);
    if (h.ok()) {
      s->http_ = std::move(*h);
    } else if (options.http_required) {
      return h.status();
    } else {
      SMOE_LOG(WARNING) << "dashboard off: " << h.status().message();
    }
  }
  CoordinatorServer* raw = s.get();
  s->expiry_thread_ = std::thread([raw] {
    while (!raw->stop_.WaitForNotificationWithTimeout(
        raw->options_.expiry_period)) {
      if (absl::Status st = raw->scheduler_->ExpireLeases(); !st.ok()) {
        SMOE_LOG(ERROR) << "lease expiry failed: " << st;
      }
    }
  });
  SMOE_LOG(INFO) << "coordinator serving on " << s->address() << " (data "
                 << options.data_dir << ", token " << RedactSecret(s->token_)
                 << ")";
  return s;
}

std::string CoordinatorServer::address() const {
  const std::string& l = options_.listen;
  const size_t colon = l.rfind(':');
  std::string host = colon == std::string::npos ? l : l.substr(0, colon);
  if (host.empty() || host == "0.0.0.0" || host == "[::]") host = "127.0.0.1";
  return absl::StrCat(host, ":", port_);
}

void CoordinatorServer::Wait() { stop_.WaitForNotification(); }

void CoordinatorServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (http_) http_->Shutdown();
  if (expiry_thread_.joinable()) expiry_thread_.join();
  if (server_) {
    server_->GetHealthCheckService()->SetServingStatus(false);
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::seconds(2));
  }
}

CoordinatorServer::~CoordinatorServer() { Shutdown(); }

}  // namespace smoe::coordinator
