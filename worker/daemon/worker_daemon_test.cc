// Copyright 2026 SMoE Lab authors.
#include "worker/daemon/worker_daemon.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/blob_file.h"
#include "common/clock.h"
#include "common/test_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/daemon/daemon_test_util.h"

namespace smoe::worker {
namespace {

using ::smoe::worker::testing::FakeGatewayClient;
using ::smoe::worker::testing::FakeProcessLauncher;
using ::smoe::worker::testing::FakeProcessState;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string NewTempDir() { return smoe::testing::NewTestDir("daemon_test_"); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class WorkerDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.hostname = "host-a";
    options_.cpus = 2;
    options_.slots = 1;
    options_.trainer_path = "/opt/smoe-trainer";
    options_.work_dir = NewTempDir();
    options_.jitter_seed = 42;
  }

  void MakeDaemon() {
    auto d = WorkerDaemon::Create(&gateway_, &launcher_, &clock_, options_);
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = *std::move(d);
  }

  void Step() { ASSERT_TRUE(daemon_->RunOnce().ok()); }

  // Registers, leases `trial` and returns its process.
  std::shared_ptr<FakeProcessState> StartOne(const std::string& trial,
                                             int attempt = 1) {
    gateway_.AddLease(trial, attempt);
    Step();
    EXPECT_EQ(launcher_.started.size() >= 1, true);
    return launcher_.started.back();
  }

  FakeClock clock_;
  FakeGatewayClient gateway_;
  FakeProcessLauncher launcher_;
  WorkerDaemonOptions options_;
  std::unique_ptr<WorkerDaemon> daemon_;
};

TEST_F(WorkerDaemonTest, LeaseLaunchMetricsBatchedThenComplete) {
  MakeDaemon();
  auto p = StartOne("sw1/t0001", 2);
  ASSERT_EQ(gateway_.registers.size(), 1u);
  EXPECT_EQ(gateway_.registers[0].hostname(), "host-a");
  EXPECT_EQ(gateway_.registers[0].slots(), 1);
  EXPECT_EQ(daemon_->worker_id(), "w-1");
  ASSERT_EQ(gateway_.leases.size(), 1u);
  EXPECT_EQ(gateway_.leases[0].free_slots(), 1);
  EXPECT_EQ(gateway_.leases[0].worker_id(), "w-1");

  // Invocation per docs/trainer-protocol.md.
  const std::string dir = daemon_->TrialDir("sw1/t0001");
  EXPECT_THAT(dir, HasSubstr("/trials/sw1_t0001"));
  EXPECT_THAT(p->spec.argv, ElementsAre("/opt/smoe-trainer", "run", "--trial",
                                        dir + "/TRIAL.json", "--workdir", dir));
  EXPECT_EQ(p->spec.env.at("CUDA_VISIBLE_DEVICES"), "");
  EXPECT_EQ(p->spec.env.count("SMOE_RANK"), 0u);
  // The trainer never gets the daemon's API token.
  EXPECT_THAT(p->spec.unset_env, ::testing::Contains("SMOE_TOKEN"));
  auto trial =
      nlohmann::json::parse(ReadFile(dir + "/TRIAL.json"), nullptr, false);
  ASSERT_FALSE(trial.is_discarded());
  EXPECT_EQ(trial["trial_id"], "sw1/t0001");
  EXPECT_EQ(trial["sweep_id"], "sw1");
  EXPECT_EQ(trial["attempt"], 2);
  EXPECT_EQ(trial["kind"], "sraven");
  EXPECT_EQ(trial["seed"], 7);
  EXPECT_EQ(trial["params"]["M"], 2);

  // Metrics wait for the flush interval.
  p->Emit(R"({"event":"progress","step":3,"total":10})");
  for (int i = 1; i <= 3; ++i) {
    p->Emit(absl::StrCat(R"({"event":"metric","step":)", i,
                         R"(,"name":"train/loss","value":0.5})"));
  }
  Step();
  EXPECT_TRUE(gateway_.metrics.empty());
  clock_.Advance(absl::Seconds(1));
  Step();
  ASSERT_EQ(gateway_.metrics.size(), 1u);
  EXPECT_EQ(gateway_.metrics[0].metrics_size(), 3);
  EXPECT_EQ(gateway_.metrics[0].attempt(), 2);
  EXPECT_EQ(gateway_.metrics[0].metrics(2).step(), 3);

  // ...or for 256 metrics, whichever first.
  for (int i = 0; i < 300; ++i) {
    p->Emit(absl::StrCat(R"({"event":"metric","step":)", 10 + i,
                         R"(,"name":"train/loss","value":0.1})"));
  }
  Step();
  EXPECT_EQ(gateway_.metrics.size(), 2u);
  EXPECT_EQ(gateway_.TotalMetrics(), 303);

  // Heartbeats name the running attempt.
  clock_.Advance(absl::Seconds(5));
  Step();
  ASSERT_GE(gateway_.heartbeats.size(), 2u);
  const auto& hb = gateway_.heartbeats.back();
  ASSERT_EQ(hb.running_size(), 1);
  EXPECT_EQ(hb.running(0).trial_id(), "sw1/t0001");
  EXPECT_EQ(hb.running(0).attempt(), 2);

  // The last metric is flushed before Complete.
  p->Emit(R"({"event":"metric","step":400,"name":"eval/ood_acc","value":0.4})");
  p->Emit(R"({"event":"result","metrics":{"test_acc":0.9,"ood_acc":0.5}})");
  p->Exit(0);
  clock_.Advance(absl::Seconds(2));
  Step();
  ASSERT_EQ(gateway_.completes.size(), 1u);
  const auto& c = gateway_.completes[0];
  EXPECT_EQ(c.trial_id(), "sw1/t0001");
  EXPECT_EQ(c.attempt(), 2);
  EXPECT_EQ(c.worker_id(), "w-1");
  EXPECT_DOUBLE_EQ(c.results().at("test_acc"), 0.9);
  EXPECT_DOUBLE_EQ(c.results().at("ood_acc"), 0.5);
  EXPECT_DOUBLE_EQ(c.duration_s(), 8.0);
  EXPECT_EQ(gateway_.TotalMetrics(), 304);
  EXPECT_THAT(gateway_.order,
              ElementsAre("metrics:sw1/t0001", "metrics:sw1/t0001",
                          "metrics:sw1/t0001", "complete:sw1/t0001"));
  EXPECT_EQ(daemon_->running_count(), 0);
  EXPECT_EQ(daemon_->pending_reports(), 0u);
  EXPECT_TRUE(gateway_.fails.empty());
}

// Issue 36: a work dir that refuses writes (here EFBIG past RLIMIT_FSIZE,
// as a full disk's ENOSPC) no longer stops the daemon: RunOnce stays OK,
// reports go out from memory, leasing pauses, a trainer failing meanwhile
// is handed back (PREEMPTED), and leasing resumes once a probe succeeds.
TEST_F(WorkerDaemonTest, AWorkDirThatRefusesWritesPausesLeasingUntilItHeals) {
  options_.min_free_bytes = 4096;  // the probe's size
  MakeDaemon();
  auto p = StartOne("sw1/t0001");
  ASSERT_EQ(gateway_.leases.size(), 1u);
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  const sighandler_t old_handler = signal(SIGXFSZ, SIG_IGN);
  rlimit tiny = old;
  tiny.rlim_cur = 1;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &tiny), 0);
  p->Emit(R"({"event":"metric","step":1,"name":"train/loss","value":0.5})");
  clock_.Advance(absl::Seconds(1));
  const absl::Status step = daemon_->RunOnce();
  // Nothing more is leased while the work dir refuses writes.
  gateway_.AddLease("sw1/t0002", 1);
  clock_.Advance(absl::Seconds(2));
  const absl::Status step2 = daemon_->RunOnce();
  // The trainer fails (its checkpoint could not be written).
  p->stderr_tail.push_back("cannot write checkpoint: File too large");
  p->Exit(1);
  clock_.Advance(absl::Milliseconds(100));
  const absl::Status step3 = daemon_->RunOnce();
  const absl::Status disk = daemon_->disk_error();
  const size_t leases_while_full = gateway_.leases.size();
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
  signal(SIGXFSZ, old_handler);
  EXPECT_TRUE(step.ok()) << step;
  EXPECT_TRUE(step2.ok()) << step2;
  EXPECT_TRUE(step3.ok()) << step3;
  EXPECT_THAT(std::string(disk.message()), HasSubstr("File too large"));
  EXPECT_EQ(gateway_.TotalMetrics(), 1) << "delivered from memory";
  EXPECT_EQ(leases_while_full, 1u);
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_PREEMPTED);
  EXPECT_THAT(gateway_.fails[0].message(),
              HasSubstr("worker's work dir is full"));
  EXPECT_THAT(gateway_.fails[0].message(),
              HasSubstr("cannot write checkpoint: File too large"));
  // Writes succeed again: the next probe resumes leasing.
  clock_.Advance(absl::Seconds(1));
  Step();
  EXPECT_TRUE(daemon_->disk_error().ok()) << daemon_->disk_error();
  EXPECT_EQ(gateway_.leases.size(), 2u);
  EXPECT_EQ(launcher_.started.size(), 2u);
  EXPECT_EQ(daemon_->running_count(), 1);
}

