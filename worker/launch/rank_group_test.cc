// Copyright 2026 SMoE Lab authors.
//
// RankGroup: the environment and GPU split each rank gets and the stop policy,
// step by step with fake processes and a fake clock; then real groups of
// /bin/sh ranks (PosixProcessLauncher, real time): every rank runs and is
// reaped, a failing rank stops the others with its status, a rank ignoring
// SIGTERM is killed after the grace. Real scripts wait in bounded loops and
// every wait here has a deadline, so a broken group fails instead of hanging.
#include "worker/launch/rank_group.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/launch/launch_test_util.h"

namespace smoe::launch {
namespace {

using ::smoe::launch::testing::FakeProcessLauncher;
using ::smoe::launch::testing::FakeProcessState;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

std::string FreshDir() {
  const std::string dir = absl::StrCat(
      ::testing::TempDir(), "/rank_group_", getpid(), "_",
      ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::optional<std::string> EnvOf(const FakeProcessState& p,
                                 const std::string& key) {
  auto it = p.spec.env.find(key);
  if (it == p.spec.env.end()) return std::nullopt;
  return it->second;
}

TEST(VisibleDevicesTest, FollowsTheDaemonsRule) {
  EXPECT_EQ(VisibleDevicesForRank({}, 2, 1), std::nullopt);
  EXPECT_EQ(VisibleDevicesForRank({3, 5}, 1, 0), "3,5");
  EXPECT_EQ(VisibleDevicesForRank({3, 5}, 2, 0), "3");
  EXPECT_EQ(VisibleDevicesForRank({3, 5}, 2, 1), "5");
  EXPECT_EQ(VisibleDevicesForRank({4, 5, 6, 7}, 2, 1), "6,7");
  EXPECT_EQ(VisibleDevicesForRank({0, 1, 2}, 2, 0), "0");  // 2 left over
  EXPECT_EQ(VisibleDevicesForRank({0, 1, 2}, 2, 1), "1");
  EXPECT_EQ(VisibleDevicesForRank({2}, 2, 1), "2");  // fewer ids than ranks
}

class RankGroupFakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshDir();
    spec_.argv = {"/opt/smoe-trainer", "run"};
    spec_.rendezvous_dir = dir_;
    spec_.grace = absl::Seconds(30);
    spec_.note = [this](absl::string_view l) { notes_.emplace_back(l); };
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<RankGroup> Start(int world) {
    spec_.world_size = world;
    auto g = RankGroup::Start(&launcher_, &clock_, spec_);
    EXPECT_TRUE(g.ok()) << g.status();
    return g.ok() ? *std::move(g) : nullptr;
  }
  // Visible devices of every rank of a fresh group over `ids`.
  std::vector<std::string> Split(const std::vector<int>& ids, int world) {
    launcher_.started.clear();
    spec_.gpu_ids = ids;
    auto g = Start(world);
    std::vector<std::string> out;
    for (const auto& p : launcher_.started) {
      out.push_back(EnvOf(*p, "CUDA_VISIBLE_DEVICES").value_or("(inherited)"));
    }
    return out;
  }

  std::string dir_;
  FakeClock clock_;
  FakeProcessLauncher launcher_;
  RankGroupSpec spec_;
  std::vector<std::string> notes_;
};

TEST_F(RankGroupFakeTest, EachRankSeesItsEnvironment) {
  spec_.env = {{"OMP_NUM_THREADS", "1"}, {"SMOE_RANK", "from-caller"}};
  spec_.unset_env = {"SMOE_TOKEN"};
  spec_.working_dir = dir_;
  spec_.parent_death_signal = SIGTERM;
  spec_.output = [this](int r) {
    if (r == 0) return RankOutput{OutputSpec::Pipe(), OutputSpec::Inherit()};
    const std::string log = absl::StrCat(dir_, "/rank", r, ".log");
    return RankOutput{OutputSpec::File(log), OutputSpec::File(log)};
  };
  auto g = Start(3);
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(launcher_.started.size(), 3u);
  const std::string rdv = dir_ + "/ep-rendezvous";
  EXPECT_EQ(g->rendezvous(), rdv);
  for (int r = 0; r < 3; ++r) {
    const FakeProcessState& p = *launcher_.started[r];
    EXPECT_THAT(p.spec.argv, ElementsAre("/opt/smoe-trainer", "run"));
    EXPECT_EQ(p.spec.working_dir, dir_);
    EXPECT_EQ(EnvOf(p, "SMOE_RANK"), absl::StrCat(r));  // the group's wins
    EXPECT_EQ(EnvOf(p, "SMOE_WORLD_SIZE"), "3");
    EXPECT_EQ(EnvOf(p, "SMOE_RENDEZVOUS"), rdv);
    EXPECT_EQ(EnvOf(p, "OMP_NUM_THREADS"), "1");
    EXPECT_EQ(EnvOf(p, "CUDA_VISIBLE_DEVICES"), std::nullopt);  // no gpu_ids
    EXPECT_THAT(p.spec.unset_env, ElementsAre("SMOE_TOKEN"));
    EXPECT_EQ(p.spec.parent_death_signal, SIGTERM);
    EXPECT_EQ(g->rank(r).pid(), p.pid);
  }
  EXPECT_EQ(launcher_.started[0]->spec.stdout_to.kind, OutputSpec::Kind::kPipe);
  EXPECT_EQ(launcher_.started[0]->spec.stderr_to.kind,
            OutputSpec::Kind::kInherit);
  EXPECT_EQ(launcher_.started[2]->spec.stdout_to.path, dir_ + "/rank2.log");
  EXPECT_EQ(launcher_.started[2]->spec.stderr_to.path, dir_ + "/rank2.log");

  // One rank: no rank variables at all, no rendezvous needed.
  launcher_.started.clear();
  spec_.env.clear();
  spec_.rendezvous_dir.clear();
  auto one = Start(1);
  ASSERT_NE(one, nullptr);
  ASSERT_EQ(launcher_.started.size(), 1u);
  EXPECT_THAT(launcher_.started[0]->spec.env, IsEmpty());
  EXPECT_EQ(one->rendezvous(), "");
}

TEST_F(RankGroupFakeTest, GpuSplitOverMadeUpGpuLists) {
  EXPECT_THAT(Split({4, 5, 6, 7}, 2), ElementsAre("4,5", "6,7"));
  EXPECT_THAT(Split({4, 5, 6, 7}, 4), ElementsAre("4", "5", "6", "7"));
  EXPECT_THAT(Split({0, 1, 2}, 2), ElementsAre("0", "1"));  // 2 left over
  EXPECT_THAT(Split({9, 3}, 3), ElementsAre("9,3", "9,3", "9,3"));
  EXPECT_THAT(Split({6, 7}, 1), ElementsAre("6,7"));
  EXPECT_THAT(Split({}, 2), ElementsAre("(inherited)", "(inherited)"));
  // The daemon's rule for a trial without GPUs: a base value of "" that no
  // split replaces.
  spec_.env["CUDA_VISIBLE_DEVICES"] = "";
  EXPECT_THAT(Split({}, 2), ElementsAre("", ""));
  EXPECT_THAT(Split({1, 2}, 2), ElementsAre("1", "2"));
}

TEST_F(RankGroupFakeTest, StaleRendezvousIsRemovedBeforeAndAfter) {
  const std::string rdv = dir_ + "/ep-rendezvous";
  std::ofstream(rdv) << "stale keys";
  auto g = Start(2);
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(Exists(rdv));
  std::ofstream(rdv) << "written by the ranks";
  launcher_.started[0]->Exit(0);
  launcher_.started[1]->Exit(0);
  EXPECT_TRUE(g->Poll());
  EXPECT_FALSE(Exists(rdv));
}

TEST_F(RankGroupFakeTest, AFailingRankStopsTheGroupWithItsStatus) {
  auto g = Start(3);
  ASSERT_NE(g, nullptr);
  auto r0 = launcher_.started[0], r1 = launcher_.started[1],
       r2 = launcher_.started[2];
  r0->exit_on_sigterm = 0;  // a follower-style clean exit on SIGTERM
  EXPECT_FALSE(g->Poll());
  r2->Exit(3);
  EXPECT_FALSE(g->Poll());
  EXPECT_THAT(r0->signals, ElementsAre(SIGTERM));
  EXPECT_THAT(r1->signals, ElementsAre(SIGTERM));
  EXPECT_THAT(r2->signals, IsEmpty());  // already ended
  EXPECT_TRUE(g->term_sent());
  EXPECT_THAT(notes_, ElementsAre(HasSubstr("rank 2 ended (exit code 3)")));
  // r1 ignores SIGTERM: SIGKILL after the grace, not before.
  clock_.Advance(absl::Seconds(29));
  EXPECT_FALSE(g->Poll());
  EXPECT_THAT(r1->signals, ElementsAre(SIGTERM));
  clock_.Advance(absl::Seconds(1));
  EXPECT_FALSE(g->Poll());
  EXPECT_THAT(r1->signals, ElementsAre(SIGTERM, SIGKILL));
  EXPECT_TRUE(g->Poll());
  EXPECT_EQ(g->first_failed(), 2);
  // Rank 0 succeeded (0 on SIGTERM); the lowest failing rank decides: rank 1,
  // killed by SIGKILL.
  EXPECT_EQ(g->DecisiveRank(), 1);
  EXPECT_EQ(g->DecisiveExit().ReportedCode(), 128 + SIGKILL);
}

TEST_F(RankGroupFakeTest, RankZerosFailureDecidesOverTheOthers) {
  auto g = Start(2);
  ASSERT_NE(g, nullptr);
  launcher_.started[1]->exit_on_sigterm = 0;
  launcher_.started[0]->Exit(64);
  g->Poll();  // SIGTERM to rank 1, which ends at once
  EXPECT_TRUE(g->Poll());
  EXPECT_THAT(launcher_.started[1]->signals, ElementsAre(SIGTERM));
  EXPECT_EQ(g->DecisiveRank(), 0);
  EXPECT_EQ(g->DecisiveExit().exit_code, 64);
}

TEST_F(RankGroupFakeTest, OthersGetTheGraceToFinishAfterASuccess) {
  auto g = Start(2);
  ASSERT_NE(g, nullptr);
  auto r0 = launcher_.started[0], r1 = launcher_.started[1];
  r0->Exit(0);
  EXPECT_FALSE(g->Poll());
  EXPECT_THAT(r1->signals, IsEmpty());  // no SIGTERM yet: it is finishing
  clock_.Advance(absl::Seconds(29));
  EXPECT_FALSE(g->Poll());
  EXPECT_THAT(r1->signals, IsEmpty());
  clock_.Advance(absl::Seconds(1));
  EXPECT_FALSE(g->Poll());
  EXPECT_THAT(r1->signals, ElementsAre(SIGTERM));
  EXPECT_THAT(notes_, ElementsAre(HasSubstr("after rank 0 finished")));
  clock_.Advance(absl::Seconds(30));
  EXPECT_FALSE(g->Poll());
  EXPECT_THAT(r1->signals, ElementsAre(SIGTERM, SIGKILL));
  EXPECT_TRUE(g->Poll());
  EXPECT_EQ(g->DecisiveRank(), 1);

  // A rank that finishes within the grace is never signalled.
  launcher_.started.clear();
  auto h = Start(2);
  ASSERT_NE(h, nullptr);
  launcher_.started[0]->Exit(0);
  EXPECT_FALSE(h->Poll());
  clock_.Advance(absl::Seconds(5));
  launcher_.started[1]->Exit(0);
  EXPECT_TRUE(h->Poll());
  EXPECT_THAT(launcher_.started[1]->signals, IsEmpty());
  EXPECT_EQ(h->DecisiveExit().ReportedCode(), 0);
  EXPECT_EQ(h->first_failed(), std::nullopt);
}

TEST_F(RankGroupFakeTest, StopWithGraceThenKillThenStuck) {
  spec_.reap_deadline = absl::Seconds(10);
  auto g = Start(2);
  ASSERT_NE(g, nullptr);
  auto r0 = launcher_.started[0], r1 = launcher_.started[1];
  r0->exit_on_sigterm = 75;     // checkpoints
  r1->survives_sigkill = true;  // uninterruptible sleep
  g->Stop(absl::Seconds(10));
  g->Stop(absl::Seconds(60));  // the earlier deadline stays
  EXPECT_THAT(r0->signals, ElementsAre(SIGTERM));
  EXPECT_THAT(r1->signals, ElementsAre(SIGTERM));
  EXPECT_FALSE(g->Poll());
  clock_.Advance(absl::Seconds(10));
  EXPECT_FALSE(g->Poll());
  EXPECT_TRUE(g->kill_sent());
  EXPECT_THAT(r0->signals, ElementsAre(SIGTERM));  // it had already ended
  EXPECT_THAT(r1->signals, ElementsAre(SIGTERM, SIGKILL));
  EXPECT_FALSE(g->stuck());
  clock_.Advance(absl::Seconds(10));
  EXPECT_FALSE(g->Poll());
  EXPECT_TRUE(g->stuck());
  ASSERT_TRUE(g->exit(0).has_value());
  EXPECT_EQ(g->exit(0)->ReportedCode(), 75);
  EXPECT_FALSE(g->exit(1).has_value());
}

TEST_F(RankGroupFakeTest, KillIsImmediate) {
  auto g = Start(2);
  ASSERT_NE(g, nullptr);
  g->Kill();
  EXPECT_THAT(launcher_.started[0]->signals, ElementsAre(SIGKILL));
  EXPECT_TRUE(g->Poll());
  EXPECT_EQ(g->DecisiveExit().ReportedCode(), 128 + SIGKILL);
}

TEST_F(RankGroupFakeTest, ARankThatCannotStartStopsTheOnesStarted) {
  launcher_.start_errors = {absl::OkStatus(),
                            absl::NotFoundError("cannot execute 'x'")};
  spec_.world_size = 3;
  auto g = RankGroup::Start(&launcher_, &clock_, spec_);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(g.status().message(), "rank 1: cannot execute 'x'");
  ASSERT_EQ(launcher_.started.size(), 1u);
  EXPECT_THAT(launcher_.started[0]->signals, ElementsAre(SIGKILL));
  EXPECT_TRUE(launcher_.started[0]->destroyed);
  // One rank: the launcher's error as it is.
  launcher_.start_errors = {absl::NotFoundError("no such file")};
  spec_.world_size = 1;
  g = RankGroup::Start(&launcher_, &clock_, spec_);
  EXPECT_EQ(g.status().message(), "no such file");
}

TEST_F(RankGroupFakeTest, BadSpecNamesTheField) {
  spec_.world_size = 0;
  auto g = RankGroup::Start(&launcher_, &clock_, spec_);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(g.status().message(), HasSubstr("world_size 0"));
  spec_.world_size = 2;
  spec_.rendezvous_dir = dir_ + "/missing";
  g = RankGroup::Start(&launcher_, &clock_, spec_);
  EXPECT_THAT(g.status().message(),
              HasSubstr("rendezvous_dir '" + dir_ + "/missing'"));
  spec_.rendezvous_dir = dir_;
  spec_.argv.clear();
  g = RankGroup::Start(&launcher_, &clock_, spec_);
  EXPECT_THAT(g.status().message(), HasSubstr("argv is empty"));
  spec_.argv = {"/bin/true"};
  spec_.grace = absl::Seconds(-1);
  g = RankGroup::Start(&launcher_, &clock_, spec_);
  EXPECT_THAT(g.status().message(), HasSubstr("grace"));
  EXPECT_TRUE(launcher_.started.empty());
}

// ---- real processes -------------------------------------------------------

// Shell helpers for the scripts: wait_for waits up to ~20 s for file $1; nap
// sleeps ~20 s in short steps so a trapped signal is handled at once.
constexpr char kHelpers[] =
    "wait_for() { i=0; while [ ! -e \"$1\" ] && [ $i -lt 200 ]; do "
    "sleep 0.1; i=$((i+1)); done; }\n"
    "nap() { i=0; while [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; }\n";

class RankGroupProcessTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = FreshDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Starts `world` ranks of `script` ($d = the test dir, $r = the rank).
  std::unique_ptr<RankGroup> Start(int world, const std::string& script,
                                   absl::Duration grace = absl::Seconds(30)) {
    RankGroupSpec spec;
    spec.argv = {
        "/bin/sh", "-c",
        absl::StrCat("d='", dir_, "'\nr=${SMOE_RANK:-0}\n", kHelpers, script)};
    spec.world_size = world;
    spec.rendezvous_dir = dir_;
    spec.grace = grace;
    spec.gpu_ids = {10, 11, 12, 13, 14, 15};
    auto g = RankGroup::Start(&launcher_, Clock::Real(), std::move(spec));
    EXPECT_TRUE(g.ok()) << g.status();
    return g.ok() ? *std::move(g) : nullptr;
  }

  // Polls until the group is done (false after 30 s).
  static bool Finish(RankGroup& g) {
    const absl::Time until = absl::Now() + absl::Seconds(30);
    while (!g.Poll()) {
      if (absl::Now() > until) return false;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return true;
  }

  std::string dir_;
  PosixProcessLauncher launcher_;
};

TEST_F(RankGroupProcessTest, LaunchesEveryRankAndReapsThem) {
  auto g = Start(3,
                 "echo \"$SMOE_RANK $SMOE_WORLD_SIZE $SMOE_RENDEZVOUS "
                 "$CUDA_VISIBLE_DEVICES\" > \"$d/env$r\"\n"
                 "echo '{\"event\":\"result\",\"rank\":'$r'}'\n");
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(Finish(*g));
  const std::string rdv = dir_ + "/ep-rendezvous";
  EXPECT_EQ(ReadAll(dir_ + "/env0"), "0 3 " + rdv + " 10,11\n");
  EXPECT_EQ(ReadAll(dir_ + "/env1"), "1 3 " + rdv + " 12,13\n");
  EXPECT_EQ(ReadAll(dir_ + "/env2"), "2 3 " + rdv + " 14,15\n");
  EXPECT_THAT(g->rank(1).TakeStdoutLines(),
              ElementsAre("{\"event\":\"result\",\"rank\":1}"));
  EXPECT_EQ(g->DecisiveExit().ReportedCode(), 0);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(g->exit(r)->exit_code, 0);
}

TEST_F(RankGroupProcessTest, OneFailingRankEndsTheGroupWithItsStatus) {
  // Rank 2 fails once the others are up; they checkpoint on SIGTERM (75).
  auto g = Start(3,
                 "if [ $r = 2 ]; then wait_for \"$d/up0\"; wait_for "
                 "\"$d/up1\"; exit 3; fi\n"
                 "trap 'touch \"$d/term$r\"; exit 75' TERM\n"
                 "touch \"$d/up$r\"; nap; touch \"$d/survived$r\"\n");
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(Finish(*g));
  EXPECT_EQ(g->first_failed(), 2);
  EXPECT_EQ(g->DecisiveRank(), 0);  // rank 0 failed too (75): it decides
  EXPECT_EQ(g->DecisiveExit().exit_code, 75);
  EXPECT_EQ(g->exit(2)->exit_code, 3);
  EXPECT_TRUE(Exists(dir_ + "/term0"));
  EXPECT_TRUE(Exists(dir_ + "/term1"));
  EXPECT_FALSE(Exists(dir_ + "/survived0"));
  EXPECT_FALSE(Exists(dir_ + "/ep-rendezvous"));
}

TEST_F(RankGroupProcessTest, ARankIgnoringSigtermIsKilledAfterTheGrace) {
  auto g = Start(2,
                 "if [ $r = 0 ]; then wait_for \"$d/ready1\"; exit 2; fi\n"
                 "trap '' TERM\n"
                 "touch \"$d/ready1\"; nap; touch \"$d/survived1\"\n",
                 absl::Milliseconds(300));
  ASSERT_NE(g, nullptr);
  const absl::Time t0 = absl::Now();
  ASSERT_TRUE(Finish(*g));
  EXPECT_GE(absl::Now() - t0, absl::Milliseconds(300));
  EXPECT_TRUE(g->kill_sent());
  EXPECT_EQ(g->DecisiveRank(), 0);
  EXPECT_EQ(g->DecisiveExit().exit_code, 2);
  EXPECT_TRUE(g->exit(1)->signaled);
  EXPECT_EQ(g->exit(1)->signal, SIGKILL);
  EXPECT_FALSE(Exists(dir_ + "/survived1"));
}

}  // namespace
}  // namespace smoe::launch
