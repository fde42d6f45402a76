// Copyright 2026 SMoE Lab authors.
//
// RunLocalTrial with several ranks (a launch::RankGroup, whose own tests are
// worker/launch/rank_group_test.cc), against shell-script stand-ins for
// smoe-trainer: the environment each rank gets, whose events count, rank logs,
// the stale rendezvous, signal forwarding, stopping the other ranks when one
// ends (SIGTERM, then SIGKILL) and which exit code decides. Every script waits
// for the files it needs in bounded loops, so a broken RunLocalTrial fails
// the test instead of hanging it.
#include "cli/local_trial.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/train_cmd.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/launch/rank_group.h"

namespace smoe::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

// Shell helper for the scripts: waits up to ~20 s for file $1.
constexpr char kWaitFor[] =
    "wait_for() { i=0; while [ ! -e \"$1\" ] && [ $i -lt 200 ]; do "
    "sleep 0.1; i=$((i+1)); done; }\n"
    // Sleeps ~20 s in short steps, so a trapped signal is handled at once.
    "nap() { i=0; while [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; }\n";

class LocalTrialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "local_trial_" + std::to_string(::getpid()) +
           "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ + "/work");
    trial_.command = "smoe test";
    trial_.kind = "sraven";
    trial_.workdir = dir_ + "/work";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A stand-in for smoe-trainer: `body` runs with $w = the work dir and $r =
  // the rank (0 without SMOE_RANK).
  void Script(const std::string& body) {
    const std::string path = dir_ + "/fake-trainer.sh";
    std::ofstream(path) << "#!/bin/sh\nw=\"$5\"\nr=\"${SMOE_RANK:-0}\"\n"
                        << kWaitFor << body;
    ::chmod(path.c_str(), 0755);
    trial_.trainer = path;
  }

  // Runs the trial; returns the exit code and keeps the events seen.
  int Run() {
    events_.clear();
    return RunLocalTrial(trial_, [&](const nlohmann::json& ev) {
      events_.push_back(ev);
      return std::string();
    });
  }

  std::string w() const { return trial_.workdir; }

  std::string dir_;
  LocalTrial trial_;
  std::vector<nlohmann::json> events_;
};

TEST_F(LocalTrialTest, EachRankGetsItsEnvironmentAndOnlyRankZeroReports) {
  Script(
      "test -e \"$SMOE_RENDEZVOUS\" && stale=yes || stale=no\n"
      "echo \"rank=$SMOE_RANK world=$SMOE_WORLD_SIZE rdv=$SMOE_RENDEZVOUS "
      "cvd=${CUDA_VISIBLE_DEVICES-unset} stale=$stale\" > \"$w/env$r\"\n"
      "echo \"stderr of rank $r\" >&2\n"
      "echo '{\"event\":\"progress\",\"step\":1,\"total\":2,\"rank\":'$r'}'\n"
      "echo 'not json'\n"
      // The last event without a newline still counts.
      "printf '{\"event\":\"result\",\"rank\":%s}' $r\n");
  std::ofstream(w() + "/" + launch::kRendezvousFile) << "stale keys";
  trial_.ep_size = 2;
  trial_.gpu_ids = {4, 5, 6, 7};
  ::testing::internal::CaptureStderr();
  const int rc = Run();
  const std::string ours = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(rc, 0);
  // Rank 0's stderr comes through ours (printed above the progress line);
  // the other ranks' goes to their logs.
  EXPECT_THAT(ours, HasSubstr("stderr of rank 0\n"));
  EXPECT_THAT(ours, Not(HasSubstr("stderr of rank 1")));
  ASSERT_EQ(events_.size(), 2u);
  EXPECT_EQ(events_[0]["event"], "progress");
  EXPECT_EQ(events_[0]["rank"], 0);
  EXPECT_EQ(events_[1]["event"], "result");
  EXPECT_EQ(events_[1]["rank"], 0);
  const std::string rdv = w() + "/" + launch::kRendezvousFile;
  EXPECT_EQ(ReadAll(w() + "/env0"),
            "rank=0 world=2 rdv=" + rdv + " cvd=4,5 stale=no\n");
  EXPECT_EQ(ReadAll(w() + "/env1"),
            "rank=1 world=2 rdv=" + rdv + " cvd=6,7 stale=no\n");
  const std::string log1 = ReadAll(w() + "/rank1.log");
  EXPECT_THAT(log1, HasSubstr("stderr of rank 1"));
  EXPECT_THAT(log1, HasSubstr("\"rank\":1"));  // its stdout goes there too
  EXPECT_THAT(log1, Not(HasSubstr("rank 0")));
  EXPECT_FALSE(Exists(w() + "/rank0.log"));  // rank 0's stderr is ours
  EXPECT_FALSE(Exists(rdv));                 // removed after the run
  const auto trial = nlohmann::json::parse(ReadAll(w() + "/TRIAL.json"));
  EXPECT_EQ(trial["kind"], "sraven");
}

