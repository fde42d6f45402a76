// Copyright 2026 SMoE Lab authors.
//
// `kind: command` end to end: a real coordinator and workers (tests/e2e
// cluster) sweep examples/command/train_toy.py, a stdlib-only Python
// program, through examples/command-sweep.yaml. Needs python3 on $PATH.
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/cluster.h"

namespace smoe::e2e {
namespace {

namespace fs = std::filesystem;
namespace pb = smoe::v1;
using ::testing::HasSubstr;

std::string SourceDir() {
  const char* s = std::getenv("SMOE_SOURCE_DIR");
  return s != nullptr ? s : "";
}

std::string ExamplesDir() { return SourceDir() + "/examples/command"; }

// examples/command-sweep.yaml with the program under this checkout, and
// `edits` (from -> to) applied.
std::string ExampleSweep(
    const std::vector<std::pair<std::string, std::string>>& edits = {}) {
  std::ifstream in(SourceDir() + "/examples/command-sweep.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text =
      absl::StrReplaceAll(ss.str(), {{"/srv/smoe", SourceDir()}});
  for (const auto& [from, to] : edits) {
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
  }
  return text;
}

bool Done(const pb::GetSweepResponse& s) {
  return s.sweep().state() != pb::SWEEP_STATE_ACTIVE;
}

class CommandKindE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (SourceDir().empty()) GTEST_SKIP() << "SMOE_SOURCE_DIR is not set";
    ASSERT_EQ(RunCommand({"/bin/sh", "-c", "command -v python3"}, {},
                         absl::Seconds(10))
                  .first,
              0)
        << "python3 is needed on $PATH";
  }
};

TEST_F(CommandKindE2eTest, SweepsThePythonExampleOnRealWorkers) {
  Cluster c("command", "{}");
  c.StartCoordinator();
  // Offline validation uses the declared schema, naming field and value.
  const std::string bad = c.WriteFile(
      "bad.yaml", ExampleSweep({{"lr: [0.01, 0.03, 0.1]", "lr: [0.01, 2]"}}));
  auto [vrc, vout] =
      RunCommand({c.smoe(), "sweep", "validate", bad}, {}, absl::Seconds(30));
  EXPECT_EQ(vrc, 65) << vout;
  EXPECT_THAT(vout, HasSubstr("grid.lr: expected a value in [0, 1], got 2"));

  // A worker without --allow-command is not leased command trials; the
  // sweep says why.
  c.StartWorker(0, 2);
  const std::string file = c.WriteFile("toy.yaml", ExampleSweep());
  auto [rc, out] = c.Smoe({"sweep", "submit", file});
  ASSERT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("12 new trials"));
  ASSERT_TRUE(c.WaitFor(
      "toy-sgd",
      [](const pb::GetSweepResponse& s) {
        return absl::StrContains(s.sweep().unschedulable(), "--allow-command");
      },
      absl::Seconds(20)))
      << c.GetSweep("toy-sgd")->sweep().unschedulable();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(c.GetSweep("toy-sgd")->sweep().counts().pending(), 12);

