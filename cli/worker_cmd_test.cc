// Copyright 2026 SMoE Lab authors.
#include "cli/worker_cmd.h"

#include <sstream>
#include <string>
#include <vector>

#include "common/flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct Parsed {
  int code = -1;  // -1: parsed, the command would run
  worker::WorkerFlags flags;
  std::string out, err;
};

// Parses `smoe worker <args>` as cli/main.cc does.
Parsed ParseWorker(const std::vector<std::string>& args) {
  Parsed p;
  CLI::App app{"test", "smoe"};
  app.require_subcommand(1);
  CLI::App* cmd = AddWorkerCommand(&app, &p.flags);
  std::vector<std::string> all = {"worker"};
  all.insert(all.end(), args.begin(), args.end());
  std::ostringstream out, err;
  std::optional<int> rc = ParseCommandLine(&app, all, out, err);
  p.out = out.str();
  p.err = err.str();
  if (rc.has_value()) {
    p.code = *rc;
  } else if (absl::Status s = CheckWorkerFlags(p.flags); !s.ok()) {
    p.code = 64;
    p.err = std::string(s.message());
  } else {
    EXPECT_TRUE(cmd->parsed());
  }
  return p;
}

TEST(WorkerCmdTest, Defaults) {
  const Parsed p = ParseWorker({});
  ASSERT_EQ(p.code, -1) << p.err;
  // Flags are parsed only: nothing connects or listens.
  EXPECT_EQ(p.flags.coordinator, "127.0.0.1:50051");  // fixed-port-ok
  EXPECT_EQ(p.flags.slots, 0);
  EXPECT_EQ(p.flags.gpus, -1);
  EXPECT_THAT(p.flags.kinds, ElementsAre("sraven"));
  EXPECT_EQ(p.flags.grace, absl::Seconds(30));
  EXPECT_EQ(p.flags.rpc_timeout, absl::Seconds(10));
  // Empty: RunWorker takes smoe-data/worker-<hostname> and
  // DefaultTokenFile().
  EXPECT_THAT(p.flags.work_dir, IsEmpty());
  EXPECT_THAT(p.flags.token_file, IsEmpty());
}

TEST(WorkerCmdTest, AllFlagsBothSyntaxes) {
  const Parsed p = ParseWorker({"--coordinator",
                                "10.0.0.1:9000",  // fixed-port-ok
                                "--token-file=/t",
                                "--slots",
                                "3",
                                "--gpus=2",
                                "--labels",
                                "zone=a,gpu=h100",
                                "--kinds=sraven,skillmix",
                                "--trainer",
                                "/bin/true",
                                "--work-dir",
                                "/w",
                                "--grace",
                                "2.5",
                                "--tls-ca",
                                "/ca.pem",
                                "--worker-id",
                                "w-7",
                                "--rpc-timeout=3s"});
  ASSERT_EQ(p.code, -1) << p.err;
  const worker::WorkerFlags& f = p.flags;
  EXPECT_EQ(f.coordinator, "10.0.0.1:9000");  // fixed-port-ok
  EXPECT_EQ(f.token_file, "/t");
  EXPECT_EQ(f.slots, 3);
  EXPECT_EQ(f.gpus, 2);
  EXPECT_EQ(f.labels.at("zone"), "a");
  EXPECT_EQ(f.labels.at("gpu"), "h100");
  EXPECT_THAT(f.kinds, ElementsAre("sraven", "skillmix"));
  EXPECT_EQ(f.trainer, "/bin/true");
  EXPECT_EQ(f.work_dir, "/w");
  EXPECT_EQ(f.grace, absl::Milliseconds(2500));
  EXPECT_EQ(f.tls_ca, "/ca.pem");
  EXPECT_EQ(f.worker_id, "w-7");
  EXPECT_EQ(f.rpc_timeout, absl::Seconds(3));
}

TEST(WorkerCmdTest, GpuIdsPickDevices) {
  const Parsed p = ParseWorker({"--gpu-ids", "4,5,7"});
  ASSERT_EQ(p.code, -1) << p.err;
  EXPECT_THAT(p.flags.gpu_ids, ElementsAre(4, 5, 7));
  EXPECT_EQ(p.flags.gpus, -1);
}

