// Copyright 2026 SMoE Lab authors.
//
// smoe-trainer (kind "sraven", cpu-info) and smoe-trainer-full (everything)
// as the worker daemon and users run them (worker/trainer/trainer_cli.h).
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace {

namespace fs = std::filesystem;

class TrainerSplitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/smoe_trainer_split_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // smoe-trainer alone, without smoe-trainer-full next to it (what
    // `scripts/up` builds).
    fs::create_directories(dir_ + "/alone");
    fs::copy_file(std::string(SMOE_BIN_DIR) + "/smoe-trainer",
                  dir_ + "/alone/smoe-trainer");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `cmd` with stdout/stderr captured; returns the exit code (or
  // 128 + signal).
  int Run(const std::string& cmd) {
    const int rc = std::system(
        absl::StrCat(cmd, " >", dir_, "/out.txt 2>", dir_, "/err.txt").c_str());
    out_ = Read(dir_ + "/out.txt");
    err_ = Read(dir_ + "/err.txt");
    if (WIFSIGNALED(rc)) return 128 + WTERMSIG(rc);
    return WEXITSTATUS(rc);
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::string WriteTrial(const std::string& kind, const std::string& params) {
    const std::string path = dir_ + "/trial-" + kind + ".json";
    std::ofstream(path) << R"({"sweep_id": "sw", "trial_id": "sw/t0", )"
                        << R"("attempt": 1, "kind": ")" << kind
                        << R"(", "seed": 5, "params": )" << params << "}";
    return path;
  }

  std::string dir_, out_, err_;
};

TEST_F(TrainerSplitTest, TheLeanTrainerTrainsSravenWithoutTheFullOne) {
  const std::string trial = WriteTrial(
      "sraven", R"({"M": 1, "width": 0.125, "depth": 1, "num_experts": 2,
                    "top_k": 1, "steps": 3, "batch_size": 8, "log_every": 1,
                    "eval_every": 3, "num_eval": 8})");
  ASSERT_EQ(Run(absl::StrCat(dir_, "/alone/smoe-trainer run --trial ", trial,
                             " --workdir ", dir_, "/work")),
            0)
      << err_;
  EXPECT_TRUE(absl::StrContains(out_, R"("event":"result")")) << out_;
  EXPECT_FALSE(absl::StrContains(err_, "smoe-trainer-full")) << err_;
}

TEST_F(TrainerSplitTest, AMissingFullTrainerIsNamedWithHowToBuildIt) {
  const std::string trial = WriteTrial("skillmix", R"({"model": "/none"})");
  for (const std::string& args :
       {absl::StrCat("run --trial ", trial, " --workdir ", dir_, "/work"),
        std::string("doctor --quick"), std::string("make-random-model"),
        std::string("mixtral-logits --help")}) {
    EXPECT_EQ(Run(absl::StrCat(dir_, "/alone/smoe-trainer ", args)), 1)
        << args << ": " << err_;
    EXPECT_TRUE(absl::StrContains(
        err_, "smoe-trainer: cannot run " + dir_ +
                  "/alone/smoe-trainer-full: No such file or directory"))
        << args << ": " << err_;
    EXPECT_TRUE(
        absl::StrContains(err_, "scripts/build default smoe-trainer-full"))
        << err_;
    EXPECT_EQ(out_, "") << args;
  }
}

TEST_F(TrainerSplitTest, SkillMixAndToolsAreForwardedWithTheirExitCodes) {
  const std::string bin = SMOE_BIN_DIR;
  // A skillmix trial with a bad param: smoe-trainer-full's parser names it
  // and exits 64 (the lean program has no Skill-Mix parser).
  const std::string trial =
      WriteTrial("skillmix", R"({"model": "/none", "ept": "many"})");
  EXPECT_EQ(Run(absl::StrCat(bin, "/smoe-trainer run --trial ", trial,
                             " --workdir ", dir_, "/work")),
            64)
      << err_;
  EXPECT_TRUE(absl::StrContains(err_, "ept")) << err_;
  // The tools' own flags and usage errors.
  EXPECT_EQ(Run(bin + "/smoe-trainer make-random-model --help"), 0) << err_;
  EXPECT_TRUE(absl::StrContains(out_, "--out")) << out_;
  EXPECT_EQ(Run(bin + "/smoe-trainer mixtral-logits --tokens 1"), 64);
  EXPECT_TRUE(absl::StrContains(err_, "--model is required")) << err_;
  // The lean program's help lists what it forwards.
  EXPECT_EQ(Run(bin + "/smoe-trainer --help"), 0);
  EXPECT_TRUE(absl::StrContains(out_,
                                "make-random-model, mixtral-logits, "
                                "doctor"))
      << out_;
}

}  // namespace
