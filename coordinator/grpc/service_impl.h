// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/grpc/service_impl.h
//
// The gRPC adapters: convert proto <-> domain types and absl::Status <->
// grpc::Status, check the bearer token and its role, and call the Scheduler. No
// logic here.
//
// Uses gRPC's synchronous API on purpose: every mutating call blocks on a
// durable SQLite commit (fsync), which must not run on the callback API's
// event-engine threads.
#ifndef SMOE_COORDINATOR_GRPC_SERVICE_IMPL_H_
#define SMOE_COORDINATOR_GRPC_SERVICE_IMPL_H_

#include <grpcpp/grpcpp.h>

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/checkpoint_store.h"
#include "coordinator/connection_budget.h"
#include "coordinator/grpc/grpc_auth.h"
#include "coordinator/scheduler.h"
#include "coordinator/trial_logs.h"
#include "proto/smoe.grpc.pb.h"
#include "store/experiment_store.h"

namespace smoe::coordinator {

// What a service checks each call against: the checker (token and role, as
// the transport did before the body was read) and the service's full name.
struct ServiceAuth {
  TokenAuthChecker* checker;
  const char* service;  // "smoe.v1.Coordinator"
  // The connection budget shared with the dashboard (not owned; null: none):
  // each call takes a unit of its peer address's budget while it runs, and
  // is refused with RESOURCE_EXHAUSTED when the address (or the coordinator)
  // has none left (coordinator/connection_budget.h).
  ConnectionBudget* budget = nullptr;
};

// Converts domain records to proto messages.
void ToProto(const SweepView& in, smoe::v1::Sweep* out);
void ToProto(const store::TrialRecord& in, smoe::v1::Trial* out);
void ToProto(const store::DecisionRecord& in, smoe::v1::Decision* out);

class CoordinatorServiceImpl final : public smoe::v1::Coordinator::Service {
 public:
  // None of the pointers is owned. `checkpoints` may be null (no
  // checkpoint artifacts listed).
  CoordinatorServiceImpl(Scheduler* scheduler, store::ExperimentStore* store,
                         TokenAuthChecker* checker,
                         CheckpointStore* checkpoints = nullptr,
                         TrialLogs* logs = nullptr)
      : scheduler_(scheduler),
        store_(store),
        auth_{checker, "smoe.v1.Coordinator"},
        checkpoints_(checkpoints),
        logs_(logs) {}
  // Counts calls against `budget` (not owned; null: none). Before serving.
  void set_connection_budget(ConnectionBudget* budget) {
    auth_.budget = budget;
  }

  grpc::Status SubmitSweep(grpc::ServerContext* ctx,
                           const smoe::v1::SubmitSweepRequest* req,
                           smoe::v1::SubmitSweepResponse* resp) override;
  grpc::Status ListSweeps(grpc::ServerContext* ctx,
                          const smoe::v1::ListSweepsRequest* req,
                          smoe::v1::ListSweepsResponse* resp) override;
  grpc::Status GetSweep(grpc::ServerContext* ctx,
                        const smoe::v1::GetSweepRequest* req,
                        smoe::v1::GetSweepResponse* resp) override;
  grpc::Status CancelSweep(grpc::ServerContext* ctx,
                           const smoe::v1::CancelSweepRequest* req,
                           smoe::v1::CancelSweepResponse* resp) override;
  grpc::Status RetrySweep(grpc::ServerContext* ctx,
                          const smoe::v1::RetrySweepRequest* req,
                          smoe::v1::RetrySweepResponse* resp) override;
  grpc::Status ExtendSweep(grpc::ServerContext* ctx,
                           const smoe::v1::ExtendSweepRequest* req,
                           smoe::v1::ExtendSweepResponse* resp) override;
  grpc::Status AnnotateSweep(grpc::ServerContext* ctx,
                             const smoe::v1::AnnotateSweepRequest* req,
                             smoe::v1::AnnotateSweepResponse* resp) override;
  grpc::Status DeleteSweep(grpc::ServerContext* ctx,
                           const smoe::v1::DeleteSweepRequest* req,
                           smoe::v1::DeleteSweepResponse* resp) override;
  grpc::Status WatchSweep(
      grpc::ServerContext* ctx, const smoe::v1::WatchSweepRequest* req,
      grpc::ServerWriter<smoe::v1::SweepEvent>* writer) override;
  grpc::Status GetTrialMetrics(
      grpc::ServerContext* ctx, const smoe::v1::GetTrialMetricsRequest* req,
      smoe::v1::GetTrialMetricsResponse* resp) override;
  grpc::Status DrainWorker(grpc::ServerContext* ctx,
                           const smoe::v1::DrainWorkerRequest* req,
                           smoe::v1::DrainWorkerResponse* resp) override;
  grpc::Status ListWorkers(grpc::ServerContext* ctx,
                           const smoe::v1::ListWorkersRequest* req,
                           smoe::v1::ListWorkersResponse* resp) override;
  grpc::Status ListArtifacts(grpc::ServerContext* ctx,
                             const smoe::v1::ListArtifactsRequest* req,
                             smoe::v1::ListArtifactsResponse* resp) override;
  grpc::Status GetArtifact(
      grpc::ServerContext* ctx, const smoe::v1::GetArtifactRequest* req,
      grpc::ServerWriter<smoe::v1::ArtifactChunk>* writer) override;
  grpc::Status GetTrialLogs(grpc::ServerContext* ctx,
                            const smoe::v1::GetTrialLogsRequest* req,
                            smoe::v1::GetTrialLogsResponse* resp) override;

