// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/server.h
//
// CoordinatorServer wires the coordinator together: the SQLite store under a
// data directory, the API token, the Scheduler, the gRPC services
// (Coordinator, WorkerGateway, grpc.health.v1) and a lease-expiry thread.
// Used by `smoe coordinator` and embedded by `smoe up` and the tests.
//
// Thread safety: Start/Shutdown from one thread; everything else is internal.
#ifndef SMOE_COORDINATOR_SERVER_H_
#define SMOE_COORDINATOR_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "coordinator/connection_budget.h"
#include "coordinator/grpc/grpc_auth.h"
#include "coordinator/grpc/service_impl.h"
#include "coordinator/http/http_server.h"
#include "coordinator/scheduler.h"
#include "coordinator/tokens.h"
#include "store/sqlite_store.h"

namespace smoe::coordinator {

struct ServerOptions {
  // Holds smoe.db (SQLite, WAL) and, by default, the token file.
  std::string data_dir = "smoe-data";
  // gRPC listen address; port 0 picks a free port (see port()).
  std::string listen = "127.0.0.1:50051";
  // The admin API token file; default <data_dir>/token (created 0600 on
  // first start). Tokens of other roles: <data_dir>/tokens (docs/roles.md).
  std::string token_file;
  // The role tokens (name, role, hash; coordinator/tokens.h); default
  // <data_dir>/tokens. Re-read when it changes (a Kubernetes Secret volume
  // updated in place works).
  std::string tokens_file;
  // Optional TLS: PEM server certificate chain and private key files.
  std::string tls_cert;
  std::string tls_key;
  // kFull fsyncs every commit (durable across power loss).
  store::SqliteOptions::Synchronous synchronous =
      store::SqliteOptions::Synchronous::kFull;
  SchedulerOptions scheduler;
  // Accept an empty smoe.db file as a new store (`--init`); otherwise Start()
  // refuses it (store::SqliteOptions::allow_empty_file).
  bool init = false;
  // How often expired leases are re-queued.
  absl::Duration expiry_period = absl::Seconds(1);
  // Dashboard (HTTP) listen address; empty = no dashboard; port 0 = any.
  std::string http_listen = "127.0.0.1:8080";
  // When false, an HTTP address that cannot be bound only logs a warning
  // (the default port may be taken; gRPC still serves). The CLI sets it when
  // the user named the address.
  bool http_required = false;
  HttpServerOptions http;
  // Checkpoint blobs (coordinator/checkpoint_store.h); an empty dir means
  // <data_dir>/checkpoints. Garbage-collected every checkpoint_gc_period.
  CheckpointStoreOptions checkpoints;
  absl::Duration checkpoint_gc_period = absl::Seconds(10);
  // How often the gRPC listener is probed (a loopback connection); one that
  // fails kListenerProbes probes in a row is rebuilt on the same port
  // (ListenerWatchdog). Zero: no watchdog.
  absl::Duration listener_probe_period = absl::Seconds(5);
  // One connection budget for the dashboard's connections and the gRPC
  // calls, per client address and in total (coordinator/connection_budget.h,
  // docs/reliability.md).
  ConnectionBudgetLimits connection_budget;
};

// gRPC connection limits (issue 36 item 2; docs/reliability.md).
inline constexpr absl::Duration kGrpcHandshakeTimeout = absl::Seconds(10);
inline constexpr absl::Duration kGrpcMaxConnectionIdle = absl::Minutes(2);
inline constexpr int kGrpcMaxConcurrentStreams = 64;
inline constexpr int kListenerProbes = 2;

// Takes the exclusive lock of a data directory (an flock on
// <data_dir>/coordinator.lock, which holds the holder's pid) and returns its
// file descriptor: the lock lasts until it is closed or the process ends (a
// crash or kill -9 releases it). FailedPrecondition naming the holder's pid
// when another process holds it. Limit: flock is local to one machine (on
// NFS it may not exclude a coordinator on another host).
absl::StatusOr<int> LockDataDir(const std::string& data_dir);

// `smoe admin backup`: copies <data_dir>/smoe.db to `out` while a
// coordinator may be serving it (store::SqliteStore::Backup).
absl::Status BackupDataDir(const std::string& data_dir, const std::string& out);

class CoordinatorServer {
 public:
  // Opens the store, loads the scheduler and starts serving. Errors name the
  // file or address that failed.
  static absl::StatusOr<std::unique_ptr<CoordinatorServer>> Start(
      const ServerOptions& options);
  ~CoordinatorServer();

