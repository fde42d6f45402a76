// Copyright 2026 SMoE Lab authors.
//
// The real wiring end to end inside one process: an in-process WorkerGateway
// gRPC server (bearer-token checked), GrpcGatewayClient, PosixProcessLauncher
// running a /bin/sh "trainer", the real clock.
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/blob_file.h"
#include "common/clock.h"
#include "common/test_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/auth.h"
#include "proto/smoe.grpc.pb.h"
#include "worker/daemon/gateway_client.h"
#include "worker/daemon/worker_daemon.h"

namespace smoe::worker {
namespace {

using ::testing::HasSubstr;

constexpr char kToken[] = "smoe_test_token";

class TestGateway final : public v1::WorkerGateway::Service {
 public:
  grpc::Status Register(grpc::ServerContext* ctx,
                        const v1::RegisterRequest* req,
                        v1::RegisterResponse* resp) override {
    if (auto s = Auth(ctx); !s.ok()) return s;
    resp->set_worker_id(req->worker_id().empty() ? "w-grpc" : req->worker_id());
    resp->set_heartbeat_interval_ms(100);
    return grpc::Status::OK;
  }
  grpc::Status Lease(grpc::ServerContext* ctx, const v1::LeaseRequest* req,
                     v1::LeaseResponse* resp) override {
    if (auto s = Auth(ctx); !s.ok()) return s;
    absl::MutexLock lock(&mu);
    if (!leased && req->free_slots() > 0) {
      leased = true;
      v1::TrialLease* l = resp->add_leases();
      l->set_trial_id("sw/t1");
      l->set_sweep_id("sw");
      l->set_attempt(1);
      l->set_kind("sraven");
      l->set_params_json(R"({"M":2})");
    }
    return grpc::Status::OK;
  }
  grpc::Status Heartbeat(grpc::ServerContext* ctx, const v1::HeartbeatRequest*,
                         v1::HeartbeatResponse* resp) override {
    if (auto s = Auth(ctx); !s.ok()) return s;
    absl::MutexLock lock(&mu);
    resp->set_drain(completes > 0);  // done after one trial
    return grpc::Status::OK;
  }
  grpc::Status ReportMetrics(grpc::ServerContext* ctx,
                             const v1::ReportMetricsRequest* req,
                             v1::ReportMetricsResponse*) override {
    if (auto s = Auth(ctx); !s.ok()) return s;
    absl::MutexLock lock(&mu);
    metrics += req->metrics_size();
    return grpc::Status::OK;
  }
  grpc::Status Complete(grpc::ServerContext* ctx,
                        const v1::CompleteRequest* req,
                        v1::CompleteResponse*) override {
    if (auto s = Auth(ctx); !s.ok()) return s;
    absl::MutexLock lock(&mu);
    ++completes;
    last_results = std::map<std::string, double>(req->results().begin(),
                                                 req->results().end());
    return grpc::Status::OK;
  }
  grpc::Status Fail(grpc::ServerContext* ctx, const v1::FailRequest* req,
                    v1::FailResponse*) override {
    if (auto s = Auth(ctx); !s.ok()) return s;
    absl::MutexLock lock(&mu);
    fail_messages.push_back(req->message());
    return grpc::Status::OK;
  }

  grpc::Status PutCheckpoint(grpc::ServerContext* ctx,
                             grpc::ServerReader<v1::CheckpointChunk>* reader,
                             v1::PutCheckpointResponse*) override {
    if (auto s = Auth(ctx); !s.ok()) return s;
    v1::CheckpointChunk chunk;
    std::string data;
    bool header = true;
    while (reader->Read(&chunk)) {
      if (header) {
        header = false;
        continue;
      }
      data += chunk.data();
    }
    absl::MutexLock lock(&mu);
    uploaded = data;
    return grpc::Status::OK;
  }