// NaN (written as null by trainers) reaches the coordinator as NaN; a
// metric it would refuse (negative step, empty name) is dropped alone, so
// it cannot make the coordinator refuse the good metrics of its batch.
TEST_F(WorkerDaemonTest, NanMetricsForwardedAndInvalidOnesDroppedAlone) {
  MakeDaemon();
  auto p = StartOne("sw1/t1");
  p->Emit(R"({"event":"metric","step":1,"name":"train/loss","value":0.5})");
  p->Emit(R"({"event":"metric","step":2,"name":"train/loss","value":null})");
  p->Emit(R"({"event":"metric","step":-1,"name":"train/loss","value":1})");
  p->Emit(R"({"event":"metric","step":3,"name":"","value":1})");
  p->Emit(R"({"event":"metric","step":4,"name":"x","value":"1"})");
  p->Emit(R"({"event":"metric","step":5,"name":"train/loss","value":0.25})");
  clock_.Advance(absl::Seconds(1));
  Step();
  ASSERT_EQ(gateway_.metrics.size(), 1u);
  const auto& batch = gateway_.metrics[0];
  ASSERT_EQ(batch.metrics_size(), 3);
  EXPECT_EQ(batch.metrics(0).step(), 1);
  EXPECT_EQ(batch.metrics(1).step(), 2);
  EXPECT_TRUE(std::isnan(batch.metrics(1).value()));
  EXPECT_EQ(batch.metrics(2).step(), 5);
  EXPECT_DOUBLE_EQ(batch.metrics(2).value(), 0.25);
  // A re-leased attempt on this host re-sends the history, NaN included.
  p->Exit(75);
  Step();
  StartOne("sw1/t1", 2);
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(absl::Seconds(1));
    Step();
  }
  ASSERT_EQ(gateway_.metrics.size(), 2u)
      << ::testing::PrintToString(gateway_.order);
  const auto& again = gateway_.metrics[1];
  EXPECT_EQ(again.attempt(), 2);
  ASSERT_EQ(again.metrics_size(), 3);
  EXPECT_TRUE(std::isnan(again.metrics(1).value()));
}

// Issue 16 item 8: one bad line in the trial dir's metric history (corrupt
// or torn) is dropped alone; the rest is re-sent under the new attempt.
// Before, it went into the re-sent batch and the coordinator refused the
// whole batch (INVALID_ARGUMENT), which the daemon then dropped.
TEST_F(WorkerDaemonTest, BadMetricHistoryLinesAreDroppedAloneOnResend) {
  MakeDaemon();
  const std::string dir = daemon_->TrialDir("sw1/t1");
  ASSERT_EQ(system(("mkdir -p '" + dir + "'").c_str()), 0);
  {
    std::ofstream out(dir + "/metrics.jsonl");
    out << R"({"step":1,"name":"train/loss","value":0.5})"
        << "\n"
        << R"({"step":-3,"name":"train/loss","value":0.4})"
        << "\n"
        << R"({"step":2,"name":"","value":0.4})"
        << "\n"
        << R"({"step":1e300,"name":"train/loss","value":0.4})"
        << "\n"
        << R"({"step":3,"name":")" << std::string(300, 'n')
        << R"(","value":0.4})"
        << "\n"
        << std::string(100000, '[') << "\n"
        << R"({"step":4,"name":"train/loss","value":0.25})"
        << "\n"
        << R"({"step":5,"name":"train/lo)";  // torn by a crash
  }
  auto p = StartOne("sw1/t1", 2);
  clock_.Advance(absl::Seconds(1));
  Step();
  ASSERT_EQ(gateway_.metrics.size(), 1u);
  const auto& batch = gateway_.metrics[0];
  ASSERT_EQ(batch.metrics_size(), 2);
  EXPECT_EQ(batch.metrics(0).step(), 1);
  EXPECT_EQ(batch.metrics(1).step(), 4);
  EXPECT_DOUBLE_EQ(batch.metrics(1).value(), 0.25);
}

// Issue 16 item 8: a result written beyond the double range is recorded as
// inf, not lost with its line ("no result event").
TEST_F(WorkerDaemonTest, OverflowingResultIsRecordedAsInfinity) {
  MakeDaemon();
  auto p = StartOne("sw1/t1");
  p->Emit(R"({"event":"metric","step":1,"name":"train/loss","value":1e999})");
  p->Emit(R"({"event":"result","metrics":{"test_acc":0.5,"train_loss":1e999,)"
          R"("x":-1e999,"y":null}})");
  p->Exit(0);
  Step();
  ASSERT_EQ(gateway_.completes.size(), 1u) << gateway_.fails.size();
  const auto& r = gateway_.completes[0].results();
  EXPECT_DOUBLE_EQ(r.at("test_acc"), 0.5);
  EXPECT_TRUE(std::isinf(r.at("train_loss")) && r.at("train_loss") > 0);
  EXPECT_TRUE(std::isinf(r.at("x")) && r.at("x") < 0);
  EXPECT_EQ(r.count("y"), 0u);
  ASSERT_EQ(gateway_.TotalMetrics(), 1);
  EXPECT_TRUE(std::isinf(gateway_.metrics[0].metrics(0).value()));
}

// A trainer's line nested 100k deep is refused alone; the daemon survives.
TEST_F(WorkerDaemonTest, DeeplyNestedEventLineIsDroppedAlone) {
  MakeDaemon();
  auto p = StartOne("sw1/t1");
  // An object nested 100k deep: copying it into the event overflowed the
  // stack (SIGSEGV in the daemon) before the depth check.
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += R"({"a":)";
  deep += "1" + std::string(100000, '}');
  p->Emit(R"({"event":"result","metrics":)" + deep + "}");
  p->Emit(R"({"event":"result","metrics":{"test_acc":0.5}})");
  p->Exit(0);
  Step();
  ASSERT_EQ(gateway_.completes.size(), 1u);
  EXPECT_DOUBLE_EQ(gateway_.completes[0].results().at("test_acc"), 0.5);
}

TEST_F(WorkerDaemonTest, CrashReportsErrorWithExitCodeAndStderrTail) {
  MakeDaemon();
  auto p = StartOne("sw1/t1");
  p->stderr_tail = {"loading data", "Segfault in step 3"};
  p->Exit(1);
  Step();
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_ERROR);
  EXPECT_EQ(gateway_.fails[0].exit_code(), 1);
  EXPECT_THAT(gateway_.fails[0].message(), HasSubstr("exit code 1"));
  EXPECT_THAT(gateway_.fails[0].message(), HasSubstr("Segfault in step 3"));
}

