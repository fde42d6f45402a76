// Copyright 2026 SMoE Lab authors.
#include "coordinator/grpc/service_impl.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/blob_file.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "coordinator/artifacts.h"
#include "coordinator/grpc/grpc_auth.h"
#include "coordinator/views/sweep_detail.h"
#include "coordinator/views/workers_view.h"
#include "proto/auth.h"
#include "proto/rpc_status.h"

namespace smoe::coordinator {
namespace {

namespace pb = smoe::v1;
using google::protobuf::Value;
using proto::ToGrpcStatus;
using sweeps::Axis;
using sweeps::SampledAxis;
using sweeps::SampledValues;
using sweeps::SweepSpec;

int64_t Ms(absl::Time t) { return absl::ToUnixMillis(t); }

// A unit of the connection budget shared with the dashboard, held by one
// call while it runs (coordinator/connection_budget.h).
class BudgetUnit {
 public:
  BudgetUnit(ConnectionBudget* budget, grpc::ServerContext* ctx)
      : budget_(budget) {
    if (budget_ == nullptr) return;
    address_ = GrpcPeerAddress(ctx->peer());
    status_ = budget_->Acquire(address_, "grpc");
  }
  ~BudgetUnit() {
    if (budget_ != nullptr && status_.ok()) budget_->Release(address_, "grpc");
  }
  BudgetUnit(const BudgetUnit&) = delete;
  BudgetUnit& operator=(const BudgetUnit&) = delete;
  // ResourceExhausted when the budget had no unit for this call.
  const absl::Status& status() const { return status_; }

 private:
  ConnectionBudget* const budget_;
  std::string address_;
  absl::Status status_;
};

// Runs `fn` after the token and role check (again: TokenServerCredentials
// checked it before the body was read), the method's request size limit and
// the connection budget (a unit held while `fn` runs), converting its status.
template <typename Fn>
grpc::Status Guarded(grpc::ServerContext* ctx, const ServiceAuth& auth,
                     const google::protobuf::Message& req, Fn&& fn) {
  // "RegisterRequest" -> "Register": the method the request belongs to.
  absl::string_view method = req.GetDescriptor()->name();
  absl::ConsumeSuffix(&method, "Request");
  absl::Status allowed = auth.checker->CheckMetadata(
      absl::StrCat("/", auth.service, "/", method), ctx->client_metadata());
  if (!allowed.ok()) return ToGrpcStatus(allowed);
  absl::Status size = CheckRequestSize(method, req.ByteSizeLong());
  if (!size.ok()) return ToGrpcStatus(size);
  BudgetUnit unit(auth.budget, ctx);
  if (!unit.status().ok()) return ToGrpcStatus(unit.status());
  return ToGrpcStatus(fn());
}

pb::TrialState ToProto(store::TrialState s) {
  switch (s) {
    case store::TrialState::kPending:
      return pb::TRIAL_STATE_PENDING;
    case store::TrialState::kRunning:
      return pb::TRIAL_STATE_RUNNING;
    case store::TrialState::kSucceeded:
      return pb::TRIAL_STATE_SUCCEEDED;
    case store::TrialState::kFailed:
      return pb::TRIAL_STATE_FAILED;
    case store::TrialState::kCancelled:
      return pb::TRIAL_STATE_CANCELLED;
    case store::TrialState::kPruned:
      return pb::TRIAL_STATE_PRUNED;
  }
  return pb::TRIAL_STATE_UNSPECIFIED;
}

pb::SweepState ToProto(store::SweepState s) {
  switch (s) {
    case store::SweepState::kActive:
      return pb::SWEEP_STATE_ACTIVE;
    case store::SweepState::kCompleted:
      return pb::SWEEP_STATE_COMPLETED;
    case store::SweepState::kCancelled:
      return pb::SWEEP_STATE_CANCELLED;
  }
  return pb::SWEEP_STATE_UNSPECIFIED;
}

pb::AttemptOutcome ToProto(store::AttemptOutcome o) {
  switch (o) {
    case store::AttemptOutcome::kRunning:
      return pb::ATTEMPT_OUTCOME_RUNNING;
    case store::AttemptOutcome::kSucceeded:
      return pb::ATTEMPT_OUTCOME_SUCCEEDED;
    case store::AttemptOutcome::kFailed:
      return pb::ATTEMPT_OUTCOME_FAILED;
    case store::AttemptOutcome::kPreempted:
      return pb::ATTEMPT_OUTCOME_PREEMPTED;
    case store::AttemptOutcome::kLost:
      return pb::ATTEMPT_OUTCOME_LOST;
    case store::AttemptOutcome::kCancelled:
      return pb::ATTEMPT_OUTCOME_CANCELLED;
    case store::AttemptOutcome::kBadSpec:
      return pb::ATTEMPT_OUTCOME_BAD_SPEC;
    case store::AttemptOutcome::kHung:
      return pb::ATTEMPT_OUTCOME_HUNG;
    case store::AttemptOutcome::kPruned:
      return pb::ATTEMPT_OUTCOME_PRUNED;
  }
  return pb::ATTEMPT_OUTCOME_UNSPECIFIED;
}

void JsonToValue(const nlohmann::json& j, Value* v) {
  if (j.is_string()) {
    v->set_string_value(j.get<std::string>());
  } else if (j.is_boolean()) {
    v->set_bool_value(j.get<bool>());
  } else if (j.is_number()) {
    v->set_number_value(j.get<double>());
  } else {
    v->set_null_value(google::protobuf::NULL_VALUE);
  }
}

absl::StatusOr<nlohmann::json> ValueToJson(const Value& v,
                                           absl::string_view field) {
  switch (v.kind_case()) {
    case Value::kStringValue:
      return nlohmann::json(v.string_value());
    case Value::kBoolValue:
      return nlohmann::json(v.bool_value());
    case Value::kNumberValue: {
      const double d = v.number_value();
      // Integral numbers become integers so they match integer axes.
      if (d == static_cast<double>(static_cast<int64_t>(d))) {
        return nlohmann::json(static_cast<int64_t>(d));
      }
      return nlohmann::json(d);
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": values must be numbers, strings or bools"));
  }
}

void SpecToProto(const SweepSpec& s, pb::SweepSpec* out) {
  out->set_name(s.name);
  out->set_kind(s.kind);
  for (const Axis& a : s.grid) {
    pb::Axis* axis = out->add_grid();
    axis->set_name(a.name);
    for (const auto& v : a.values) JsonToValue(v, axis->add_values());
  }
  for (const auto& [k, v] : s.fixed.items()) {
    JsonToValue(v, &(*out->mutable_fixed()->mutable_fields())[k]);
  }
  for (int64_t seed : s.seeds) out->add_seeds(seed);
  for (const SampledAxis& a : s.sample) {
    pb::SampledAxis* axis = out->add_sample();
    axis->set_name(a.name);
    axis->set_distribution(a.distribution);
    if (a.distribution == "choice") {
      for (const auto& v : a.choices) JsonToValue(v, axis->add_range());
    } else {
      JsonToValue(a.lo, axis->add_range());
      JsonToValue(a.hi, axis->add_range());
    }
    for (const auto& v : SampledValues(s, a.name)) {
      JsonToValue(v, axis->add_values());
    }
  }
  out->set_samples(s.samples);
  out->set_sample_seed(s.sample_seed);
  out->mutable_resources()->set_gpus_per_trial(s.resources.gpus_per_trial);
  out->mutable_resources()->set_ep_size(s.resources.ep_size);
  out->mutable_resources()->set_slots(s.resources.slots);
  out->mutable_resources()->set_progress_timeout_s(
      s.resources.progress_timeout_s);
  for (const auto& [k, v] : s.resources.labels) {
    (*out->mutable_resources()->mutable_labels())[k] = v;
  }
  out->set_retries(s.retries);
  out->set_priority(s.priority);
}

}  // namespace

