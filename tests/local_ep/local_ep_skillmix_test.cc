// Copyright 2026 SMoE Lab authors.
//
// `smoe skillmix run --ep-size 2` end to end: the CLI starts two real
// smoe-trainer ranks on a tiny random Mixtral (`smoe model make-random`),
// graded by a fake OpenAI-compatible server on 127.0.0.1. Rank 0 leads every
// generation and rank 1 serves its experts; the run must end like the
// single-process one: the same checkpoint byte for byte, the same summary and
// the same number of grader requests.
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/cluster.h"
#include "tests/skillmix/fake_grader.h"

namespace smoe::e2e {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

using smoe::skillmix_test::FakeGrader;

constexpr char kKey[] = "sk-local-ep-key";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(LocalEpSkillMixTest, TwoRanksEndLikeOneProcess) {
  const std::string bin = SMOE_BIN_DIR;
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "smoe-local-ep-skillmix-", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto [mrc, mout] = RunCommand(
      {bin + "/smoe", "model", "make-random", "--out", dir + "/model",
       "--shape", "tiny", "--max-position", "4096", "--seed", "3"},
      {}, absl::Seconds(60));
  ASSERT_EQ(mrc, 0) << mout;

  FakeGrader grader(kKey);
  const std::map<std::string, std::string> env = {
      {"SMOE_LOCAL_EP_GRADER_API_KEY", kKey}, {"OMP_NUM_THREADS", "1"}};
  auto run = [&](int ep_size, const std::string& workdir) {
    return RunCommand({bin + "/smoe",
                       "skillmix",
                       "run",
                       "--model",
                       dir + "/model",
                       "--k-skills",
                       "2",
                       "--ept",
                       "1",
                       "--num-combinations",
                       "2",
                       "--num-generations",
                       "2",
                       "--num-gradings",
                       "3",
                       "--max-new-tokens",
                       "6",
                       "--device",
                       "cpu",
                       "--grader",
                       "openai",
                       "--grader-base-url",
                       grader.url(),
                       "--grader-api-key-env",
                       "SMOE_LOCAL_EP_GRADER_API_KEY",
                       "--param",
                       "grader_requests_per_second=0",
                       "--seed",
                       "5",
                       "--ep-size",
                       absl::StrCat(ep_size),
                       "--workdir",
                       workdir},
                      env, absl::Seconds(120));
  };
  auto [rc1, out1] = run(1, dir + "/one");
  ASSERT_EQ(rc1, 0) << out1;
  const int requests_one = grader.requests();
  ASSERT_GT(requests_one, 0);

  auto [rc2, out2] = run(2, dir + "/two");
  ASSERT_EQ(rc2, 0) << out2 << "\nrank 1:\n" << ReadAll(dir + "/two/rank1.log");
  // Only rank 0 asks the grader, exactly what one process asked.
  EXPECT_EQ(grader.requests() - requests_one, requests_one);
  EXPECT_EQ(ReadAll(dir + "/two/skillmix_checkpoint.jsonl"),
            ReadAll(dir + "/one/skillmix_checkpoint.jsonl"));
  auto summary = [](const std::string& out, const std::string& workdir) {
    const size_t at = out.find("Skill-Mix run finished");
    return at == std::string::npos
               ? std::string()
               : absl::StrReplaceAll(out.substr(at), {{workdir, "WORKDIR"}});
  };
  EXPECT_NE(summary(out1, dir + "/one"), "");
  EXPECT_EQ(summary(out2, dir + "/two"), summary(out1, dir + "/one"));
  // 2 combinations x 2 generation turns, all joined by rank 1.
  EXPECT_THAT(ReadAll(dir + "/two/rank1.log"),
              HasSubstr("served 4 generation"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/two/ep-rendezvous"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace smoe::e2e
