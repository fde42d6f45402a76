// Copyright 2026 SMoE Lab authors.
//
// End to end: smoe-trainer kind "skillmix" on a tiny random Mixtral (made by
// `smoe-trainer make-random-model`), graded by a fake OpenAI-compatible
// server on 127.0.0.1 that checks the bearer key. Checks the events and exit
// codes of the trainer contract, resume without new grader requests, SIGTERM
// -> exit 75, and that the key is in no file and no log; two ranks (expert
// parallel over Gloo) equal one process. Last, whole `kind: skillmix`
// sweeps through a real coordinator and worker daemon, one and two ranks
// per trial.
#include <httplib.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/cluster.h"
#include "tests/skillmix/fake_grader.h"

namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

using smoe::skillmix_test::FakeGrader;

constexpr char kKey[] = "sk-e2e-SECRET-42";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `cmd` through the shell; returns its exit status.
int Shell(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
}

class SkillMixE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(::testing::TempDir() + "skillmix_e2e_" +
                           std::to_string(::getpid()));
    std::filesystem::remove_all(*dir_);
    std::filesystem::create_directories(*dir_);
    const int rc = Shell(
        absl::StrCat(SMOE_TRAINER_BINARY, " make-random-model --out ", *dir_,
                     "/model --shape tiny --max-position 4096 --seed 3 > ",
                     *dir_, "/make.log 2>&1"));
    ASSERT_EQ(rc, 0) << ReadAll(*dir_ + "/make.log");
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }

  // Writes TRIAL.json into `workdir` and returns its path.
  std::string WriteTrial(const std::string& workdir, const std::string& url,
                         int num_combinations) {
    std::filesystem::create_directories(workdir);
    const json trial = {{"sweep_id", "e2e"},
                        {"trial_id", "e2e/skillmix"},
                        {"attempt", 1},
                        {"kind", "skillmix"},
                        {"seed", 5},
                        {"params",
                         {{"model", *dir_ + "/model"},
                          {"ept", 1},
                          {"k_skills", 2},
                          {"num_combinations", num_combinations},
                          {"num_generations", 2},
                          {"num_gradings", 3},
                          {"max_new_tokens", 6},
                          {"device", "cpu"},
                          {"grader", "openai"},
                          {"grader_base_url", url},
                          {"grader_api_key_env", "SMOE_E2E_GRADER_API_KEY"},
                          {"grader_requests_per_second", 0}}}};
    const std::string path = workdir + "/TRIAL.json";
    std::ofstream(path) << trial.dump();
    return path;
  }

  static std::vector<json> Events(const std::string& path) {
    std::vector<json> out;
    for (absl::string_view line : absl::StrSplit(ReadAll(path), '\n')) {
      if (line.empty()) continue;
      json j = json::parse(line, nullptr, false);
      if (!j.is_discarded()) out.push_back(j);
    }
    return out;
  }

  static std::string* dir_;
};

std::string* SkillMixE2eTest::dir_ = nullptr;

TEST_F(SkillMixE2eTest, RunsResumesAndNeverLeaksTheKey) {
  FakeGrader grader(kKey);
  ::setenv("SMOE_E2E_GRADER_API_KEY", kKey, 1);
  const std::string work = *dir_ + "/run";
  const std::string trial = WriteTrial(work, grader.url(), 2);
  const std::string run = absl::StrCat(SMOE_TRAINER_BINARY, " run --trial ",
                                       trial, " --workdir ", work);
  ASSERT_EQ(Shell(run + " > " + work + "/out1.jsonl 2> " + work + "/err1.txt"),
            0)
      << ReadAll(work + "/err1.txt");
  const std::vector<json> ev = Events(work + "/out1.jsonl");
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back()["event"], "result");
  EXPECT_DOUBLE_EQ(ev.back()["metrics"]["total_skill_score"].get<double>(),
                   2.0);  // the fake grader gives both skill points
  int progress = 0;
  for (const json& e : ev) progress += e["event"] == "progress";
  EXPECT_EQ(progress, 3);
  // 2 combinations x 2 generations, one n=3 request each.
  EXPECT_EQ(grader.requests(), 4);

  // Second attempt: everything is checkpointed; no model call, no request.
  ASSERT_EQ(Shell(run + " > " + work + "/out2.jsonl 2> " + work + "/err2.txt"),
            0)
      << ReadAll(work + "/err2.txt");
  EXPECT_EQ(grader.requests(), 4);
  EXPECT_EQ(Events(work + "/out2.jsonl").back()["event"], "result");

  for (const auto& e : std::filesystem::recursive_directory_iterator(work)) {
    if (!e.is_regular_file()) continue;
    EXPECT_THAT(ReadAll(e.path().string()), Not(HasSubstr("SECRET")))
        << e.path();
  }
}