TEST_F(LocalTrialTest, OneRankHasNoRankVariablesAndInheritsDevices) {
  Script(
      "echo \"rank=${SMOE_RANK-unset} world=${SMOE_WORLD_SIZE-unset} "
      "rdv=${SMOE_RENDEZVOUS-unset} cvd=$CUDA_VISIBLE_DEVICES\" > \"$w/env\"\n"
      "echo '{\"event\":\"result\"}'\n");
  ::setenv("CUDA_VISIBLE_DEVICES", "9", 1);
  ASSERT_EQ(Run(), 0);
  EXPECT_EQ(ReadAll(w() + "/env"), "rank=unset world=unset rdv=unset cvd=9\n");
  EXPECT_THAT(events_, ElementsAre(nlohmann::json{{"event", "result"}}));
  // Two ranks, no --gpu-ids: both inherit it.
  trial_.ep_size = 2;
  Script("echo \"$CUDA_VISIBLE_DEVICES\" > \"$w/cvd$r\"\n");
  ASSERT_EQ(Run(), 0);
  EXPECT_EQ(ReadAll(w() + "/cvd0"), "9\n");
  EXPECT_EQ(ReadAll(w() + "/cvd1"), "9\n");
  // Fewer ids than ranks: every rank sees them all.
  trial_.gpu_ids = {1};
  ASSERT_EQ(Run(), 0);
  EXPECT_EQ(ReadAll(w() + "/cvd0"), "1\n");
  EXPECT_EQ(ReadAll(w() + "/cvd1"), "1\n");
  ::unsetenv("CUDA_VISIBLE_DEVICES");
}

TEST_F(LocalTrialTest, AFailingRankStopsTheOthers) {
  // Rank 1 fails once rank 0 is ready; rank 0 would nap ~20 s but is told to
  // stop (SIGTERM -> 75, like the trainer).
  Script(
      "if [ $r = 0 ]; then\n"
      "  trap 'touch \"$w/term0\"; exit 75' TERM\n"
      "  touch \"$w/ready0\"; nap; touch \"$w/survived0\"; exit 0\n"
      "fi\n"
      "wait_for \"$w/ready0\"; exit 3\n");
  trial_.ep_size = 2;
  EXPECT_EQ(Run(), 75);  // rank 0's code decides when it failed
  EXPECT_TRUE(Exists(w() + "/term0"));
  EXPECT_FALSE(Exists(w() + "/survived0"));
}

TEST_F(LocalTrialTest, AnotherRanksFailureDecidesWhenRankZeroSucceeded) {
  // Rank 0 finishes; rank 1 does not, and when the SIGTERM comes after the
  // grace, it fails.
  Script(
      "if [ $r = 0 ]; then wait_for \"$w/ready1\"; "
      "echo '{\"event\":\"result\"}'; exit 0; fi\n"
      "trap 'exit 5' TERM\n"
      "touch \"$w/ready1\"; nap; exit 0\n");
  trial_.ep_size = 2;
  trial_.term_grace_s = 0.3;
  EXPECT_EQ(Run(), 5);
  EXPECT_EQ(events_.size(), 1u);
}

