// Copyright 2026 SMoE Lab authors.
#include "coordinator/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grpcpp/health_check_service_interface.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
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

// The soft limit on open files.
uint64_t FdLimit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return 0;
  return r.rlim_cur;
}

// Every connection (gRPC and dashboard) holds a descriptor: the usual soft
// limit of 1,024 is raised to the hard limit (issue 36 item 2).
void RaiseFdLimit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur >= r.rlim_max) return;
  const rlim_t before = r.rlim_cur;
  r.rlim_cur = r.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &r) == 0) {
    SMOE_LOG(INFO) << "open files limit raised from " << before << " to "
                   << r.rlim_cur;
  } else {
    SMOE_LOG(WARNING) << "cannot raise the open files limit from " << before
                      << ": " << std::strerror(errno);
  }
}

// The file whose exclusive flock marks a data directory as served.
std::string LockFile(const std::string& data_dir) {
  return data_dir + "/coordinator.lock";
}

}  // namespace

absl::StatusOr<int> LockDataDir(const std::string& data_dir) {
  const std::string path = LockFile(data_dir);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot open lock file '", path, "': ", std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::string holder;
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
    ::close(fd);
    if (err != EWOULDBLOCK) {
      return absl::InternalError(
          absl::StrCat("cannot lock '", path, "': ", std::strerror(err)));
    }
    if (n > 0) holder = std::string(absl::StripAsciiWhitespace(buf));
    return absl::FailedPreconditionError(absl::StrCat(
        "data dir '", data_dir, "' is in use by another coordinator (pid ",
        holder.empty() ? "unknown" : holder, ", lock file ", path,
        "): two coordinators on one store would run every trial twice; stop "
        "it first or use another --data-dir"));
  }
  // Our pid, for the message of the next one. The lock, not the file's
  // content, decides: a stale pid of a crashed coordinator is overwritten.
  const std::string pid = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) !=
                                     static_cast<ssize_t>(pid.size())) {
    SMOE_LOG(WARNING) << "cannot write pid to '" << path
                      << "': " << std::strerror(errno);
  }
  return fd;
}

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
  // One coordinator per data dir, for the process's life (issue 36 item 3).
  SMOE_ASSIGN_OR_RETURN(s->lock_fd_, LockDataDir(options.data_dir));
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
  {
    struct stat st;
    if (::stat((options.data_dir + "/smoe.db").c_str(), &st) == 0) {
      s->db_dev_ = static_cast<uint64_t>(st.st_dev);
      s->db_ino_ = static_cast<uint64_t>(st.st_ino);
    }
  }
  SchedulerOptions sched = options.scheduler;
  // Leases on the monotonic clock; a stall of 5 expiry periods (at least
  // 5 s) is the coordinator's, not its workers' (issue 36 item 7).
  if (!sched.monotonic) sched.monotonic = MonotonicNow;
  if (sched.stall_grace_after == absl::InfiniteDuration()) {
    sched.stall_grace_after =
        std::max(absl::Seconds(5), 5 * options.expiry_period);
  }
  SMOE_ASSIGN_OR_RETURN(
      s->scheduler_, Scheduler::Create(s->store_.get(), Clock::Real(), sched));
  CheckpointStoreOptions ckpt = options.checkpoints;
  if (ckpt.dir.empty()) ckpt.dir = options.data_dir + "/checkpoints";
  if (!ckpt.keeps_final) {
    ckpt.keeps_final = [sched = s->scheduler_.get()](const std::string& id) {
      absl::StatusOr<SweepView> v = sched->GetSweep(id);
      return v.ok() && v->spec.keep_final_checkpoint;
    };
  }
  SMOE_ASSIGN_OR_RETURN(s->checkpoints_,
                        CheckpointStore::Open(s->store_.get(), ckpt));
  // Tokens and roles are checked when a call's headers arrive, before its
  // body is read (coordinator/grpc/grpc_auth.h), and again by the services.
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
  // gRPC calls and dashboard connections draw on one budget per address.
  s->budget_ = std::make_unique<ConnectionBudget>(options.connection_budget);
  s->coordinator_service_->set_connection_budget(s->budget_.get());
  s->gateway_service_->set_connection_budget(s->budget_.get());

  RaiseFdLimit();
  grpc::EnableDefaultHealthCheckService(true);
  if (!options.tls_cert.empty() || !options.tls_key.empty()) {
    SMOE_ASSIGN_OR_RETURN(s->tls_cert_pem_, ReadFile(options.tls_cert));
    SMOE_ASSIGN_OR_RETURN(s->tls_key_pem_, ReadFile(options.tls_key));
  }
  SMOE_RETURN_IF_ERROR(s->BuildGrpc(options.listen));
  if (!options.http_listen.empty()) {
    HttpServerOptions http = options.http;
    http.listen = options.http_listen;
    http.checkpoints = s->checkpoints_.get();
    http.logs = s->logs_.get();
    http.budget = s->budget_.get();
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
  if (options.listener_probe_period > absl::ZeroDuration()) {
    s->watchdog_thread_ = std::thread([raw] { raw->ListenerWatchdog(); });
  }
  SMOE_LOG(INFO) << "coordinator listening on " << s->bind_description()
                 << " (data " << options.data_dir << ", token "
                 << RedactSecret(s->token_) << ")";
  return s;
}

