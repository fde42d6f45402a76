// Copyright 2026 SMoE Lab authors.
//
// File: worker/daemon/daemon_test_util.h
//
// Test-only fakes for the worker daemon: a scripted GatewayClient that records
// every request; the ProcessLauncher whose processes the test drives is
// worker/launch/launch_test_util.h. Single-threaded use.
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
#include "worker/launch/launch_test_util.h"

namespace smoe::worker::testing {

using ::smoe::launch::testing::FakeProcessLauncher;
using ::smoe::launch::testing::FakeProcessState;

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

}  // namespace smoe::worker::testing

#endif  // SMOE_WORKER_DAEMON_DAEMON_TEST_UTIL_H_