  absl::Mutex mu;
  std::string uploaded;
  bool leased = false;
  int metrics = 0;
  int completes = 0;
  std::map<std::string, double> last_results;
  std::vector<std::string> fail_messages;

 private:
  grpc::Status Auth(grpc::ServerContext* ctx) {
    absl::Status s = proto::CheckBearerToken(ctx->client_metadata(), kToken);
    if (s.ok()) return grpc::Status::OK;
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        std::string(s.message()));
  }
};

class GrpcGatewayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                       &port_);
    b.RegisterService(&service_);
    server_ = b.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override { server_->Shutdown(); }

  std::unique_ptr<GatewayClient> Client(const std::string& token,
                                        double upload_bytes_per_s = 0) {
    GrpcGatewayOptions o;
    o.address = absl::StrCat("127.0.0.1:", port_);
    o.token = token;
    o.upload_bytes_per_s = upload_bytes_per_s;
    o.call_timeout = absl::Seconds(5);
    auto c = NewGrpcGatewayClient(o);
    EXPECT_TRUE(c.ok());
    return *std::move(c);
  }

  TestGateway service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(GrpcGatewayTest, TokenIsAttachedAndChecked) {
  auto good = Client(kToken);
  auto r = good->Register(v1::RegisterRequest());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->worker_id(), "w-grpc");
  auto bad = Client("smoe_wrong");
  EXPECT_EQ(bad->Register(v1::RegisterRequest()).status().code(),
            absl::StatusCode::kUnauthenticated);
}

TEST(GrpcGatewayClientTest, UnreachableCoordinatorFailsWithinTheDeadline) {
  GrpcGatewayOptions o;
  o.address = "127.0.0.1:1";  // nothing listens on port 1
  o.token = kToken;
  o.call_timeout = absl::Seconds(2);
  auto c = NewGrpcGatewayClient(o);
  ASSERT_TRUE(c.ok());
  const absl::Time start = absl::Now();
  auto s = (*c)->Lease(v1::LeaseRequest()).status();
  EXPECT_TRUE(s.code() == absl::StatusCode::kUnavailable ||
              s.code() == absl::StatusCode::kDeadlineExceeded)
      << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(GrpcGatewayClientTest, RejectsEmptyOptions) {
  GrpcGatewayOptions o;
  o.token = "";
  EXPECT_FALSE(NewGrpcGatewayClient(o).ok());
}

TEST(UploadPaceTest, DelayKeepsTheAverageUnderTheRateAndDeadlinesGrow) {
  EXPECT_EQ(UploadPaceDelay(1 << 20, absl::ZeroDuration(), 0),
            absl::ZeroDuration())
      << "0 = unlimited";
  EXPECT_EQ(UploadPaceDelay(0, absl::ZeroDuration(), 1e6),
            absl::ZeroDuration());
  // 2 MB at 1 MB/s is due at 2 s: after 0.5 s, wait 1.5 s; after 3 s, none.
  EXPECT_EQ(UploadPaceDelay(2'000'000, absl::Milliseconds(500), 1e6),
            absl::Milliseconds(1500));
  EXPECT_EQ(UploadPaceDelay(2'000'000, absl::Seconds(3), 1e6),
            absl::ZeroDuration());
  const int64_t gib = int64_t{1} << 30;
  EXPECT_EQ(TransferTimeout(absl::Seconds(10), gib), absl::Seconds(10 + 128));
  // Paced at 10 MB/s, a GiB takes 107.4 s more.
  EXPECT_NEAR(
      absl::ToDoubleSeconds(TransferTimeout(absl::Seconds(10), gib, 10e6)),
      10 + 128 + gib / 10e6, 1e-6);
}

// --checkpoint-upload-mbps: the real client paces a checkpoint over a real
// gRPC stream (the bytes arrive intact), and a newer checkpoint still
// cancels a paced upload at once.
TEST_F(GrpcGatewayTest, CheckpointUploadIsPacedAndStillCancellable) {
  const std::string path =
      ::testing::TempDir() + "/paced-" + std::to_string(getpid()) + ".ckpt";
  std::string data(3 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
  std::ofstream(path, std::ios::binary) << data;
  v1::CheckpointChunk header;
  header.set_trial_id("sw/t1");
  header.set_step(5);
  header.set_total_bytes(static_cast<int64_t>(data.size()));
  header.set_sha256(Sha256Hex(data));
  header.set_file_name("checkpoint.json");
  // 16 Mbit/s = 2 MB/s: 3 MiB in 1 MiB chunks waits for the first two to be
  // due, ~1.05 s in all; unlimited it does not wait.
  auto paced = Client(kToken, 2e6);
  const absl::Time start = absl::Now();
  auto r = paced->PutCheckpoint(header, path, nullptr);
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GE(took, absl::Milliseconds(1000)) << "paced to 2 MB/s";
  {
    absl::MutexLock lock(&service_.mu);
    EXPECT_TRUE(service_.uploaded == data) << "the bytes arrive intact";
  }
  // 3 MiB at 0.2 MB/s would take ~10 s; cancelled after 0.3 s, it returns
  // within the pacing's 50 ms slices.
  auto slow = Client(kToken, 2e5);
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    absl::SleepFor(absl::Milliseconds(300));
    cancel.store(true);
  });
  const absl::Time cstart = absl::Now();
  auto c = slow->PutCheckpoint(header, path, &cancel);
  const absl::Duration ctook = absl::Now() - cstart;
  canceller.join();
  EXPECT_TRUE(absl::IsCancelled(c.status())) << c.status();
  EXPECT_LT(ctook, absl::Seconds(5)) << "not the ~10 s of the paced upload";
  ::unlink(path.c_str());
}

