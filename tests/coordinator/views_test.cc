// Copyright 2026 SMoE Lab authors.
//
// The read layer (coordinator/views/) serves both transports: the gRPC
// GetSweep / GetTrialMetrics answers and the dashboard's HTTP answers for the
// same sweep and trial agree, field by field (issue 34); submit and extend
// count and refuse alike over both (issue 32).
#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "coordinator/server.h"
#include "coordinator/views/sweep_detail.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "proto/auth.h"
#include "proto/smoe.grpc.pb.h"
#include "store/store_test_util.h"

namespace smoe::coordinator {
namespace {

using nlohmann::json;
namespace pb = smoe::v1;

// "TRIAL_STATE_SUCCEEDED" -> "succeeded", as the HTTP API names states.
std::string StateName(pb::TrialState s) {
  return absl::AsciiStrToLower(
      absl::StripPrefix(pb::TrialState_Name(s), "TRIAL_STATE_"));
}

class ViewsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions so;
    so.data_dir = dir_.path();
    so.listen = "127.0.0.1:0";
    so.http_listen = "127.0.0.1:0";
    so.http_required = true;
    so.synchronous = store::SqliteOptions::Synchronous::kNormal;
    auto server = CoordinatorServer::Start(so);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    Scheduler* s = server_->scheduler();
    auto sub = s->SubmitSweep(
        "name: v\nkind: sraven\ngrid:\n  M: [1, 2]\n  top_k: [1, 2]\n"
        "fixed: {steps: 10}\nseeds: [0, 1]\n",
        false);
    ASSERT_TRUE(sub.ok()) << sub.status();
    WorkerInfo w;
    w.hostname = "h";
    w.slots = 3;
    auto reg = s->Register(w);
    ASSERT_TRUE(reg.ok()) << reg.status();
    auto leases = s->Lease(reg->worker_id, 3, 0);
    ASSERT_TRUE(leases.ok()) << leases.status();
    ASSERT_EQ(leases->size(), 3u);
    // One succeeded with results, one failed for good, one still running;
    // the rest pending.
    done_ = (*leases)[0].trial_id;
    std::vector<store::MetricRecord> points(2);
    for (int i = 0; i < 2; ++i) {
      points[i].trial_id = done_;
      points[i].name = "loss";
      points[i].step = 3 + 4 * i;
      points[i].value = 0.5 / (i + 1);
      points[i].attempt = 1;
    }
    ASSERT_TRUE(s->ReportMetrics(reg->worker_id, done_, 1, points).ok());
    ASSERT_TRUE(s->Complete(reg->worker_id, done_, 1,
                            {{"ood_acc", 0.75}, {"test_acc", 0.5}}, 2.5)
                    .ok());
    ASSERT_TRUE(s->Fail(reg->worker_id, (*leases)[1].trial_id, 1,
                        FailReason::kBadSpec, 64, "bad spec")
                    .ok());
  }

  pb::Coordinator::Stub* Stub() {
    if (!stub_) {
      channel_ = grpc::CreateChannel(server_->address(),
                                     grpc::InsecureChannelCredentials());
      stub_ = pb::Coordinator::NewStub(channel_);
    }
    return stub_.get();
  }

  json HttpGet(const std::string& path) {
    httplib::Client c("127.0.0.1", server_->http_port());
    auto r = c.Get(
        path, {{"Authorization", absl::StrCat("Bearer ", server_->token())}});
    EXPECT_TRUE(r) << path;
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << path << ": " << r->body;
    return json::parse(r->body, nullptr, false);
  }

  store::testing::ScopedTempDir dir_;
  std::unique_ptr<CoordinatorServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::Coordinator::Stub> stub_;
  std::string done_;
};

