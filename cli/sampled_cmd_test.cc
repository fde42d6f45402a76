// Copyright 2026 SMoE Lab authors.
//
// Sampled axes through the CLI (issue 33 items 1 and 4): `smoe sweep
// validate` shows the sampled axes and asha's cost estimate; against an
// in-process coordinator, submit, `sweep extend --samples N` and `sweep show
// --trials` (the sampled parameter as a column).
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "cli/client.h"
#include "cli/local_coordinator_for_test.h"
#include "cli/sweep_cmds.h"
#include "common/test_dir.h"
#include "coordinator/server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::cli {
namespace {

using ::testing::HasSubstr;

constexpr char kSweep[] = R"(name: cli-sampled
kind: sraven
grid:
  M: [1, 2]
  top_k: [1, 2, 4, 8]
sample:
  lr: {loguniform: [0.0003, 0.03]}
samples: 8
sample_seed: 7
fixed: {num_experts: 8, steps: 1000}
seeds: [0, 1, 2]
search: {strategy: asha, metric: val_acc, min_steps: 125, reduction: 2}
)";

std::string WriteFile(const std::string& dir, const std::string& text) {
  const std::string path = dir + "/sweep.yaml";
  std::ofstream(path) << text;
  return path;
}

TEST(SampledCmdTest, ValidateShowsSampledAxesAndTheAshaCost) {
  const std::string dir = smoe::testing::NewTestDir("cli_sampled_validate_");
  const std::string file = WriteFile(dir, kSweep);
  std::ostringstream out;
  ASSERT_EQ(ValidateSweepCmd(file, out), kExitOk);
  const std::string s = out.str();
  EXPECT_THAT(s, HasSubstr("M[2] x top_k[4] x sampled(lr)[8] x seeds[3] = "
                           "192 trials"));
  EXPECT_THAT(s, HasSubstr("sampled lr: loguniform [0.0003, 0.03] (log axis)"));
  EXPECT_THAT(s, HasSubstr("samples: 8 draws of sample_seed 7"));
  EXPECT_THAT(s, HasSubstr("asha on val_acc (max) per M x top_k"));
  EXPECT_THAT(s, HasSubstr("configurations judged by their seed mean"));
  EXPECT_THAT(s, HasSubstr("asha cost estimate: 60000 trial-steps (8 groups, "
                           "rungs at 125, 250, 500): 0.31x the full grid, "
                           "2.50x one untuned grid"));
  // A bad range is refused, naming the field and value (exit 65).
  std::string bad = kSweep;
  bad.replace(bad.find("[0.0003, 0.03]"), 14, "[0, 0.03]");
  std::ostringstream err;
  EXPECT_EQ(ValidateSweepCmd(WriteFile(dir, bad), err), kExitDataErr);
}

TEST(SampledCmdTest, ExtendSamplesAndShowThroughTheCoordinator) {
  const std::string dir = smoe::testing::NewTestDir("cli_sampled_extend_");
  auto server = coordinator::CoordinatorServer::Start(
      test_support::LocalServer(dir + "/data"));
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = test_support::AdminClient(**server, dir + "/data");
  ASSERT_TRUE(client.ok()) << client.status();
  const std::string file = WriteFile(dir, kSweep);
  std::ostringstream out;
  ASSERT_EQ(SubmitSweepCmd(**client, file, false, false, out), kExitOk);
  EXPECT_THAT(out.str(), HasSubstr("192 new trials"));
  out.str("");
  ASSERT_EQ(SubmitSweepCmd(**client, file, false, false, out), kExitOk);
  EXPECT_THAT(out.str(), HasSubstr("0 new trials, 192 already present"));
  out.str("");
  ASSERT_EQ(ExtendSweepCmd(**client, "cli-sampled", "samples", {"2"}, out),
            kExitOk);
  EXPECT_THAT(out.str(), HasSubstr("extended cli-sampled: 2 more sampled "
                                   "configurations (now 10 draws): 48 new "
                                   "trials (240 in total)"));
  // Up to a total: 12 draws in all, then a retry adds nothing.
  out.str("");
  ASSERT_EQ(
      ExtendSweepCmd(**client, "cli-sampled", "samples_total", {"12"}, out),
      kExitOk);
  EXPECT_THAT(out.str(), HasSubstr("extended cli-sampled to 12 sampled "
                                   "configurations: 48 new trials (288 in "
                                   "total)"));
  out.str("");
  ASSERT_EQ(
      ExtendSweepCmd(**client, "cli-sampled", "samples_total", {"12"}, out),
      kExitOk);
  EXPECT_THAT(out.str(), HasSubstr("extended cli-sampled to 12 sampled "
                                   "configurations: 0 new trials (288 in "
                                   "total)"));
  out.str("");
  ASSERT_EQ(ShowSweepCmd(**client, "cli-sampled", true, out), kExitOk);
  const std::string show = out.str();
  EXPECT_THAT(show, HasSubstr("lr: loguniform [0.0003, 0.03], drawn ["));
  EXPECT_THAT(show, HasSubstr("samples: 12 (sample_seed 7)"));
  // The trials table has an lr column (header and a drawn value).
  EXPECT_THAT(show, ::testing::ContainsRegex("TRIAL +STATE +M +top_k +lr "));
  // A sweep without sampled axes cannot be extended by samples.
  std::ostringstream refused;
  ASSERT_EQ(SubmitSweepCmd(**client,
                           WriteFile(dir,
                                     "name: plain\nkind: sraven\ngrid: {M: "
                                     "[1]}\nfixed: {steps: 10}\n"),
                           false, false, refused),
            kExitOk);
  EXPECT_NE(ExtendSweepCmd(**client, "plain", "samples", {"2"}, refused),
            kExitOk);
}

}  // namespace
}  // namespace smoe::cli