TEST_F(GrpcGatewayTest, DaemonRunsATrialEndToEndAndDrains) {
  const std::string dir = smoe::testing::NewTestDir("grpc_daemon_");
  const std::string trainer = dir + "/trainer.sh";
  {
    std::ofstream out(trainer);
    out << "#!/bin/sh\n"
           "[ \"$1\" = run ] || exit 64\n"
           "grep -q '\"M\": 2' \"$3\" || exit 64\n"
           "echo '{\"event\":\"progress\",\"step\":1,\"total\":1}'\n"
           "echo '{\"event\":\"metric\",\"step\":1,\"name\":\"train/loss\","
           "\"value\":0.5}'\n"
           "echo '{\"event\":\"result\",\"metrics\":{\"test_acc\":0.875}}'\n";
  }
  chmod(trainer.c_str(), 0755);
  auto client = Client(kToken);
  launch::PosixProcessLauncher launcher;
  WorkerDaemonOptions opt;
  opt.hostname = "h";
  opt.trainer_path = trainer;
  opt.work_dir = dir + "/work";
  opt.tick = absl::Milliseconds(10);
  opt.lease_interval = absl::Milliseconds(50);
  auto daemon =
      WorkerDaemon::Create(client.get(), &launcher, Clock::Real(), opt);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  // A watchdog: the daemon must be done well within this.
  std::atomic<bool> finished{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 300 && !finished.load(); ++i) {
      absl::SleepFor(absl::Milliseconds(100));
    }
    if (!finished.load()) (*daemon)->RequestDrain();
  });
  absl::Status s = (*daemon)->Run();
  finished.store(true);
  watchdog.join();
  ASSERT_TRUE(s.ok()) << s;
  absl::MutexLock lock(&service_.mu);
  EXPECT_TRUE(service_.fail_messages.empty()) << service_.fail_messages.front();
  ASSERT_EQ(service_.completes, 1);
  EXPECT_DOUBLE_EQ(service_.last_results.at("test_acc"), 0.875);
  EXPECT_EQ(service_.metrics, 1);
  EXPECT_EQ((*daemon)->pending_reports(), 0u);
}

}  // namespace
}  // namespace smoe::worker