// Issue 31 item 8: the model `make-random-model --shape tiny` writes with no
// size flag runs an evaluation at the kind's default settings (its context
// was 1024 tokens, shorter than a default Skill-Mix prompt + answer).
TEST_F(SkillMixE2eTest, TheDefaultTinyModelRunsAtDefaultSettings) {
  const std::string work = *dir_ + "/defaults";
  std::filesystem::create_directories(work);
  ASSERT_EQ(
      Shell(absl::StrCat(SMOE_TRAINER_BINARY, " make-random-model --out ", work,
                         "/model --shape tiny > ", work, "/make.log 2>&1")),
      0)
      << ReadAll(work + "/make.log");
  FakeGrader grader(kKey);
  ::setenv("SMOE_E2E_GRADER_API_KEY", kKey, 1);
  // Only what a CPU machine and the fake grader need; every other parameter
  // (max_new_tokens 512, generations, gradings, ...) at its default.
  const json trial = {{"sweep_id", "e2e"},
                      {"trial_id", "e2e/defaults"},
                      {"attempt", 1},
                      {"kind", "skillmix"},
                      {"seed", 1},
                      {"params",
                       {{"model", work + "/model"},
                        {"num_combinations", 1},
                        {"device", "cpu"},
                        {"grader", "openai"},
                        {"grader_base_url", grader.url()},
                        {"grader_api_key_env", "SMOE_E2E_GRADER_API_KEY"},
                        {"grader_requests_per_second", 0}}}};
  std::ofstream(work + "/TRIAL.json") << trial.dump();
  ASSERT_EQ(Shell(absl::StrCat(SMOE_TRAINER_BINARY, " run --trial ", work,
                               "/TRIAL.json --workdir ", work, " > ", work,
                               "/out.jsonl 2> ", work, "/err.txt")),
            0)
      << ReadAll(work + "/err.txt");
  const std::vector<json> ev = Events(work + "/out.jsonl");
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back()["event"], "result") << ReadAll(work + "/err.txt");
}

TEST_F(SkillMixE2eTest, SigtermExitsWith75AndResumes) {
  FakeGrader grader(kKey);
  grader.set_delay_ms(400);
  ::setenv("SMOE_E2E_GRADER_API_KEY", kKey, 1);
  const std::string work = *dir_ + "/term";
  const std::string trial = WriteTrial(work, grader.url(), 6);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string out = work + "/out.jsonl";
    std::freopen(out.c_str(), "w", stdout);
    std::freopen((work + "/err.txt").c_str(), "w", stderr);
    ::execl(SMOE_TRAINER_BINARY, SMOE_TRAINER_BINARY, "run", "--trial",
            trial.c_str(), "--workdir", work.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Wait for the first finished combination, then SIGTERM.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int status = 0;
  bool exited = false;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;  // finished or failed early: checked below
      break;
    }
    if (absl::StrContains(ReadAll(work + "/out.jsonl"), "\"checkpoint\"")) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!exited) {
    ::kill(pid, SIGTERM);
    ::waitpid(pid, &status, 0);
  }
  ASSERT_TRUE(WIFEXITED(status)) << ReadAll(work + "/err.txt");
  EXPECT_EQ(WEXITSTATUS(status), 75) << ReadAll(work + "/err.txt");
  const std::string ckpt = ReadAll(work + "/skillmix_checkpoint.jsonl");
  const int finished =
      static_cast<int>(std::count(ckpt.begin(), ckpt.end(), '\n')) -
      1;  // minus the header
  EXPECT_GE(finished, 1);
  EXPECT_LT(finished, 6);

  grader.set_delay_ms(0);
  const int before = grader.requests();
  ASSERT_EQ(Shell(absl::StrCat(SMOE_TRAINER_BINARY, " run --trial ", trial,
                               " --workdir ", work, " > ", work,
                               "/out2.jsonl 2> ", work, "/err2.txt")),
            0)
      << ReadAll(work + "/err2.txt");
  // Only the unfinished combinations were graded (2 requests each).
  EXPECT_LE(grader.requests() - before, 2 * (6 - finished));
  EXPECT_EQ(Events(work + "/out2.jsonl").back()["event"], "result");
}

