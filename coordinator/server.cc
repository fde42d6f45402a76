// Copyright 2026 SMoE Lab authors.
#include "coordinator/server.h"

#include <fcntl.h>
#include <grpcpp/health_check_service_interface.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/api_token.h"
#include "common/log_limiter.h"
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

absl::Status BackupDataDir(const std::string& data_dir,
                           const std::string& out) {
  return store::SqliteStore::Backup(data_dir + "/smoe.db", out);
}

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
  sqlite.allow_empty_file = options.init;
  SMOE_ASSIGN_OR_RETURN(s->store_, store::SqliteStore::Open(
                                       options.data_dir + "/smoe.db", sqlite));
  SMOE_ASSIGN_OR_RETURN(
      s->scheduler_,
      Scheduler::Create(s->store_.get(), Clock::Real(), options.scheduler));
  CheckpointStoreOptions ckpt = options.checkpoints;
  if (ckpt.dir.empty()) ckpt.dir = options.data_dir + "/checkpoints";
  SMOE_ASSIGN_OR_RETURN(s->checkpoints_,
                        CheckpointStore::Open(s->store_.get(), ckpt));
  // Tokens and roles are checked when a call's headers arrive, before its
  // body is read (coordinator/grpc_auth.h), and again by the services.
  s->tokens_ = std::make_unique<TokenRegistry>(s->token_, s->tokens_file());
  s->auth_checker_ = std::make_unique<TokenAuthChecker>(s->tokens_.get());
  s->logs_ = std::make_unique<TrialLogs>(s->store_.get(), Clock::Real());
  // A deleted sweep's checkpoint files and live log tails (its rows are gone
  // already; the dashboard's read model drops its caches on its own).
  s->deleted_listener_ = s->scheduler_->AddSweepDeletedListener(
      [ckpt = s->checkpoints_.get(),
       logs = s->logs_.get()](const DeletedSweep& d) {
        ckpt->DropSweep(d.sweep_id);
        logs->Forget(d.trial_ids);
      });
  s->coordinator_service_ = std::make_unique<CoordinatorServiceImpl>(
      s->scheduler_.get(), s->store_.get(), s->auth_checker_.get(),
      s->checkpoints_.get(), s->logs_.get());
  s->gateway_service_ = std::make_unique<WorkerGatewayServiceImpl>(
      s->scheduler_.get(), s->auth_checker_.get(), s->checkpoints_.get(),
      s->logs_.get());

  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  std::string cert, key;
  if (!options.tls_cert.empty() || !options.tls_key.empty()) {
    SMOE_ASSIGN_OR_RETURN(cert, ReadFile(options.tls_cert));
    SMOE_ASSIGN_OR_RETURN(key, ReadFile(options.tls_key));
  }
  SMOE_ASSIGN_OR_RETURN(
      std::shared_ptr<grpc::ServerCredentials> creds,
      TokenServerCredentials(s->auth_checker_.get(), cert, key));
  builder.AddListeningPort(options.listen, creds, &s->port_);
  // gRPC sets SO_REUSEPORT by default: a second coordinator on the same port
  // would bind too and receive a share of the first one's connections (with
  // its own database). Refuse a busy port instead (issue 20).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(s->coordinator_service_.get());
  builder.RegisterService(s->gateway_service_.get());
  // The largest request of any method; smaller per-method limits are checked
  // in the services (MaxRequestBytes).
  builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxLargeRequestBytes));
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
    http.checkpoints = s->checkpoints_.get();
    http.logs = s->logs_.get();
    auto h = HttpServer::Start(s->scheduler_.get(), s->store_.get(),
                               s->tokens_.get(), http);
    if (h.ok()) {
      s->http_ = std::move(*h);
    } else if (options.http_required) {
      return h.status();
    } else {
      SMOE_LOG(WARNING) << "dashboard off: " << h.status().message();
    }
  }
  CoordinatorServer* raw = s.get();
  s->expiry_thread_ = std::thread([raw] { raw->MaintenanceLoop(); });
  SMOE_LOG(INFO) << "coordinator listening on " << s->bind_description()
                 << " (data " << options.data_dir << ", token "
                 << RedactSecret(s->token_) << ")";
  return s;
}

