// Copyright 2026 SMoE Lab authors.
//
// smoe-dashboard-fixture: fills a running coordinator with a sweep whose
// results are known, acting as a worker over the real gRPC API (the
// coordinator stays the only writer of its store). Used by the browser tests
// and the dashboard benchmark.
//
//   smoe-dashboard-fixture seed --coordinator H:P --token-file F
//       --sweep FILE [--leave N] [--points 50]
//     submits FILE, then leases and completes every trial but the last N
//     (left pending), each with `--points` metric points per series.
//     With --stepwise 1 (adaptive sweeps) a trial's metrics are reported
//     one evaluation at a time, as a trainer does; a report refused as stale
//     means the search pruned the trial (it stops there), and trials the
//     search promotes back to pending are leased again until none is left.
//   smoe-dashboard-fixture complete --coordinator H:P --token-file F
//       [--count 1] [--kind sraven]
//     leases and completes up to `count` pending trials.
//   smoe-dashboard-fixture fail --coordinator H:P --token-file F
//       [--count 1] [--kind sraven]
//     leases up to `count` pending trials and fails them (exit code 70).
//   smoe-dashboard-fixture checkpoint --coordinator H:P --token-file F
//       [--count 1] [--kind sraven]
//     leases up to `count` pending trials and uploads a checkpoint
//     (checkpoint.json, {"step":40}, step 40) for each, leaving them running.
//   smoe-dashboard-fixture tail --coordinator H:P --token-file F
//       [--kind sraven] [--seconds 20]
//     leases one pending trial, prints its id, and holds it running for
//     `seconds`, heartbeating every 250 ms; its log grows by one line
//     ("live line N") per heartbeat, and after a TYPE_SEND_LOG command the
//     heartbeats carry the log's tail, as a worker daemon does. Then
//     completes the trial.
//
// Results (kind sraven): ood_acc = 0.9 - 0.06*|log2 k - log2(2M)| +
// 0.01*(seed % 3 - 1) - 0.02*[attention == softmax]*M/4, test_acc = ood_acc +
// 0.05: the best k is 2M for every M and attention (capped at num_experts);
// tests/browser/dashboard.test.mjs mirrors this formula. A sweep over lr
// also loses 0.1 per decade from the best lr (0.01 at top_k 1, 0.001 above)
// and reports val_acc = ood_acc + 0.02.
// Results (kind skillmix): ratio_full_marks = 0.1*ept/k_skills (capped at 1),
// its _se 0.05, skill_fraction = min(1, 0.2*ept/k_skills + 0.3) (no _se),
// ratio_all_skills = 0.6 - 0.1*|log2(2*ept/k_skills^2)|, its _se 0.03: an
// interior best EPT that grows with k (k_skills^2/2 in log2 terms), like the
// paper's Skill-Mix tables; the dashboard test mirrors these formulas.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/api_token.h"
#include "common/blob_file.h"
#include "nlohmann/json.hpp"
#include "proto/auth.h"
#include "proto/smoe.grpc.pb.h"

namespace {

namespace pb = smoe::v1;
using nlohmann::json;

struct Flags {
  std::string cmd, coordinator, token_file, sweep;
  int leave = 0, points = 50, count = 1, seconds = 20, stepwise = 0;
  std::string kind = "sraven";
};

int Usage() {
  std::cerr << "usage: smoe-dashboard-fixture "
               "seed|complete|fail|checkpoint|tail --coordinator H:P "
               "--token-file F [--sweep FILE] [--leave N] [--points N] "
               "[--count N] [--kind K] [--seconds S] [--stepwise 1]\n";
  return 64;
}

double Ood(const json& p, int64_t seed) {
  const double m = p.value("M", 4);
  const double k = p.value("top_k", 2);
  const double e = p.value("num_experts", 8);
  const double best = std::min(2 * m, e);
  const double soft = p.value("attention", std::string("softmax")) == "softmax"
                          ? 0.02 * m / 4
                          : 0.0;
  // A swept lr (the tuned view, issue 33): best 0.01 at top_k 1, 0.001
  // above; 0.1 lost per decade away from it.
  const double lr_penalty =
      p.contains("lr") ? 0.1 * std::fabs(std::log10(p.value("lr", 0.001)) -
                                         std::log10(k <= 1 ? 0.01 : 0.001))
                       : 0.0;
  return 0.9 - 0.06 * std::fabs(std::log2(k) - std::log2(best)) +
         0.01 * static_cast<double>(seed % 3 - 1) - soft - lr_penalty;
}

class Fixture {
 public:
  Fixture(const Flags& f, std::string token) : flags_(f), token_(token) {
    auto ch =
        grpc::CreateChannel(f.coordinator, grpc::InsecureChannelCredentials());
    coord_ = pb::Coordinator::NewStub(ch);
    gw_ = pb::WorkerGateway::NewStub(ch);
  }

