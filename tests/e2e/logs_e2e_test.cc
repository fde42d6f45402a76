// Copyright 2026 SMoE Lab authors.
//
// Attempt logs and system metrics end to end (issue 18 items 1 and 5;
// docs/logs-and-system-metrics.md): a real coordinator and worker running the
// fake trainer. A failing trial's stderr tail reaches `smoe logs` and
// GET /api/trials/{id}/logs; a running trial's live tail does too, and
// `smoe logs --follow` prints it until the attempt ends; secrets in the
// worker's environment are redacted; sys/cpu_percent and sys/rss_mb are
// stored from the heartbeats.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/cluster.h"

namespace smoe::e2e {
namespace {

namespace pb = smoe::v1;
using ::testing::HasSubstr;
using ::testing::Not;

std::string TrialWithM(const pb::GetSweepResponse& s, int m) {
  for (const auto& t : s.trials()) {
    if (nlohmann::json::parse(t.params_json())["M"] == m) return t.trial_id();
  }
  return "";
}

TEST(LogsE2eTest, FailedAndRunningTrialLogsAndSystemMetrics) {
  // M=1 runs ~6 s, logging every 5 steps; M=3 crashes at step 3. The worker
  // carries a secret that the M=1 trainer echoes.
  Cluster c("logs",
            R"({"default": {"mode": "succeed", "steps": 60, "step_ms": 100,
                            "log_every": 5, "echo_env": "LAB_API_KEY"},
                "rules": [{"match": {"M": 3}, "mode": "crash", "steps": 6,
                           "at_step": 3, "echo_env": ""}]})");
  c.StartCoordinator();
  const std::string secret = "sk-e2e-very-secret-value";
  c.StartWorker(0, 2, "", {}, {{"LAB_API_KEY", secret}});
  const int http_port = c.HttpPort();
  ASSERT_GT(http_port, 0) << ReadText(c.dir() + "/coordinator.log");
  const std::string file = c.WriteFile(
      "s.yaml",
      "name: lg\nkind: sraven\ngrid:\n  M: [1, 3]\nfixed: {steps: 10}\n"
      "retries: 0\n");
  auto [rc, out] = c.Smoe({"sweep", "submit", file});
  ASSERT_EQ(rc, 0) << out;