void ToProto(const SweepView& in, pb::Sweep* out) {
  out->set_sweep_id(in.record.sweep_id);
  out->set_kind(in.record.kind);
  out->set_state(ToProto(in.record.state));
  SpecToProto(in.spec, out->mutable_spec());
  out->set_spec_yaml(in.record.spec_yaml);
  out->set_priority(in.record.priority);
  pb::StateCounts* c = out->mutable_counts();
  c->set_pending(in.counts.pending);
  c->set_running(in.counts.running);
  c->set_succeeded(in.counts.succeeded);
  c->set_failed(in.counts.failed);
  c->set_cancelled(in.counts.cancelled);
  c->set_pruned(in.counts.pruned);
  c->set_total(in.counts.total());
  out->set_created_ms(Ms(in.record.created_at));
  out->set_updated_ms(Ms(in.record.updated_at));
  out->set_unschedulable(in.unschedulable);
  out->set_notes(in.record.notes);
  for (const std::string& t : in.record.tags) out->add_tags(t);
  out->set_archived(in.record.archived);
}

void ToProto(const store::DecisionRecord& in, pb::Decision* out) {
  out->set_seq(in.seq);
  out->set_trial_id(in.trial_id);
  out->set_action(in.action);
  out->set_group(in.group);
  out->set_rung(in.rung);
  out->set_step(in.step);
  if (!std::isnan(in.value)) out->set_value(in.value);
  if (!std::isnan(in.cutoff)) out->set_cutoff(in.cutoff);
  out->set_final(in.final);
  out->set_reason(in.reason);
  out->set_at_ms(Ms(in.at));
}

void ToProto(const store::TrialRecord& in, pb::Trial* out) {
  out->set_trial_id(in.trial_id);
  out->set_sweep_id(in.sweep_id);
  out->set_ordinal(in.ordinal);
  out->set_params_json(in.params_json);
  out->set_seed(in.seed);
  out->set_state(ToProto(in.state));
  out->set_attempt(in.attempt);
  out->set_error_count(in.error_count);
  out->set_preempt_count(in.preempt_count);
  out->set_worker_id(in.worker_id);
  out->set_last_error(in.last_error);
  out->set_updated_ms(Ms(in.updated_at));
}