TEST_F(WorkerDaemonTest, KilledBySignalReports128PlusSignal) {
  MakeDaemon();
  auto p = StartOne("sw1/t1");
  p->Kill(SIGSEGV);
  Step();
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_ERROR);
  EXPECT_EQ(gateway_.fails[0].exit_code(), 128 + SIGSEGV);
}

TEST_F(WorkerDaemonTest, Exit75IsPreempted) {
  MakeDaemon();
  auto p = StartOne("sw1/t1");
  p->Exit(75);
  Step();
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_PREEMPTED);
  EXPECT_EQ(gateway_.fails[0].exit_code(), 75);
}

TEST_F(WorkerDaemonTest, Exit64IsBadSpec) {
  MakeDaemon();
  auto p = StartOne("sw1/t1");
  p->stderr_tail = {"unknown key 'foo'"};
  p->Exit(64);
  Step();
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_BAD_SPEC);
  EXPECT_THAT(gateway_.fails[0].message(), HasSubstr("unknown key 'foo'"));
}

// Issue 31 item 3: the first line of a failure says why (the last logged
// error, else the last stderr line), and a missing input (exit 66) is
// permanent like a bad spec.
TEST_F(WorkerDaemonTest, TheFirstLineOfAFailureNamesTheLoggedError) {
  MakeDaemon();
  auto p = StartOne("sw1/t1");
  p->stderr_tail = {"I20261128 20:00:00.000000 trainer.cc:10] loading",
                    "E20261128 20:00:01.000000 trainer_cli.cc:106] INTERNAL: "
                    "out of memory in step 3",
                    "I20261128 20:00:01.100000 trainer.cc:12] bye"};
  p->Exit(1);
  Step();
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_ERROR);
  const std::string& m = gateway_.fails[0].message();
  EXPECT_EQ(m.substr(0, m.find('\n')),
            "trainer failed: exit code 1: INTERNAL: out of memory in step 3");
}

TEST_F(WorkerDaemonTest, TheFirstLineOfAFailureNamesTheLastStderrLine) {
  MakeDaemon();
  auto q = StartOne("sw1/t2");
  q->stderr_tail = {"Traceback (most recent call last):", "  File x.py",
                    "ValueError: lr must be positive", ""};
  q->Exit(2);
  Step();
  ASSERT_EQ(gateway_.fails.size(), 1u);
  const std::string& m = gateway_.fails[0].message();
  EXPECT_EQ(m.substr(0, m.find('\n')),
            "trainer failed: exit code 2: ValueError: lr must be positive");
}

TEST_F(WorkerDaemonTest, Exit66IsAPermanentMissingInput) {
  MakeDaemon();
  auto r = StartOne("sw1/t3");
  r->stderr_tail = {
      "E20261128 20:00:01.000000 trainer_cli.cc:106] NOT_FOUND: "
      "/nonexistent/model/config.json"};
  r->Exit(66);
  Step();
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_BAD_SPEC);
  const std::string& m = gateway_.fails[0].message();
  EXPECT_EQ(m.substr(0, m.find('\n')),
            "missing input (exit 66; not retried: permanent): NOT_FOUND: "
            "/nonexistent/model/config.json");
}

TEST_F(WorkerDaemonTest, ExitZeroWithoutResultIsError) {
  MakeDaemon();
  auto p = StartOne("sw1/t1");
  p->Exit(0);
  Step();
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_ERROR);
  EXPECT_THAT(gateway_.fails[0].message(), HasSubstr("no result event"));
  EXPECT_TRUE(gateway_.completes.empty());
}

// Issue 16 item 1: a trainer that stops printing events (SIGSTOP, a
// deadlock) is killed at its progress deadline and reported hung, which uses
// the error budget (the coordinator retries it).
TEST_F(WorkerDaemonTest, SilentTrainerIsKilledAsHungAtItsProgressDeadline) {
  MakeDaemon();
  gateway_.AddLease("sw1/t1", 2);
  gateway_.lease_responses.back().mutable_leases(0)->set_progress_timeout_s(60);
  Step();
  ASSERT_EQ(launcher_.started.size(), 1u);
  auto p = launcher_.started.back();
  clock_.Advance(absl::Seconds(30));
  p->Emit(R"({"event":"progress","step":1,"total":10})");
  Step();
  clock_.Advance(absl::Seconds(59));  // 59 s since the last event
  Step();
  EXPECT_TRUE(p->signals.empty());
  EXPECT_TRUE(gateway_.fails.empty());
  clock_.Advance(absl::Seconds(1));  // 60 s: the deadline
  Step();
  EXPECT_THAT(p->signals, ElementsAre(SIGKILL));
  Step();
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_HUNG);
  EXPECT_EQ(gateway_.fails[0].attempt(), 2);
  EXPECT_EQ(gateway_.fails[0].exit_code(), 128 + SIGKILL);
  EXPECT_THAT(gateway_.fails[0].message(),
              HasSubstr("hung: no trainer event for 60 s"));
  EXPECT_EQ(daemon_->running_count(), 0);
}

TEST_F(WorkerDaemonTest, LeaseWithoutProgressDeadlineUsesTheDaemonDefault) {
  options_.default_progress_timeout = absl::Seconds(100);
  MakeDaemon();
  auto p = StartOne("sw1/t1");  // progress_timeout_s 0: an older coordinator
  // Metrics and checkpoints count as events too.
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(absl::Seconds(90));
    p->Emit(i == 1 ? R"({"event":"checkpoint","step":5})"
                   : R"({"event":"metric","step":1,"name":"x","value":1})");
    Step();
  }
  EXPECT_TRUE(p->signals.empty());
  clock_.Advance(absl::Seconds(100));
  Step();
  EXPECT_THAT(p->signals, ElementsAre(SIGKILL));
  Step();
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_HUNG);
}

TEST_F(WorkerDaemonTest, BadParamsJsonIsBadSpecWithoutLaunching) {
  MakeDaemon();
  gateway_.AddLease("sw1/t1", 1, "[1,2");
  Step();
  EXPECT_TRUE(launcher_.started.empty());
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_BAD_SPEC);
}

TEST_F(WorkerDaemonTest, TrainerThatCannotStartIsReportedAsError) {
  MakeDaemon();
  launcher_.start_errors.push_back(absl::NotFoundError("no such file"));
  gateway_.AddLease("sw1/t1", 1);
  Step();
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_ERROR);
  EXPECT_THAT(gateway_.fails[0].message(), HasSubstr("no such file"));
}

TEST_F(WorkerDaemonTest, CancelCommandTerminatesThenKillsAndReportsCancelled) {
  options_.cancel_grace = absl::Seconds(10);
  MakeDaemon();
  auto p = StartOne("sw1/t1", 3);
  v1::HeartbeatResponse hb;
  v1::WorkerCommand* cmd = hb.add_commands();
  cmd->set_type(v1::WorkerCommand::TYPE_CANCEL);
  cmd->set_trial_id("sw1/t1");
  cmd->set_attempt(3);
  gateway_.heartbeat_responses.push_back(hb);
  clock_.Advance(absl::Seconds(5));
  Step();
  EXPECT_THAT(p->signals, ElementsAre(SIGTERM));
  EXPECT_TRUE(gateway_.fails.empty());
  // The trainer ignores SIGTERM: SIGKILL after the grace.
  clock_.Advance(absl::Seconds(9));
  Step();
  EXPECT_THAT(p->signals, ElementsAre(SIGTERM));
  clock_.Advance(absl::Seconds(1));
  Step();
  EXPECT_THAT(p->signals, ElementsAre(SIGTERM, SIGKILL));
  Step();
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_CANCELLED);
  EXPECT_EQ(gateway_.fails[0].attempt(), 3);
  EXPECT_EQ(gateway_.fails[0].exit_code(), 128 + SIGKILL);
}

