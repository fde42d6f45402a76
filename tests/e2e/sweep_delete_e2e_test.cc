// Copyright 2026 SMoE Lab authors.
//
// Deleting a sweep end to end (issue 18 item 4; docs/dashboard.md): a real
// coordinator and worker running the fake trainer. `smoe sweep delete`
// refuses a sweep with live trials (65, naming them and `smoe sweep cancel`),
// deletes a finished one, after which `sweep ls`, `sweep show` (66) and
// GET /api/sweeps/{id} (404) no longer know it and no checkpoint directory
// of it is left; the name can be submitted again and runs from scratch.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/cluster.h"

namespace smoe::e2e {
namespace {

namespace pb = smoe::v1;
using ::testing::HasSubstr;
using ::testing::Not;

bool Done(const pb::GetSweepResponse& s) {
  return s.sweep().state() != pb::SWEEP_STATE_ACTIVE;
}

// Checkpoint directories of sweep `sweep` in the coordinator's store.
int CheckpointDirsOf(Cluster& c, const std::string& sweep) {
  int n = 0;
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator(
           c.dir() + "/coord/checkpoints", ec)) {
    n += absl::StartsWith(d.path().filename().string(), sweep + "_") ? 1 : 0;
  }
  return n;
}

TEST(SweepDeleteE2eTest, RefusedWhileLiveThenDeletedEverywhere) {
  // Two trials of ~3 s each on one slot, checkpointing every 10 steps.
  Cluster c("delete",
            R"({"default": {"mode": "succeed", "steps": 30, "step_ms": 100,
                            "checkpoint_every": 10}, "rules": []})");
  c.StartCoordinator();
  c.StartWorker(0, 1);
  const int http_port = c.HttpPort();
  ASSERT_GT(http_port, 0) << ReadText(c.dir() + "/coordinator.log");
  const std::string file = c.WriteFile(
      "s.yaml",
      "name: dl\nkind: sraven\ngrid:\n  M: [1, 2]\nfixed: {steps: 10}\n");
  auto [rc, out] = c.Smoe({"sweep", "submit", file});
  ASSERT_EQ(rc, 0) << out;
  ASSERT_TRUE(c.WaitFor(
      "dl",
      [](const pb::GetSweepResponse& s) {
        return s.sweep().counts().running() == 1;
      },
      absl::Seconds(30)));

  // Live: refused with the CLI's failed-precondition code, nothing deleted.
  std::tie(rc, out) = c.Smoe({"sweep", "delete", "dl", "--yes"});
  EXPECT_EQ(rc, 65) << out;
  EXPECT_THAT(out, HasSubstr("sweep 'dl' has 2 live trials (1 pending, 1 "
                             "running); cancel it first (smoe sweep cancel "
                             "dl)"));
  auto [st, body] = c.Http(http_port, "DELETE", "/api/sweeps/dl");
  EXPECT_EQ(st, 409) << body;
  ASSERT_TRUE(c.GetSweep("dl").ok());

  ASSERT_TRUE(c.WaitFor("dl", Done, absl::Seconds(60)));
  auto s = c.GetSweep("dl");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->sweep().counts().succeeded(), 2);
  std::tie(st, body) = c.Http(http_port, "GET", "/api/sweeps/dl");
  EXPECT_EQ(st, 200) << body;

  // Finished: deleted (stdin is no terminal: no question asked).
  std::tie(rc, out) = c.Smoe({"sweep", "delete", "dl", "--yes"});
  ASSERT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("deleted sweep dl (2 trials)"));
  std::tie(rc, out) = c.Smoe({"sweep", "ls"});
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, Not(HasSubstr("dl ")));
  std::tie(rc, out) = c.Smoe({"sweep", "show", "dl"});
  EXPECT_EQ(rc, 66) << out;
  std::tie(st, body) = c.Http(http_port, "GET", "/api/sweeps/dl");
  EXPECT_EQ(st, 404) << body;
  std::tie(st, body) = c.Http(http_port, "DELETE", "/api/sweeps/dl");
  EXPECT_EQ(st, 404) << body;
  std::tie(rc, out) = c.Smoe({"sweep", "delete", "dl", "--yes"});
  EXPECT_EQ(rc, 66) << out;
  EXPECT_THAT(out, HasSubstr("'dl'"));
  EXPECT_EQ(CheckpointDirsOf(c, "dl"), 0);
  EXPECT_THAT(ReadText(c.dir() + "/coordinator.log"),
              HasSubstr("sweep dl deleted (2 trials)"));

  // The name again: a new sweep that runs from scratch.
  std::tie(rc, out) = c.Smoe({"sweep", "submit", file});
  ASSERT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("2"));
  ASSERT_TRUE(c.WaitFor("dl", Done, absl::Seconds(60)));
  s = c.GetSweep("dl");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->sweep().counts().succeeded(), 2);
  for (const auto& t : s->trials()) EXPECT_EQ(t.attempt(), 1) << t.trial_id();
}

}  // namespace
}  // namespace smoe::e2e