  // A worker for the sweeps' own programs only: no --trainer, and it looks
  // for no smoe-trainer (a host with the user's Python stack but no build of
  // ours).
  c.StartWorker(1, 2, "-",
                {"--kinds", "command", "--allow-command", ExamplesDir()});
  ASSERT_TRUE(c.WaitFor("toy-sgd", Done, absl::Seconds(120)));
  EXPECT_THAT(ReadText(c.dir() + "/worker-1/worker.log"),
              HasSubstr("trainer none (kind command only)"));
  auto s = c.GetSweep("toy-sgd");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->sweep().counts().succeeded(), 12);
  std::set<std::string> points;
  for (const auto& t : s->trials()) {
    EXPECT_EQ(t.state(), pb::TRIAL_STATE_SUCCEEDED) << t.trial_id();
    EXPECT_EQ(t.attempt(), 1);
    ASSERT_TRUE(t.results().count("loss")) << t.trial_id();
    ASSERT_TRUE(t.results().count("w")) << t.trial_id();
    EXPECT_LT(t.results().at("loss"), 2.0) << t.trial_id();
    points.insert(t.params_json());
    auto m = c.Metrics(t.trial_id());
    ASSERT_TRUE(m.ok());
    std::set<int64_t> steps;
    for (const auto& x : m->metrics()) {
      if (x.name() == "train/loss") steps.insert(x.step());
    }
    EXPECT_EQ(steps.size(), 10u) << t.trial_id();  // every 20 of 200 steps
    EXPECT_EQ(m->attempts(0).worker_id(), "e2e-1");
  }
  EXPECT_EQ(points.size(), 6u);  // 3 lr x 2 optimizers, 2 seeds each
  // The learning rate matters: lr 0.1 fits better than 0.01 after 200 steps.
  double lo = 0, hi = 0;
  for (const auto& t : s->trials()) {
    auto p = nlohmann::json::parse(t.params_json());
    if (p["optimizer"] != "sgd" || t.seed() != 0) continue;
    if (p["lr"] == 0.01) lo = t.results().at("loss");
    if (p["lr"] == 0.1) hi = t.results().at("loss");
  }
  EXPECT_LT(hi, lo);
  auto [rrc, csv] = c.Smoe({"results", "toy-sgd", "--format", "csv"});
  EXPECT_EQ(rrc, 0) << csv;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 13) << csv;
  EXPECT_THAT(csv, HasSubstr("loss"));

  // `smoe analyze`: x and series default to the grid axes of the file.
  auto [arc, aout] = c.Smoe({"analyze", "toy-sgd", "--metric", "loss",
                             "--format", "json", "--bootstrap", "0"});
  ASSERT_EQ(arc, 0) << aout;
  const auto analysis = nlohmann::json::parse(aout, nullptr, false);
  ASSERT_TRUE(analysis.is_object()) << aout;
  EXPECT_EQ(analysis.value("x", ""), "lr") << aout;
  EXPECT_EQ(analysis.value("series", ""), "optimizer") << aout;
  EXPECT_THAT(aout, HasSubstr("momentum"));

  // A parameter the program refuses (exit 64): failed at once, no retry.
  const std::string refused = c.WriteFile(
      "refused.yaml",
      ExampleSweep({{"name: toy-sgd", "name: toy-refused"},
                    {"lr: [0.01, 0.03, 0.1]", "lr: [0.8]"},
                    {"optimizer: [sgd, momentum]", "optimizer: [momentum]"},
                    {"seeds: [0, 1]", "seeds: [0]"}}));
  auto [frc, fout] = c.Smoe({"sweep", "submit", refused, "--watch"});
  EXPECT_EQ(frc, 1) << fout;
  auto f = c.GetSweep("toy-refused");
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->trials_size(), 1);
  EXPECT_EQ(f->trials(0).state(), pb::TRIAL_STATE_FAILED);
  EXPECT_EQ(f->trials(0).attempt(), 1);
  auto fm = c.Metrics(f->trials(0).trial_id());
  ASSERT_TRUE(fm.ok());
  ASSERT_EQ(fm->attempts_size(), 1);
  EXPECT_EQ(fm->attempts(0).outcome(), pb::ATTEMPT_OUTCOME_BAD_SPEC);
  EXPECT_EQ(fm->attempts(0).exit_code(), 64);
  EXPECT_THAT(fm->attempts(0).message(),
              HasSubstr("lr=0.8: momentum diverges above 0.1"));
}