absl::Status CoordinatorServer::ProbeStore() {
  // Room for more than a page or two: SQLite may reuse WAL frames, so a tiny
  // write can succeed on a full disk while the next real batch fails.
  const std::string probe = options_.data_dir + "/.smoe-space-probe";
  int fd =
      ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot create '", probe, "': ", std::strerror(errno)));
  }
  const std::string chunk(64 << 10, '\0');
  absl::Status st;
  for (int i = 0; i < 16 && st.ok(); ++i) {
    if (::write(fd, chunk.data(), chunk.size()) !=
        static_cast<ssize_t>(chunk.size())) {
      st = absl::ResourceExhaustedError(absl::StrCat(
          "cannot write 1 MiB to '", probe, "': ", std::strerror(errno)));
    }
  }
  if (st.ok() && ::fsync(fd) != 0) {
    st = absl::ResourceExhaustedError(
        absl::StrCat("cannot sync '", probe, "': ", std::strerror(errno)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
  if (!st.ok()) return st;
  return store_->CheckWritable();
}

void CoordinatorServer::MaintenanceLoop() {
  // One line per period for a fault that persists, never one per tick.
  LogLimiter store_log(absl::Seconds(30));
  LogLimiter expiry_log(absl::Seconds(30));
  LogLimiter gc_log(absl::Seconds(60));
  bool serving = true;
  absl::Time next_gc = absl::Now();
  while (!stop_.WaitForNotificationWithTimeout(options_.expiry_period)) {
    if (!scheduler_->failed() && absl::Now() >= next_gc) {
      // Blobs of trials that ended (also cancelled ones, which no worker
      // reports) and of trials that no longer exist.
      next_gc = absl::Now() + options_.checkpoint_gc_period;
      absl::StatusOr<int> n = checkpoints_->CollectGarbage();
      int64_t suppressed = 0;
      if (!n.ok() && gc_log.Allow(absl::Now(), &suppressed)) {
        SMOE_LOG(WARNING) << "checkpoint GC failed: " << n.status();
      }
    }
    if (scheduler_->failed()) {
      if (serving) {
        serving = false;
        server_->GetHealthCheckService()->SetServingStatus(false);
        SMOE_LOG(ERROR) << "the store cannot commit: health is NOT_SERVING "
                           "and work is refused; retrying every "
                        << options_.expiry_period;
      }
      absl::Status st = ProbeStore();
      if (st.ok()) st = scheduler_->Recover();
      if (st.ok()) {
        serving = true;
        server_->GetHealthCheckService()->SetServingStatus(true);
        SMOE_LOG(INFO) << "the store commits again: health is SERVING";
        continue;
      }
      int64_t suppressed = 0;
      if (store_log.Allow(absl::Now(), &suppressed)) {
        SMOE_LOG(WARNING) << "the store still cannot commit (" << st.message()
                          << "); " << suppressed
                          << " more failed retries since the last such line";
      }
      continue;
    }
    if (absl::Status st = scheduler_->ExpireLeases(); !st.ok()) {
      int64_t suppressed = 0;
      if (expiry_log.Allow(absl::Now(), &suppressed)) {
        SMOE_LOG(ERROR) << "lease expiry failed: " << st << " (" << suppressed
                        << " more since the last such line)";
      }
    }
  }
}

std::string CoordinatorServer::address() const {
  const std::string& l = options_.listen;
  const size_t colon = l.rfind(':');
  std::string host = colon == std::string::npos ? l : l.substr(0, colon);
  if (host.empty() || host == "0.0.0.0" || host == "[::]") host = "127.0.0.1";
  return absl::StrCat(host, ":", port_);
}

std::string CoordinatorServer::bind_description() const {
  const std::string& l = options_.listen;
  const size_t colon = l.rfind(':');
  std::string host = colon == std::string::npos ? l : l.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return DescribeBind(host, port_);
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

CoordinatorServer::~CoordinatorServer() {
  Shutdown();
  if (scheduler_ && deleted_listener_ != 0) {
    scheduler_->RemoveSweepDeletedListener(deleted_listener_);
  }
}

}  // namespace smoe::coordinator