// deploy/k8s/base/worker.yaml passes `--labels=$(SMOE_LABELS)`, empty when
// no labels are set: an empty value, not the next flag.
TEST(WorkerCmdTest, EmptyLabelsValueIsNoLabels) {
  const Parsed p = ParseWorker({"--labels=", "--grace=5", "--gpus=0"});
  ASSERT_EQ(p.code, -1) << p.err;
  EXPECT_TRUE(p.flags.labels.empty());
  EXPECT_EQ(p.flags.grace, absl::Seconds(5));
  EXPECT_EQ(p.flags.gpus, 0);
}

TEST(WorkerCmdTest, BadValuesExit64NamingFlagAndValue) {
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      {{"--slots", "zero"}, {"--slots: 'zero' (expected an integer)"}},
      {{"--slots", "0"}, {"--slots: '0' (must be >= 1)"}},
      {{"--gpus=-1"}, {"--gpus: '-1'"}},
      {{"--gpu-ids", "0,x"}, {"--gpu-ids: '0,x'"}},
      {{"--gpu-ids", "1,1"}, {"index 1 repeated"}},
      {{"--gpu-ids=", "--slots=1"}, {"--gpu-ids: ''"}},
      {{"--gpus=2", "--gpu-ids=0,1"}, {"exclude each other"}},
      {{"--grace", "soon"}, {"--grace: 'soon'"}},
      {{"--rpc-timeout", "0"}, {"--rpc-timeout: '0' (must be > 0)"}},
      {{"--labels", "zone"}, {"--labels: 'zone'"}},
      {{"--kinds", "sraven,imagenet"}, {"imagenet", "known: sraven"}},
      {{"--kinds", "command"}, {"'command' needs --allow-command DIR"}},
      {{"--kinds", "sraven,command"}, {"'command' needs --allow-command DIR"}},
      {{"--allow-command="}, {"--allow-command: ''"}},
      {{"--coordinator", "localhost"}, {"--coordinator: 'localhost'"}},
      {{"--trainer="}, {"--trainer: ''"}},
      {{"--frobnicate", "1"}, {"--frobnicate", "not expected"}},
      {{"--slots"}, {"--slots", "missing"}},
      {{"stray"}, {"stray", "not expected"}},
  };
  for (const Case& c : cases) {
    const Parsed p = ParseWorker(c.args);
    EXPECT_EQ(p.code, 64) << testing::PrintToString(c.args);
    for (const std::string& w : c.want) {
      EXPECT_THAT(p.err, HasSubstr(w)) << testing::PrintToString(c.args);
    }
  }
}

// User programs (kind command) only from the directories named; repeatable.
TEST(WorkerCmdTest, AllowCommandIsRepeatable) {
  const Parsed p = ParseWorker(
      {"--allow-command", "/opt/a", "--allow-command=/opt/b", "--slots", "2"});
  ASSERT_EQ(p.code, -1) << p.err;
  EXPECT_THAT(p.flags.allow_command, ElementsAre("/opt/a", "/opt/b"));
  EXPECT_EQ(p.flags.slots, 2);
}

// A worker for the sweeps' own programs only: --kinds command with
// --allow-command (it then needs no smoe-trainer: RunWorker,
// CommandKindE2eTest).
TEST(WorkerCmdTest, CommandOnlyWorker) {
  const Parsed p =
      ParseWorker({"--kinds", "command", "--allow-command", "/opt/a"});
  ASSERT_EQ(p.code, -1) << p.err;
  EXPECT_THAT(p.flags.kinds, ElementsAre("command"));
}

TEST(WorkerCmdTest, HelpExitsZeroAndListsTheFlags) {
  const Parsed p = ParseWorker({"--help"});
  EXPECT_EQ(p.code, 0);
  for (const char* flag : {"--coordinator", "--token-file", "--gpu-ids",
                           "--kinds", "--rpc-timeout", "drain"}) {
    EXPECT_THAT(p.out, HasSubstr(flag));
  }
}

}  // namespace
}  // namespace smoe::cli