  // The running trial: wait until it is well under way.
  std::string running_id;
  ASSERT_TRUE(c.WaitFor(
      "lg",
      [&](const pb::GetSweepResponse& s) {
        running_id = TrialWithM(s, 1);
        for (const auto& t : s.trials()) {
          if (t.trial_id() == running_id &&
              t.state() == pb::TRIAL_STATE_RUNNING) {
            return true;
          }
        }
        return false;
      },
      absl::Seconds(30)));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));

  // --follow, started while it runs, ends when the attempt ends.
  auto follow = std::async(std::launch::async, [&] {
    return c.Smoe({"logs", running_id, "--follow"});
  });

  // Live tail through the CLI: fresh (asked for), with stderr and the
  // non-event stdout lines, never the events, the secret redacted.
  auto [lrc, live] = c.Smoe({"logs", running_id});
  EXPECT_EQ(lrc, 0) << live;
  EXPECT_THAT(live, HasSubstr("(running: live tail)"));
  EXPECT_THAT(live, HasSubstr("attempt 1 mode succeed from step"));
  EXPECT_THAT(live, HasSubstr("smoe-fake-trainer: at step 5"));
  EXPECT_THAT(live, HasSubstr("plain stdout line at step 5"));
  EXPECT_THAT(live, Not(HasSubstr("\"event\"")));
  EXPECT_THAT(live, HasSubstr("LAB_API_KEY=[REDACTED]"));
  EXPECT_THAT(live, Not(HasSubstr(secret)));
  // And through the dashboard's route.
  auto [hs, hbody] = c.Http(http_port, "GET",
                            absl::StrCat("/api/trials/", running_id, "/logs"));
  ASSERT_EQ(hs, 200) << hbody;
  nlohmann::json hj = nlohmann::json::parse(hbody);
  EXPECT_EQ(hj["attempt"], 1);
  EXPECT_EQ(hj["running"], true);
  EXPECT_GT(hj["as_of_ms"].get<int64_t>(), 0);
  EXPECT_THAT(hj["text"].get<std::string>(), HasSubstr("at step 5"));

  ASSERT_TRUE(c.WaitFor(
      "lg",
      [](const pb::GetSweepResponse& s) {
        return s.sweep().state() != pb::SWEEP_STATE_ACTIVE;
      },
      absl::Seconds(60)));
  auto [frc, followed] = follow.get();
  EXPECT_EQ(frc, 0) << followed;
  EXPECT_THAT(followed, HasSubstr("attempt 1 mode succeed from step"));
  EXPECT_THAT(followed, HasSubstr("smoe-fake-trainer: at step 60"));
  EXPECT_THAT(followed, HasSubstr("attempt 1 ended"));
  // Every line once, in order, although it was printed piecewise.
  const std::string l25 = "smoe-fake-trainer: at step 25\n";
  const std::string l30 = "smoe-fake-trainer: at step 30\n";
  EXPECT_NE(followed.find(l30), std::string::npos) << followed;
  EXPECT_EQ(followed.find(l30), followed.rfind(l30)) << followed;
  EXPECT_LT(followed.find(l25), followed.find(l30)) << followed;

  // The failed trial: its stderr tail is stored with the attempt.
  auto s = c.GetSweep("lg");
  ASSERT_TRUE(s.ok());
  const std::string failed_id = TrialWithM(*s, 3);
  for (const auto& t : s->trials()) {
    if (t.trial_id() == failed_id) {
      EXPECT_EQ(t.state(), pb::TRIAL_STATE_FAILED);
    }
  }
  auto [src, stored] = c.Smoe({"logs", failed_id});
  EXPECT_EQ(src, 0) << stored;
  EXPECT_THAT(stored, HasSubstr("planned crash at step 3"));
  EXPECT_THAT(stored, Not(HasSubstr("running")));
  auto [fs, fbody] = c.Http(http_port, "GET",
                            absl::StrCat("/api/trials/", failed_id, "/logs"));
  ASSERT_EQ(fs, 200) << fbody;
  nlohmann::json fj = nlohmann::json::parse(fbody);
  EXPECT_EQ(fj["running"], false);
  EXPECT_EQ(fj["attempts"], nlohmann::json::array({1}));
  EXPECT_THAT(fj["text"].get<std::string>(),
              HasSubstr("planned crash at step 3"));
  EXPECT_EQ(fj["total_bytes"].get<int64_t>(),
            static_cast<int64_t>(fj["text"].get<std::string>().size()));
  // The completed trial's log is stored too, and the secret never.
  auto [crc, completed] = c.Smoe({"logs", running_id, "--attempt", "1"});
  EXPECT_EQ(crc, 0) << completed;
  EXPECT_THAT(completed, HasSubstr("smoe-fake-trainer: at step 60"));
  EXPECT_THAT(ReadText(c.dir() + "/coord/smoe.db") +
                  ReadText(c.dir() + "/coord/smoe.db-wal"),
              Not(HasSubstr(secret)));

  // Unknown attempt or trial: exit 66 naming it; a bad attempt: 400.
  auto [nrc, nout] = c.Smoe({"logs", failed_id, "--attempt", "5"});
  EXPECT_EQ(nrc, 66) << nout;
  EXPECT_THAT(nout, HasSubstr("has no attempt 5 (attempts: 1)"));
  auto [urc, uout] = c.Smoe({"logs", "lg/0123456789abcdef"});
  EXPECT_EQ(urc, 66) << uout;
  auto [bs, bbody] =
      c.Http(http_port, "GET",
             absl::StrCat("/api/trials/", failed_id, "/logs?attempt=x"));
  EXPECT_EQ(bs, 400) << bbody;
  EXPECT_THAT(bbody, HasSubstr("attempt"));

  // System metrics from the heartbeats: present and plausible.
  auto m = c.Metrics(running_id);
  ASSERT_TRUE(m.ok()) << m.status();
  int rss = 0, cpu = 0;
  for (const auto& x : m->metrics()) {
    if (x.name() == "sys/rss_mb") {
      ++rss;
      EXPECT_GT(x.value(), 1.0) << "RSS above 1 MB at step " << x.step();
      EXPECT_LT(x.value(), 4096.0);
    }
    if (x.name() == "sys/cpu_percent") {
      ++cpu;
      EXPECT_GE(x.value(), 0.0);
      EXPECT_LE(x.value(), 100.0 * std::thread::hardware_concurrency() + 50.0);
    }
    EXPECT_NE(x.name(), "sys/gpu_util_percent") << "a CPU trial has no GPU";
  }
  EXPECT_GE(rss, 3) << "one sample per heartbeat step";
  EXPECT_GE(cpu, 2);
}

}  // namespace
}  // namespace smoe::e2e