  // The bound gRPC port.
  int port() const { return port_.load(); }
  // "127.0.0.1:<port>" style address clients can dial (a wildcard listen
  // host becomes 127.0.0.1).
  std::string address() const;
  // What was bound, for logs: "0.0.0.0:50051 (all interfaces)" when the
  // listen host is a wildcard (DescribeBind).
  std::string bind_description() const;
  std::string http_bind_description() const {
    return http_ ? http_->bind_description() : "";
  }
  // The API token, and whether this start created it (print it once then).
  const std::string& token() const { return token_; }
  // The role tokens' file (`<data_dir>/tokens`, coordinator/tokens.h).
  std::string tokens_file() const {
    return options_.tokens_file.empty() ? TokensFile(options_.data_dir)
                                        : options_.tokens_file;
  }
  bool token_created() const { return token_created_; }
  Scheduler* scheduler() { return scheduler_.get(); }
  TrialLogs* trial_logs() { return logs_.get(); }
  // The dashboard's URL ("http://127.0.0.1:8080/"), or "" when it is off.
  std::string http_url() const { return http_ ? http_->url() : ""; }
  int http_port() const { return http_ ? http_->port() : 0; }
  store::ExperimentStore* store() { return store_.get(); }
  CheckpointStore* checkpoints() { return checkpoints_.get(); }

  // Blocks until Shutdown().
  void Wait();
  // Stops serving (in-flight calls get a short grace) and joins threads.
  void Shutdown();

 private:
  CoordinatorServer() = default;
  // The expiry thread: re-queues expired leases; while the scheduler is
  // fail-stopped (a store commit failed), reports NOT_SERVING on
  // grpc.health.v1, probes the store every expiry_period and recovers once
  // it commits again. Logs are rate-limited.
  void MaintenanceLoop();
  // Succeeds when the data directory takes a 1 MiB write and the store a
  // small commit.
  absl::Status ProbeStore();
  // Builds and starts the gRPC server on `listen` (port_ and server_ set).
  absl::Status BuildGrpc(const std::string& listen);
  // grpc.health.v1's status, kept across a listener restart.
  void SetServing(bool serving);
  // Whether the gRPC listener accepts a loopback connection and answers it
  // within `timeout`.
  bool ProbeListener(absl::Duration timeout) const;
  // The watchdog thread: rebuilds a listener that stopped accepting.
  void ListenerWatchdog();

  ServerOptions options_;
  int lock_fd_ = -1;  // LockDataDir; closed last
  // smoe.db's identity at open: a file deleted or replaced under a running
  // coordinator (its data dir removed) is detected by comparing them.
  uint64_t db_dev_ = 0;
  uint64_t db_ino_ = 0;
  // OK while <data-dir>/smoe.db is the file the store opened.
  absl::Status CheckDatabaseFile() const;
  std::string token_;
  bool token_created_ = false;
  std::atomic<int> port_{0};
  std::unique_ptr<store::SqliteStore> store_;
  // Before server_ and http_: outlive them (the server's credentials point to
  // the checker, the checker and the dashboard to the registry).
  std::unique_ptr<TokenRegistry> tokens_;
  std::unique_ptr<TokenAuthChecker> auth_checker_;
  std::unique_ptr<ConnectionBudget> budget_;  // shared by HTTP and gRPC
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<CheckpointStore> checkpoints_;
  std::unique_ptr<TrialLogs> logs_;
  int deleted_listener_ = 0;  // scheduler_'s, for checkpoints_ and logs_
  std::unique_ptr<CoordinatorServiceImpl> coordinator_service_;
  std::unique_ptr<WorkerGatewayServiceImpl> gateway_service_;
  std::string tls_cert_pem_, tls_key_pem_;
  absl::Mutex grpc_mu_;  // server_ is replaced by the watchdog
  std::unique_ptr<grpc::Server> server_ ABSL_GUARDED_BY(grpc_mu_);
  bool serving_ ABSL_GUARDED_BY(grpc_mu_) = true;
  std::thread watchdog_thread_;
  std::unique_ptr<HttpServer> http_;
  absl::Notification stop_;
  std::thread expiry_thread_;
  bool shut_down_ = false;
};

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_SERVER_H_
