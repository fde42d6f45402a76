// Copyright 2026 SMoE Lab authors.
//
// The daemon starting a `kind: command` attempt (command_launch.h): argv,
// environment, params.json and TRIAL.json; programs outside the worker's
// --allow-command directories never start.
#include "worker/daemon/command_launch.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/test_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "worker/daemon/daemon_test_util.h"
#include "worker/daemon/worker_daemon.h"

namespace smoe::worker {
namespace {

using json = nlohmann::json;
using ::smoe::worker::testing::FakeGatewayClient;
using ::smoe::worker::testing::FakeProcessLauncher;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string NewTempDir(const std::string& what) {
  const std::string dir =
      smoe::testing::NewTestDir(absl::StrCat("command_", what, "_"));
  char real[PATH_MAX];  // TempDir() ends in '/': compare real paths
  return realpath(dir.c_str(), real) != nullptr ? real : dir;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string MakeProgram(const std::string& dir, const std::string& name,
                        mode_t mode = 0755) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << "#!/bin/sh\nexit 0\n";
  chmod(path.c_str(), mode);
  return path;
}

class CommandLaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    allowed_ = NewTempDir("allowed");
    program_ = MakeProgram(allowed_, "train.sh");
    options_.hostname = "host-a";
    options_.trainer_path = "/opt/smoe-trainer";
    options_.work_dir = NewTempDir("work");
    options_.kinds = {"command"};
    options_.allowed_command_dirs = {allowed_};
    options_.jitter_seed = 42;
  }

  void MakeDaemon() {
    auto d = WorkerDaemon::Create(&gateway_, &launcher_, &clock_, options_);
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = *std::move(d);
  }

  void AddCommandLease(const std::string& trial, const std::string& program,
                       const std::string& params_json) {
    gateway_.AddLease(trial, 1, params_json);
    v1::TrialLease* l = gateway_.lease_responses.back().mutable_leases(0);
    l->set_kind("command");
    l->set_progress_timeout_s(60);
    l->mutable_command()->set_program(program);
    for (const char* a : {"--trial={trial}", "{workdir}", "--p", "{params}"}) {
      l->mutable_command()->add_args(a);
    }
    l->mutable_command()->set_defaults_json(
        R"({"steps": 20, "lr": 0.1, "opt": "sgd", "bias": true})");
  }

  void Step() { ASSERT_TRUE(daemon_->RunOnce().ok()); }

  std::string allowed_, program_;
  FakeClock clock_;
  FakeGatewayClient gateway_;
  FakeProcessLauncher launcher_;
  WorkerDaemonOptions options_;
  std::unique_ptr<WorkerDaemon> daemon_;
};

TEST_F(CommandLaunchTest, RunsTheProgramWithParamsInFileEnvAndArgs) {
  MakeDaemon();
  AddCommandLease("toy/t1", program_, R"({"lr": 0.5, "data": "tiny"})");
  Step();
  ASSERT_EQ(gateway_.registers.size(), 1u);
  EXPECT_THAT(gateway_.registers[0].kinds(), ElementsAre("command"));
  ASSERT_EQ(launcher_.started.size(), 1u) << gateway_.fails.size();
  auto p = launcher_.started[0];
  const std::string dir = daemon_->TrialDir("toy/t1");
  EXPECT_THAT(p->spec.argv,
              ElementsAre(program_, "--trial=" + dir + "/TRIAL.json", dir,
                          "--p", dir + "/params.json"));
  const auto& env = p->spec.env;
  EXPECT_EQ(env.at("SMOE_TRIAL"), dir + "/TRIAL.json");
  EXPECT_EQ(env.at("SMOE_WORKDIR"), dir);
  EXPECT_EQ(env.at("SMOE_PARAMS"), dir + "/params.json");
  EXPECT_EQ(env.at("SMOE_PARAM_LR"), "0.5");
  EXPECT_EQ(env.at("SMOE_PARAM_STEPS"), "20");
  EXPECT_EQ(env.at("SMOE_PARAM_OPT"), "sgd");  // strings unquoted
  EXPECT_EQ(env.at("SMOE_PARAM_BIAS"), "true");
  EXPECT_EQ(env.at("SMOE_PARAM_DATA"), "tiny");
  EXPECT_EQ(env.at("PYTHONUNBUFFERED"), "1");
  // The same as every trial: no GPUs, no API token.
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "");
  EXPECT_THAT(p->spec.unset_env, ::testing::Contains("SMOE_TOKEN"));
  const json resolved = {{"steps", 20},
                         {"lr", 0.5},
                         {"opt", "sgd"},
                         {"bias", true},
                         {"data", "tiny"}};
  EXPECT_EQ(json::parse(ReadFile(dir + "/params.json")), resolved);
  const json trial = json::parse(ReadFile(dir + "/TRIAL.json"));
  EXPECT_EQ(trial["kind"], "command");
  EXPECT_EQ(trial["params"], resolved);
  EXPECT_EQ(trial["command"]["program"], program_);

  // From here on it is the one code path: events, result, Complete.
  p->Emit(R"({"event":"metric","step":1,"name":"train/loss","value":0.5})");
  p->Emit(R"({"event":"result","metrics":{"loss":0.25}})");
  p->Exit(0);
  clock_.Advance(absl::Seconds(2));
  Step();
  ASSERT_EQ(gateway_.completes.size(), 1u);
  EXPECT_DOUBLE_EQ(gateway_.completes[0].results().at("loss"), 0.25);
  EXPECT_EQ(gateway_.TotalMetrics(), 1);
}