TEST_F(WorkerDaemonTest, CancelForAnotherAttemptIsIgnored) {
  MakeDaemon();
  auto p = StartOne("sw1/t1", 3);
  v1::HeartbeatResponse hb;
  v1::WorkerCommand* cmd = hb.add_commands();
  cmd->set_type(v1::WorkerCommand::TYPE_CANCEL);
  cmd->set_trial_id("sw1/t1");
  cmd->set_attempt(2);
  gateway_.heartbeat_responses.push_back(hb);
  clock_.Advance(absl::Seconds(5));
  Step();
  EXPECT_TRUE(p->signals.empty());
}

// A lease for a trial whose earlier attempt is still stopping here (inside
// its cancel grace) cannot start in the same trial dir. It used to be dropped
// without a word, so the coordinator believed the new attempt ran until its
// lease expired. It is handed back at once as PREEMPTED (no error budget); a
// duplicate of the running attempt is ignored.
TEST_F(WorkerDaemonTest, LeaseForTrialStillStoppingHereIsHandedBack) {
  options_.slots = 2;
  MakeDaemon();
  auto p = StartOne("sw1/t1", 1);
  v1::HeartbeatResponse hb;
  v1::WorkerCommand* cmd = hb.add_commands();
  cmd->set_type(v1::WorkerCommand::TYPE_CANCEL);
  cmd->set_trial_id("sw1/t1");
  cmd->set_attempt(1);
  gateway_.heartbeat_responses.push_back(hb);
  gateway_.AddLease("sw1/t1", 2);
  clock_.Advance(absl::Seconds(5));
  Step();
  EXPECT_THAT(p->signals, ElementsAre(SIGTERM));
  EXPECT_EQ(launcher_.started.size(), 1u) << "no second trainer in the dir";
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].trial_id(), "sw1/t1");
  EXPECT_EQ(gateway_.fails[0].attempt(), 2);
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_PREEMPTED);
  EXPECT_THAT(gateway_.fails[0].message(), HasSubstr("still stopping"));
  EXPECT_EQ(daemon_->running_count(), 1);
  // The same attempt leased twice is not reported (that would end it).
  gateway_.AddLease("sw1/t1", 1);
  clock_.Advance(absl::Seconds(1));
  Step();
  EXPECT_EQ(launcher_.started.size(), 1u);
  EXPECT_EQ(gateway_.fails.size(), 1u);
}

TEST_F(WorkerDaemonTest, UnreachableCoordinatorJournalsAndReplaysExactlyOnce) {
  MakeDaemon();
  auto p = StartOne("sw1/t1");
  gateway_.fail_all = absl::UnavailableError("connection refused");
  p->Emit(R"({"event":"metric","step":1,"name":"train/loss","value":1})");
  p->Emit(R"({"event":"result","metrics":{"test_acc":1}})");
  p->Exit(0);
  Step();
  EXPECT_EQ(daemon_->pending_reports(), 2u);  // metrics + complete
  EXPECT_EQ(daemon_->running_count(), 0);
  // Backoff: far fewer calls than steps while unreachable.
  const int refused_before = gateway_.calls_refused;
  for (int i = 0; i < 100; ++i) {
    clock_.Advance(absl::Milliseconds(100));
    Step();
  }
  const int refused = gateway_.calls_refused - refused_before;
  EXPECT_GE(refused, 2);
  EXPECT_LE(refused, 20);
  EXPECT_TRUE(gateway_.completes.empty());
  // No new leases while the results are undelivered? Leasing is allowed, but
  // the fake refuses it; the trial is not re-run.
  EXPECT_EQ(launcher_.started.size(), 1u);

  gateway_.fail_all = absl::OkStatus();
  clock_.Advance(absl::Seconds(11));
  Step();
  EXPECT_EQ(daemon_->pending_reports(), 0u);
  ASSERT_EQ(gateway_.completes.size(), 1u);
  EXPECT_EQ(gateway_.TotalMetrics(), 1);
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(absl::Seconds(1));
    Step();
  }
  EXPECT_EQ(gateway_.completes.size(), 1u);
  EXPECT_EQ(gateway_.metrics.size(), 1u);
  EXPECT_THAT(gateway_.order, ElementsAre("metrics:sw1/t1", "complete:sw1/t1"));
}

TEST_F(WorkerDaemonTest, JournalSurvivesDaemonRestartWithSameWorkerId) {
  MakeDaemon();
  auto p = StartOne("sw1/t1");
  gateway_.fail_all = absl::UnavailableError("down");
  p->Emit(R"({"event":"result","metrics":{"test_acc":0.75}})");
  p->Exit(0);
  Step();
  ASSERT_EQ(daemon_->pending_reports(), 1u);
  daemon_.reset();

  // A new daemon (and a coordinator that answers) on the same work dir.
  FakeGatewayClient gateway2;
  gateway2.assigned_id = "w-other";
  auto d = WorkerDaemon::Create(&gateway2, &launcher_, &clock_, options_);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->pending_reports(), 1u);
  ASSERT_TRUE((*d)->RunOnce().ok());
  ASSERT_EQ(gateway2.registers.size(), 1u);
  EXPECT_EQ(gateway2.registers[0].worker_id(), "w-1");
  ASSERT_EQ(gateway2.completes.size(), 1u);
  EXPECT_EQ(gateway2.completes[0].worker_id(), "w-1");
  EXPECT_DOUBLE_EQ(gateway2.completes[0].results().at("test_acc"), 0.75);
  EXPECT_EQ((*d)->pending_reports(), 0u);
  d->reset();

  // A third start replays nothing.
  FakeGatewayClient gateway3;
  auto d3 = WorkerDaemon::Create(&gateway3, &launcher_, &clock_, options_);
  ASSERT_TRUE(d3.ok());
  EXPECT_EQ((*d3)->pending_reports(), 0u);
  ASSERT_TRUE((*d3)->RunOnce().ok());
  EXPECT_TRUE(gateway3.completes.empty());
}

TEST_F(WorkerDaemonTest, StaleAttemptReplyCountsAsAcknowledged) {
  MakeDaemon();
  auto p = StartOne("sw1/t1");
  gateway_.complete_errors.push_back(
      absl::FailedPreconditionError("attempt 1 is stale"));
  p->Emit(R"({"event":"result","metrics":{}})");
  p->Exit(0);
  Step();
  EXPECT_EQ(daemon_->pending_reports(), 0u);
  EXPECT_TRUE(gateway_.completes.empty());
  clock_.Advance(absl::Seconds(30));
  Step();
  EXPECT_TRUE(gateway_.completes.empty());
  EXPECT_EQ(gateway_.complete_errors.size(), 0u);
}

// Issue 36 item 1: bytes that are not UTF-8 in a trainer's output (a
// Latin-1 message on stderr) reach the coordinator as U+FFFD, in the log
// file, the log tail, the failure message and the journal.
TEST_F(WorkerDaemonTest, NonUtf8TrainerOutputIsReplacedWhereItEnters) {
  options_.system_metrics = false;
  MakeDaemon();
  auto p = StartOne("sw1/t1");
  p->stderr_lines.push_back("caf\xE9");
  p->Emit("cut \xE2\x82");
  p->stderr_tail = {"caf\xE9"};
  p->Exit(1);
  Step();
  const std::string fixed = "caf\xEF\xBF\xBD";
  // stdout's lines are read before stderr's within one step.
  const std::string log = "cut \xEF\xBF\xBD\xEF\xBF\xBD\n" + fixed + "\n";
  EXPECT_EQ(ReadFile(daemon_->TrialDir("sw1/t1") + "/logs/attempt-1.log"), log);
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].log().text(), log);
  EXPECT_THAT(gateway_.fails[0].message(), HasSubstr(fixed));
  v1::FailRequest back;
  EXPECT_TRUE(back.ParseFromString(gateway_.fails[0].SerializeAsString()))
      << "the coordinator could not parse this report";
}