absl::Status CoordinatorServer::BuildGrpc(const std::string& listen) {
  grpc::ServerBuilder builder;
  SMOE_ASSIGN_OR_RETURN(
      std::shared_ptr<grpc::ServerCredentials> creds,
      TokenServerCredentials(auth_checker_.get(), tls_cert_pem_, tls_key_pem_));
  int port = 0;
  builder.AddListeningPort(listen, creds, &port);
  // gRPC sets SO_REUSEPORT by default: a second coordinator on the same port
  // would bind too and receive a share of the first one's connections (with
  // its own database). Refuse a busy port instead (issue 20).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(coordinator_service_.get());
  builder.RegisterService(gateway_service_.get());
  // The largest request of any method; smaller per-method limits are checked
  // in the services (MaxRequestBytes).
  builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxLargeRequestBytes));
  // Clients (`smoe sweep watch`, cli/client.cc) ping idle streams every 30 s
  // to notice a dead connection; accept pings that often (gRPC's default
  // answers pings more often than every 5 min with GOAWAY).
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  // Connections that hold a file descriptor and do nothing (issue 36 item
  // 2): a client that has not finished the HTTP/2 handshake (preface and
  // SETTINGS) within kGrpcHandshakeTimeout is dropped, an established one
  // without a call for kGrpcMaxConnectionIdle is sent GOAWAY (workers call
  // every heartbeat; a client reconnects on its next call), and the server
  // pings quiet connections to drop dead peers.
  builder.AddChannelArgument(
      GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
      static_cast<int>(absl::ToInt64Milliseconds(kGrpcHandshakeTimeout)));
  builder.AddChannelArgument(
      GRPC_ARG_MAX_CONNECTION_IDLE_MS,
      static_cast<int>(absl::ToInt64Milliseconds(kGrpcMaxConnectionIdle)));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             kGrpcMaxConcurrentStreams);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on '", listen, "' (address in use or invalid)"));
  }
  absl::MutexLock l(&grpc_mu_);
  server->GetHealthCheckService()->SetServingStatus(serving_);
  server_ = std::move(server);
  port_ = port;
  return absl::OkStatus();
}

void CoordinatorServer::SetServing(bool serving) {
  absl::MutexLock l(&grpc_mu_);
  serving_ = serving;
  if (server_) server_->GetHealthCheckService()->SetServingStatus(serving);
}

bool CoordinatorServer::ProbeListener(absl::Duration timeout) const {
  // Raw TCP, so that it works with TLS too: any answer to bytes that are
  // neither an HTTP/2 preface nor a TLS ClientHello (an error, a GOAWAY, the
  // connection closed) shows the listener accepted the connection. A
  // listener that stopped accepting leaves it in the kernel's backlog,
  // unanswered.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;  // out of descriptors: no better
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port_.load()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool alive = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const char probe[] = "SMOE LISTENER PROBE\r\n\r\n";
    if (::send(fd, probe, sizeof(probe) - 1, MSG_NOSIGNAL) > 0) {
      pollfd p{fd, POLLIN, 0};
      const int ms = static_cast<int>(absl::ToInt64Milliseconds(timeout));
      alive = ::poll(&p, 1, ms) > 0;
    }
  } else {
    // Nothing listens on the loopback (a listen address of another
    // interface): nothing to probe.
    alive = true;
  }
  ::close(fd);
  return alive;
}