TEST_F(CommandLaunchTest, ExitCodesAndProgressDeadlineFollowTheContract) {
  MakeDaemon();
  AddCommandLease("toy/t1", program_, "{}");
  Step();
  ASSERT_EQ(launcher_.started.size(), 1u);
  launcher_.started[0]->Exit(64);
  Step();
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_BAD_SPEC);

  // Silent past the lease's progress_timeout_s (60 s): killed, hung.
  AddCommandLease("toy/t2", program_, "{}");
  clock_.Advance(absl::Seconds(2));
  Step();
  ASSERT_EQ(launcher_.started.size(), 2u);
  clock_.Advance(absl::Seconds(61));
  Step();
  Step();
  ASSERT_EQ(gateway_.fails.size(), 2u);
  EXPECT_EQ(gateway_.fails[1].reason(), v1::FailRequest::REASON_HUNG);
}

TEST_F(CommandLaunchTest, ProgramOutsideTheAllowedDirectoriesNeverStarts) {
  const std::string elsewhere = NewTempDir("elsewhere");
  const std::string outside = MakeProgram(elsewhere, "evil.sh");
  // A symlink inside the allowed directory to a program outside it.
  const std::string link = allowed_ + "/link.sh";
  ASSERT_EQ(symlink(outside.c_str(), link.c_str()), 0);
  const std::string not_exec = MakeProgram(allowed_, "data.txt", 0644);
  MakeDaemon();
  AddCommandLease("toy/a", outside, "{}");
  AddCommandLease("toy/b", link, "{}");
  AddCommandLease("toy/c",
                  allowed_ + "/../" +
                      elsewhere.substr(elsewhere.rfind('/') + 1) + "/evil.sh",
                  "{}");
  AddCommandLease("toy/d", allowed_ + "/missing.sh", "{}");
  AddCommandLease("toy/e", not_exec, "{}");
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(absl::Seconds(2));
    Step();
  }
  EXPECT_TRUE(launcher_.started.empty());
  ASSERT_EQ(gateway_.fails.size(), 5u);
  for (const auto& f : gateway_.fails) {
    EXPECT_EQ(f.reason(), v1::FailRequest::REASON_BAD_SPEC) << f.message();
    EXPECT_EQ(f.exit_code(), 64);
  }
  EXPECT_THAT(gateway_.fails[0].message(),
              HasSubstr(absl::StrCat("command.program '", outside,
                                     "' is not under a directory this "
                                     "worker allows (--allow-command: ",
                                     allowed_, ")")));
  EXPECT_THAT(gateway_.fails[1].message(),
              HasSubstr(absl::StrCat("(really '", outside, "')")));
  EXPECT_THAT(gateway_.fails[2].message(), HasSubstr("is not under"));
  EXPECT_THAT(gateway_.fails[3].message(),
              HasSubstr("missing.sh': not found on this worker"));
  EXPECT_THAT(gateway_.fails[4].message(),
              HasSubstr("is not an executable file"));
}

TEST_F(CommandLaunchTest, WorkerWithoutAllowCommandRunsNoProgram) {
  options_.allowed_command_dirs.clear();
  MakeDaemon();
  AddCommandLease("toy/a", program_, "{}");
  Step();
  EXPECT_TRUE(launcher_.started.empty());
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_BAD_SPEC);
  EXPECT_THAT(gateway_.fails[0].message(),
              HasSubstr("this worker runs no user programs (allowed: none); "
                        "start it with `smoe worker --allow-command DIR`"));
  EXPECT_THAT(gateway_.fails[0].message(), HasSubstr(program_));
}

// The coordinator accepts exactly trials::kCommandPlaceholders in
// `command.args`; the worker substitutes every one of them.
TEST_F(CommandLaunchTest, EveryPlaceholderTheCoordinatorAcceptsIsSubstituted) {
  v1::TrialLease l;
  l.set_trial_id("toy/t2");
  l.set_kind(trials::kCommandKind);
  l.mutable_command()->set_program(program_);
  for (const char* p : trials::kCommandPlaceholders) {
    l.mutable_command()->add_args(absl::StrCat("x", p));
  }
  const std::string dir = NewTempDir("trial");
  auto c = ResolveCommand(l, json::object(), dir, {allowed_});
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->argv.size(), 1 + std::size(trials::kCommandPlaceholders));
  EXPECT_EQ(c->argv[1], "x" + dir + "/TRIAL.json");
  EXPECT_EQ(c->argv[2], "x" + dir);
  EXPECT_EQ(c->argv[3],
            absl::StrCat("x", dir, "/", trials::kCommandParamsFile));
}

TEST(ParamEnvNameTest, UpperCasesTheName) {
  EXPECT_EQ(ParamEnvName("num_experts"), "SMOE_PARAM_NUM_EXPERTS");
}

}  // namespace
}  // namespace smoe::worker