// ---- Coordinator ------------------------------------------------------------

grpc::Status CoordinatorServiceImpl::SubmitSweep(
    grpc::ServerContext* ctx, const pb::SubmitSweepRequest* req,
    pb::SubmitSweepResponse* resp) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    SMOE_ASSIGN_OR_RETURN(
        SubmitResult r,
        scheduler_->SubmitSweep(req->spec_yaml(), req->dry_run()));
    ToProto(r.sweep, resp->mutable_sweep());
    resp->set_new_trials(r.new_trials);
    resp->set_existing_trials(r.existing_trials);
    return absl::OkStatus();
  });
}

grpc::Status CoordinatorServiceImpl::ListSweeps(
    grpc::ServerContext* ctx, const pb::ListSweepsRequest* req,
    pb::ListSweepsResponse* resp) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    for (const SweepView& v : scheduler_->ListSweeps()) {
      ToProto(v, resp->add_sweeps());
    }
    return absl::OkStatus();
  });
}

grpc::Status CoordinatorServiceImpl::GetSweep(grpc::ServerContext* ctx,
                                              const pb::GetSweepRequest* req,
                                              pb::GetSweepResponse* resp) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    views::SweepDetailOptions o;
    o.include_trials = req->include_trials();
    o.decisions_limit = std::max(0, req->decisions_limit());
    SMOE_ASSIGN_OR_RETURN(
        views::SweepDetail d,
        views::ReadSweepDetail(scheduler_, store_, req->sweep_id(), o));
    ToProto(d.sweep, resp->mutable_sweep());
    for (const views::TrialDetail& t : d.trials) {
      pb::Trial* out = resp->add_trials();
      ToProto(t.record, out);
      for (const auto& [k, v] : t.results) (*out->mutable_results())[k] = v;
      out->set_duration_s(t.duration_s);
    }
    if (d.adaptive) {
      pb::SearchUsage* usage = resp->mutable_search_usage();
      usage->set_trial_steps_used(d.search_usage.trial_steps_used);
      usage->set_full_grid_trial_steps(d.search_usage.full_grid_trial_steps);
      if (o.decisions_limit > 0) usage->set_decisions(d.decisions_total);
      for (const store::DecisionRecord& r : d.decisions) {
        ToProto(r, resp->add_decisions());
      }
    }
    return absl::OkStatus();
  });
}

grpc::Status CoordinatorServiceImpl::CancelSweep(
    grpc::ServerContext* ctx, const pb::CancelSweepRequest* req,
    pb::CancelSweepResponse* resp) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    SMOE_ASSIGN_OR_RETURN(int n, scheduler_->CancelSweep(req->sweep_id()));
    SMOE_ASSIGN_OR_RETURN(SweepView v, scheduler_->GetSweep(req->sweep_id()));
    ToProto(v, resp->mutable_sweep());
    resp->set_cancelled_trials(n);
    return absl::OkStatus();
  });
}

grpc::Status CoordinatorServiceImpl::RetrySweep(
    grpc::ServerContext* ctx, const pb::RetrySweepRequest* req,
    pb::RetrySweepResponse* resp) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    SMOE_ASSIGN_OR_RETURN(
        int n,
        scheduler_->RetrySweep(req->sweep_id(), req->include_cancelled()));
    SMOE_ASSIGN_OR_RETURN(SweepView v, scheduler_->GetSweep(req->sweep_id()));
    ToProto(v, resp->mutable_sweep());
    resp->set_requeued_trials(n);
    return absl::OkStatus();
  });
}

grpc::Status CoordinatorServiceImpl::ExtendSweep(
    grpc::ServerContext* ctx, const pb::ExtendSweepRequest* req,
    pb::ExtendSweepResponse* resp) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    std::vector<nlohmann::json> values;
    for (int i = 0; i < req->values_size(); ++i) {
      SMOE_ASSIGN_OR_RETURN(
          nlohmann::json v,
          ValueToJson(req->values(i), absl::StrCat("values[", i, "]")));
      values.push_back(std::move(v));
    }
    SMOE_ASSIGN_OR_RETURN(
        int n, scheduler_->ExtendSweep(req->sweep_id(), req->axis(), values));
    SMOE_ASSIGN_OR_RETURN(SweepView v, scheduler_->GetSweep(req->sweep_id()));
    ToProto(v, resp->mutable_sweep());
    resp->set_new_trials(n);
    return absl::OkStatus();
  });
}

grpc::Status CoordinatorServiceImpl::AnnotateSweep(
    grpc::ServerContext* ctx, const pb::AnnotateSweepRequest* req,
    pb::AnnotateSweepResponse* resp) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    Scheduler::SweepAnnotation a;
    if (req->has_notes()) a.notes = req->notes();
    if (req->set_tags()) {
      a.tags = std::vector<std::string>(req->tags().begin(), req->tags().end());
    }
    if (req->has_archived()) a.archived = req->archived();
    SMOE_ASSIGN_OR_RETURN(SweepView v,
                          scheduler_->AnnotateSweep(req->sweep_id(), a));
    ToProto(v, resp->mutable_sweep());
    return absl::OkStatus();
  });
}