TEST_F(ViewsTest, GrpcAndHttpAnswerTheSameSweep) {
  pb::GetSweepRequest req;
  req.set_sweep_id("v");
  req.set_include_trials(true);
  pb::GetSweepResponse g;
  grpc::ClientContext ctx;
  proto::PrepareClientContext(&ctx, server_->token(), absl::Seconds(10));
  const grpc::Status st = Stub()->GetSweep(&ctx, req, &g);
  ASSERT_TRUE(st.ok()) << st.error_message();
  const json h = HttpGet("/api/sweeps/v?limit=5000");
  ASSERT_TRUE(h.is_object());

  // The sweep.
  const json& hs = h["sweep"];
  EXPECT_EQ(hs["sweep_id"], g.sweep().sweep_id());
  EXPECT_EQ(hs["kind"], g.sweep().kind());
  EXPECT_EQ(hs["priority"], g.sweep().priority());
  EXPECT_EQ(hs["counts"]["total"], g.trials_size());
  EXPECT_EQ(hs["counts"]["succeeded"], 1);
  EXPECT_EQ(hs["counts"]["failed"], 1);
  EXPECT_EQ(hs["counts"]["running"], 1);

  // Its trials: the same ids, states, attempts, workers, seeds, errors,
  // durations and results.
  ASSERT_EQ(h["rows"].size(), static_cast<size_t>(g.trials_size()));
  ASSERT_EQ(h["total"], 8);
  std::map<std::string, const json*> rows;
  for (const json& r : h["rows"]) rows[r["trial_id"]] = &r;
  int with_results = 0;
  for (const pb::Trial& t : g.trials()) {
    SCOPED_TRACE(t.trial_id());
    ASSERT_TRUE(rows.count(t.trial_id()));
    const json& r = *rows[t.trial_id()];
    EXPECT_EQ(r["ordinal"], t.ordinal());
    EXPECT_EQ(r["state"], StateName(t.state()));
    EXPECT_EQ(r["attempt"], t.attempt());
    // gRPC's worker_id is the lease holder (empty once the trial ended);
    // the dashboard's column keeps the worker of the latest attempt.
    if (t.state() == pb::TRIAL_STATE_RUNNING || t.attempt() == 0) {
      EXPECT_EQ(r["worker"], t.worker_id());
    } else {
      EXPECT_TRUE(t.worker_id().empty());
      EXPECT_NE(r["worker"], "");
    }
    EXPECT_EQ(r["seed"], t.seed());
    EXPECT_EQ(r["duration_s"], t.duration_s());
    EXPECT_EQ(r["error"], t.last_error().substr(0, t.last_error().find('\n')));
    const json params = json::parse(t.params_json(), nullptr, false);
    for (const auto& [k, v] : r["params"].items()) {
      EXPECT_EQ(v, params[k]) << k;
    }
    ASSERT_EQ(r["results"].size(), static_cast<size_t>(t.results_size()));
    for (const auto& [k, v] : t.results()) EXPECT_EQ(r["results"][k], v) << k;
    with_results += t.results_size() > 0;
  }
  EXPECT_EQ(with_results, 1);

  EXPECT_EQ(hs["created_ms"], g.sweep().created_ms());
  EXPECT_EQ(hs["updated_ms"], g.sweep().updated_ms());
  EXPECT_EQ(hs["unschedulable"], g.sweep().unschedulable());
  EXPECT_EQ(hs["archived"], g.sweep().archived());

  // The view the gRPC answer was serialised from.
  auto view = views::ReadSweepDetail(server_->scheduler(), server_->store(),
                                     "v", {.include_trials = true});
  ASSERT_TRUE(view.ok()) << view.status();
  ASSERT_EQ(view->trials.size(), 8u);
  EXPECT_EQ(view->sweep.version, hs["version"]);
}

TEST_F(ViewsTest, GrpcAndHttpAnswerTheSameTrialMetrics) {
  pb::GetTrialMetricsRequest req;
  req.set_trial_id(done_);
  pb::GetTrialMetricsResponse g;
  grpc::ClientContext ctx;
  proto::PrepareClientContext(&ctx, server_->token(), absl::Seconds(10));
  const grpc::Status st = Stub()->GetTrialMetrics(&ctx, req, &g);
  ASSERT_TRUE(st.ok()) << st.error_message();
  const json h = HttpGet(absl::StrCat("/api/trials/", done_, "/metrics"));
  ASSERT_TRUE(h.is_object());
  EXPECT_EQ(h["trial_id"], done_);
  EXPECT_EQ(h["state"], "succeeded");
  // Every point, by name then step.
  std::map<std::string, std::vector<std::pair<int64_t, double>>> grpc_series;
  for (const pb::Metric& m : g.metrics()) {
    grpc_series[m.name()].push_back({m.step(), m.value()});
  }
  ASSERT_EQ(h["metrics"].size(), grpc_series.size());
  ASSERT_TRUE(grpc_series.count("loss"));
  for (const auto& [name, points] : grpc_series) {
    const json& s = h["metrics"][name];
    ASSERT_EQ(s["count"], points.size()) << name;
    for (size_t i = 0; i < points.size(); ++i) {
      EXPECT_EQ(s["steps"][i], points[i].first) << name;
      EXPECT_EQ(s["values"][i], points[i].second) << name;
    }
  }
  ASSERT_EQ(h["attempts"].size(), static_cast<size_t>(g.attempts_size()));
  for (int i = 0; i < g.attempts_size(); ++i) {
    EXPECT_EQ(h["attempts"][i]["attempt"], g.attempts(i).attempt());
    EXPECT_EQ(h["attempts"][i]["worker"], g.attempts(i).worker_id());
    EXPECT_EQ(h["attempts"][i]["exit_code"], g.attempts(i).exit_code());
    EXPECT_EQ(h["attempts"][i]["started_ms"], g.attempts(i).started_ms());
  }
}

