// Copyright 2026 SMoE Lab authors.
//
// `smoe logs` against an in-process coordinator (real gRPC on 127.0.0.1,
// SQLite in a temp dir); the worker's side is played through the scheduler
// and the coordinator's TrialLogs.
#include "cli/logs_cmd.h"

#include <unistd.h>

#include <future>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cli/local_coordinator_for_test.h"
#include "common/test_dir.h"
#include "coordinator/server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::cli {
namespace {

using ::testing::HasSubstr;

class LogsCmdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = smoe::testing::NewTestDir("logs_cmd_test_");
    auto server =
        coordinator::CoordinatorServer::Start(test_support::LocalServer(dir_));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    auto* s = server_->scheduler();
    ASSERT_TRUE(
        s->SubmitSweep("name: lg\nkind: sraven\ngrid:\n  M: [1]\n", false)
            .ok());
    auto reg = s->Register({"", "host", 1, 0, 1, {}, {}});
    ASSERT_TRUE(reg.ok()) << reg.status();
    worker_ = reg->worker_id;
    auto lease = s->Lease(worker_, 1, 0);
    ASSERT_TRUE(lease.ok() && lease->size() == 1u);
    trial_ = (*lease)[0].trial_id;
    auto client = test_support::AdminClient(*server_, dir_);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  std::string dir_, worker_, trial_;
  std::unique_ptr<coordinator::CoordinatorServer> server_;
  std::unique_ptr<CoordinatorClient> client_;
};

TEST_F(LogsCmdTest, RunningAttemptPrintsTheLiveTailThenTheStoredLog) {
  coordinator::TrialLogs* logs = server_->trial_logs();
  logs->PutLive(trial_, 1, "first\nsecond\n", 13);
  LogsFlags f;
  f.fresh_wait = absl::ZeroDuration();  // no worker here to send a fresh one
  std::ostringstream out;
  EXPECT_EQ(LogsCmd(*client_, trial_, f, out), kExitOk);
  EXPECT_EQ(out.str(), "first\nsecond\n");
  EXPECT_TRUE(logs->Wanted(trial_, 1)) << "asking makes the worker send";

  // --follow prints each new byte once, across a cut tail, until the end.
  f.follow = true;
  f.poll = absl::Milliseconds(50);
  std::ostringstream followed;
  auto done = std::async(std::launch::async, [&] {
    return LogsCmd(*client_, trial_, f, followed);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // The worker's tail moved on: "first\n" is no longer in it.
  logs->PutLive(trial_, 1, "second\nthird\n", 19);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(logs->PutFinal(trial_, 1, "second\nthird\nfourth\n", 26).ok());
  ASSERT_TRUE(
      server_->scheduler()
          ->Fail(worker_, trial_, 1, coordinator::FailReason::kError, 1, "boom")
          .ok());
  EXPECT_EQ(done.get(), kExitOk);
  EXPECT_EQ(followed.str(), "first\nsecond\nthird\nfourth\n");

  std::ostringstream stored;
  f.follow = false;
  f.attempt = 1;
  EXPECT_EQ(LogsCmd(*client_, trial_, f, stored), kExitOk);
  EXPECT_EQ(stored.str(), "second\nthird\nfourth\n");
}

TEST_F(LogsCmdTest, BadArgumentsExitWithTheDocumentedCodes) {
  LogsFlags f;
  std::ostringstream out;
  f.attempt = -1;
  EXPECT_EQ(LogsCmd(*client_, trial_, f, out), kExitUsage);
  f.attempt = 9;
  EXPECT_EQ(LogsCmd(*client_, trial_, f, out), kExitNoInput);
  f.attempt = 0;
  EXPECT_EQ(LogsCmd(*client_, "lg/0123456789abcdef", f, out), kExitNoInput);
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace smoe::cli