grpc::Status CoordinatorServiceImpl::DeleteSweep(
    grpc::ServerContext* ctx, const pb::DeleteSweepRequest* req,
    pb::DeleteSweepResponse* resp) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    SMOE_ASSIGN_OR_RETURN(DeletedSweep d,
                          scheduler_->DeleteSweep(req->sweep_id()));
    resp->set_sweep_id(d.sweep_id);
    resp->set_deleted_trials(static_cast<int32_t>(d.trial_ids.size()));
    return absl::OkStatus();
  });
}

grpc::Status CoordinatorServiceImpl::WatchSweep(
    grpc::ServerContext* ctx, const pb::WatchSweepRequest* req,
    grpc::ServerWriter<pb::SweepEvent>* writer) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    const absl::Time end =
        req->max_wait_ms() > 0
            ? absl::Now() + absl::Milliseconds(req->max_wait_ms())
            : absl::InfiniteFuture();
    int64_t since = 0;
    std::string unschedulable;  // as last sent
    const std::string method = absl::StrCat("/", auth_.service, "/WatchSweep");
    while (!ctx->IsCancelled() && absl::Now() < end) {
      // The token is checked again at every wait (at most 1 s apart): a
      // stream opened before its token was revoked ends with
      // UNAUTHENTICATED instead of delivering on (issue 36).
      SMOE_RETURN_IF_ERROR(
          auth_.checker->CheckMetadata(method, ctx->client_metadata()));
      // Short waits so a cancelled stream or a server shutdown is noticed.
      const absl::Duration wait = std::min(
          absl::Seconds(1), std::max(end - absl::Now(), absl::ZeroDuration()));
      SMOE_ASSIGN_OR_RETURN(
          WatchResult r, scheduler_->WatchSweep(req->sweep_id(), since, wait));
      // No new version: an event only when why the sweep waits has changed
      // (a worker came or went; `unschedulable` follows the heartbeats, not
      // the versions), so a watcher's "waiting: ..." stays current.
      if (r.timed_out &&
          (since == 0 || r.sweep.unschedulable == unschedulable)) {
        continue;
      }
      pb::SweepEvent ev;
      ToProto(r.sweep, ev.mutable_sweep());
      for (const auto& t : r.changed) ToProto(t, ev.add_changed());
      if (!writer->Write(ev)) break;
      unschedulable = r.sweep.unschedulable;
      since = r.sweep.version;
      if (r.sweep.record.state != store::SweepState::kActive) break;
    }
    return absl::OkStatus();
  });
}

grpc::Status CoordinatorServiceImpl::GetTrialMetrics(
    grpc::ServerContext* ctx, const pb::GetTrialMetricsRequest* req,
    pb::GetTrialMetricsResponse* resp) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    std::optional<std::string> name;
    if (!req->name().empty()) name = req->name();
    SMOE_ASSIGN_OR_RETURN(
        views::TrialMetrics v,
        views::ReadTrialMetrics(store_, req->trial_id(), name));
    for (const auto& m : v.metrics) {
      pb::Metric* out = resp->add_metrics();
      out->set_step(m.step);
      out->set_name(m.name);
      out->set_value(m.value);
    }
    for (const auto& a : v.attempts) {
      pb::Attempt* out = resp->add_attempts();
      out->set_trial_id(a.trial_id);
      out->set_attempt(a.attempt);
      out->set_worker_id(a.worker_id);
      out->set_outcome(ToProto(a.outcome));
      out->set_exit_code(a.exit_code);
      out->set_message(a.message);
      out->set_started_ms(Ms(a.started_at));
      out->set_ended_ms(a.ended_at == absl::UnixEpoch() ? 0 : Ms(a.ended_at));
    }
    return absl::OkStatus();
  });
}

grpc::Status CoordinatorServiceImpl::GetTrialLogs(
    grpc::ServerContext* ctx, const pb::GetTrialLogsRequest* req,
    pb::GetTrialLogsResponse* resp) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    if (logs_ == nullptr) {
      return absl::UnimplementedError("this coordinator keeps no trial logs");
    }
    SMOE_ASSIGN_OR_RETURN(TrialLogView v,
                          logs_->Read(req->trial_id(), req->attempt()));
    resp->set_trial_id(v.trial_id);
    resp->set_attempt(v.attempt);
    resp->mutable_log()->set_text(v.text);
    resp->mutable_log()->set_total_bytes(v.total_bytes);
    resp->set_running(v.running);
    resp->set_as_of_ms(v.as_of == absl::UnixEpoch() ? 0 : Ms(v.as_of));
    for (int a : v.attempts) resp->add_attempts(a);
    return absl::OkStatus();
  });
}