void CoordinatorServer::ListenerWatchdog() {
  // gRPC 1.51 stops accepting for good after one accept4() error such as
  // EMFILE (issue 36 item 2: 1,100 idle connections, and the listener
  // stayed dead after they closed). A listener that does not answer
  // kListenerProbes probes in a row is rebuilt on the same port: the old
  // server's connections are closed (their descriptors freed), the new one
  // accepts again. Workers and clients see one failed call and retry.
  int failures = 0;
  while (
      !stop_.WaitForNotificationWithTimeout(options_.listener_probe_period)) {
    if (ProbeListener(absl::Seconds(3))) {
      failures = 0;
      continue;
    }
    if (stop_.HasBeenNotified()) break;
    if (++failures < kListenerProbes) continue;
    failures = 0;
    SMOE_LOG(ERROR) << "the gRPC listener on port " << port_.load()
                    << " accepts no connections (out of file descriptors? "
                       "open files limit "
                    << FdLimit() << "); restarting it";
    std::unique_ptr<grpc::Server> old;
    {
      absl::MutexLock l(&grpc_mu_);
      old = std::move(server_);
    }
    if (old) {
      old->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
      old.reset();
    }
    const std::string& l = options_.listen;
    const size_t colon = l.rfind(':');
    const std::string listen = absl::StrCat(
        colon == std::string::npos ? l : l.substr(0, colon), ":", port_.load());
    absl::Status st = BuildGrpc(listen);
    if (st.ok()) {
      SMOE_LOG(INFO) << "gRPC listener restarted on " << listen;
    } else {
      SMOE_LOG(ERROR) << "cannot restart the gRPC listener: " << st
                      << "; retrying";
    }
  }
}

absl::Status CoordinatorServer::ProbeStore() {
  // The store's file must still be the one at its path: recovering into an
  // unlinked file would acknowledge work that is then lost.
  SMOE_RETURN_IF_ERROR(CheckDatabaseFile());
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

absl::Status CoordinatorServer::CheckDatabaseFile() const {
  if (db_ino_ == 0) return absl::OkStatus();
  const std::string path = options_.data_dir + "/smoe.db";
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::UnavailableError(absl::StrCat(
        "the database file '", path, "' is gone (", std::strerror(errno),
        "): the data dir was deleted or moved under the running coordinator; "
        "nothing more is acknowledged. Restore the data dir and restart the "
        "coordinator"));
  }
  if (static_cast<uint64_t>(st.st_dev) != db_dev_ ||
      static_cast<uint64_t>(st.st_ino) != db_ino_) {
    return absl::UnavailableError(absl::StrCat(
        "the database file '", path,
        "' was replaced under the running coordinator (another file is at "
        "its path now); nothing more is acknowledged. Restart the "
        "coordinator"));
  }
  return absl::OkStatus();
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
    // A data dir deleted (or smoe.db replaced) under us: commits would go
    // to an unlinked file and be lost at the next start (issue 36).
    if (!scheduler_->failed()) {
      if (absl::Status db = CheckDatabaseFile(); !db.ok()) {
        scheduler_->FailStop(db);
      }
    }
    if (scheduler_->failed()) {
      if (serving) {
        serving = false;
        SetServing(false);
        SMOE_LOG(ERROR) << "the store cannot commit: health is NOT_SERVING "
                           "and work is refused; retrying every "
                        << options_.expiry_period;
      }
      absl::Status st = ProbeStore();
      if (st.ok()) st = scheduler_->Recover();
      if (st.ok()) {
        serving = true;
        SetServing(true);
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
  return absl::StrCat(host, ":", port_.load());
}

std::string CoordinatorServer::bind_description() const {
  const std::string& l = options_.listen;
  const size_t colon = l.rfind(':');
  std::string host = colon == std::string::npos ? l : l.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return DescribeBind(host, port_.load());
}

void CoordinatorServer::Wait() { stop_.WaitForNotification(); }

void CoordinatorServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (http_) http_->Shutdown();
  if (expiry_thread_.joinable()) expiry_thread_.join();
  if (watchdog_thread_.joinable()) watchdog_thread_.join();
  absl::MutexLock l(&grpc_mu_);
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
  // The data dir is free once the store is closed.
  http_.reset();
  server_.reset();
  gateway_service_.reset();
  coordinator_service_.reset();
  logs_.reset();
  checkpoints_.reset();
  scheduler_.reset();
  store_.reset();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

}  // namespace smoe::coordinator