// Issue 36 item 1: a report the coordinator refuses for what it holds is
// not retried forever, in order, in front of every other report: after 3
// refusals while heartbeats succeed it goes again without its log tail,
// and a result the coordinator refuses outright fails the attempt with the
// reason. The reports behind it are delivered.
TEST_F(WorkerDaemonTest, RefusedReportIsRewrittenNotRetriedForever) {
  options_.system_metrics = false;
  options_.slots = 2;
  MakeDaemon();
  auto p1 = StartOne("sw1/t1");
  gateway_.AddLease("sw1/t2", 1);
  for (int i = 0; i < 100 && launcher_.started.size() < 2; ++i) {
    clock_.Advance(absl::Milliseconds(100));
    Step();
  }
  ASSERT_EQ(launcher_.started.size(), 2u);
  auto p2 = launcher_.started.back();
  for (int i = 0; i < 20; ++i) {
    gateway_.complete_errors.push_back(
        absl::InternalError("Failed to parse request"));
  }
  p1->stderr_lines.push_back("log line");
  p1->Emit(R"({"event":"result","metrics":{"test_acc":1}})");
  p1->Exit(0);
  p2->Emit(R"({"event":"result","metrics":{"test_acc":0.5}})");
  p2->Exit(1);
  for (int i = 0; i < 300 && gateway_.fails.empty(); ++i) {
    clock_.Advance(absl::Milliseconds(100));
    Step();
  }
  // The refused complete went again without its log, and was refused
  // again (the fake refuses 20 times): after 3 more it became a Fail.
  ASSERT_EQ(gateway_.fails.size(), 2u) << gateway_.complete_errors.size();
  EXPECT_EQ(gateway_.fails[0].trial_id(), "sw1/t1");
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_ERROR);
  EXPECT_THAT(gateway_.fails[0].message(),
              HasSubstr("the coordinator refused this attempt's result"));
  EXPECT_THAT(gateway_.fails[0].message(), HasSubstr("INTERNAL"));
  EXPECT_EQ(gateway_.fails[1].trial_id(), "sw1/t2");
  EXPECT_EQ(daemon_->pending_reports(), 0u);
  EXPECT_LE(gateway_.calls_refused, 16) << "bounded, not forever";

  gateway_.complete_errors.clear();
  // INVALID_ARGUMENT: not retried; the log is dropped first, then the
  // result becomes a failure.
  clock_.Advance(absl::Seconds(2));
  auto p3 = StartOne("sw1/t3");
  ASSERT_EQ(launcher_.started.size(), 3u);
  gateway_.complete_errors.push_back(
      absl::InvalidArgumentError("duration_s: must be finite"));
  p3->stderr_lines.push_back("x");
  p3->Emit(R"({"event":"result","metrics":{"test_acc":1}})");
  p3->Exit(0);
  Step();
  ASSERT_EQ(gateway_.completes.size(), 1u);
  EXPECT_EQ(gateway_.completes[0].trial_id(), "sw1/t3");
  EXPECT_FALSE(gateway_.completes[0].has_log());
  EXPECT_EQ(daemon_->pending_reports(), 0u);
}

TEST_F(WorkerDaemonTest, DrainSignalsTrainersReportsPreemptedAndLeasesNothing) {
  options_.slots = 2;
  options_.grace = absl::Seconds(30);
  MakeDaemon();
  gateway_.AddLease("sw1/a", 1);
  Step();
  gateway_.AddLease("sw1/b", 1);
  clock_.Advance(absl::Seconds(1));
  Step();
  ASSERT_EQ(launcher_.started.size(), 2u);
  auto a = launcher_.started[0];
  auto b = launcher_.started[1];
  a->exit_on_sigterm = 75;  // checkpoints and exits 75
  // b ignores SIGTERM.
  const size_t leases_before = gateway_.leases.size();

  daemon_->RequestDrain();
  Step();
  EXPECT_TRUE(daemon_->draining());
  EXPECT_THAT(a->signals, ElementsAre(SIGTERM));
  EXPECT_THAT(b->signals, ElementsAre(SIGTERM));
  ASSERT_FALSE(gateway_.heartbeats.empty());
  EXPECT_TRUE(gateway_.heartbeats.back().draining());
  Step();
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].trial_id(), "sw1/a");
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_PREEMPTED);
  EXPECT_FALSE(daemon_->done());

  clock_.Advance(absl::Seconds(30));
  Step();  // SIGKILL b
  EXPECT_THAT(b->signals, ElementsAre(SIGTERM, SIGKILL));
  Step();
  ASSERT_EQ(gateway_.fails.size(), 2u);
  EXPECT_EQ(gateway_.fails[1].trial_id(), "sw1/b");
  EXPECT_EQ(gateway_.fails[1].reason(), v1::FailRequest::REASON_PREEMPTED);
  EXPECT_TRUE(daemon_->done());
  EXPECT_EQ(gateway_.leases.size(), leases_before);
  EXPECT_TRUE(daemon_->Run().ok());  // returns at once when done
}

TEST_F(WorkerDaemonTest, CoordinatorDrainCommandDrains) {
  MakeDaemon();
  auto p = StartOne("sw1/t1");
  p->exit_on_sigterm = 75;
  v1::HeartbeatResponse hb;
  hb.set_drain(true);
  gateway_.heartbeat_responses.push_back(hb);
  clock_.Advance(absl::Seconds(5));
  Step();
  EXPECT_TRUE(daemon_->draining());
  EXPECT_THAT(p->signals, ElementsAre(SIGTERM));
  Step();
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_PREEMPTED);
  EXPECT_TRUE(daemon_->done());
}

TEST_F(WorkerDaemonTest, DrainGivesUpOnUnreachableCoordinatorButKeepsJournal) {
  options_.drain_flush_timeout = absl::Seconds(10);
  MakeDaemon();
  auto p = StartOne("sw1/t1");
  p->exit_on_sigterm = 75;
  gateway_.fail_all = absl::UnavailableError("down");
  daemon_->RequestDrain();
  Step();
  Step();
  EXPECT_FALSE(daemon_->done());
  EXPECT_EQ(daemon_->pending_reports(), 1u);
  clock_.Advance(absl::Seconds(11));
  Step();
  EXPECT_TRUE(daemon_->done());
  EXPECT_THAT(ReadFile(options_.work_dir + "/journal.jsonl"),
              HasSubstr("\"type\":\"fail\""));
}

TEST_F(WorkerDaemonTest, ReRegistersWithSameIdOnNotFound) {
  MakeDaemon();
  auto p = StartOne("sw1/t1");
  gateway_.heartbeat_errors.push_back(absl::NotFoundError("unknown worker"));
  clock_.Advance(absl::Seconds(5));
  Step();
  EXPECT_FALSE(daemon_->registered());
  Step();
  ASSERT_EQ(gateway_.registers.size(), 2u);
  EXPECT_EQ(gateway_.registers[1].worker_id(), "w-1");
  EXPECT_TRUE(daemon_->registered());
  EXPECT_TRUE(p->signals.empty());  // the trial kept running
  ASSERT_GE(gateway_.heartbeats.size(), 3u);
  EXPECT_EQ(gateway_.heartbeats.back().running_size(), 1);
}

TEST_F(WorkerDaemonTest, RegisterRetriesWithBackoff) {
  gateway_.register_errors = {absl::UnavailableError("down"),
                              absl::UnavailableError("down")};
  MakeDaemon();
  Step();
  EXPECT_FALSE(daemon_->registered());
  Step();
  EXPECT_EQ(gateway_.registers.size(), 1u);  // backing off
  clock_.Advance(absl::Seconds(1));
  Step();
  clock_.Advance(absl::Seconds(1));
  Step();
  EXPECT_TRUE(daemon_->registered());
  EXPECT_EQ(gateway_.registers.size(), 3u);
}

