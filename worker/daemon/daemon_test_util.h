// Copyright 2026 SMoE Lab authors.
//
// File: worker/daemon/daemon_test_util.h
//
// Test-only fakes for the worker daemon: a scripted GatewayClient that records
// every request, and a ProcessLauncher whose processes the test drives (stdout
// lines, exit status) and inspects (signals received). Single-threaded use.
#ifndef SMOE_WORKER_DAEMON_DAEMON_TEST_UTIL_H_
#define SMOE_WORKER_DAEMON_DAEMON_TEST_UTIL_H_

#include <signal.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/daemon/gateway_client.h"
#include "worker/daemon/process_launcher.h"

namespace smoe::worker::testing {

// Records requests; answers from per-method queues of statuses (OK when
// empty), plus `fail_all` to simulate an unreachable coordinator.
class FakeGatewayClient : public GatewayClient {
 public:
  std::string assigned_id = "w-1";
  int64_t heartbeat_interval_ms = 5000;
  // When not OK, every call fails with it.
  absl::Status fail_all = absl::OkStatus();
  // Errors returned by the next calls of each method, in order.
  std::deque<absl::Status> register_errors, lease_errors, heartbeat_errors,
      metrics_errors, complete_errors, fail_errors;
  // Leases handed out by the next Lease() calls (one response per call).
  std::deque<v1::LeaseResponse> lease_responses;
  // Replies of the next Heartbeat() calls.
  std::deque<v1::HeartbeatResponse> heartbeat_responses;

  std::vector<v1::RegisterRequest> registers;
  std::vector<v1::LeaseRequest> leases;
  std::vector<v1::HeartbeatRequest> heartbeats;
  std::vector<v1::ReportMetricsRequest> metrics;  // acknowledged only
  std::vector<v1::CompleteRequest> completes;     // acknowledged only
  std::vector<v1::FailRequest> fails;             // acknowledged only
  int calls_refused = 0;
  // Acknowledged report calls in order: "metrics:<trial>", "complete:<trial>",
  // "fail:<trial>".
  std::vector<std::string> order;

  void AddLease(const std::string& trial_id, int attempt,
                const std::string& params_json = R"({"M":2,"top_k":1})",
                int gpus = 0, int ep_size = 1) {
    v1::LeaseResponse r;
    v1::TrialLease* l = r.add_leases();
    l->set_trial_id(trial_id);
    l->set_sweep_id(trial_id.substr(0, trial_id.find('/')));
    l->set_attempt(attempt);
    l->set_kind("sraven");
    l->set_seed(7);
    l->set_params_json(params_json);
    l->set_gpus(gpus);
    l->set_ep_size(ep_size);
    lease_responses.push_back(r);
  }

  absl::StatusOr<v1::RegisterResponse> Register(
      const v1::RegisterRequest& req) override {
    registers.push_back(req);
    if (absl::Status s = Next(&register_errors); !s.ok()) return s;
    v1::RegisterResponse r;
    r.set_worker_id(req.worker_id().empty() ? assigned_id : req.worker_id());
    r.set_heartbeat_interval_ms(heartbeat_interval_ms);
    r.set_lease_timeout_ms(30000);
    return r;
  }
  absl::StatusOr<v1::LeaseResponse> Lease(
      const v1::LeaseRequest& req) override {
    leases.push_back(req);
    if (absl::Status s = Next(&lease_errors); !s.ok()) return s;
    if (lease_responses.empty()) return v1::LeaseResponse();
    v1::LeaseResponse r = lease_responses.front();
    lease_responses.pop_front();
    return r;
  }
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest& req) override {
    heartbeats.push_back(req);
    if (absl::Status s = Next(&heartbeat_errors); !s.ok()) return s;
    if (heartbeat_responses.empty()) return v1::HeartbeatResponse();
    v1::HeartbeatResponse r = heartbeat_responses.front();
    heartbeat_responses.pop_front();
    return r;
  }
  absl::StatusOr<v1::ReportMetricsResponse> ReportMetrics(
      const v1::ReportMetricsRequest& req) override {
    if (absl::Status s = Next(&metrics_errors); !s.ok()) return s;
    metrics.push_back(req);
    order.push_back("metrics:" + req.trial_id());
    v1::ReportMetricsResponse r;
    r.set_accepted(req.metrics_size());
    return r;
  }
  absl::StatusOr<v1::CompleteResponse> Complete(
      const v1::CompleteRequest& req) override {
    if (absl::Status s = Next(&complete_errors); !s.ok()) return s;
    completes.push_back(req);
    order.push_back("complete:" + req.trial_id());
    return v1::CompleteResponse();
  }
  absl::StatusOr<v1::FailResponse> Fail(const v1::FailRequest& req) override {
    if (absl::Status s = Next(&fail_errors); !s.ok()) return s;
    fails.push_back(req);
    order.push_back("fail:" + req.trial_id());
    return v1::FailResponse();
  }