// The write actions: gRPC and HTTP call the same Scheduler methods, so they
// count the same trials and refuse the same input with the same message, in
// the codes the one mapping gives (coordinator/api/http_status.h).
TEST_F(ViewsTest, GrpcAndHttpSubmitAndExtendAlike) {
  httplib::Client c("127.0.0.1", server_->http_port());
  const httplib::Headers bearer = {
      {"Authorization", absl::StrCat("Bearer ", server_->token())}};
  auto grpc_submit = [&](const std::string& yaml, bool dry_run,
                         pb::SubmitSweepResponse* resp) {
    pb::SubmitSweepRequest req;
    req.set_spec_yaml(yaml);
    req.set_dry_run(dry_run);
    grpc::ClientContext ctx;
    proto::PrepareClientContext(&ctx, server_->token(), absl::Seconds(10));
    return Stub()->SubmitSweep(&ctx, req, resp);
  };
  const std::string yaml =
      "name: w\nkind: sraven\ngrid:\n  M: [1, 2, 3]\nfixed: {steps: 10}\n"
      "seeds: [0, 1]\n";
  pb::SubmitSweepResponse g;
  ASSERT_TRUE(grpc_submit(yaml, true, &g).ok());
  auto h = c.Post("/api/sweeps", bearer,
                  json({{"spec_yaml", yaml}, {"dry_run", true}}).dump(),
                  "application/json");
  ASSERT_TRUE(h);
  ASSERT_EQ(h->status, 200) << h->body;
  EXPECT_EQ(json::parse(h->body)["new_trials"], g.new_trials());
  EXPECT_EQ(g.new_trials(), 6);
  // An invalid file: the same message; HTTP also lists the problems.
  const std::string bad = "name: w\nkind: sraven\ngrid:\n  M: [0]\nseeds: x\n";
  const grpc::Status gs = grpc_submit(bad, true, &g);
  ASSERT_EQ(gs.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  h = c.Post("/api/sweeps", bearer,
             json({{"spec_yaml", bad}, {"dry_run", true}}).dump(),
             "application/json");
  ASSERT_EQ(h->status, 400) << h->body;
  const json err = json::parse(h->body);
  EXPECT_EQ(err["error"], gs.error_message());
  EXPECT_EQ(err["problems"].size(), 2u) << h->body;
  // Extending: a value the axis refuses, the same way on both.
  ASSERT_TRUE(grpc_submit(yaml, false, &g).ok());
  pb::ExtendSweepRequest ext;
  ext.set_sweep_id("w");
  ext.set_axis("M");
  ext.add_values()->set_number_value(42);
  pb::ExtendSweepResponse er;
  grpc::ClientContext ctx;
  proto::PrepareClientContext(&ctx, server_->token(), absl::Seconds(10));
  const grpc::Status es = Stub()->ExtendSweep(&ctx, ext, &er);
  ASSERT_EQ(es.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  h = c.Post("/api/sweeps/w/extend", bearer, R"({"axis": "M", "values": [42]})",
             "application/json");
  ASSERT_EQ(h->status, 400) << h->body;
  EXPECT_EQ(json::parse(h->body)["error"], es.error_message());
  h = c.Post("/api/sweeps/w/extend", bearer, R"({"axis": "M", "values": [4]})",
             "application/json");
  ASSERT_EQ(h->status, 200) << h->body;
  EXPECT_EQ(json::parse(h->body)["new_trials"], 2);
}

}  // namespace
}  // namespace smoe::coordinator
