// Copyright 2026 SMoE Lab authors.
//
// `smoe train sraven --ep-size 2` end to end: the CLI starts two real
// smoe-trainer ranks (Gloo over a FileStore in the work dir), reports rank 0's
// events, and the final metrics equal those of `--ep-size 1` on the same seed
// (tests/ep/ep_train_test.cc's tolerance). Ctrl-C reaches both ranks (exit
// 75, checkpoint); bad --ep-size values are refused naming the flag.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/cluster.h"

namespace smoe::e2e {
namespace {

using ::testing::HasSubstr;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class LocalEpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_ = SMOE_BIN_DIR;
    dir_ = absl::StrCat(
        ::testing::TempDir(), "smoe-local-ep-", ::getpid(), "-",
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // `smoe train sraven` on tests/ep/ep_train_test.cc's tiny config (2 layers,
  // 4 experts, top-2, no attention dropout), seed 3.
  std::vector<std::string> Train(int ep_size, const std::string& workdir,
                                 int steps = 6) {
    return {bin_ + "/smoe",
            "train",
            "sraven",
            "--M",
            "1",
            "--num-experts",
            "4",
            "--top-k",
            "2",
            "--width",
            "0.125",
            "--depth",
            "2",
            "--steps",
            absl::StrCat(steps),
            "--batch-size",
            "8",
            "--seed",
            "3",
            "--param",
            "warmup=2",
            "--param",
            "eval_every=6",
            "--param",
            "num_eval=20",
            "--param",
            "log_every=1",
            "--param",
            "checkpoint_every=3",
            "--param",
            "attention_dropout=0",
            "--param",
            "load_balance_alpha=0.01",
            "--ep-size",
            absl::StrCat(ep_size),
            "--workdir",
            workdir};
  }

  // The summary lines "  <metric> <value>" after "SRAVEN run finished".
  static std::map<std::string, double> Metrics(const std::string& out) {
    std::map<std::string, double> m;
    bool in_summary = false;
    for (absl::string_view line : absl::StrSplit(out, '\n')) {
      if (absl::StartsWith(line, "SRAVEN run finished")) {
        in_summary = true;
        continue;
      }
      if (!in_summary || !absl::StartsWith(line, "  ")) continue;
      std::vector<std::string> kv = absl::StrSplit(
          absl::StripAsciiWhitespace(line), ' ', absl::SkipEmpty());
      double v = 0;
      if (kv.size() == 2 && absl::SimpleAtod(kv[1], &v)) m[kv[0]] = v;
    }
    return m;
  }

  std::string bin_, dir_;
};

TEST_F(LocalEpTest, TwoRanksFinishWithTheSingleProcessMetrics) {
  const std::map<std::string, std::string> env = {{"OMP_NUM_THREADS", "1"}};
  auto [rc1, out1] =
      RunCommand(Train(1, dir_ + "/ep1"), env, absl::Seconds(60));
  ASSERT_EQ(rc1, 0) << out1;
  auto [rc2, out2] =
      RunCommand(Train(2, dir_ + "/ep2"), env, absl::Seconds(60));
  ASSERT_EQ(rc2, 0) << out2 << "\nrank 1:\n"
                    << ReadAll(dir_ + "/ep2/rank1.log");
  EXPECT_THAT(out2, HasSubstr("2 expert-parallel ranks"));
  EXPECT_THAT(out2, HasSubstr("step 6/6"));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/ep2/rank1.log"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/ep1/rank1.log"));
  EXPECT_THAT(ReadAll(dir_ + "/ep2/rank1.log"),
              HasSubstr("expert parallel: rank 1 of 2"));
  const auto trial =
      nlohmann::json::parse(ReadAll(dir_ + "/ep2/TRIAL.json"), nullptr, false);
  ASSERT_TRUE(trial.is_object());
  EXPECT_EQ(trial["params"]["ep_size"], 2);

  const std::map<std::string, double> single = Metrics(out1);
  const std::map<std::string, double> ep = Metrics(out2);
  ASSERT_TRUE(single.count("test_acc") && single.count("train_loss") &&
              single.count("steps"))
      << out1;
  // Same tolerance as tests/ep/ep_train_test.cc (1e-4 relative; the summary
  // prints 6 significant digits). Throughput is timing, not math.
  for (const auto& [name, value] : single) {
    if (name == "steps_per_s" || name == "tokens_per_s") continue;
    ASSERT_TRUE(ep.count(name)) << name << "\n" << out2;
    EXPECT_NEAR(ep.at(name), value, 1e-4 * std::abs(value)) << name;
  }
  EXPECT_EQ(ep.size(), single.size()) << out2;
}

TEST_F(LocalEpTest, CtrlCStopsEveryRankWithACheckpoint) {
  const std::string work = dir_ + "/int";
  const std::string log = dir_ + "/smoe.log";
  auto p = Process::Start(Train(2, work, /*steps=*/100000),
                          {{"OMP_NUM_THREADS", "1"}}, log);
  // Wait (bounded) for the first training step, then Ctrl-C.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (p->running() && !absl::StrContains(ReadAll(log), "step 1/") &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  p->Signal(SIGINT);
  const int rc = p->Wait(absl::Seconds(60));
  const std::string out = ReadAll(log);
  EXPECT_EQ(rc, 75) << out << "\nrank 1:\n" << ReadAll(work + "/rank1.log");
  EXPECT_THAT(out, HasSubstr("stopping (SIGTERM to 2 ranks"));
  EXPECT_THAT(out, HasSubstr("interrupted; checkpoint in " + work));
  EXPECT_THAT(ReadAll(work + "/rank1.log"), HasSubstr("checkpoint saved"));
  EXPECT_FALSE(std::filesystem::exists(work + "/ep-rendezvous"));
}

TEST_F(LocalEpTest, BadEpSizeNamesTheFlagAndTheValue) {
  for (const std::string bad : {"0", "-2", "abc", "65"}) {
    auto [rc, out] = RunCommand({bin_ + "/smoe", "train", "sraven", "--ep-size",
                                 bad, "--workdir", dir_ + "/bad"},
                                {}, absl::Seconds(30));
    EXPECT_EQ(rc, 64) << bad << ": " << out;
    EXPECT_THAT(out, HasSubstr("--ep-size")) << bad;
    EXPECT_THAT(out, HasSubstr(bad)) << out;
    auto [rc2, out2] = RunCommand(
        {bin_ + "/smoe", "skillmix", "run", "--model", dir_ + "/none",
         "--ep-size", bad, "--workdir", dir_ + "/bad"},
        {}, absl::Seconds(30));
    EXPECT_EQ(rc2, 64) << bad << ": " << out2;
    EXPECT_THAT(out2, HasSubstr("--ep-size")) << bad;
    EXPECT_THAT(out2, HasSubstr(bad)) << out2;
  }
  auto [rc, out] =
      RunCommand({bin_ + "/smoe", "train", "sraven", "--param", "ep_size=4",
                  "--ep-size", "2", "--workdir", dir_ + "/bad"},
                 {}, absl::Seconds(30));
  EXPECT_EQ(rc, 64) << out;
  EXPECT_THAT(out, HasSubstr("--param ep_size=4 disagrees with --ep-size 2"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/bad/TRIAL.json"));
}

}  // namespace
}  // namespace smoe::e2e
