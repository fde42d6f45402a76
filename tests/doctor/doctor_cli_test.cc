// Copyright 2026 SMoE Lab authors.
//
// `smoe doctor` end to end (label e2e): the built smoe binary runs the
// smoe-trainer next to it. On this CPU machine: exit 0, one PASS/SKIP line
// per check, a report naming every check; an injected fault exits 1 with
// FAIL in the JSON; usage errors exit 64 before the trainer starts; a
// missing trainer is a failure, not a crash.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

extern char** environ;

namespace smoe {
namespace {

using json = nlohmann::json;

// The checks `smoe-trainer doctor` reports (worker/trainer/doctor.h).
const std::vector<std::string> kChecks = {
    "versions",       "kernel.router_topk",
    "kernel.permute", "kernel.grouped_gemm",
    "ops.moe_cpu",    "ops.moe_cuda",
    "comm.local",     "comm.nccl",
    "train.cpu_fp32", "train.gpu_fp32",
    "train.bf16",     "bench.device"};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class DoctorCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(
        ::testing::TempDir(), "smoe-doctor-cli-", ::getpid(), "-",
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs `smoe <args>` with stdout and stderr in separate files; returns the
  // exit code (-1 on timeout: the process group is killed).
  int Smoe(const std::vector<std::string>& args, int timeout_s = 90) {
    std::vector<std::string> argv = {std::string(SMOE_BIN_DIR) + "/smoe"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    const std::string out = dir_ + "/stdout", err = dir_ + "/stderr";
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    pid_t pid = -1;
    const int rc =
        posix_spawn(&pid, cargv[0], &fa, &attr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    EXPECT_EQ(rc, 0) << "spawn " << cargv[0];
    if (rc != 0) return -1;
    int status = 0;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(-pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        ADD_FAILURE() << "smoe doctor timed out";
        stdout_ = ReadAll(out);
        stderr_ = ReadAll(err);
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    stdout_ = ReadAll(out);
    stderr_ = ReadAll(err);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  std::string dir_, stdout_, stderr_;
};

TEST_F(DoctorCliTest, QuickRunPassesAndWritesAReportWithEveryCheck) {
  const std::string report = dir_ + "/report.json";
  ASSERT_EQ(Smoe({"doctor", "--quick", "--report", report}), 0)
      << stdout_ << stderr_;
  // One line per check, in order, each PASS or SKIP on this CPU machine.
  std::vector<std::string> lines;
  for (absl::string_view l : absl::StrSplit(stdout_, '\n')) {
    if (absl::StartsWith(l, "PASS ") || absl::StartsWith(l, "SKIP ") ||
        absl::StartsWith(l, "FAIL ")) {
      lines.emplace_back(l);
    }
  }
  ASSERT_EQ(lines.size(), kChecks.size()) << stdout_;
  for (size_t i = 0; i < kChecks.size(); ++i) {
    EXPECT_TRUE(absl::StrContains(lines[i], " " + kChecks[i] + ": "))
        << lines[i];
    EXPECT_FALSE(absl::StartsWith(lines[i], "FAIL")) << lines[i];
  }
  EXPECT_TRUE(absl::StrContains(stdout_, "PASS train.cpu_fp32: ")) << stdout_;
  EXPECT_TRUE(absl::StrContains(stdout_, "report: " + report)) << stdout_;

  const json j = json::parse(ReadAll(report), nullptr, false);
  ASSERT_TRUE(j.is_object()) << ReadAll(report);
  EXPECT_EQ(j["schema"], "smoe-doctor/1");
  EXPECT_EQ(j["verdict"], "PASS");
  EXPECT_EQ(j["options"]["quick"], true);
  EXPECT_FALSE(j["host"]["hostname"].get<std::string>().empty());
  EXPECT_TRUE(j["versions"]["torch"]["version"].is_string());
  ASSERT_EQ(j["checks"].size(), kChecks.size());
  for (size_t i = 0; i < kChecks.size(); ++i) {
    const json& c = j["checks"][i];
    EXPECT_EQ(c["name"], kChecks[i]);
    EXPECT_TRUE(c["verdict"] == "PASS" || c["verdict"] == "SKIP") << c;
    EXPECT_FALSE(c["summary"].get<std::string>().empty()) << c;
  }
}

TEST_F(DoctorCliTest, InjectedFaultExitsOneWithFailInTheJson) {
  ASSERT_EQ(Smoe({"doctor", "--json", "--only", "comm.local", "--inject-fault",
                  "comm.local"}),
            1)
      << stdout_ << stderr_;
  const json j = json::parse(stdout_, nullptr, false);
  ASSERT_TRUE(j.is_object()) << stdout_;
  EXPECT_EQ(j["verdict"], "FAIL");
  for (const json& c : j["checks"]) {
    EXPECT_EQ(c["verdict"], c["name"] == "comm.local" ? "FAIL" : "SKIP") << c;
  }
  // With --json the human lines go to stderr.
  EXPECT_TRUE(absl::StrContains(stderr_, "FAIL comm.local: ")) << stderr_;
}

TEST_F(DoctorCliTest, UsageErrorsAndAMissingTrainer) {
  EXPECT_EQ(Smoe({"doctor", "--bogus"}), 64);
  EXPECT_TRUE(absl::StrContains(stderr_, "not expected: --bogus")) << stderr_;
  EXPECT_EQ(Smoe({"doctor", "--report"}), 64);
  // Check names are the trainer's to validate.
  EXPECT_EQ(Smoe({"doctor", "--only", "nosuch"}), 64);
  EXPECT_TRUE(absl::StrContains(stderr_, "nosuch")) << stderr_;
  EXPECT_EQ(Smoe({"doctor", "--help"}), 0);
  EXPECT_TRUE(absl::StrContains(stdout_, "--report FILE")) << stdout_;
  EXPECT_EQ(Smoe({"doctor", "--trainer", dir_ + "/none"}), 1);
  EXPECT_TRUE(absl::StrContains(stderr_, "FAIL trainer: ")) << stderr_;
  // `smoe --help` lists the command.
  EXPECT_EQ(Smoe({"--help"}), 0);
  EXPECT_TRUE(absl::StrContains(stdout_, "doctor")) << stdout_;
}

}  // namespace
}  // namespace smoe