  bool Ok(const grpc::Status& s, const char* what) {
    if (!s.ok()) std::cerr << what << ": " << s.error_message() << "\n";
    return s.ok();
  }
  void Prep(grpc::ClientContext* ctx) {
    smoe::proto::PrepareClientContext(ctx, token_, absl::Seconds(60));
  }

  bool Submit(const std::string& yaml, int* total) {
    pb::SubmitSweepRequest req;
    req.set_spec_yaml(yaml);
    pb::SubmitSweepResponse resp;
    grpc::ClientContext ctx;
    Prep(&ctx);
    if (!Ok(coord_->SubmitSweep(&ctx, req, &resp), "SubmitSweep")) return false;
    *total = resp.sweep().counts().total();
    return true;
  }

  bool Register(const std::string& kind) {
    pb::RegisterRequest req;
    req.set_hostname("fixture");
    req.set_slots(
        1024);  // the most a worker may register; leases are capped by it
    req.set_gpus(64);
    req.add_kinds(kind);
    pb::RegisterResponse resp;
    grpc::ClientContext ctx;
    Prep(&ctx);
    if (!Ok(gw_->Register(&ctx, req, &resp), "Register")) return false;
    worker_ = resp.worker_id();
    return true;
  }

  // Leases up to `slots` trials as this worker (offering `gpus` GPUs).
  bool Lease(int slots, int gpus, pb::LeaseResponse* resp) {
    pb::LeaseRequest req;
    req.set_worker_id(worker_);
    req.set_free_slots(slots);
    req.set_free_gpus(gpus);
    grpc::ClientContext ctx;
    Prep(&ctx);
    return Ok(gw_->Lease(&ctx, req, resp), "Lease");
  }

  // --stepwise: leases and runs trials until none is pending (pruned ones
  // stop at their rung; promoted ones come back as pending).
  bool RunStepwise() {
    for (int round = 0; round < 1000; ++round) {
      pb::LeaseResponse resp;
      if (!Lease(500, 64 * 500, &resp)) return false;
      if (resp.leases_size() == 0) return true;
      for (const pb::TrialLease& l : resp.leases()) {
        if (!Finish(l)) return false;
      }
    }
    std::cerr << "stepwise: still leasing after 1000 rounds\n";
    return false;
  }

  // Leases up to n trials and completes them.
  bool Run(int n) {
    while (n > 0) {
      pb::LeaseResponse resp;
      if (!Lease(std::min(n, 500), 64 * 500, &resp)) return false;
      if (resp.leases_size() == 0) return true;
      for (const pb::TrialLease& l : resp.leases()) {
        if (!Finish(l)) return false;
        --n;
      }
    }
    return true;
  }

  // Leases up to n trials and fails each attempt with exit code 70 and a
  // CUDA-style message (the failure views of the dashboard).
  bool FailTrials(int n) {
    pb::LeaseResponse resp;
    if (!Lease(n, 64 * 500, &resp)) return false;
    for (const pb::TrialLease& l : resp.leases()) {
      pb::FailRequest fr;
      fr.set_worker_id(worker_);
      fr.set_trial_id(l.trial_id());
      fr.set_attempt(l.attempt());
      fr.set_reason(pb::FailRequest::REASON_ERROR);
      fr.set_exit_code(70);
      fr.set_message(
          "trainer exited with status 70: CUDA error: no "
          "CUDA-capable device is detected");
      // The attempt's log, as a worker sends it (worker/daemon/attempt_log.h).
      const std::string log =
          "loading TRIAL.json\nnot an event: warming up\nTraceback (most "
          "recent call last):\nRuntimeError: CUDA error: no CUDA-capable "
          "device is detected\n";
      fr.mutable_log()->set_text(log);
      fr.mutable_log()->set_total_bytes(static_cast<int64_t>(log.size()));
      pb::FailResponse fresp;
      grpc::ClientContext c;
      Prep(&c);
      if (!Ok(gw_->Fail(&c, fr, &fresp), "Fail")) return false;
    }
    return true;
  }