// SIGTERM to the worker: the program checkpoints and exits 75 (preempted,
// no error budget); the next attempt resumes from the checkpoint and ends
// with the same result as an uninterrupted run.
TEST_F(CommandKindE2eTest, SigtermCheckpointsAndTheNextAttemptResumes) {
  Cluster c("command-resume", "{}");
  c.StartCoordinator();
  c.StartWorker(0, 1, "", {"--allow-command", ExamplesDir()});
  const std::string file = c.WriteFile(
      "toy.yaml",
      ExampleSweep({{"name: toy-sgd", "name: toy-resume"},
                    {"lr: [0.01, 0.03, 0.1]", "lr: [0.05]"},
                    {"optimizer: [sgd, momentum]", "optimizer: [sgd]"},
                    {"seeds: [0, 1]", "seeds: [3]"},
                    {"fixed: {steps: 200}", "fixed: {steps: 200, step_ms: 25}"},
                    {"retries: 1", "retries: 0"}}));
  ASSERT_EQ(c.Smoe({"sweep", "submit", file}).first, 0);
  auto s = c.GetSweep("toy-resume");
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->trials_size(), 1);
  const std::string trial = s->trials(0).trial_id();
  const std::string dir =
      c.dir() + "/worker-0/trials/" + absl::StrReplaceAll(trial, {{"/", "_"}});
  // Wait for the first periodic checkpoint (step 50 of 200, ~1.3 s in).
  for (int i = 0; i < 300 && !fs::exists(dir + "/toy_checkpoint.json"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(fs::exists(dir + "/toy_checkpoint.json"));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  c.worker(0)->Signal(SIGTERM);
  EXPECT_EQ(c.worker(0)->Wait(absl::Seconds(30)), 0);
  auto m = c.Metrics(trial);
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->attempts_size(), 1);
  EXPECT_EQ(m->attempts(0).outcome(), pb::ATTEMPT_OUTCOME_PREEMPTED);
  EXPECT_EQ(m->attempts(0).exit_code(), 75);
  std::ifstream ck(dir + "/toy_checkpoint.json");
  const auto saved = nlohmann::json::parse(ck, nullptr, false);
  ASSERT_TRUE(saved.is_object());
  const int64_t saved_step = saved["step"].get<int64_t>();
  EXPECT_GT(saved_step, 50) << "the SIGTERM checkpoint, not the periodic one";
  EXPECT_LT(saved_step, 200);

  c.StartWorker(0, 1, "", {"--allow-command", ExamplesDir()});
  ASSERT_TRUE(c.WaitFor("toy-resume", Done, absl::Seconds(60)));
  s = c.GetSweep("toy-resume");
  ASSERT_EQ(s->trials(0).state(), pb::TRIAL_STATE_SUCCEEDED);
  EXPECT_EQ(s->trials(0).attempt(), 2);
  EXPECT_EQ(s->trials(0).error_count(), 0);
  const double w = s->trials(0).results().at("w");

  // The same point uninterrupted, run by hand with the contract's inputs.
  const std::string ref = c.dir() + "/reference";
  fs::create_directories(ref);
  std::ofstream(ref + "/params.json")
      << R"({"steps": 200, "lr": 0.05, "optimizer": "sgd", "noise": 0.1,
             "log_every": 20, "checkpoint_every": 50, "step_ms": 0})";
  std::ofstream(ref + "/TRIAL.json") << R"({"seed": 3})";
  auto [rc, out] = RunCommand({ExamplesDir() + "/train_toy.py"},
                              {{"SMOE_PARAMS", ref + "/params.json"},
                               {"SMOE_TRIAL", ref + "/TRIAL.json"},
                               {"SMOE_WORKDIR", ref}},
                              absl::Seconds(60));
  ASSERT_EQ(rc, 0) << out;
  const size_t at = out.find(R"({"event": "result")");
  ASSERT_NE(at, std::string::npos) << out;
  const auto result =
      nlohmann::json::parse(out.substr(at, out.find('\n', at) - at));
  EXPECT_DOUBLE_EQ(result["metrics"]["w"].get<double>(), w);
  // Every train/loss step once, across both attempts.
  auto all = c.Metrics(trial);
  std::set<int64_t> steps;
  for (const auto& x : all->metrics()) {
    if (x.name() == "train/loss") {
      EXPECT_TRUE(steps.insert(x.step()).second);
    }
  }
  EXPECT_EQ(steps.size(), 10u);
}

}  // namespace
}  // namespace smoe::e2e
