// Copyright 2026 SMoE Lab authors.
//
// Fault-injection tests (ctest label `faults`, issue 16): each test starts a
// real coordinator process on 127.0.0.1 and reproduces one way the issue
// broke it, asserting the fixed behaviour.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/smoe.grpc.pb.h"
#include "tests/e2e/cluster.h"

namespace smoe::e2e {
namespace {

namespace fs = std::filesystem;
namespace pb = smoe::v1;
using ::testing::HasSubstr;

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

std::string Token(Cluster& c) {
  std::string t = ReadAll(c.dir() + "/coord/token");
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

// A /proc/<pid>/status field in KiB (VmRSS, VmHWM), or -1.
int64_t ProcStatusKib(pid_t pid, const std::string& field) {
  std::istringstream in(ReadAll(absl::StrCat("/proc/", pid, "/status")));
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, field + ":")) {
      std::vector<std::string> parts =
          absl::StrSplit(line, ' ', absl::SkipEmpty());
      int64_t kib = -1;
      if (parts.size() >= 2 && absl::SimpleAtoi(parts[1], &kib)) return kib;
    }
  }
  return -1;
}

std::unique_ptr<grpc::ClientContext> Context(const std::string& token,
                                             int timeout_s = 30) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (!token.empty()) ctx->AddMetadata("authorization", "Bearer " + token);
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::seconds(timeout_s));
  return ctx;
}

// grpc.health.v1.Health/Check without a token: 1 = SERVING, 2 = NOT_SERVING,
// -1 when the call fails.
int HealthStatus(const std::string& address) {
  auto channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub generic(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Slice empty("");
  grpc::ByteBuffer request(&empty, 1), response;
  std::promise<grpc::Status> done;
  generic.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(),
                    &request, &response,
                    [&done](grpc::Status s) { done.set_value(s); });
  if (!done.get_future().get().ok()) return -1;
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return -1;
  std::string bytes;
  for (const auto& sl : slices) {
    bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
  }
  // HealthCheckResponse{status = N}: field 1, varint.
  if (bytes.size() == 2 && bytes[0] == '\x08') return bytes[1];
  if (bytes.empty()) return 0;  // UNKNOWN
  return -1;
}

// Issue 16 item 4: 8 parallel unauthenticated 24 MiB calls. Before the fix
// the coordinator read and parsed each whole message before checking the
// token (its peak RSS grew by more than 8 x 24 MiB); now they are refused
// when their headers arrive and the peak grows by little.
TEST(FaultsTest, UnauthenticatedCallsAreRefusedBeforeTheirBodyIsRead) {
  Cluster c("preauth", Plan(2, 10));
  c.StartCoordinator();
  ASSERT_EQ(c.Smoe({"sweep", "ls"}).first, 0);
  const pid_t pid = c.coordinator()->pid();
  const int64_t before_kib = ProcStatusKib(pid, "VmRSS");
  ASSERT_GT(before_kib, 0);
  constexpr int kCalls = 8;
  const std::string big(24 << 20, 'x');
  std::vector<std::thread> threads;
  std::vector<grpc::StatusCode> codes(kCalls, grpc::StatusCode::OK);
  for (int i = 0; i < kCalls; ++i) {
    threads.emplace_back([&, i] {
      // One channel per call: separate connections, as separate attackers.
      grpc::ChannelArguments args;
      args.SetInt("grpc.channel_id", i);
      auto channel = grpc::CreateCustomChannel(
          c.address(), grpc::InsecureChannelCredentials(), args);
      auto stub = pb::WorkerGateway::NewStub(channel);
      pb::ReportMetricsRequest req;
      req.set_worker_id("w");
      req.set_trial_id("t");
      req.add_metrics()->set_name(big);
      pb::ReportMetricsResponse resp;
      auto ctx = Context(i % 2 == 0 ? "" : "smoe_wrong_token_0123456789abcdef");
      codes[i] = stub->ReportMetrics(ctx.get(), req, &resp).error_code();
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kCalls; ++i) {
    EXPECT_EQ(codes[i], grpc::StatusCode::UNAUTHENTICATED) << "call " << i;
  }
  const int64_t peak_kib = ProcStatusKib(pid, "VmHWM");
  EXPECT_LT(peak_kib - before_kib, 64 << 10)
      << "peak RSS grew by " << (peak_kib - before_kib) / 1024
      << " MiB for refused calls";
  // The refusals are logged, rate-limited: one line, not eight.
  const std::string log = ReadAll(c.dir() + "/coordinator.log");
  size_t lines = 0;
  for (size_t p = log.find("refused an unauthenticated gRPC call");
       p != std::string::npos;
       p = log.find("refused an unauthenticated gRPC call", p + 1)) {
    ++lines;
  }
  EXPECT_GE(lines, 1u) << log;
  EXPECT_LE(lines, 2u) << log;
  // The health service stays public.
  EXPECT_EQ(HealthStatus(c.address()), 1);
}

// Issue 16 item 4: per-method limits. An authenticated Register, Heartbeat or
// Lease carrying a 1 MiB field is refused naming the method and the limit;
// ReportMetrics still takes a large batch.
TEST(FaultsTest, SmallMethodsRefuseLargeRequests) {
  Cluster c("sizes", Plan(2, 10));
  c.StartCoordinator();
  const std::string token = Token(c);
  auto stub = pb::WorkerGateway::NewStub(
      grpc::CreateChannel(c.address(), grpc::InsecureChannelCredentials()));
  const std::string mib(1 << 20, 'h');
  {
    pb::RegisterRequest req;
    req.set_worker_id("w-big");
    req.set_hostname(mib);
    req.set_slots(1);
    pb::RegisterResponse resp;
    grpc::Status s = stub->Register(Context(token).get(), req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(s.error_message(), HasSubstr("/smoe.v1.WorkerGateway/Register"));
    EXPECT_THAT(s.error_message(), HasSubstr("at most 65536"));
  }
  {
    pb::HeartbeatRequest req;
    req.set_worker_id(mib);
    pb::HeartbeatResponse resp;
    EXPECT_EQ(stub->Heartbeat(Context(token).get(), req, &resp).error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  {
    pb::LeaseRequest req;
    req.set_worker_id(mib);
    pb::LeaseResponse resp;
    EXPECT_EQ(stub->Lease(Context(token).get(), req, &resp).error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  {
    // 2 MiB of metrics for an unknown worker: past the size check, refused
    // by the scheduler (not by size).
    pb::ReportMetricsRequest req;
    req.set_worker_id("nobody");
    req.set_trial_id("nope");
    for (int i = 0; i < 40000; ++i) {
      pb::Metric* m = req.add_metrics();
      m->set_step(i);
      m->set_name("train/loss_with_a_long_name");
      m->set_value(1.0);
    }
    ASSERT_GT(req.ByteSizeLong(), size_t{1} << 20);
    pb::ReportMetricsResponse resp;
    grpc::Status s = stub->ReportMetrics(Context(token).get(), req, &resp);
    EXPECT_NE(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << s.error_message();
  }
}

}  // namespace
}  // namespace smoe::e2e
