// Copyright 2026 SMoE Lab authors.
//
// `smoe-trainer doctor` on the CPU (label unit): every check PASSes or SKIPs
// with a reason, the JSON report parses and names every check, injected
// faults make the comparing checks FAIL, and the command line's exit codes.
#include "worker/trainer/doctor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kernels/all_to_all/nccl_communicator.h"
#include "kernels/common/device.h"
#include "nlohmann/json.hpp"
#include "worker/trainer/trainer.h"

namespace smoe::trainer {
namespace {

using json = nlohmann::json;

DoctorOptions Fast() {
  DoctorOptions o;
  o.quick = true;
  o.train_steps = 6;
  return o;
}

int Command(std::vector<std::string> args) {
  args.insert(args.begin(), "doctor");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return RunDoctorCommand(static_cast<int>(argv.size()), argv.data());
}

class DoctorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ConfigureTorchThreads(); }
};

TEST_F(DoctorTest, EveryCheckPassesOrSkipsWithAReasonAndTheReportHasThemAll) {
  DoctorOptions o = Fast();
  std::vector<std::string> progress;
  o.on_check = [&](const DoctorCheck& c) { progress.push_back(c.name); };
  const DoctorReport r = RunDoctor(o);
  EXPECT_EQ(progress, DoctorCheckNames());
  ASSERT_EQ(r.checks.size(), DoctorCheckNames().size());
  for (const DoctorCheck& c : r.checks) {
    EXPECT_NE(c.verdict, Verdict::kFail) << FormatCheckLine(c);
    EXPECT_FALSE(c.summary.empty()) << c.name;
  }
  EXPECT_TRUE(r.ok());
  // The checks with CPU content run on every machine.
  for (const DoctorCheck& c : r.checks) {
    if (c.name == "versions" || c.name == "ops.moe_cpu" ||
        c.name == "comm.local" || c.name == "train.cpu_fp32") {
      EXPECT_EQ(c.verdict, Verdict::kPass) << FormatCheckLine(c);
    }
    if (kernels::CudaDeviceCount() == 0 &&
        (absl::StartsWith(c.name, "kernel.") || c.name == "bench.device" ||
         c.name == "ops.moe_cuda" || c.name == "train.gpu_fp32")) {
      EXPECT_EQ(c.verdict, Verdict::kSkip) << c.name;
      EXPECT_TRUE(absl::StrContains(c.summary, "no CUDA device")) << c.summary;
    }
    if (kernels::CudaDeviceCount() == 0 && c.name == "comm.nccl") {
      EXPECT_EQ(c.verdict, Verdict::kSkip);
      EXPECT_TRUE(absl::StrContains(c.summary, kernels::BuiltWithNccl()
                                                   ? "NCCL skipped"
                                                   : "without NCCL"))
          << c.summary;
    }
  }

  const json j = json::parse(DoctorReportJson(r, o).dump());
  EXPECT_EQ(j["schema"], "smoe-doctor/1");
  EXPECT_EQ(j["verdict"], "PASS");
  EXPECT_FALSE(j["host"]["hostname"].get<std::string>().empty());
  EXPECT_FALSE(j["versions"]["torch"]["version"].get<std::string>().empty());
  EXPECT_EQ(j["versions"]["build"]["SMOE_WITH_CUDA"], kernels::BuiltWithCuda());
  ASSERT_TRUE(j["checks"].is_array());
  std::vector<std::string> names;
  int counted = 0;
  for (const json& c : j["checks"]) {
    names.push_back(c["name"]);
    EXPECT_TRUE(c["verdict"] == "PASS" || c["verdict"] == "SKIP") << c;
    EXPECT_TRUE(c["summary"].is_string());
    EXPECT_TRUE(c["figures"].is_object());
    EXPECT_TRUE(c["seconds"].is_number());
  }
  for (const char* v : {"PASS", "FAIL", "SKIP"}) {
    counted += j["counts"][v].get<int>();
  }
  EXPECT_EQ(names, DoctorCheckNames());
  EXPECT_EQ(counted, static_cast<int>(names.size()));
  // The CPU training curve is in the report (6 steps, finite).
  for (const json& c : j["checks"]) {
    if (c["name"] == "train.cpu_fp32") {
      EXPECT_EQ(c["figures"]["loss"].size(), 6u);
    }
  }

  const std::string table = FormatDoctorTable(r);
  std::vector<std::string> lines =
      absl::StrSplit(table, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), DoctorCheckNames().size() + 1);
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    EXPECT_TRUE(absl::StartsWith(lines[i], "PASS " + names[i] + ": ") ||
                absl::StartsWith(lines[i], "SKIP " + names[i] + ": "))
        << lines[i];
  }
  EXPECT_TRUE(absl::StartsWith(lines.back(), "summary: ")) << lines.back();
}

TEST_F(DoctorTest, InjectedFaultsMakeTheComparisonsFail) {
  DoctorOptions o = Fast();
  o.only = {"ops.moe_cpu", "comm.local", "train.cpu_fp32"};
  o.inject_fault = o.only;
  const DoctorReport r = RunDoctor(o);
  EXPECT_FALSE(r.ok());
  for (const DoctorCheck& c : r.checks) {
    if (o.only.count(c.name) != 0) {
      EXPECT_EQ(c.verdict, Verdict::kFail) << FormatCheckLine(c);
    } else {
      EXPECT_EQ(c.verdict, Verdict::kSkip) << c.name;
      EXPECT_EQ(c.summary, "not selected (--only)");
    }
  }
  EXPECT_EQ(DoctorReportJson(r, o)["verdict"], "FAIL");
  // Every comparing check names its fault-injection target.
  for (const std::string& name : DoctorFaultableChecks()) {
    EXPECT_NE(
        std::find(DoctorCheckNames().begin(), DoctorCheckNames().end(), name),
        DoctorCheckNames().end());
  }
}

TEST_F(DoctorTest, CommandLineExitCodesAndReportFile) {
  EXPECT_EQ(Command({"--bogus"}), 64);
  EXPECT_EQ(Command({"--report"}), 64);
  EXPECT_EQ(Command({"--only", "nosuch"}), 64);
  EXPECT_EQ(Command({"--inject-fault", "versions"}), 64);
  EXPECT_EQ(Command({"--help"}), 0);

  const std::string path =
      absl::StrCat(::testing::TempDir(), "doctor-", ::getpid(), ".json");
  EXPECT_EQ(Command({"--quick", "--only", "comm.local", "--report", path}), 0);
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  const json j = json::parse(text.str());
  EXPECT_EQ(j["verdict"], "PASS");
  EXPECT_EQ(j["checks"].size(), DoctorCheckNames().size());
  EXPECT_EQ(j["options"]["only"], json::array({"comm.local"}));

  EXPECT_EQ(Command({"--only=comm.local", "--inject-fault=comm.local",
                     "--report=" + path}),
            1);
  std::ifstream in2(path);
  std::stringstream text2;
  text2 << in2.rdbuf();
  EXPECT_EQ(json::parse(text2.str())["verdict"], "FAIL");
  std::remove(path.c_str());
  // An unwritable report is an error, not a silent success.
  EXPECT_EQ(Command({"--only", "comm.local", "--report",
                     "/nonexistent-dir/doctor.json"}),
            1);
}

}  // namespace
}  // namespace smoe::trainer
