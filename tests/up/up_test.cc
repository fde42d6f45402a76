// Copyright 2026 SMoE Lab authors.
//
// `smoe up --exit-when-done` (cli/up.cc) as a user runs it: coordinator +
// two local workers + a sweep, the summary at the end, the data directory it
// leaves behind, and a second run that finds every trial already done.
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"

namespace {

namespace fs = std::filesystem;

// 2 M x 2 k x 2 seeds of a model small enough to train in seconds.
constexpr char kSweep[] = R"(name: up-e2e
kind: sraven
grid:
  M: [1, 2]
  top_k: [1, 2]
fixed:
  attention: softmax
  num_experts: 2
  width: 0.125
  depth: 1
  steps: 20
  batch_size: 8
  log_every: 10
  eval_every: 20
  num_eval: 16
  checkpoint_every: 10
  device: cpu
seeds: [0, 1]
resources: {gpus_per_trial: 0, ep_size: 1, slots: 1}
retries: 0
)";

class UpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/smoe_up_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/sweep.yaml") << kSweep;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `smoe up` from dir_ with stdout/stderr captured (stdout is not a
  // terminal, as under CI); returns the exit code (or 128 + signal).
  int Up() {
    const std::string cmd = absl::StrCat(
        "cd ", dir_, " && OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 ",
        SMOE_BIN_DIR, "/smoe up --exit-when-done --sweep sweep.yaml ",
        "--data-dir data --listen 127.0.0.1:0 --http-port 0 --workers 2 ",
        ">out.txt 2>err.txt");
    const int rc = std::system(cmd.c_str());
    out_ = Read(dir_ + "/out.txt");
    err_ = Read(dir_ + "/err.txt");
    if (WIFSIGNALED(rc)) return 128 + WTERMSIG(rc);
    return WEXITSTATUS(rc);
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // The summary line of (metric, M), e.g. "  M=2 softmax   k=1: ...".
  std::string SummaryLine(const std::string& metric, int m) const {
    const size_t at = out_.find(metric + " (mean over seeds)");
    if (at == std::string::npos) return "";
    for (absl::string_view line :
         absl::StrSplit(absl::string_view(out_).substr(at), '\n')) {
      if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line),
                           absl::StrCat("M=", m, " "))) {
        return std::string(line);
      }
    }
    return "";
  }

  std::string dir_, out_, err_;
};

TEST_F(UpTest, RunsTheSweepPrintsAccuracyAgainstKAndResumesDone) {
  ASSERT_EQ(Up(), 0) << out_ << err_;
  EXPECT_TRUE(absl::StrContains(out_, "sweep up-e2e: 8 new trials, 0 already"))
      << out_;
  EXPECT_TRUE(absl::StrContains(out_, "coordinator: 127.0.0.1:")) << out_;
  // Every (metric, M) has a line with both k values; the best k is named
  // except for OOD at M = 1, where whole rules are held out (chance).
  for (const std::string metric : {"test_acc", "ood_acc"}) {
    for (int m : {1, 2}) {
      const std::string line = SummaryLine(metric, m);
      SCOPED_TRACE(metric + " M=" + std::to_string(m) + ": " + line);
      EXPECT_TRUE(absl::StrContains(line, "k=1: ")) << out_;
      EXPECT_TRUE(absl::StrContains(line, "k=2: ")) << out_;
      const bool chance = metric == "ood_acc" && m == 1;
      EXPECT_EQ(absl::StrContains(line, "(chance by construction)"), chance);
      EXPECT_EQ(absl::StrContains(line, "-> best k = "), !chance);
    }
  }
  EXPECT_TRUE(absl::StrContains(out_, "smoe analyze up-e2e")) << out_;
  // Issue 31 item 4: the closing hints name the coordinator and token file.
  EXPECT_TRUE(absl::StrContains(out_,
                                "smoe results up-e2e --coordinator "
                                "127.0.0.1:"))
      << out_;
  EXPECT_TRUE(absl::StrContains(out_, "--token-file data/token")) << out_;

  // The admin token: 0600, and never printed when stdout is not a terminal.
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/data/token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::string token = Read(dir_ + "/data/token");
  while (!token.empty() && (token.back() == '\n' || token.back() == ' ')) {
    token.pop_back();
  }
  ASSERT_FALSE(token.empty());
  EXPECT_FALSE(absl::StrContains(out_ + err_, token));
  EXPECT_TRUE(fs::exists(dir_ + "/data/worker-token"));

  // A second run over the same data directory: nothing to train again.
  ASSERT_EQ(Up(), 0) << out_ << err_;
  EXPECT_TRUE(absl::StrContains(out_, "sweep up-e2e: 0 new trials, 8 already"))
      << out_;
  EXPECT_FALSE(SummaryLine("test_acc", 2).empty()) << out_;
}

TEST_F(UpTest, AMissingSweepFileIsNamed) {
  const std::string cmd = absl::StrCat(
      "cd ", dir_, " && ", SMOE_BIN_DIR,
      "/smoe up --exit-when-done --sweep nope.yaml --data-dir data "
      "--listen 127.0.0.1:0 --http-port -1 >out.txt 2>err.txt");
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 66);  // EX_NOINPUT
  EXPECT_TRUE(absl::StrContains(Read(dir_ + "/err.txt"), "'nope.yaml'"));
  EXPECT_FALSE(fs::exists(dir_ + "/data/token"))
      << "nothing is created before the sweep file is read";
}

// Issue 31 item 4: workers that cannot run the sweep's kind are refused
// before anything starts (they would leave it pending forever), and a bad
// sweep file is reported before anything is created.
TEST_F(UpTest, WorkerKindsMustIncludeTheSweepsKind) {
  auto run = [&](const std::string& args) {
    const std::string cmd = absl::StrCat(
        "cd ", dir_, " && ", SMOE_BIN_DIR, "/smoe up --exit-when-done ", args,
        " --data-dir data --listen 127.0.0.1:0 --http-port -1 >out.txt "
        "2>err.txt");
    const int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  EXPECT_EQ(run("--sweep sweep.yaml --kinds skillmix"), 64);
  EXPECT_TRUE(absl::StrContains(Read(dir_ + "/err.txt"),
                                "does not include the sweep's kind sraven"));
  std::ofstream(dir_ + "/bad.yaml") << "name: bad\nkind: sraven\ngrid:\n"
                                       "  topk: [1, 2]\n";
  EXPECT_EQ(run("--sweep bad.yaml"), 65);
  EXPECT_TRUE(
      absl::StrContains(Read(dir_ + "/err.txt"), "did you mean 'top_k'?"));
  EXPECT_FALSE(fs::exists(dir_ + "/data/token"));
}

}  // namespace