TEST_F(WorkerDaemonTest, AllocatesGpusPerTrial) {
  options_.gpu_indices = {0, 1};
  options_.slots = 2;
  MakeDaemon();
  gateway_.AddLease("sw1/a", 1, R"({"M":1})", /*gpus=*/1);
  Step();
  ASSERT_EQ(gateway_.leases.size(), 1u);
  EXPECT_EQ(gateway_.leases[0].free_gpus(), 2);
  EXPECT_EQ(gateway_.registers[0].gpus(), 2);
  gateway_.AddLease("sw1/b", 1, R"({"M":1})", /*gpus=*/1);
  clock_.Advance(absl::Seconds(1));
  Step();
  ASSERT_EQ(launcher_.started.size(), 2u);
  EXPECT_EQ(gateway_.leases[1].free_gpus(), 1);
  EXPECT_EQ(launcher_.started[0]->spec.env.at("CUDA_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(launcher_.started[1]->spec.env.at("CUDA_VISIBLE_DEVICES"), "1");
  // Full: no lease calls.
  clock_.Advance(absl::Seconds(1));
  Step();
  EXPECT_EQ(gateway_.leases.size(), 2u);
  // GPU 0 frees up and is handed out again.
  launcher_.started[0]->Exit(75);
  gateway_.AddLease("sw1/c", 1, R"({"M":1})", /*gpus=*/1);
  Step();
  ASSERT_EQ(launcher_.started.size(), 3u);
  EXPECT_EQ(launcher_.started[2]->spec.env.at("CUDA_VISIBLE_DEVICES"), "0");
}

TEST_F(WorkerDaemonTest, ExpertParallelStartsOneProcessPerRank) {
  options_.gpu_indices = {0, 1};
  MakeDaemon();
  gateway_.AddLease("sw1/ep", 1, R"({"M":1})", /*gpus=*/2, /*ep_size=*/2);
  Step();
  ASSERT_EQ(launcher_.started.size(), 2u);
  auto r0 = launcher_.started[0];
  auto r1 = launcher_.started[1];
  EXPECT_EQ(r0->spec.env.at("SMOE_RANK"), "0");
  EXPECT_EQ(r1->spec.env.at("SMOE_RANK"), "1");
  EXPECT_EQ(r0->spec.env.at("SMOE_WORLD_SIZE"), "2");
  EXPECT_EQ(r0->spec.env.at("SMOE_RENDEZVOUS"),
            r1->spec.env.at("SMOE_RENDEZVOUS"));
  // The rank group's one rendezvous rule: a FileStore in the trial dir, not
  // a TCP port picked free before rank 0 binds it (worker/launch).
  EXPECT_EQ(r0->spec.env.at("SMOE_RENDEZVOUS"),
            daemon_->TrialDir("sw1/ep") + "/ep-rendezvous");
  EXPECT_EQ(r0->spec.env.at("CUDA_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(r1->spec.env.at("CUDA_VISIBLE_DEVICES"), "1");
  // Rank 1 crashes: rank 0 is terminated; the attempt fails with rank 1's code.
  r1->stderr_tail = {"NCCL error"};
  r1->Exit(3);
  r0->exit_on_sigterm = 0;
  Step();
  EXPECT_THAT(r0->signals, ElementsAre(SIGTERM));
  Step();
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].exit_code(), 3);
  EXPECT_THAT(gateway_.fails[0].message(), HasSubstr("NCCL error"));
}

// The rank group's stop policy after a success: the other ranks get the grace
// to finish on their own (no SIGTERM that would turn their last moments into
// exit 75), then SIGTERM; the attempt completes with rank 0's result.
TEST_F(WorkerDaemonTest, ExpertParallelSuccessLetsTheOtherRanksFinish) {
  options_.grace = absl::Seconds(30);
  MakeDaemon();
  gateway_.AddLease("sw1/ep", 1, R"({"M":1})", /*gpus=*/0, /*ep_size=*/2);
  Step();
  ASSERT_EQ(launcher_.started.size(), 2u);
  auto r0 = launcher_.started[0];
  auto r1 = launcher_.started[1];
  EXPECT_EQ(r0->spec.env.at("CUDA_VISIBLE_DEVICES"), "");
  EXPECT_EQ(r1->spec.env.at("CUDA_VISIBLE_DEVICES"), "");
  r0->Emit(R"({"event":"result","metrics":{"test_acc":0.5}})");
  r0->Exit(0);
  Step();
  clock_.Advance(absl::Seconds(29));
  Step();
  EXPECT_TRUE(r1->signals.empty());
  EXPECT_TRUE(gateway_.completes.empty());
  r1->exit_on_sigterm = 0;
  clock_.Advance(absl::Seconds(1));
  Step();
  EXPECT_THAT(r1->signals, ElementsAre(SIGTERM));
  Step();
  ASSERT_EQ(gateway_.completes.size(), 1u);
  EXPECT_EQ(gateway_.completes[0].results().at("test_acc"), 0.5);
  EXPECT_TRUE(gateway_.fails.empty());
}

TEST_F(WorkerDaemonTest, TrialDirIsReusedAcrossAttempts) {
  MakeDaemon();
  auto p1 = StartOne("sw1/t1", 1);
  p1->Exit(75);
  gateway_.AddLease("sw1/t1", 2);
  Step();
  ASSERT_EQ(launcher_.started.size(), 2u);
  EXPECT_EQ(launcher_.started[0]->spec.working_dir,
            launcher_.started[1]->spec.working_dir);
  auto trial = nlohmann::json::parse(
      ReadFile(daemon_->TrialDir("sw1/t1") + "/TRIAL.json"), nullptr, false);
  EXPECT_EQ(trial["attempt"], 2);
}

TEST_F(WorkerDaemonTest, CreateRejectsBadOptions) {
  options_.slots = 0;
  EXPECT_FALSE(
      WorkerDaemon::Create(&gateway_, &launcher_, &clock_, options_).ok());
  options_.slots = 1;
  options_.trainer_path = "";
  EXPECT_FALSE(
      WorkerDaemon::Create(&gateway_, &launcher_, &clock_, options_).ok());
  options_.kinds = {"command", "sraven"};
  EXPECT_FALSE(
      WorkerDaemon::Create(&gateway_, &launcher_, &clock_, options_).ok());
}

// A worker of kind command alone needs no trainer; a lease of another kind
// (a coordinator bug) is handed back as a bad spec, nothing started.
TEST_F(WorkerDaemonTest, CommandOnlyWorkerNeedsNoTrainer) {
  options_.trainer_path = "";
  options_.kinds = {"command"};
  MakeDaemon();
  gateway_.AddLease("sw1/t1", 1);  // kind sraven
  Step();
  Step();
  EXPECT_TRUE(launcher_.started.empty());
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].reason(), v1::FailRequest::REASON_BAD_SPEC);
  EXPECT_THAT(gateway_.fails[0].message(), HasSubstr("runs only kind command"));
  ASSERT_FALSE(gateway_.registers.empty());
  EXPECT_THAT(gateway_.registers[0].kinds(), ElementsAre("command"));
}

}  // namespace
}  // namespace smoe::worker