  // Leases up to n trials and stores a checkpoint for each (PutCheckpoint).
  bool Checkpoint(int n) {
    pb::LeaseResponse resp;
    if (!Lease(n, 64 * 500, &resp)) return false;
    const std::string data = "{\"step\":40}\n";
    for (const pb::TrialLease& l : resp.leases()) {
      grpc::ClientContext c;
      Prep(&c);
      pb::PutCheckpointResponse presp;
      auto writer = gw_->PutCheckpoint(&c, &presp);
      pb::CheckpointChunk header;
      header.set_worker_id(worker_);
      header.set_trial_id(l.trial_id());
      header.set_attempt(l.attempt());
      header.set_step(40);
      header.set_total_bytes(static_cast<int64_t>(data.size()));
      header.set_sha256(smoe::Sha256Hex(data));
      header.set_file_name("checkpoint.json");
      pb::CheckpointChunk chunk;
      chunk.set_data(data);
      writer->Write(header);
      writer->Write(chunk);
      writer->WritesDone();
      if (!Ok(writer->Finish(), "PutCheckpoint")) return false;
    }
    return true;
  }

  // Leases one trial and runs it as a worker daemon would for `seconds`:
  // heartbeats every 250 ms, one log line per heartbeat, the log's tail sent
  // while the coordinator asks for it (TYPE_SEND_LOG); then completes it.
  bool Tail(int seconds) {
    pb::LeaseResponse resp;
    if (!Lease(1, 64, &resp)) return false;
    if (resp.leases_size() != 1) {
      std::cerr << "tail: no pending trial to lease\n";
      return false;
    }
    const pb::TrialLease& l = resp.leases(0);
    std::cout << l.trial_id() << std::endl;
    std::string log = "worker fixture: attempt started\n";
    bool send = false;
    const auto end =
        std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    for (int n = 1; std::chrono::steady_clock::now() < end; ++n) {
      log += absl::StrCat("live line ", n, "\n");
      pb::HeartbeatRequest hb;
      hb.set_worker_id(worker_);
      pb::RunningAttempt* r = hb.add_running();
      r->set_trial_id(l.trial_id());
      r->set_attempt(l.attempt());
      r->mutable_system()->set_step(n);
      if (send) {
        r->mutable_log()->set_text(log);
        r->mutable_log()->set_total_bytes(static_cast<int64_t>(log.size()));
      }
      pb::HeartbeatResponse hresp;
      grpc::ClientContext c;
      Prep(&c);
      if (!Ok(gw_->Heartbeat(&c, hb, &hresp), "Heartbeat")) return false;
      send = false;
      for (const pb::WorkerCommand& cmd : hresp.commands()) {
        if (cmd.trial_id() != l.trial_id()) continue;
        if (cmd.type() == pb::WorkerCommand::TYPE_CANCEL) {
          std::cerr << "tail: the coordinator cancelled " << l.trial_id()
                    << "\n";
          return false;
        }
        send = send || cmd.type() == pb::WorkerCommand::TYPE_SEND_LOG;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return Finish(l);
  }

  bool Finish(const pb::TrialLease& l) {
    const json p = json::parse(l.params_json(), nullptr, false);
    std::map<std::string, double> results;
    pb::ReportMetricsRequest mr;
    mr.set_worker_id(worker_);
    mr.set_trial_id(l.trial_id());
    mr.set_attempt(l.attempt());
    if (l.kind() == "skillmix") {
      const double r = static_cast<double>(p.value("ept", 1)) /
                       std::max(1, p.value("k_skills", 1));
      const double k = std::max(1, p.value("k_skills", 1));
      const double ept = p.value("ept", 1);
      results = {{"ratio_full_marks", std::min(1.0, 0.1 * r)},
                 {"ratio_full_marks_se", 0.05},
                 {"skill_fraction", std::min(1.0, 0.2 * r + 0.3)},
                 {"ratio_all_skills",
                  0.6 - 0.1 * std::fabs(std::log2(2 * ept / (k * k)))},
                 {"ratio_all_skills_se", 0.03}};
    } else {
      const double ood = Ood(p, l.seed());
      results = {{"ood_acc", ood},
                 {"test_acc", ood + 0.05},
                 {"train_loss", 0.2 + (1 - ood)},
                 {"steps_per_s", 40}};
      // The validation split a tuned view selects on (sweeps with lr only).
      if (p.contains("lr")) results["val_acc"] = ood + 0.02;
      const int steps = flags_.points;
      const int experts = p.value("num_experts", 8);
      for (int i = 0; i < steps; ++i) {
        const int64_t step = static_cast<int64_t>(i + 1) * 10;
        const double f = static_cast<double>(i + 1) / steps;
        auto add = [&](const std::string& name, double v) {
          pb::Metric* m = mr.add_metrics();
          m->set_step(step);
          m->set_name(name);
          m->set_value(v);
        };
        add("train/loss", 2.3 * std::exp(-3 * f) + (1 - ood));
        if (i % 10 == 9) {
          add("eval/ood_acc", ood * f);
          add("eval/test_acc", (ood + 0.05) * f);
          for (int e = 0; e < experts && e < 8; ++e) {
            add(absl::StrCat("router/layer0/expert", e, "_frac"),
                (1.0 + 0.5 * std::sin(e + f)) / experts);
          }
          add("router/layer0/entropy", std::log(experts) * (1 - 0.2 * f));
        }
        if (i % 5 == 4) {
          // What a CPU worker's heartbeats store (no GPU series: absent).
          add("sys/cpu_percent", 95 + 5 * std::sin(i));
          add("sys/rss_mb", 300 + 2 * i);
        }
        if (flags_.stepwise && i % 10 == 9 && i + 1 < steps) {
          // One evaluation's worth of metrics per report.
          pb::ReportMetricsResponse r;
          grpc::ClientContext c;
          Prep(&c);
          const grpc::Status st = gw_->ReportMetrics(&c, mr, &r);
          if (st.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
            return true;  // pruned by the search: the attempt is over
          }
          if (!Ok(st, "ReportMetrics")) return false;
          mr.clear_metrics();
        }
      }
    }
    pb::ReportMetricsResponse mresp;
    grpc::ClientContext c1;
    Prep(&c1);
    if (mr.metrics_size() > 0) {
      const grpc::Status st = gw_->ReportMetrics(&c1, mr, &mresp);
      if (flags_.stepwise &&
          st.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
        return true;  // pruned at the last evaluation
      }
      if (!Ok(st, "ReportMetrics")) return false;
    }
    pb::CompleteRequest cr;
    cr.set_worker_id(worker_);
    cr.set_trial_id(l.trial_id());
    cr.set_attempt(l.attempt());
    cr.set_duration_s(12.5);
    for (const auto& [k, v] : results) (*cr.mutable_results())[k] = v;
    pb::CompleteResponse cresp;
    grpc::ClientContext c2;
    Prep(&c2);
    return Ok(gw_->Complete(&c2, cr, &cresp), "Complete");
  }

 private:
  Flags flags_;
  std::string token_;
  std::string worker_;
  std::unique_ptr<pb::Coordinator::Stub> coord_;
  std::unique_ptr<pb::WorkerGateway::Stub> gw_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  Flags f;
  f.cmd = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--coordinator") {
      f.coordinator = v;
    } else if (k == "--token-file") {
      f.token_file = v;
    } else if (k == "--sweep") {
      f.sweep = v;
    } else if (k == "--kind") {
      f.kind = v;
    } else if ((k == "--leave" && absl::SimpleAtoi(v, &f.leave)) ||
               (k == "--points" && absl::SimpleAtoi(v, &f.points)) ||
               (k == "--count" && absl::SimpleAtoi(v, &f.count)) ||
               (k == "--seconds" && absl::SimpleAtoi(v, &f.seconds)) ||
               (k == "--stepwise" && absl::SimpleAtoi(v, &f.stepwise))) {
    } else {
      return Usage();
    }
  }
  if (f.coordinator.empty() || f.token_file.empty()) return Usage();
  auto token = smoe::ResolveClientToken(f.token_file);
  if (!token.ok()) {
    std::cerr << token.status().message() << "\n";
    return 77;
  }
  Fixture fx(f, token->token);
  if (f.cmd == "seed") {
    std::ifstream in(f.sweep);
    std::stringstream yaml;
    yaml << in.rdbuf();
    if (!in || yaml.str().empty()) {
      std::cerr << "cannot read " << f.sweep << "\n";
      return 66;
    }
    const std::string text = yaml.str();
    const std::string kind = text.find("kind: skillmix") != std::string::npos
                                 ? "skillmix"
                                 : "sraven";
    int total = 0;
    if (!fx.Submit(text, &total) || !fx.Register(kind)) return 1;
    if (f.stepwise) {
      if (!fx.RunStepwise()) return 1;
      std::cout << "ran " << total << " trials stepwise\n";
      return 0;
    }
    if (!fx.Run(total - f.leave)) return 1;
    std::cout << "seeded " << (total - f.leave) << " of " << total
              << " trials\n";
    return 0;
  }
  if (f.cmd == "fail") {
    if (!fx.Register(f.kind) || !fx.FailTrials(f.count)) return 1;
    std::cout << "failed up to " << f.count << " trials\n";
    return 0;
  }
  if (f.cmd == "checkpoint") {
    if (!fx.Register(f.kind) || !fx.Checkpoint(f.count)) return 1;
    std::cout << "stored checkpoints of up to " << f.count << " trials\n";
    return 0;
  }
  if (f.cmd == "tail") {
    if (!fx.Register(f.kind) || !fx.Tail(f.seconds)) return 1;
    return 0;
  }
  if (f.cmd == "complete") {
    if (!fx.Register(f.kind) || !fx.Run(f.count)) return 1;
    std::cout << "completed up to " << f.count << " trials\n";
    return 0;
  }
  return Usage();
}
