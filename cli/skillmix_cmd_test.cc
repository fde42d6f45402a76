// Copyright 2026 SMoE Lab authors.
#include "cli/skillmix_cmd.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::cli {
namespace {

using ::testing::HasSubstr;

class SkillMixCmdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "skillmix_cmd_" + std::to_string(::getpid()) +
           "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A stand-in for smoe-trainer: keeps the TRIAL.json it got and prints
  // `events`, then exits with `rc`.
  std::string FakeTrainer(const std::string& events, int rc) {
    const std::string path = dir_ + "/fake-trainer.sh";
    std::ofstream(path) << "#!/bin/sh\n"
                        << "cp \"$3\" \"$5/seen.json\"\n"
                        << "cat <<'EOF'\n"
                        << events << "EOF\n"
                        << "exit " << rc << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }
  std::string dir_;
};

TEST_F(SkillMixCmdTest, WritesTrialAndPrintsMeanAndSe) {
  SkillMixRunFlags f;
  f.model = "/models/mixtral";
  f.k_skills = 3;
  f.ept = 4;
  f.grader = "local";
  f.extra = {"top_k=40", "exp_path=other"};
  std::ostringstream err;
  ASSERT_TRUE(SkillMixParamsFromFlags(&f, err));
  f.run.workdir = dir_ + "/work";
  f.run.trainer = FakeTrainer(
      "{\"event\":\"progress\",\"step\":0,\"total\":2}\n"
      "{\"event\":\"metric\",\"step\":1,\"name\":\"skillmix/ratio_full_marks\","
      "\"value\":1}\n"
      "{\"event\":\"progress\",\"step\":2,\"total\":2}\n"
      "{\"event\":\"result\",\"metrics\":{\"ratio_full_marks\":0.5,"
      "\"ratio_full_marks_se\":0.1,\"skill_fraction\":0.75}}\n",
      0);
  std::ostringstream out;
  EXPECT_EQ(RunSkillMixCommand(f.run, out), 0);
  EXPECT_THAT(out.str(), HasSubstr("ratio_full_marks     0.5000 ± 0.1000"));
  EXPECT_THAT(out.str(), HasSubstr("skill_fraction       0.7500\n"));
  std::ifstream seen(dir_ + "/work/seen.json");
  const auto trial = nlohmann::json::parse(seen);
  EXPECT_EQ(trial["kind"], "skillmix");
  EXPECT_EQ(trial["params"]["model"], "/models/mixtral");
  EXPECT_EQ(trial["params"]["k_skills"], 3);
  EXPECT_EQ(trial["params"]["ept"], 4);
  EXPECT_EQ(trial["params"]["grader"], "local");
  EXPECT_EQ(trial["params"]["top_k"], 40);
  EXPECT_EQ(trial["params"]["exp_path"], "other");
}

TEST_F(SkillMixCmdTest, PassesTrainerExitCodes) {
  SkillMixRunFlags f;
  f.model = "m";
  std::ostringstream err;
  ASSERT_TRUE(SkillMixParamsFromFlags(&f, err));
  f.run.workdir = dir_ + "/work";
  f.run.trainer = FakeTrainer("", 75);
  std::ostringstream out;
  EXPECT_EQ(RunSkillMixCommand(f.run, out), 75);
  f.run.trainer = dir_ + "/missing";
  EXPECT_EQ(RunSkillMixCommand(f.run, out), 69);
  f.extra = {"novalue"};
  EXPECT_FALSE(SkillMixParamsFromFlags(&f, err));
  EXPECT_THAT(err.str(), HasSubstr("'novalue' is not key=value"));
}

}  // namespace
}  // namespace smoe::cli