// Expert parallel over real processes: rank 0 and rank 1 (Gloo, FileStore
// rendezvous) split the model's experts; rank 0 alone runs the pipeline and
// talks to the grader, rank 1 only joins the forwards. The checkpoint (every
// student reply and grading) and the result equal the one-process run's, the
// grader sees the same number of requests, and rank 1 prints no event.
TEST_F(SkillMixE2eTest, TwoRanksEqualOneProcess) {
  FakeGrader grader(kKey);
  ::setenv("SMOE_E2E_GRADER_API_KEY", kKey, 1);
  const std::string one = *dir_ + "/one-rank";
  const std::string trial1 = WriteTrial(one, grader.url(), 2);
  ASSERT_EQ(Shell(absl::StrCat(SMOE_TRAINER_BINARY, " run --trial ", trial1,
                               " --workdir ", one, " > ", one, "/out.jsonl 2> ",
                               one, "/err.txt")),
            0)
      << ReadAll(one + "/err.txt");
  const int requests_one = grader.requests();

  const std::string two = *dir_ + "/two-ranks";
  const std::string trial2 = WriteTrial(two, grader.url(), 2);
  auto rank_cmd = [&](int rank) {
    return absl::StrCat(
        "SMOE_RANK=", rank, " SMOE_WORLD_SIZE=2 SMOE_RENDEZVOUS=", two, "/rdv ",
        SMOE_TRAINER_BINARY, " run --trial ", trial2, " --workdir ", two, " > ",
        two, "/out", rank, ".jsonl 2> ", two, "/err", rank, ".txt");
  };
  // Both ranks in the background; the shell's exit is rank 0's, then 10 +
  // rank 1's when that one failed.
  const int rc = Shell(
      absl::StrCat("(", rank_cmd(1), ") & r1=$!; ", rank_cmd(0),
                   "; r0=$?; wait $r1; r1=$?; ", "[ $r0 -ne 0 ] && exit $r0; ",
                   "[ $r1 -ne 0 ] && exit $((10 + r1)); ", "exit 0"));
  ASSERT_EQ(rc, 0) << "rank 0:\n"
                   << ReadAll(two + "/err0.txt") << "\nrank 1:\n"
                   << ReadAll(two + "/err1.txt");
  EXPECT_EQ(grader.requests() - requests_one, requests_one);
  EXPECT_EQ(ReadAll(two + "/skillmix_checkpoint.jsonl"),
            ReadAll(one + "/skillmix_checkpoint.jsonl"));
  EXPECT_EQ(Events(two + "/out0.jsonl").back(),
            Events(one + "/out.jsonl").back());
  EXPECT_EQ(Events(two + "/out0.jsonl").back()["event"], "result");
  EXPECT_TRUE(Events(two + "/out1.jsonl").empty());
  // 2 combinations x 2 turns of student generation, all joined by rank 1.
  EXPECT_THAT(ReadAll(two + "/err1.txt"), HasSubstr("served 4 generation"));
  EXPECT_THAT(ReadAll(two + "/err0.txt"), HasSubstr("2 ranks"));
}