 private:
  Scheduler* const scheduler_;
  store::ExperimentStore* const store_;
  ServiceAuth auth_;  // budget set once, before serving
  CheckpointStore* const checkpoints_;
  TrialLogs* const logs_;
};

class WorkerGatewayServiceImpl final : public smoe::v1::WorkerGateway::Service {
 public:
  // `checkpoints` may be null: PutCheckpoint/GetCheckpoint then answer
  // UNIMPLEMENTED and leases carry no checkpoint.
  // `logs` may be null: attempt logs are then dropped and system metrics
  // still stored.
  WorkerGatewayServiceImpl(Scheduler* scheduler, TokenAuthChecker* checker,
                           CheckpointStore* checkpoints = nullptr,
                           TrialLogs* logs = nullptr)
      : scheduler_(scheduler),
        auth_{checker, "smoe.v1.WorkerGateway"},
        checkpoints_(checkpoints),
        logs_(logs) {}
  // Counts calls against `budget` (not owned; null: none). Before serving.
  void set_connection_budget(ConnectionBudget* budget) {
    auth_.budget = budget;
  }

  grpc::Status Register(grpc::ServerContext* ctx,
                        const smoe::v1::RegisterRequest* req,
                        smoe::v1::RegisterResponse* resp) override;
  grpc::Status Lease(grpc::ServerContext* ctx,
                     const smoe::v1::LeaseRequest* req,
                     smoe::v1::LeaseResponse* resp) override;
  grpc::Status Heartbeat(grpc::ServerContext* ctx,
                         const smoe::v1::HeartbeatRequest* req,
                         smoe::v1::HeartbeatResponse* resp) override;
  grpc::Status ReportMetrics(grpc::ServerContext* ctx,
                             const smoe::v1::ReportMetricsRequest* req,
                             smoe::v1::ReportMetricsResponse* resp) override;
  grpc::Status Complete(grpc::ServerContext* ctx,
                        const smoe::v1::CompleteRequest* req,
                        smoe::v1::CompleteResponse* resp) override;
  grpc::Status Fail(grpc::ServerContext* ctx, const smoe::v1::FailRequest* req,
                    smoe::v1::FailResponse* resp) override;
  // Checkpoint blobs (coordinator/checkpoint_store.h): only for the worker's
  // current attempt of the trial; chunks of at most kBlobChunkBytes.
  grpc::Status PutCheckpoint(
      grpc::ServerContext* ctx,
      grpc::ServerReader<smoe::v1::CheckpointChunk>* reader,
      smoe::v1::PutCheckpointResponse* resp) override;
  grpc::Status GetCheckpoint(
      grpc::ServerContext* ctx, const smoe::v1::GetCheckpointRequest* req,
      grpc::ServerWriter<smoe::v1::CheckpointChunk>* writer) override;

 private:
  // Deletes the blobs of a trial that just ended (best effort; the server's
  // periodic GC catches what this misses).
  void CollectCheckpoints();
  // Heartbeat: the attempt's system sample as sys/* metrics.
  void StoreSystemSample(const std::string& worker_id,
                         const smoe::v1::RunningAttempt& r);
  void StoreFinalLog(const std::string& worker_id, const std::string& trial_id,
                     int attempt, const smoe::v1::LogTail& log);
  // Issue 36 item 4: a worker id belongs to the token that first used it
  // (its Register, or its first call after a coordinator restart); another
  // token acting for it is refused with PERMISSION_DENIED. The admin token
  // may act for any worker and binds none.
  absl::Status CheckWorkerToken(grpc::ServerContext* ctx,
                                const std::string& worker_id);

  Scheduler* const scheduler_;
  ServiceAuth auth_;  // budget set once, before serving
  CheckpointStore* const checkpoints_;
  TrialLogs* const logs_;
  absl::Mutex bind_mu_;
  // worker id -> the name of the token it belongs to.
  std::map<std::string, std::string> worker_tokens_ ABSL_GUARDED_BY(bind_mu_);
};

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_GRPC_SERVICE_IMPL_H_
