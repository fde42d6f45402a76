// Copyright 2026 SMoE Lab authors.
//
// `smoe workers` and `smoe workers drain` against an in-process coordinator
// (real gRPC on 127.0.0.1, SQLite in a temp dir); the workers are played
// through the scheduler (issue 31 item 7).
#include "cli/workers_cmd.h"

#include <sstream>

#include "absl/strings/str_cat.h"
#include "cli/local_coordinator_for_test.h"
#include "common/test_dir.h"
#include "coordinator/server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

class WorkersCmdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = smoe::testing::NewTestDir("workers_cmd_test_");
    auto server =
        coordinator::CoordinatorServer::Start(test_support::LocalServer(dir_));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    auto* s = server_->scheduler();
    ASSERT_TRUE(
        s->SubmitSweep("name: wk\nkind: sraven\ngrid:\n  M: [1, 2, 3]\n", false)
            .ok());
    coordinator::WorkerInfo a;
    a.worker_id = "gpu-a";
    a.hostname = "node-1";
    a.slots = 4;
    a.gpus = 0;
    a.labels = {{"zone", "a"}, {"pool", "spot"}};
    ASSERT_TRUE(s->Register(a).ok());
    coordinator::WorkerInfo b;
    b.worker_id = "cpu-b";
    b.hostname = "node-2";
    ASSERT_TRUE(s->Register(b).ok());
    auto lease = s->Lease("gpu-a", 4, 0);
    ASSERT_TRUE(lease.ok() && lease->size() == 3u);
    auto client = test_support::AdminClient(*server_, dir_);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
    auto vc = test_support::ViewerClient(*server_, client_->options(), dir_);
    ASSERT_TRUE(vc.ok()) << vc.status();
    viewer_client_ = *std::move(vc);
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  std::string dir_;
  std::unique_ptr<coordinator::CoordinatorServer> server_;
  std::unique_ptr<CoordinatorClient> client_, viewer_client_;
};

TEST_F(WorkersCmdTest, ListsWorkersWithUseLabelsAndTrialsThenDrainsOne) {
  std::ostringstream out;
  ASSERT_EQ(WorkersCmd(*viewer_client_, false, out), kExitOk);
  const std::string text = out.str();
  EXPECT_THAT(text, HasSubstr("WORKER  HOST    STATE  SLOTS  GPUS"));
  // cpu-b sorts first (by id); gpu-a runs the three trials: two shown.
  EXPECT_THAT(text, MatchesRegex("(.|\n)*cpu-b +node-2 +ready +0/1 +0/0 +"
                                 "sraven +- +[0-9]+s ago +- *\n(.|\n)*"));
  EXPECT_THAT(text,
              MatchesRegex("(.|\n)*gpu-a +node-1 +ready +3/4 +0/0 +sraven +"
                           "pool=spot,zone=a +[0-9]+s ago +wk/[0-9a-f]{16},"
                           "wk/[0-9a-f]{16},wk/[0-9a-f]{16} *\n(.|\n)*"));
  EXPECT_THAT(text, HasSubstr("2 workers: 2 ready, 0 draining, 0 stopped, 0 "
                              "lost; 3/5 slots in use\n"));

  // Draining needs the admin role: 77, and nothing changes.
  std::ostringstream refused;
  EXPECT_EQ(DrainWorkerCmd(*viewer_client_, "gpu-a", refused), kExitNoPerm);
  EXPECT_EQ(DrainWorkerCmd(*client_, "nobody", refused), kExitNoInput);
  EXPECT_EQ(refused.str(), "");
  std::ostringstream drained;
  ASSERT_EQ(DrainWorkerCmd(*client_, "gpu-a", drained), kExitOk);
  EXPECT_THAT(drained.str(), HasSubstr("worker gpu-a draining"));
  std::ostringstream after;
  ASSERT_EQ(WorkersCmd(*client_, false, after), kExitOk);
  EXPECT_THAT(after.str(),
              MatchesRegex("(.|\n)*gpu-a +node-1 +draining(.|\n)*"));
  EXPECT_THAT(after.str(), HasSubstr("1 ready, 1 draining"));
  EXPECT_THAT(after.str(), Not(HasSubstr("lost:")));
}

TEST(WorkersFormatTest, LostAndHiddenWorkersAreExplained) {
  smoe::v1::ListWorkersResponse resp;
  resp.set_as_of_ms(1'000'000);
  resp.set_lost_after_ms(30'000);
  resp.set_hidden(4);
  smoe::v1::WorkerStatus* w = resp.add_workers();
  w->set_worker_id("w1");
  w->set_state(smoe::v1::WORKER_STATE_LOST);
  w->set_slots(8);
  w->set_slots_used(2);
  w->set_last_heartbeat_ms(1'000'000 - 95'000);
  for (int i = 0; i < 5; ++i) w->add_trial_ids(absl::StrCat("s/", i));
  smoe::v1::WorkerStatus* x = resp.add_workers();
  x->set_worker_id("w2");
  x->set_state(smoe::v1::WORKER_STATE_STOPPED);
  smoe::v1::WorkerStatus* p = resp.add_workers();
  p->set_worker_id("w3");
  p->set_state(smoe::v1::WORKER_STATE_PAUSED);
  p->set_slots(2);
  p->set_paused("work dir not writable, leasing paused: disk full");
  std::ostringstream out;
  PrintWorkers(resp, out, /*max_trials=*/2);
  EXPECT_THAT(out.str(),
              MatchesRegex("(.|\n)*w1 +- +lost +2/8 +0/0 +- +- +"
                           "1m35s ago +s/0,s/1 \\+3 more *\n(.|\n)*"));
  EXPECT_THAT(
      out.str(),
      MatchesRegex(
          "(.|\n)*w2 +- +stopped +0/0 +0/0 +- +- +never +- *\n(.|\n)*"));
  EXPECT_THAT(out.str(), HasSubstr("never"));
  // Silent workers' slots are not counted as in use.
  EXPECT_THAT(out.str(),
              HasSubstr("3 workers: 0 ready, 1 paused, 0 draining, 1 stopped, "
                        "1 lost; 0/2 slots in use; 4 silent for more than a "
                        "day not shown (smoe workers --all)\n"));
  EXPECT_THAT(out.str(), MatchesRegex("(.|\n)*w3 +- +paused +0/2(.|\n)*"));
  EXPECT_THAT(out.str(), HasSubstr("paused: w3: work dir not writable, "
                                   "leasing paused: disk full\n"));
  EXPECT_THAT(out.str(), HasSubstr("lost: no heartbeat for more than 30s (the "
                                   "lease timeout); their trials are "
                                   "re-queued\n"));
  EXPECT_EQ(FormatHeartbeatAge(0, 5), "never");
  EXPECT_EQ(FormatHeartbeatAge(10'000, 5'000), "0s ago");
}

}  // namespace
}  // namespace smoe::cli