// The "done when": a skillmix sweep (k_skills x ept) submitted with
// `smoe sweep submit` runs through the coordinator and a worker daemon
// (--kinds skillmix, the real smoe-trainer, a local model and the fake
// grader), and every point reports the Skill-Mix metrics.
TEST_F(SkillMixE2eTest, SweepRunsThroughCoordinatorAndWorker) {
  FakeGrader grader(kKey);
  smoe::e2e::Cluster c("skillmix", "{}");
  c.StartCoordinator();
  c.StartWorker(0, /*slots=*/2, SMOE_TRAINER_BINARY,
                {"--kinds", "skillmix", "--gpus", "0"},
                {{"SMOE_E2E_GRADER_API_KEY", kKey}, {"OMP_NUM_THREADS", "1"}});
  const std::string sweep = c.WriteFile(
      "skillmix.yaml",
      absl::StrCat("name: smx\nkind: skillmix\ngrid:\n  k_skills: [1, 2]\n"
                   "  ept: [1, 2]\nfixed:\n  model: ",
                   *dir_, "/model\n  num_combinations: 2\n",
                   "  num_generations: 1\n  num_gradings: 1\n",
                   "  max_new_tokens: 4\n  device: cpu\n  grader: openai\n",
                   "  grader_base_url: ", grader.url(), "\n",
                   "  grader_api_key_env: SMOE_E2E_GRADER_API_KEY\n",
                   "seeds: [0]\nretries: 0\n"));
  auto [rc, out] = c.Smoe({"sweep", "submit", sweep});
  ASSERT_EQ(rc, 0) << out;
  ASSERT_TRUE(c.WaitFor(
      "smx",
      [](const smoe::v1::GetSweepResponse& s) {
        return s.sweep().state() != smoe::v1::SWEEP_STATE_ACTIVE;
      },
      absl::Seconds(240)))
      << ReadAll(c.dir() + "/worker-0/worker.log");
  auto [rc2, results] = c.Smoe({"results", "smx", "--format", "json"});
  ASSERT_EQ(rc2, 0) << results;
  const json rows = json::parse(results, nullptr, false);
  ASSERT_TRUE(rows.is_array()) << results;
  ASSERT_EQ(rows.size(), 4u) << results;
  for (const json& r : rows) {
    EXPECT_EQ(r["state"], "succeeded") << r.dump();
    ASSERT_TRUE(r["results"].contains("ratio_full_marks")) << r.dump();
    ASSERT_TRUE(r["results"].contains("skill_fraction")) << r.dump();
    // The fake grader awards every skill point.
    EXPECT_DOUBLE_EQ(r["results"]["skill_fraction"].get<double>(), 1.0)
        << r.dump();
  }
  // 4 points x 2 combinations x 1 generation, one request each.
  EXPECT_EQ(grader.requests(), 8);
  // `smoe analyze` on a skillmix sweep: the EPT x k_skills tables and the
  // best EPT per k (all cells tie at 1.0 here: the smaller EPT wins).
  auto [rc3, text] = c.Smoe({"analyze", "smx"});
  ASSERT_EQ(rc3, 0) << text;
  EXPECT_THAT(text, HasSubstr("skill_fraction (mean +- s.e."));
  EXPECT_THAT(text, HasSubstr("best ept per k_skills"));
  auto [rc4, aj] = c.Smoe(
      {"analyze", "smx", "--format", "json", "--metric", "skill_fraction"});
  ASSERT_EQ(rc4, 0) << aj;
  const json analysis = json::parse(aj, nullptr, false);
  ASSERT_TRUE(analysis.is_object()) << aj;
  ASSERT_EQ(analysis["tables"].size(), 1u) << aj;
  const json& best = analysis["tables"][0]["best"];
  ASSERT_EQ(best.size(), 2u) << aj;  // k_skills 1 and 2
  for (const json& b : best) {
    EXPECT_EQ(b["best"], 1) << aj;
    EXPECT_EQ(b["runner_up"], 2) << aj;
  }
  for (const auto& e : std::filesystem::recursive_directory_iterator(c.dir())) {
    if (!e.is_regular_file()) continue;
    EXPECT_THAT(ReadAll(e.path().string()), Not(HasSubstr("SECRET")))
        << e.path();
  }
}

// Starts `smoe-trainer run` as rank `rank` of 2 (FileStore rendezvous
// WORK/rdv), stdout to WORK/out<rank>.jsonl, stderr to WORK/err<rank>.txt.
pid_t StartRank(const std::string& work, const std::string& trial, int rank) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("SMOE_RANK", std::to_string(rank).c_str(), 1);
    ::setenv("SMOE_WORLD_SIZE", "2", 1);
    ::setenv("SMOE_RENDEZVOUS", (work + "/rdv").c_str(), 1);
    std::freopen(absl::StrCat(work, "/out", rank, ".jsonl").c_str(), "w",
                 stdout);
    std::freopen(absl::StrCat(work, "/err", rank, ".txt").c_str(), "w", stderr);
    ::execl(SMOE_TRAINER_BINARY, SMOE_TRAINER_BINARY, "run", "--trial",
            trial.c_str(), "--workdir", work.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// SIGTERM to both ranks of an expert-parallel trial (what the daemon does on
// drain or cancel): rank 0 stops at the combination boundary, exits 75 and
// releases rank 1, which exits 0; a new two-rank attempt resumes and ends.
TEST_F(SkillMixE2eTest, TwoRanksStopTogetherOnSigtermAndResume) {
  FakeGrader grader(kKey);
  grader.set_delay_ms(400);
  ::setenv("SMOE_E2E_GRADER_API_KEY", kKey, 1);
  const std::string work = *dir_ + "/term-ep";
  const std::string trial = WriteTrial(work, grader.url(), 6);
  std::filesystem::remove(work + "/rdv");
  const pid_t r1 = StartRank(work, trial, 1);
  const pid_t r0 = StartRank(work, trial, 0);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline &&
         !absl::StrContains(ReadAll(work + "/out0.jsonl"), "\"checkpoint\"")) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(r0, SIGTERM);
  ::kill(r1, SIGTERM);
  int s0 = 0, s1 = 0;
  ::waitpid(r0, &s0, 0);
  ::waitpid(r1, &s1, 0);
  const std::string logs =
      absl::StrCat("rank 0:\n", ReadAll(work + "/err0.txt"), "\nrank 1:\n",
                   ReadAll(work + "/err1.txt"));
  ASSERT_TRUE(WIFEXITED(s0) && WIFEXITED(s1)) << logs;
  EXPECT_EQ(WEXITSTATUS(s0), 75) << logs;
  EXPECT_EQ(WEXITSTATUS(s1), 0) << logs;
  const std::string ckpt = ReadAll(work + "/skillmix_checkpoint.jsonl");
  const int finished =
      static_cast<int>(std::count(ckpt.begin(), ckpt.end(), '\n')) - 1;
  EXPECT_GE(finished, 1);
  EXPECT_LT(finished, 6);

  grader.set_delay_ms(0);
  std::filesystem::remove(work + "/rdv");
  const pid_t again1 = StartRank(work, trial, 1);
  const pid_t again0 = StartRank(work, trial, 0);
  ::waitpid(again0, &s0, 0);
  ::waitpid(again1, &s1, 0);
  ASSERT_TRUE(WIFEXITED(s0) && WEXITSTATUS(s0) == 0)
      << ReadAll(work + "/err0.txt");
  ASSERT_TRUE(WIFEXITED(s1) && WEXITSTATUS(s1) == 0)
      << ReadAll(work + "/err1.txt");
  EXPECT_EQ(Events(work + "/out0.jsonl").back()["event"], "result");
}