grpc::Status CoordinatorServiceImpl::DrainWorker(
    grpc::ServerContext* ctx, const pb::DrainWorkerRequest* req,
    pb::DrainWorkerResponse*) {
  return Guarded(ctx, auth_, *req,
                 [&] { return scheduler_->DrainWorker(req->worker_id()); });
}

grpc::Status CoordinatorServiceImpl::ListWorkers(
    grpc::ServerContext* ctx, const pb::ListWorkersRequest* req,
    pb::ListWorkersResponse* resp) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    const WorkersTable table = ReadWorkersTable(*scheduler_, req->all());
    resp->set_as_of_ms(Ms(table.as_of));
    resp->set_lost_after_ms(absl::ToInt64Milliseconds(table.lost_after));
    resp->set_hidden(table.hidden);
    for (const WorkerRow& row : table.rows) {
      const store::WorkerRecord& r = row.worker.record;
      pb::WorkerStatus* w = resp->add_workers();
      w->set_worker_id(r.worker_id);
      w->set_hostname(r.hostname);
      w->set_cpus(r.cpus);
      w->set_gpus(r.gpus);
      w->set_slots(r.slots);
      w->set_slots_used(row.worker.slots_used);
      w->set_gpus_used(row.worker.gpus_used);
      w->mutable_labels()->insert(r.labels.begin(), r.labels.end());
      for (const std::string& k : r.kinds) w->add_kinds(k);
      switch (row.state) {
        case WorkerState::kReady:
          w->set_state(pb::WORKER_STATE_READY);
          break;
        case WorkerState::kDraining:
          w->set_state(pb::WORKER_STATE_DRAINING);
          break;
        case WorkerState::kStopped:
          w->set_state(pb::WORKER_STATE_STOPPED);
          break;
        case WorkerState::kPaused:
          w->set_state(pb::WORKER_STATE_PAUSED);
          break;
        case WorkerState::kLost:
          w->set_state(pb::WORKER_STATE_LOST);
          break;
      }
      w->set_draining(r.draining);
      w->set_paused(row.worker.paused);
      w->set_registered_ms(Ms(r.registered_at));
      w->set_last_heartbeat_ms(Ms(r.last_heartbeat_at));
      for (const std::string& id : row.worker.trial_ids) w->add_trial_ids(id);
    }
    return absl::OkStatus();
  });
}

grpc::Status CoordinatorServiceImpl::ListArtifacts(
    grpc::ServerContext* ctx, const pb::ListArtifactsRequest* req,
    pb::ListArtifactsResponse* resp) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    SMOE_ASSIGN_OR_RETURN(
        std::vector<ArtifactInfo> list,
        coordinator::ListArtifacts(store_, checkpoints_, req->trial_id()));
    for (const ArtifactInfo& a : list) {
      pb::Artifact* out = resp->add_artifacts();
      out->set_name(a.name);
      out->set_kind(a.kind);
      out->set_bytes(a.bytes);
      out->set_sha256(a.sha256);
      out->set_step(a.step);
      out->set_created_ms(Ms(a.created_at));
    }
    return absl::OkStatus();
  });
}

grpc::Status CoordinatorServiceImpl::GetArtifact(
    grpc::ServerContext* ctx, const pb::GetArtifactRequest* req,
    grpc::ServerWriter<pb::ArtifactChunk>* writer) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    return ReadArtifact(
        store_, checkpoints_, req->trial_id(), req->name(),
        [&](const ArtifactInfo& a) {
          pb::ArtifactChunk first;
          pb::Artifact* out = first.mutable_artifact();
          out->set_name(a.name);
          out->set_kind(a.kind);
          out->set_bytes(a.bytes);
          out->set_sha256(a.sha256);
          out->set_step(a.step);
          out->set_created_ms(Ms(a.created_at));
          return writer->Write(first);
        },
        [&](absl::string_view data) {
          pb::ArtifactChunk chunk;
          chunk.set_data(std::string(data));
          return !ctx->IsCancelled() && writer->Write(chunk);
        });
  });
}

// ---- WorkerGateway ----------------------------------------------------------

grpc::Status WorkerGatewayServiceImpl::Register(grpc::ServerContext* ctx,
                                                const pb::RegisterRequest* req,
                                                pb::RegisterResponse* resp) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    WorkerInfo info;
    info.worker_id = req->worker_id();
    info.hostname = req->hostname();
    info.cpus = req->cpus();
    info.gpus = req->gpus();
    info.slots = req->slots();  // 0 is refused (ValidateWorkerInfo)
    info.labels.insert(req->labels().begin(), req->labels().end());
    info.kinds.assign(req->kinds().begin(), req->kinds().end());
    if (!req->worker_id().empty()) {
      SMOE_RETURN_IF_ERROR(CheckWorkerToken(ctx, req->worker_id()));
    }
    SMOE_ASSIGN_OR_RETURN(Registration r, scheduler_->Register(info));
    SMOE_RETURN_IF_ERROR(CheckWorkerToken(ctx, r.worker_id));
    resp->set_worker_id(r.worker_id);
    resp->set_heartbeat_interval_ms(
        absl::ToInt64Milliseconds(r.heartbeat_interval));
    resp->set_lease_timeout_ms(absl::ToInt64Milliseconds(r.lease_timeout));
    return absl::OkStatus();
  });
}