namespace smoe::worker {
namespace {

// A trial whose sweep asks for 2 slots occupies 2 of the worker's 3 slots: the
// next lease request offers only 1.
TEST(WorkerDaemonSlotsTest, MultiSlotTrialOccupiesItsSlots) {
  FakeClock clock;
  FakeGatewayClient gateway;
  FakeProcessLauncher launcher;
  WorkerDaemonOptions options;
  options.hostname = "host-a";
  options.slots = 3;
  options.trainer_path = "/opt/smoe-trainer";
  options.work_dir = NewTempDir();
  auto d = WorkerDaemon::Create(&gateway, &launcher, &clock, options);
  ASSERT_TRUE(d.ok()) << d.status();
  gateway.AddLease("sw1/big", 1);
  gateway.lease_responses.back().mutable_leases(0)->set_slots(2);
  ASSERT_TRUE((*d)->RunOnce().ok());
  ASSERT_EQ(launcher.started.size(), 1u);
  ASSERT_EQ(gateway.leases.size(), 1u);
  EXPECT_EQ(gateway.leases[0].free_slots(), 3);
  clock.Advance(absl::Seconds(10));
  ASSERT_TRUE((*d)->RunOnce().ok());
  ASSERT_GE(gateway.leases.size(), 2u);
  EXPECT_EQ(gateway.leases.back().free_slots(), 1);
}

TEST_F(WorkerDaemonTest, AttemptLogKeepsStderrAndNonEventLinesAndShipsTail) {
  options_.system_metrics = false;
  MakeDaemon();
  auto p = StartOne("sw1/t1", 2);
  p->Emit("hello from stdout");
  p->Emit(R"({"event":"metric","step":1,"name":"train/loss","value":0.5})");
  p->stderr_lines.push_back("warning: something");
  Step();
  p->stderr_lines.push_back("Traceback: boom");
  p->stderr_tail = {"Traceback: boom"};
  p->Exit(1);
  Step();
  const std::string log =
      ReadFile(daemon_->TrialDir("sw1/t1") + "/logs/attempt-2.log");
  // Events are metrics, not log lines.
  EXPECT_EQ(log, "hello from stdout\nwarning: something\nTraceback: boom\n");
  ASSERT_EQ(gateway_.fails.size(), 1u);
  EXPECT_EQ(gateway_.fails[0].log().text(), log);
  EXPECT_EQ(gateway_.fails[0].log().total_bytes(),
            static_cast<int64_t>(log.size()));
  ASSERT_EQ(gateway_.metrics.size(), 1u);
  EXPECT_EQ(gateway_.metrics[0].metrics(0).name(), "train/loss");
}

TEST_F(WorkerDaemonTest, CompleteCarriesTheLogAndRanksArePrefixed) {
  options_.system_metrics = false;
  MakeDaemon();
  gateway_.AddLease("sw1/t1", 1, R"({"M":2,"top_k":1})", 0, /*ep_size=*/2);
  Step();
  ASSERT_EQ(launcher_.started.size(), 2u);
  auto r0 = launcher_.started[0];
  auto r1 = launcher_.started[1];
  r0->stderr_lines.push_back("rank zero says hi");
  r1->stderr_lines.push_back("rank one says hi");
  r1->Emit("rank one stdout");
  r0->Emit(R"({"event":"result","metrics":{"test_acc":0.5}})");
  r0->Exit(0);
  r1->Exit(0);
  Step();
  Step();
  ASSERT_EQ(gateway_.completes.size(), 1u);
  EXPECT_EQ(gateway_.completes[0].log().text(),
            "rank zero says hi\n[rank 1] rank one stdout\n"
            "[rank 1] rank one says hi\n");
}

TEST_F(WorkerDaemonTest, SendLogCommandPutsTheTailInTheNextHeartbeat) {
  options_.system_metrics = false;
  MakeDaemon();
  auto p = StartOne("sw1/t1", 1);
  p->stderr_lines.push_back("line one");
  v1::HeartbeatResponse hb;
  v1::WorkerCommand* cmd = hb.add_commands();
  cmd->set_type(v1::WorkerCommand::TYPE_SEND_LOG);
  cmd->set_trial_id("sw1/t1");
  cmd->set_attempt(1);
  gateway_.heartbeat_responses.push_back(hb);
  clock_.Advance(absl::Seconds(5));
  Step();  // the heartbeat whose reply asks for the log
  const size_t n = gateway_.heartbeats.size();
  ASSERT_EQ(gateway_.heartbeats.back().running_size(), 1);
  EXPECT_FALSE(gateway_.heartbeats.back().running(0).has_log());
  Step();  // answered at once, without waiting for the interval
  ASSERT_EQ(gateway_.heartbeats.size(), n + 1);
  EXPECT_EQ(gateway_.heartbeats.back().running(0).log().text(), "line one\n");
  EXPECT_EQ(gateway_.heartbeats.back().running(0).log().total_bytes(), 9);
  // Not asked again: the next heartbeat, at the interval, carries none.
  Step();
  EXPECT_EQ(gateway_.heartbeats.size(), n + 1);
  clock_.Advance(absl::Seconds(5));
  Step();
  ASSERT_EQ(gateway_.heartbeats.size(), n + 2);
  EXPECT_FALSE(gateway_.heartbeats.back().running(0).has_log());
}

TEST_F(WorkerDaemonTest, HeartbeatCarriesTheAttemptsSystemSample) {
  const std::string proc = NewTempDir() + "/proc";
  ASSERT_EQ(mkdir(proc.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((proc + "/1000").c_str(), 0755), 0);
  const long ticks = sysconf(_SC_CLK_TCK);   // NOLINT(runtime/int)
  const long page = sysconf(_SC_PAGESIZE);   // NOLINT(runtime/int)
  auto write_stat = [&](long utime_ticks) {  // NOLINT(runtime/int)
    std::ofstream(proc + "/1000/stat")
        << "1000 (smoe-trainer) S 1 1000 0 0 -1 0 0 0 0 0 " << utime_ticks
        << " 0 0 0 20 0 1 0 1 1000000 256 0 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 "
           "0 0 0 0\n";
  };
  write_stat(2 * ticks);
  options_.proc_root = proc;
  MakeDaemon();
  auto p = StartOne("sw1/t1", 1);  // pid (and process group) 1000
  p->Emit(R"({"event":"metric","step":7,"name":"train/loss","value":0.5})");
  clock_.Advance(absl::Seconds(5));
  Step();
  const v1::SystemSample& first =
      gateway_.heartbeats.back().running(0).system();
  EXPECT_EQ(first.step(), 7);
  ASSERT_TRUE(first.has_rss_bytes());
  EXPECT_EQ(first.rss_bytes(), 256.0 * page);
  EXPECT_FALSE(first.has_cpu_percent()) << "no rate from one sample";
  EXPECT_FALSE(first.has_gpu_util_percent()) << "a CPU trial: absent";
  EXPECT_FALSE(first.has_gpu_memory_bytes());
  write_stat(2 * ticks + 5 * ticks);  // 5 CPU-seconds in 5 s
  clock_.Advance(absl::Seconds(5));
  Step();
  const v1::SystemSample& second =
      gateway_.heartbeats.back().running(0).system();
  ASSERT_TRUE(second.has_cpu_percent());
  EXPECT_NEAR(second.cpu_percent(), 100.0, 1e-6);
}

// A GPU trial: the monitor (NVML in production; a fake here) is opened once,
// asked about the trial's GPUs and processes, and what it cannot measure
// stays absent.
class FakeGpuMonitor : public GpuMonitor {
 public:
  explicit FakeGpuMonitor(std::vector<std::vector<int>>* asked)
      : asked_(asked) {}
  GpuUsage Sample(const std::vector<int>& indices,
                  const std::vector<int>& pids) override {
    asked_->push_back(indices);
    EXPECT_FALSE(pids.empty());
    GpuUsage u;
    u.utilization_percent = 42.0;
    if (asked_->size() == 1) u.memory_bytes = 3.0e9;  // later: unmeasured
    return u;
  }

 private:
  std::vector<std::vector<int>>* asked_;
};

TEST_F(WorkerDaemonTest, GpuTrialHeartbeatsCarryTheMonitorsFigures) {
  const std::string proc = NewTempDir() + "/gproc";
  ASSERT_EQ(mkdir(proc.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((proc + "/1000").c_str(), 0755), 0);
  std::ofstream(proc + "/1000/stat")
      << "1000 (smoe-trainer) S 1 1000 0 0 -1 0 0 0 0 0 100 0 0 0 20 0 1 0 "
         "1 1000000 256 0 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0\n";
  options_.proc_root = proc;
  options_.gpu_indices = {0, 1};
  std::vector<std::vector<int>> asked;
  int opened = 0;
  options_.open_gpu_monitor = [&]() -> std::unique_ptr<GpuMonitor> {
    ++opened;
    return std::make_unique<FakeGpuMonitor>(&asked);
  };
  MakeDaemon();
  gateway_.AddLease("sw1/g", 1, R"({"M":1})", /*gpus=*/1);
  Step();
  ASSERT_EQ(launcher_.started.size(), 1u);
  launcher_.started.back()->Emit(
      R"({"event":"metric","step":3,"name":"train/loss","value":0.5})");
  clock_.Advance(absl::Seconds(5));
  Step();
  const v1::SystemSample& first =
      gateway_.heartbeats.back().running(0).system();
  ASSERT_TRUE(first.has_gpu_util_percent());
  EXPECT_EQ(first.gpu_util_percent(), 42.0);
  ASSERT_TRUE(first.has_gpu_memory_bytes());
  EXPECT_EQ(first.gpu_memory_bytes(), 3.0e9);
  clock_.Advance(absl::Seconds(5));
  Step();
  const v1::SystemSample& second =
      gateway_.heartbeats.back().running(0).system();
  EXPECT_TRUE(second.has_gpu_util_percent());
  EXPECT_FALSE(second.has_gpu_memory_bytes()) << "unmeasured stays absent";
  EXPECT_EQ(opened, 1) << "opened once, for the first GPU trial";
  ASSERT_GE(asked.size(), 2u);
  EXPECT_EQ(asked[0], std::vector<int>({0})) << "the trial's own GPU";
}

// A coordinator whose checkpoint downloads take as long as the test says:
// GetCheckpoint (called on the daemon's download thread) blocks until
// Release(), then writes a valid checkpoint of step 40.
class SlowCheckpointGateway : public FakeGatewayClient {
 public:
  absl::StatusOr<v1::CheckpointChunk> GetCheckpoint(
      const v1::GetCheckpointRequest& req, const std::string& dest) override {
    {
      absl::MutexLock lock(&mu_);
      ++calls_;
      // Bounded, so a daemon that waited for the download on its own loop
      // fails the test instead of hanging it.
      mu_.AwaitWithTimeout(absl::Condition(&released_), absl::Seconds(30));
    }
    const std::string data = "{\"step\":40}\n";
    std::ofstream(dest, std::ios::binary | std::ios::trunc) << data;
    v1::CheckpointChunk h;
    h.set_trial_id(req.trial_id());
    h.set_step(40);
    h.set_total_bytes(static_cast<int64_t>(data.size()));
    h.set_sha256(Sha256Hex(data));
    h.set_file_name("checkpoint.json");
    return h;
  }
  void Release() {
    absl::MutexLock lock(&mu_);
    released_ = true;
  }
  int calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

 private:
  absl::Mutex mu_;
  bool released_ ABSL_GUARDED_BY(mu_) = false;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
};

class WorkerDaemonRestoreTest : public WorkerDaemonTest {
 protected:
  void MakeSlowDaemon() {
    options_.system_metrics = false;
    auto d = WorkerDaemon::Create(&slow_, &launcher_, &clock_, options_);
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = *std::move(d);
  }
  // Leases `trial` with a stored checkpoint of step 40 (another worker's).
  void LeaseWithCheckpoint(const std::string& trial) {
    slow_.AddLease(trial, 2);
    slow_.lease_responses.back().mutable_leases(0)->set_checkpoint_step(40);
  }
  // Steps (real time passing for the download thread) until `done` or 10 s.
  template <typename F>
  bool StepUntil(F done) {
    const absl::Time end = absl::Now() + absl::Seconds(10);
    while (!done() && absl::Now() < end) {
      if (!daemon_->RunOnce().ok()) return false;
      absl::SleepFor(absl::Milliseconds(5));
    }
    return done();
  }
  SlowCheckpointGateway slow_;
};

TEST_F(WorkerDaemonRestoreTest, SlowDownloadDelaysOnlyItsOwnAttempt) {
  options_.slots = 2;
  MakeSlowDaemon();
  slow_.AddLease("sw1/a", 1);
  Step();  // registers, heartbeats, leases a (no checkpoint): started at once
  ASSERT_EQ(launcher_.started.size(), 1u);
  LeaseWithCheckpoint("sw1/b");
  clock_.Advance(absl::Seconds(1));
  Step();  // leases b: its download starts on its own thread; Step returns
  ASSERT_TRUE(StepUntil([&] { return slow_.calls() == 1; }));
  EXPECT_EQ(daemon_->restoring_count(), 1);
  EXPECT_EQ(launcher_.started.size(), 1u);  // b's trainer waits
  // b holds its slot: no more leases are asked for.
  const size_t leases = slow_.leases.size();
  // Heartbeats go on while b downloads, and list both attempts.
  const size_t beats = slow_.heartbeats.size();
  clock_.Advance(absl::Seconds(5));
  Step();
  clock_.Advance(absl::Seconds(5));
  Step();
  ASSERT_EQ(slow_.heartbeats.size(), beats + 2);
  const v1::HeartbeatRequest& hb = slow_.heartbeats.back();
  ASSERT_EQ(hb.running_size(), 2);
  std::set<std::string> listed = {hb.running(0).trial_id(),
                                  hb.running(1).trial_id()};
  EXPECT_EQ(listed, (std::set<std::string>{"sw1/a", "sw1/b"}));
  EXPECT_EQ(slow_.leases.size(), leases);
  // The download lands: b's trainer starts with the checkpoint in place,
  // and the download is recorded as b's metric.
  slow_.Release();
  ASSERT_TRUE(StepUntil([&] { return launcher_.started.size() == 2; }));
  EXPECT_EQ(daemon_->restoring_count(), 0);
  EXPECT_EQ(daemon_->running_count(), 2);
  EXPECT_EQ(ReadFile(daemon_->TrialDir("sw1/b") + "/checkpoint.json"),
            "{\"step\":40}\n");
  clock_.Advance(absl::Seconds(2));
  Step();
  bool downloaded = false;
  for (const auto& m : slow_.metrics) {
    for (const auto& x : m.metrics()) {
      downloaded |= m.trial_id() == "sw1/b" &&
                    x.name() == "checkpoint/downloaded" && x.step() == 40;
    }
  }
  EXPECT_TRUE(downloaded);
}

TEST_F(WorkerDaemonRestoreTest, CancelWhileDownloadingNeverStartsTheTrainer) {
  MakeSlowDaemon();
  LeaseWithCheckpoint("sw1/b");
  Step();
  ASSERT_TRUE(StepUntil([&] { return slow_.calls() == 1; }));
  v1::HeartbeatResponse reply;
  v1::WorkerCommand* cmd = reply.add_commands();
  cmd->set_type(v1::WorkerCommand::TYPE_CANCEL);
  cmd->set_trial_id("sw1/b");
  cmd->set_attempt(2);
  slow_.heartbeat_responses.push_back(reply);
  clock_.Advance(absl::Seconds(5));
  Step();  // the heartbeat whose reply cancels b
  slow_.Release();
  ASSERT_TRUE(StepUntil([&] { return !slow_.fails.empty(); }));
  EXPECT_TRUE(launcher_.started.empty());
  EXPECT_EQ(daemon_->restoring_count(), 0);
  EXPECT_EQ(slow_.fails[0].trial_id(), "sw1/b");
  EXPECT_EQ(slow_.fails[0].attempt(), 2);
  EXPECT_EQ(slow_.fails[0].reason(), v1::FailRequest::REASON_CANCELLED);
  EXPECT_THAT(slow_.fails[0].message(), HasSubstr("checkpoint"));
}

TEST_F(WorkerDaemonRestoreTest, DrainWaitsForTheDownloadAndHandsTheLeaseBack) {
  MakeSlowDaemon();
  LeaseWithCheckpoint("sw1/b");
  Step();
  ASSERT_TRUE(StepUntil([&] { return slow_.calls() == 1; }));
  daemon_->RequestDrain();
  Step();
  Step();
  EXPECT_FALSE(daemon_->done());  // the download thread is still out
  slow_.Release();
  ASSERT_TRUE(StepUntil([&] { return daemon_->done(); }));
  EXPECT_TRUE(launcher_.started.empty());
  ASSERT_EQ(slow_.fails.size(), 1u);
  EXPECT_EQ(slow_.fails[0].reason(), v1::FailRequest::REASON_PREEMPTED);
  EXPECT_THAT(slow_.fails[0].message(), HasSubstr("draining"));
}

}  // namespace
}  // namespace smoe::worker