// The same through the system: `resources: {ep_size: 2}` makes the worker
// daemon start two smoe-trainer ranks per trial (one per GPU on a GPU box;
// here on the CPU over Gloo); rank 0's events reach the coordinator.
TEST_F(SkillMixE2eTest, ExpertParallelSweepRunsThroughCoordinatorAndWorker) {
  FakeGrader grader(kKey);
  smoe::e2e::Cluster c("skillmix-ep", "{}");
  c.StartCoordinator();
  c.StartWorker(0, /*slots=*/1, SMOE_TRAINER_BINARY,
                {"--kinds", "skillmix", "--gpus", "0"},
                {{"SMOE_E2E_GRADER_API_KEY", kKey}, {"OMP_NUM_THREADS", "1"}});
  const std::string sweep = c.WriteFile(
      "skillmix-ep.yaml",
      absl::StrCat("name: smxep\nkind: skillmix\ngrid:\n  ept: [1, 2]\n",
                   "fixed:\n  model: ", *dir_, "/model\n  k_skills: 2\n",
                   "  num_combinations: 1\n  num_generations: 1\n",
                   "  num_gradings: 1\n  max_new_tokens: 4\n  device: cpu\n",
                   "  grader: openai\n  grader_base_url: ", grader.url(),
                   "\n  grader_api_key_env: SMOE_E2E_GRADER_API_KEY\n",
                   "seeds: [0]\nretries: 0\nresources: {ep_size: 2}\n"));
  auto [rc, out] = c.Smoe({"sweep", "submit", sweep});
  ASSERT_EQ(rc, 0) << out;
  ASSERT_TRUE(c.WaitFor(
      "smxep",
      [](const smoe::v1::GetSweepResponse& s) {
        return s.sweep().state() != smoe::v1::SWEEP_STATE_ACTIVE;
      },
      absl::Seconds(240)))
      << ReadAll(c.dir() + "/worker-0/worker.log");
  auto [rc2, results] = c.Smoe({"results", "smxep", "--format", "json"});
  ASSERT_EQ(rc2, 0) << results;
  const json rows = json::parse(results, nullptr, false);
  ASSERT_TRUE(rows.is_array()) << results;
  ASSERT_EQ(rows.size(), 2u) << results;
  for (const json& r : rows) {
    EXPECT_EQ(r["state"], "succeeded") << r.dump();
    ASSERT_TRUE(r["results"].contains("skill_fraction")) << r.dump();
    EXPECT_DOUBLE_EQ(r["results"]["skill_fraction"].get<double>(), 1.0)
        << r.dump();
  }
  EXPECT_EQ(grader.requests(), 2);  // rank 0 only: one per point
  EXPECT_THAT(ReadAll(c.dir() + "/worker-0/worker.log"), HasSubstr("2 ranks"));
}

}  // namespace