grpc::Status WorkerGatewayServiceImpl::Lease(grpc::ServerContext* ctx,
                                             const pb::LeaseRequest* req,
                                             pb::LeaseResponse* resp) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    SMOE_RETURN_IF_ERROR(CheckWorkerToken(ctx, req->worker_id()));
    SMOE_ASSIGN_OR_RETURN(std::vector<LeaseGrant> grants,
                          scheduler_->Lease(req->worker_id(), req->free_slots(),
                                            req->free_gpus()));
    for (const LeaseGrant& g : grants) {
      pb::TrialLease* l = resp->add_leases();
      l->set_trial_id(g.trial_id);
      l->set_sweep_id(g.sweep_id);
      l->set_attempt(g.attempt);
      l->set_kind(g.kind);
      l->set_seed(g.seed);
      l->set_params_json(g.params_json);
      l->set_gpus(g.gpus);
      l->set_ep_size(g.ep_size);
      l->set_lease_expires_ms(Ms(g.lease_expires_at));
      l->set_slots(g.slots);
      l->set_progress_timeout_s(g.progress_timeout_s);
      l->set_keep_final_checkpoint(g.keep_final_checkpoint);
      if (!g.command.program.empty()) {
        pb::TrialCommand* c = l->mutable_command();
        c->set_program(g.command.program);
        for (const std::string& a : g.command.args) c->add_args(a);
        c->set_defaults_json(g.defaults_json);
      }
      if (checkpoints_ != nullptr) {
        if (auto c = checkpoints_->Latest(g.trial_id); c.has_value()) {
          l->set_checkpoint_step(c->step);
          l->set_checkpoint_bytes(c->bytes);
        }
      }
    }
    return absl::OkStatus();
  });
}

grpc::Status WorkerGatewayServiceImpl::Heartbeat(
    grpc::ServerContext* ctx, const pb::HeartbeatRequest* req,
    pb::HeartbeatResponse* resp) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    SMOE_RETURN_IF_ERROR(CheckWorkerToken(ctx, req->worker_id()));
    std::vector<RunningReport> running;
    for (const auto& r : req->running()) {
      running.push_back({r.trial_id(), r.attempt()});
    }
    SMOE_ASSIGN_OR_RETURN(
        HeartbeatReply reply,
        scheduler_->Heartbeat(req->worker_id(), running, req->draining(),
                              req->paused()));
    std::set<std::pair<std::string, int>> cancelled;
    for (const auto& [trial, attempt] : reply.cancel) {
      pb::WorkerCommand* c = resp->add_commands();
      c->set_type(pb::WorkerCommand::TYPE_CANCEL);
      c->set_trial_id(trial);
      c->set_attempt(attempt);
      cancelled.insert({trial, attempt});
    }
    for (const pb::RunningAttempt& r : req->running()) {
      if (cancelled.count({r.trial_id(), r.attempt()}) > 0) continue;
      StoreSystemSample(req->worker_id(), r);
      if (logs_ == nullptr) continue;
      if (r.has_log()) {
        logs_->PutLive(r.trial_id(), r.attempt(), r.log().text(),
                       r.log().total_bytes());
      }
      if (logs_->Wanted(r.trial_id(), r.attempt())) {
        pb::WorkerCommand* c = resp->add_commands();
        c->set_type(pb::WorkerCommand::TYPE_SEND_LOG);
        c->set_trial_id(r.trial_id());
        c->set_attempt(r.attempt());
      }
    }
    resp->set_drain(reply.drain);
    return absl::OkStatus();
  });
}

void WorkerGatewayServiceImpl::StoreSystemSample(const std::string& worker_id,
                                                 const pb::RunningAttempt& r) {
  if (!r.has_system()) return;
  const pb::SystemSample& s = r.system();
  const int64_t step = std::max<int64_t>(0, s.step());
  std::vector<store::MetricRecord> metrics;
  auto add = [&](const char* name, double value) {
    if (!std::isfinite(value) || value < 0) return;  // not a measurement
    metrics.push_back({r.trial_id(), step, name, value, r.attempt()});
  };
  constexpr double kMb = 1024.0 * 1024.0;
  if (s.has_cpu_percent()) add("sys/cpu_percent", s.cpu_percent());
  if (s.has_rss_bytes()) add("sys/rss_mb", s.rss_bytes() / kMb);
  if (s.has_gpu_util_percent()) {
    add("sys/gpu_util_percent", s.gpu_util_percent());
  }
  if (s.has_gpu_memory_bytes())
    add("sys/gpu_mem_mb", s.gpu_memory_bytes() / kMb);
  if (metrics.empty()) return;
  absl::Status st =
      scheduler_->ReportMetrics(worker_id, r.trial_id(), r.attempt(), metrics);
  if (!st.ok() && !absl::IsFailedPrecondition(st)) {
    SMOE_LOG(WARNING) << "system metrics of " << r.trial_id() << " attempt "
                      << r.attempt() << " not stored: " << st;
  }
}