  int TotalMetrics() const {
    int n = 0;
    for (const auto& m : metrics) n += m.metrics_size();
    return n;
  }

 private:
  absl::Status Next(std::deque<absl::Status>* q) {
    if (!fail_all.ok()) {
      ++calls_refused;
      return fail_all;
    }
    if (q->empty()) return absl::OkStatus();
    absl::Status s = q->front();
    q->pop_front();
    if (!s.ok()) ++calls_refused;
    return s;
  }
};

// State of one fake process, shared between the test and the Process object.
struct FakeProcessState {
  ProcessSpec spec;
  int pid = 0;
  std::vector<std::string> stdout_lines;  // not yet taken
  std::vector<std::string> stderr_tail;
  std::optional<ExitInfo> exit;
  std::vector<int> signals;  // received, in order
  // When set, SIGTERM makes the process exit with this code (checkpointing
  // trainer); SIGKILL always kills it (signal 9).
  std::optional<int> exit_on_sigterm;
  bool destroyed = false;

  void Emit(const std::string& line) { stdout_lines.push_back(line); }
  void Exit(int code) {
    ExitInfo e;
    e.exit_code = code;
    exit = e;
  }
  void Kill(int sig) {
    ExitInfo e;
    e.signaled = true;
    e.signal = sig;
    exit = e;
  }
};

class FakeProcess : public Process {
 public:
  explicit FakeProcess(std::shared_ptr<FakeProcessState> s)
      : s_(std::move(s)) {}
  ~FakeProcess() override { s_->destroyed = true; }
  int pid() const override { return s_->pid; }
  std::vector<std::string> TakeStdoutLines() override {
    std::vector<std::string> out;
    out.swap(s_->stdout_lines);
    return out;
  }
  std::vector<std::string> StderrTail() override { return s_->stderr_tail; }
  absl::Status Signal(int sig) override {
    if (s_->exit.has_value()) return absl::OkStatus();
    s_->signals.push_back(sig);
    if (sig == SIGKILL) s_->Kill(SIGKILL);
    if (sig == SIGTERM && s_->exit_on_sigterm.has_value()) {
      s_->Exit(*s_->exit_on_sigterm);
    }
    return absl::OkStatus();
  }
  std::optional<ExitInfo> Poll() override { return s_->exit; }
  std::optional<ExitInfo> Wait(absl::Duration) override { return s_->exit; }

 private:
  std::shared_ptr<FakeProcessState> s_;
};

class FakeProcessLauncher : public ProcessLauncher {
 public:
  std::vector<std::shared_ptr<FakeProcessState>> started;
  std::deque<absl::Status> start_errors;
  // Applied to every new process (e.g. exit 75 on SIGTERM).
  std::optional<int> default_exit_on_sigterm;

  absl::StatusOr<std::unique_ptr<Process>> Start(
      const ProcessSpec& spec) override {
    if (!start_errors.empty()) {
      absl::Status s = start_errors.front();
      start_errors.pop_front();
      if (!s.ok()) return s;
    }
    auto st = std::make_shared<FakeProcessState>();
    st->spec = spec;
    st->pid = 1000 + static_cast<int>(started.size());
    st->exit_on_sigterm = default_exit_on_sigterm;
    started.push_back(st);
    return std::unique_ptr<Process>(new FakeProcess(st));
  }
};

}  // namespace smoe::worker::testing

#endif  // SMOE_WORKER_DAEMON_DAEMON_TEST_UTIL_H_
