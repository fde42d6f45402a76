// Copyright 2026 SMoE Lab authors.
//
// Roles across processes (ctest label `faults`; docs/roles.md, issue 16 item
// 9 and issue 18 item 4): a real `smoe coordinator`, tokens made by `smoe
// token create` while it runs, workers with a worker-role token, and the
// CLI and raw gRPC calls with each role.
#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/smoe.grpc.pb.h"
#include "tests/e2e/cluster.h"

namespace smoe::e2e {
namespace {

namespace pb = smoe::v1;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Plan(int steps, int step_ms) {
  return absl::StrCat(R"({"default": {"mode": "succeed", "steps": )", steps,
                      R"(, "step_ms": )", step_ms, R"(}, "rules": []})");
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `smoe token create --role ROLE --name NAME` against the cluster's data
// directory; returns the printed token ("" on failure).
std::string CreateToken(Cluster& c, const std::string& role,
                        const std::string& name) {
  auto [rc, out] =
      RunCommand({c.smoe(), "token", "create", "--role", role, "--name", name,
                  "--data-dir", c.dir() + "/coord"},
                 {}, absl::Seconds(30));
  EXPECT_EQ(rc, 0) << out;
  std::smatch m;
  static const std::regex kToken("(smoe_[0-9a-f]{64})");
  if (!std::regex_search(out, m, kToken)) return "";
  return m[1];
}

grpc::Status ListSweeps(Cluster& c, const std::string& token) {
  auto stub = pb::Coordinator::NewStub(
      grpc::CreateChannel(c.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer " + token);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  pb::ListSweepsRequest req;
  pb::ListSweepsResponse resp;
  return stub->ListSweeps(&ctx, req, &resp);
}

grpc::Status CancelSweep(Cluster& c, const std::string& token,
                         const std::string& id) {
  auto stub = pb::Coordinator::NewStub(
      grpc::CreateChannel(c.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer " + token);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  pb::CancelSweepRequest req;
  req.set_sweep_id(id);
  pb::CancelSweepResponse resp;
  return stub->CancelSweep(&ctx, req, &resp);
}

// Issue 36 item 4: any worker-role token could Register under another
// worker's id and Complete its running attempt (a forged result was stored
// and the trial marked succeeded). A worker id now belongs to the token it
// registered with; another worker token acting for it is refused on every
// call, and the attempt's real worker completes it.
TEST(RolesTest, WorkerTokensActOnlyForTheirOwnWorker) {
  Cluster c("workerbind", Plan(2, 10));
  c.StartCoordinator();
  const std::string ta = CreateToken(c, "worker", "worker-a");
  const std::string tb = CreateToken(c, "worker", "worker-b");
  ASSERT_FALSE(ta.empty());
  ASSERT_FALSE(tb.empty());
  auto stub = pb::WorkerGateway::NewStub(
      grpc::CreateChannel(c.address(), grpc::InsecureChannelCredentials()));
  auto call = [&](const std::string& token, auto method, const auto& req,
                  auto* resp) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer " + token);
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(20));
    return ((*stub).*method)(&ctx, req, resp);
  };
  pb::RegisterRequest reg;
  reg.set_worker_id("wa");
  reg.set_hostname("host-a");
  reg.set_slots(1);
  reg.add_kinds("sraven");
  pb::RegisterResponse reg_resp;
  ASSERT_TRUE(
      call(ta, &pb::WorkerGateway::Stub::Register, reg, &reg_resp).ok());
  const std::string file = c.WriteFile(
      "s.yaml",
      "name: bind\nkind: sraven\ngrid:\n  M: [1]\nfixed: {steps: 10}\n");
  auto [rc, out] = c.Smoe({"sweep", "submit", file});
  ASSERT_EQ(rc, 0) << out;
  pb::LeaseRequest lease;
  lease.set_worker_id("wa");
  lease.set_free_slots(1);
  pb::LeaseResponse leased;
  for (int i = 0; i < 50 && leased.leases_size() == 0; ++i) {
    ASSERT_TRUE(call(ta, &pb::WorkerGateway::Stub::Lease, lease, &leased).ok());
    if (leased.leases_size() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ASSERT_EQ(leased.leases_size(), 1);
  const pb::TrialLease& l = leased.leases(0);

  // Token B: registering as wa, heartbeating, completing wa's attempt.
  pb::RegisterResponse r2;
  grpc::Status st = call(tb, &pb::WorkerGateway::Stub::Register, reg, &r2);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr("belongs to another token"));
  pb::HeartbeatRequest hb;
  hb.set_worker_id("wa");
  pb::HeartbeatResponse hb_resp;
  EXPECT_EQ(
      call(tb, &pb::WorkerGateway::Stub::Heartbeat, hb, &hb_resp).error_code(),
      grpc::StatusCode::PERMISSION_DENIED);
  pb::CompleteRequest forged;
  forged.set_worker_id("wa");
  forged.set_trial_id(l.trial_id());
  forged.set_attempt(l.attempt());
  (*forged.mutable_results())["test_acc"] = 1.0;
  pb::CompleteResponse done;
  EXPECT_EQ(
      call(tb, &pb::WorkerGateway::Stub::Complete, forged, &done).error_code(),
      grpc::StatusCode::PERMISSION_DENIED);
  pb::FailRequest fail;
  fail.set_worker_id("wa");
  fail.set_trial_id(l.trial_id());
  fail.set_attempt(l.attempt());
  fail.set_reason(pb::FailRequest::REASON_ERROR);
  pb::FailResponse failed;
  EXPECT_EQ(
      call(tb, &pb::WorkerGateway::Stub::Fail, fail, &failed).error_code(),
      grpc::StatusCode::PERMISSION_DENIED);
  auto s = c.GetSweep("bind");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->trials(0).state(), pb::TRIAL_STATE_RUNNING);

  // Token B keeps its own worker; token A completes its attempt.
  pb::RegisterRequest reg_b = reg;
  reg_b.set_worker_id("wb");
  EXPECT_TRUE(call(tb, &pb::WorkerGateway::Stub::Register, reg_b, &r2).ok());
  (*forged.mutable_results())["test_acc"] = 0.25;
  EXPECT_TRUE(call(ta, &pb::WorkerGateway::Stub::Complete, forged, &done).ok());
  s = c.GetSweep("bind");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->trials(0).state(), pb::TRIAL_STATE_SUCCEEDED);
  EXPECT_EQ(s->trials(0).results().at("test_acc"), 0.25);
}

// A worker with a worker-role token runs a sweep to the end; that token
// cannot submit, cancel or read sweeps; a viewer reads but cannot submit or
// cancel, and cannot run a worker; the tokens file holds no token; a revoked
// token is refused at its next call.
TEST(RolesTest, EachRoleDoesItsJobAndNothingElse) {
  Cluster c("roles", Plan(3, 20));
  c.StartCoordinator();
  const std::string worker = CreateToken(c, "worker", "w1");
  const std::string viewer = CreateToken(c, "viewer", "v1");
  ASSERT_FALSE(worker.empty());
  ASSERT_FALSE(viewer.empty());
  const std::string tokens_file = ReadAll(c.dir() + "/coord/tokens");
  EXPECT_THAT(tokens_file, Not(HasSubstr(worker)));
  EXPECT_THAT(tokens_file, Not(HasSubstr(viewer)));
  EXPECT_THAT(tokens_file, HasSubstr("w1\tworker\t"));

  // The admin token (the data directory's token file) submits.
  const std::string sweep = c.WriteFile(
      "s.yaml",
      "name: roles\nkind: sraven\ngrid:\n  M: [1, 2]\nfixed: {steps: 3}\n");
  ASSERT_EQ(c.Smoe({"sweep", "submit", sweep}).first, 0);

  // Worker token: no submit, no read, no cancel (PERMISSION_DENIED, exit 77,
  // naming the role needed).
  auto [rc, out] = c.Smoe({"sweep", "submit", sweep}, {{"SMOE_TOKEN", worker}});
  EXPECT_EQ(rc, 77) << out;
  EXPECT_THAT(out, HasSubstr("needs role 'admin'"));
  grpc::Status st = ListSweeps(c, worker);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(st.error_message(), HasSubstr("needs role 'viewer'"));
  EXPECT_EQ(CancelSweep(c, worker, "roles").error_code(),
            grpc::StatusCode::PERMISSION_DENIED);

  // Viewer: reads, cannot submit or cancel, cannot be a worker.
  EXPECT_TRUE(ListSweeps(c, viewer).ok());
  std::tie(rc, out) = c.Smoe({"sweep", "ls"}, {{"SMOE_TOKEN", viewer}});
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("roles"));
  st = CancelSweep(c, viewer, "roles");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(st.error_message(), HasSubstr("needs role 'admin'"));
  const std::string vdir = c.dir() + "/worker-viewer";
  std::filesystem::create_directories(vdir);
  std::tie(rc, out) = RunCommand(
      {c.smoe(), "worker", "--coordinator", c.address(), "--work-dir", vdir,
       "--trainer", std::string(SMOE_BIN_DIR) + "/smoe-fake-trainer"},
      {{"SMOE_TOKEN", viewer}}, absl::Seconds(60));
  EXPECT_EQ(rc, 77) << out;
  EXPECT_THAT(out, HasSubstr("needs role 'worker'"));

  // A worker with the worker token runs the sweep to the end.
  c.StartWorker(0, 2, "", {}, {{"SMOE_TOKEN", worker}});
  EXPECT_TRUE(c.WaitFor(
      "roles",
      [](const pb::GetSweepResponse& r) {
        return r.sweep().counts().succeeded() == 2;
      },
      absl::Seconds(90)));

  // Revoked: refused at the next call, with no restart.
  std::tie(rc, out) = RunCommand(
      {c.smoe(), "token", "revoke", "v1", "--data-dir", c.dir() + "/coord"}, {},
      absl::Seconds(30));
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(ListSweeps(c, viewer).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  std::tie(rc, out) =
      RunCommand({c.smoe(), "token", "list", "--data-dir", c.dir() + "/coord"},
                 {}, absl::Seconds(30));
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("w1"));
  EXPECT_THAT(out, Not(HasSubstr("v1 ")));
  EXPECT_THAT(out, Not(HasSubstr(worker)));
  // Secrets never reach the log.
  const std::string log = ReadAll(c.dir() + "/coordinator.log");
  EXPECT_THAT(log, Not(HasSubstr(worker)));
  EXPECT_THAT(log, Not(HasSubstr(viewer)));
}

}  // namespace
}  // namespace smoe::e2e