// Stores the log an ended attempt's report carries. Only for the worker's
// current attempt (what the scheduler accepts reports for), so a worker
// cannot overwrite another attempt's log.
void WorkerGatewayServiceImpl::StoreFinalLog(const std::string& worker_id,
                                             const std::string& trial_id,
                                             int attempt,
                                             const pb::LogTail& log) {
  if (logs_ == nullptr) return;
  if (!scheduler_->CheckCurrentAttempt(worker_id, trial_id, attempt).ok()) {
    return;
  }
  absl::Status st =
      logs_->PutFinal(trial_id, attempt, log.text(), log.total_bytes());
  if (!st.ok()) {
    SMOE_LOG(WARNING) << "log of " << trial_id << " attempt " << attempt
                      << " not stored: " << st;
  }
}

grpc::Status WorkerGatewayServiceImpl::ReportMetrics(
    grpc::ServerContext* ctx, const pb::ReportMetricsRequest* req,
    pb::ReportMetricsResponse* resp) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    SMOE_RETURN_IF_ERROR(CheckWorkerToken(ctx, req->worker_id()));
    std::vector<store::MetricRecord> metrics;
    metrics.reserve(static_cast<size_t>(req->metrics_size()));
    for (const pb::Metric& m : req->metrics()) {
      metrics.push_back(
          {req->trial_id(), m.step(), m.name(), m.value(), req->attempt()});
    }
    SMOE_RETURN_IF_ERROR(scheduler_->ReportMetrics(
        req->worker_id(), req->trial_id(), req->attempt(), metrics));
    resp->set_accepted(static_cast<int32_t>(metrics.size()));
    return absl::OkStatus();
  });
}

grpc::Status WorkerGatewayServiceImpl::Complete(grpc::ServerContext* ctx,
                                                const pb::CompleteRequest* req,
                                                pb::CompleteResponse*) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    SMOE_RETURN_IF_ERROR(CheckWorkerToken(ctx, req->worker_id()));
    std::map<std::string, double> results(req->results().begin(),
                                          req->results().end());
    // Before the report: once the trial reads as ended, its log is there.
    if (req->has_log()) {
      StoreFinalLog(req->worker_id(), req->trial_id(), req->attempt(),
                    req->log());
    }
    absl::Status st =
        scheduler_->Complete(req->worker_id(), req->trial_id(), req->attempt(),
                             results, req->duration_s());
    if (st.ok()) CollectCheckpoints();
    return st;
  });
}

grpc::Status WorkerGatewayServiceImpl::Fail(grpc::ServerContext* ctx,
                                            const pb::FailRequest* req,
                                            pb::FailResponse*) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    SMOE_RETURN_IF_ERROR(CheckWorkerToken(ctx, req->worker_id()));
    FailReason reason;
    switch (req->reason()) {
      case pb::FailRequest::REASON_ERROR:
        reason = FailReason::kError;
        break;
      case pb::FailRequest::REASON_PREEMPTED:
        reason = FailReason::kPreempted;
        break;
      case pb::FailRequest::REASON_BAD_SPEC:
        reason = FailReason::kBadSpec;
        break;
      case pb::FailRequest::REASON_CANCELLED:
        reason = FailReason::kCancelled;
        break;
      case pb::FailRequest::REASON_HUNG:
        reason = FailReason::kHung;
        break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("reason: unknown value ", req->reason()));
    }
    if (req->has_log()) {
      StoreFinalLog(req->worker_id(), req->trial_id(), req->attempt(),
                    req->log());
    }
    absl::Status st =
        scheduler_->Fail(req->worker_id(), req->trial_id(), req->attempt(),
                         reason, req->exit_code(), req->message());
    if (st.ok()) CollectCheckpoints();
    return st;
  });
}

absl::Status WorkerGatewayServiceImpl::CheckWorkerToken(
    grpc::ServerContext* ctx, const std::string& worker_id) {
  if (worker_id.empty()) return absl::OkStatus();  // refused further on
  const std::optional<Principal> who =
      auth_.checker->Caller(ctx->client_metadata());
  if (!who.has_value()) {
    return absl::UnauthenticatedError("missing or invalid API token");
  }
  if (who->role == Role::kAdmin) return absl::OkStatus();
  absl::MutexLock l(&bind_mu_);
  auto [it, added] = worker_tokens_.emplace(worker_id, who->name);
  if (added || it->second == who->name) return absl::OkStatus();
  SMOE_LOG(WARNING) << "token '" << who->name << "' tried to act for worker "
                    << worker_id << ", which belongs to token '" << it->second
                    << "'; refused";
  return absl::PermissionDeniedError(absl::StrCat(
      "worker_id '", worker_id,
      "' belongs to another token (the one it registered with); a worker "
      "token acts only for its own worker: give each worker its own token "
      "(smoe token create --role worker)"));
}