TEST_F(LocalTrialTest, RanksFinishingAfterASuccessfulRankZeroAreNotStopped) {
  // Rank 1 is still busy for a moment after rank 0 succeeded: no SIGTERM.
  Script(
      "trap 'touch \"$w/term$r\"; exit 75' TERM\n"
      "if [ $r = 0 ]; then wait_for \"$w/ready1\"; exit 0; fi\n"
      "touch \"$w/ready1\"; sleep 0.5; exit 0\n");
  trial_.ep_size = 2;
  EXPECT_EQ(Run(), 0);
  EXPECT_FALSE(Exists(w() + "/term1"));
}

TEST_F(LocalTrialTest, ARankIgnoringSigtermIsKilledAfterTheGrace) {
  Script(
      "if [ $r = 0 ]; then wait_for \"$w/ready1\"; exit 2; fi\n"
      "trap '' TERM\n"
      "touch \"$w/ready1\"; nap; touch \"$w/survived1\"\n");
  trial_.ep_size = 2;
  trial_.term_grace_s = 0.3;
  EXPECT_EQ(Run(), 2);
  EXPECT_FALSE(Exists(w() + "/survived1"));
}

TEST_F(LocalTrialTest, SigtermToTheCliReachesEveryRank) {
  // Once both ranks have their handlers, rank 0 sends SIGTERM to its parent
  // (this test process, inside RunLocalTrial), which must forward it.
  Script(
      "trap 'touch \"$w/term$r\"; exit 75' TERM\n"
      "touch \"$w/ready$r\"\n"
      "if [ $r = 0 ]; then wait_for \"$w/ready1\"; kill -TERM $PPID; fi\n"
      "nap; touch \"$w/survived$r\"\n");
  trial_.ep_size = 2;
  EXPECT_EQ(Run(), 75);
  EXPECT_TRUE(Exists(w() + "/term0"));
  EXPECT_TRUE(Exists(w() + "/term1"));
  EXPECT_FALSE(Exists(w() + "/survived0"));
  EXPECT_FALSE(Exists(w() + "/survived1"));
}

TEST_F(LocalTrialTest, BadEpSizeAndMissingTrainer) {
  Script("exit 0\n");
  trial_.ep_size = 0;
  testing::internal::CaptureStderr();
  EXPECT_EQ(Run(), 64);
  EXPECT_THAT(testing::internal::GetCapturedStderr(),
              HasSubstr("--ep-size 0: must be >= 1"));
  trial_.ep_size = 2;
  trial_.trainer = dir_ + "/missing";
  EXPECT_EQ(Run(), 69);
}

// Issue 31 item 1: `smoe train` refuses a warmup that does not end before
// the run, naming both flags, before it starts the trainer.
TEST_F(LocalTrialTest, TrainRefusesWarmupNotSmallerThanSteps) {
  TrainOptions o;
  o.params = {{"steps", 500}, {"warmup", 1000}};
  o.trainer = dir_ + "/missing";  // never started
  o.workdir = dir_ + "/train";
  std::ostringstream out;
  testing::internal::CaptureStderr();
  EXPECT_EQ(RunTrainCommand(o, out), 64);
  EXPECT_THAT(testing::internal::GetCapturedStderr(),
              HasSubstr("--warmup 1000 must be smaller than --steps 500"));
  o.params = {{"warmup", 156250}};  // the default steps
  testing::internal::CaptureStderr();
  EXPECT_EQ(RunTrainCommand(o, out), 64);
  EXPECT_THAT(testing::internal::GetCapturedStderr(),
              HasSubstr("--warmup 156250 must be smaller than --steps 156250"));
}

}  // namespace
}  // namespace smoe::cli
