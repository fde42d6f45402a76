// Copyright 2026 SMoE Lab authors.
//
// `kind: command` sweeps in the scheduler: lease contents, unschedulable
// reason, re-submission (the sweep file itself: sweeps/command_spec_test.cc).
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "coordinator/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "store/in_memory_store.h"
#include "sweeps/test_sweeps.h"

namespace smoe::coordinator {
namespace {

using nlohmann::json;
using sweeps::test_sweeps::kToy;
using sweeps::test_sweeps::WithReplaced;
using ::testing::HasSubstr;

class CommandSchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SchedulerOptions opts;
    opts.lease_timeout = absl::Seconds(30);
    auto s = Scheduler::Create(&store_, &clock_, opts);
    ASSERT_TRUE(s.ok()) << s.status();
    sched_ = std::move(*s);
  }
  std::string AddWorker(std::vector<std::string> kinds) {
    WorkerInfo w;
    w.hostname = "host";
    w.slots = 8;
    w.kinds = std::move(kinds);
    auto r = sched_->Register(w);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->worker_id : "";
  }
  FakeClock clock_;
  store::InMemoryStore store_;
  std::unique_ptr<Scheduler> sched_;
};

TEST_F(CommandSchedulerTest, LeasesCarryTheCommandOnlyToCommandWorkers) {
  ASSERT_TRUE(sched_->SubmitSweep(kToy, false).ok());
  auto why = [&] { return sched_->GetSweep("toy")->unschedulable; };
  const std::string plain = AddWorker({});  // sraven only
  EXPECT_THAT(why(), HasSubstr("no connected worker runs kind command (1 "
                               "connected; a worker runs user programs only "
                               "when started with `smoe worker "
                               "--allow-command DIR`, DIR holding "
                               "/opt/toy/train_toy.py)"));
  auto none = sched_->Lease(plain, 8, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  const std::string cmd = AddWorker({"sraven", "command"});
  EXPECT_EQ(why(), "");
  auto grants = sched_->Lease(cmd, 8, 0);
  ASSERT_TRUE(grants.ok()) << grants.status();
  ASSERT_EQ(grants->size(), 8u);
  const LeaseGrant& g = grants->front();
  EXPECT_EQ(g.kind, "command");
  EXPECT_EQ(g.command.program, "/opt/toy/train_toy.py");
  EXPECT_EQ(g.command.args.size(), 5u);
  EXPECT_EQ(json::parse(g.defaults_json),
            json({{"steps", 20}, {"lr", 0.1}, {"opt", "sgd"}, {"bias", true}}));
  EXPECT_EQ(json::parse(g.params_json)["data"], "tiny");
}

TEST_F(CommandSchedulerTest, StoredSweepReloadsAndResubmissionKeepsTheCommand) {
  ASSERT_TRUE(sched_->SubmitSweep(kToy, false).ok());
  // A restart re-parses the stored sweep file.
  sched_.reset();
  auto s = Scheduler::Create(&store_, &clock_, SchedulerOptions{});
  ASSERT_TRUE(s.ok()) << s.status();
  sched_ = std::move(*s);
  auto view = sched_->GetSweep("toy");
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->spec.command.program, "/opt/toy/train_toy.py");
  EXPECT_EQ(view->spec.command_kind.params.size(), 6u);
  // Same file again: nothing new. More values: merged.
  auto same = sched_->SubmitSweep(kToy, false);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->new_trials, 0);
  auto more = sched_->SubmitSweep(
      WithReplaced(kToy, "seeds: [0, 1]", "seeds: [0, 1, 2]"), false);
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_EQ(more->new_trials, 4);
  auto ext = sched_->ExtendSweep("toy", "lr", {json(0.5)});
  ASSERT_TRUE(ext.ok()) << ext.status();
  EXPECT_EQ(*ext, 6);
  EXPECT_EQ(sched_->GetSweep("toy")->spec.command.program,
            "/opt/toy/train_toy.py");
  // Another program or declaration under the same name is refused.
  auto other = sched_->SubmitSweep(
      WithReplaced(kToy, "/opt/toy/train_toy.py", "/opt/toy/other.py"), false);
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(other.status().message(),
              HasSubstr("different command or params declaration"));
  auto redeclared =
      sched_->SubmitSweep(WithReplaced(kToy, "max: 100000", "max: 100"), false);
  EXPECT_EQ(redeclared.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace smoe::coordinator