void WorkerGatewayServiceImpl::CollectCheckpoints() {
  if (checkpoints_ == nullptr) return;
  absl::StatusOr<int> n = checkpoints_->CollectGarbage();
  if (!n.ok()) SMOE_LOG(WARNING) << "checkpoint GC: " << n.status();
}

grpc::Status WorkerGatewayServiceImpl::PutCheckpoint(
    grpc::ServerContext* ctx, grpc::ServerReader<pb::CheckpointChunk>* reader,
    pb::PutCheckpointResponse* resp) {
  absl::Status auth = auth_.checker->CheckMetadata(
      absl::StrCat("/", auth_.service, "/PutCheckpoint"),
      ctx->client_metadata());
  if (!auth.ok()) return ToGrpcStatus(auth);
  BudgetUnit unit(auth_.budget, ctx);
  if (!unit.status().ok()) return ToGrpcStatus(unit.status());
  if (checkpoints_ == nullptr) {
    return ToGrpcStatus(
        absl::UnimplementedError("this coordinator stores no checkpoints"));
  }
  return ToGrpcStatus([&]() -> absl::Status {
    pb::CheckpointChunk header;
    if (!reader->Read(&header)) {
      return absl::InvalidArgumentError("PutCheckpoint: empty stream");
    }
    if (!header.data().empty()) {
      return absl::InvalidArgumentError(
          "PutCheckpoint: the first message is the header and carries no "
          "data");
    }
    SMOE_RETURN_IF_ERROR(CheckWorkerToken(ctx, header.worker_id()));
    SMOE_RETURN_IF_ERROR(scheduler_->CheckCurrentAttempt(
        header.worker_id(), header.trial_id(), header.attempt()));
    store::CheckpointRecord c;
    c.trial_id = header.trial_id();
    c.step = header.step();
    c.file_name = header.file_name();
    c.bytes = header.total_bytes();
    c.sha256 = header.sha256();
    c.attempt = header.attempt();
    c.worker_id = header.worker_id();
    SMOE_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointStore::Upload> up,
                          checkpoints_->BeginUpload(c));
    pb::CheckpointChunk chunk;
    while (reader->Read(&chunk)) {
      if (chunk.data().size() > kBlobChunkBytes) {
        return absl::InvalidArgumentError(
            absl::StrCat("PutCheckpoint: chunk of ", chunk.data().size(),
                         " bytes; at most ", kBlobChunkBytes, " per message"));
      }
      SMOE_RETURN_IF_ERROR(up->Append(chunk.data()));
    }
    if (ctx->IsCancelled()) {
      return absl::CancelledError("PutCheckpoint: upload cancelled");
    }
    SMOE_ASSIGN_OR_RETURN(store::CheckpointRecord stored, up->Finish());
    SMOE_LOG(DEBUG) << "stored checkpoint of trial " << stored.trial_id
                    << " step " << stored.step << " (" << stored.bytes
                    << " bytes) from worker " << stored.worker_id;
    resp->set_step(stored.step);
    resp->set_bytes(stored.bytes);
    return absl::OkStatus();
  }());
}

grpc::Status WorkerGatewayServiceImpl::GetCheckpoint(
    grpc::ServerContext* ctx, const pb::GetCheckpointRequest* req,
    grpc::ServerWriter<pb::CheckpointChunk>* writer) {
  return Guarded(ctx, auth_, *req, [&]() -> absl::Status {
    if (checkpoints_ == nullptr) {
      return absl::UnimplementedError("this coordinator stores no checkpoints");
    }
    SMOE_RETURN_IF_ERROR(CheckWorkerToken(ctx, req->worker_id()));
    SMOE_RETURN_IF_ERROR(scheduler_->CheckCurrentAttempt(
        req->worker_id(), req->trial_id(), req->attempt()));
    std::optional<store::CheckpointRecord> c =
        checkpoints_->Latest(req->trial_id(), req->before_step());
    if (!c.has_value()) {
      return absl::NotFoundError(
          absl::StrCat("no stored checkpoint of trial ", req->trial_id(),
                       req->before_step() > 0
                           ? absl::StrCat(" before step ", req->before_step())
                           : ""));
    }
    pb::CheckpointChunk header;
    header.set_trial_id(c->trial_id);
    header.set_attempt(req->attempt());
    header.set_step(c->step);
    header.set_total_bytes(c->bytes);
    header.set_sha256(c->sha256);
    header.set_file_name(c->file_name);
    if (!writer->Write(header)) {
      return absl::CancelledError("GetCheckpoint: client went away");
    }
    return checkpoints_->Read(*c, [&](absl::string_view data) {
      pb::CheckpointChunk chunk;
      chunk.set_data(std::string(data));
      return !ctx->IsCancelled() && writer->Write(chunk);
    });
  });
}

}  // namespace smoe::coordinator
