// Copyright 2026 SMoE Lab authors.
//
// End-to-end tests (ctest label `e2e`): a real coordinator and real worker
// daemons on 127.0.0.1 running the fake trainer (tests/fake_trainer), killed
// and restarted the way clusters fail.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/cluster.h"

namespace smoe::e2e {
namespace {

namespace pb = smoe::v1;
using ::testing::HasSubstr;

std::string SweepYaml(const std::string& name, const std::string& m_values,
                      int retries = 2) {
  return absl::StrCat("name: ", name, "\nkind: sraven\ngrid:\n  M: [", m_values,
                      "]\n  top_k: [1, 2]\nfixed: {steps: 10}\n",
                      "retries: ", retries, "\n");
}

std::string Plan(int steps, int step_ms, const std::string& rules = "") {
  return absl::StrCat(R"({"default": {"mode": "succeed", "steps": )", steps,
                      R"(, "step_ms": )", step_ms, R"(}, "rules": [)", rules,
                      "]}");
}

bool Done(const pb::GetSweepResponse& s) {
  return s.sweep().state() != pb::SWEEP_STATE_ACTIVE;
}

// Every (step, name) of train/loss appears once and covers 0..steps-1.
void ExpectCompleteLossCurve(Cluster& c, const std::string& trial, int steps) {
  auto m = c.Metrics(trial);
  ASSERT_TRUE(m.ok()) << m.status();
  std::set<int64_t> loss_steps;
  std::set<std::pair<int64_t, std::string>> keys;
  for (const auto& x : m->metrics()) {
    EXPECT_TRUE(keys.insert({x.step(), x.name()}).second)
        << "duplicate metric " << x.name() << "@" << x.step();
    if (x.name() == "train/loss") loss_steps.insert(x.step());
  }
  EXPECT_EQ(static_cast<int>(loss_steps.size()), steps) << trial;
}

TEST(E2eTest, EveryPointDoneExactlyOnce) {
  Cluster c("once", Plan(5, 20));
  c.StartCoordinator();
  c.StartWorker(0, 2);
  c.StartWorker(1, 2);
  const std::string file =
      c.WriteFile("s.yaml", SweepYaml("once", "1, 2, 3, 4"));
  auto [rc, out] = c.Smoe({"sweep", "submit", file, "--watch"});
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("submitted sweep once: 8 new trials"));
  auto s = c.GetSweep("once");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->sweep().counts().succeeded(), 8);
  for (const auto& t : s->trials()) {
    EXPECT_EQ(t.state(), pb::TRIAL_STATE_SUCCEEDED);
    EXPECT_EQ(t.attempt(), 1);
    EXPECT_EQ(c.TrainerStarts(t.trial_id()), 1) << t.trial_id();
    EXPECT_TRUE(t.results().count("ood_acc")) << t.trial_id();
    ExpectCompleteLossCurve(c, t.trial_id(), 5);
  }
  // Re-submitting the same file adds nothing and runs nothing again.
  auto [rc2, out2] = c.Smoe({"sweep", "submit", file});
  EXPECT_EQ(rc2, 0);
  EXPECT_THAT(out2, HasSubstr("0 new trials, 8 already present"));
  auto [rc3, csv] = c.Smoe({"results", "once", "--format", "csv"});
  EXPECT_EQ(rc3, 0);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 9) << csv;
  EXPECT_THAT(csv, HasSubstr("trial,state,M,top_k,seed,attempts"));

  // `sweep show --trials`: the swept params as columns, then seed and worker.
  auto [rc4, shown] = c.Smoe({"sweep", "show", "once", "--trials"});
  ASSERT_EQ(rc4, 0) << shown;
  std::vector<std::vector<std::string>> table;
  bool in_table = false;
  for (absl::string_view line : absl::StrSplit(shown, '\n')) {
    in_table = in_table || absl::StartsWith(line, "#");
    if (!in_table || line.empty()) continue;
    table.push_back(absl::StrSplit(line, ' ', absl::SkipWhitespace()));
  }
  ASSERT_EQ(table.size(), 9u) << shown;
  EXPECT_THAT(table[0],
              testing::ElementsAre("#", "TRIAL", "STATE", "M", "top_k", "SEED",
                                   "ATTEMPT", "WORKER", "ERROR"))
      << shown;
  std::set<std::string> points;
  for (size_t i = 1; i < table.size(); ++i) {
    ASSERT_GE(table[i].size(), 8u) << shown;
    EXPECT_EQ(table[i][2], "succeeded");
    points.insert(table[i][3] + "," + table[i][4]);
    EXPECT_EQ(table[i][5], "0");  // seed
    EXPECT_EQ(table[i][6], "1");  // attempt
  }
  EXPECT_EQ(points.size(), 8u) << shown;

  // An unknown metric lists the sweep's metrics; exit 64 (usage).
  auto [rc5, an] = c.Smoe({"analyze", "once", "--metric", "nope"});
  EXPECT_EQ(rc5, 64) << an;
  EXPECT_THAT(an, HasSubstr("smoe: --metric: 'nope' is not a result of sweep "
                            "once; its metrics: "));
  EXPECT_THAT(an, HasSubstr("ood_acc"));

  // Without --token-file or $SMOE_TOKEN, a command run below the data
  // directory finds its token (walking up), not ~/.smoe/token.
  const std::string sub = c.dir() + "/coord/reports/2026";
  std::filesystem::create_directories(sub);
  auto [rc6, ls] =
      RunCommand({"/bin/sh", "-c",
                  "cd \"$0\" && exec \"$1\" sweep ls --coordinator \"$2\"", sub,
                  c.smoe(), c.address()},
                 {{"SMOE_TOKEN", ""}, {"HOME", c.dir()}}, absl::Seconds(30));
  EXPECT_EQ(rc6, 0) << ls;
  EXPECT_THAT(ls, HasSubstr("once"));
}

// `smoe sweep validate FILE` needs no coordinator and no token, and lists
// every problem of a bad file once, with one "smoe: FILE:" prefix.
TEST(E2eTest, SweepValidateIsOfflineAndReportsEveryProblem) {
  Cluster c("validate", Plan(1, 1));  // no coordinator is started
  const std::map<std::string, std::string> no_token = {{"SMOE_TOKEN", ""},
                                                       {"HOME", c.dir()}};
  const std::string good = c.WriteFile("good.yaml", SweepYaml("good", "1, 2"));
  auto [rc, out] = RunCommand({c.smoe(), "sweep", "validate", good}, no_token,
                              absl::Seconds(30));
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr(good + ": valid: sweep good (sraven), M[2] x "
                                    "top_k[2] x seeds[1] = 4 trials"));
  const std::string bad = c.WriteFile(
      "bad.yaml",
      "name: Bad\nkind: sraven\ngrid:\n  M: [1, 9]\n  topk: [1]\nseeds: 3\n");
  auto [rc2, err] = RunCommand({c.smoe(), "sweep", "validate", bad}, no_token,
                               absl::Seconds(30));
  EXPECT_EQ(rc2, 65) << err;
  EXPECT_THAT(err, HasSubstr("smoe: " + bad + ": 4 problems:\n  "));
  for (const char* want :
       {"\n  name: 'Bad' must match",
        "\n  grid.M: expected a value in [1, 8], got 9",
        "\n  grid.topk: unknown parameter 'topk'",
        "\n  seeds: 3 is not a list: seeds is a list; did you mean seeds: "
        "[0, 1, 2]"}) {
    EXPECT_THAT(err, HasSubstr(want));
  }
  EXPECT_EQ(err.find("smoe: "), err.rfind("smoe: ")) << "one prefix\n" << err;
  auto [rc3, missing] =
      RunCommand({c.smoe(), "sweep", "validate", c.dir() + "/none.yaml"},
                 no_token, absl::Seconds(30));
  EXPECT_EQ(rc3, 66) << missing;
  // An adaptive search block validates (and names its strategy); a bad
  // one is exit 65 naming the field.
  const std::string asha =
      c.WriteFile("asha.yaml", SweepYaml("asha", "1, 2") +
                                   "search: {strategy: asha, metric: ood_acc, "
                                   "min_steps: 1, group_by: [M]}\n");
  auto [rc4, out4] = RunCommand({c.smoe(), "sweep", "validate", asha}, no_token,
                                absl::Seconds(30));
  EXPECT_EQ(rc4, 0) << out4;
  EXPECT_THAT(out4, HasSubstr(asha + ": search: asha on ood_acc (max) per M "
                                     "(docs/adaptive-sweeps.md)"));
  EXPECT_THAT(out4, HasSubstr(asha + ": search settings: rungs from step 1, "
                                     "reduction 3\n"));
  // The settings line names every option in force, defaults included.
  const std::string refine = c.WriteFile(
      "refine.yaml",
      SweepYaml("refine", "1, 2") +
          "search: {strategy: refine, metric: ood_acc, axis: top_k, bounds: "
          "[1, 8], group_by: [M], add_seeds: 2, tolerance: 0.005, "
          "early_stop: asha, min_steps: 2, smooth_evals: 3, "
          "budget_gpu_hours: 4.5}\n");
  auto [rc6, out6] = RunCommand({c.smoe(), "sweep", "validate", refine},
                                no_token, absl::Seconds(30));
  EXPECT_EQ(rc6, 0) << out6;
  EXPECT_THAT(
      out6,
      HasSubstr(refine + ": search settings: refine top_k in [1, 8]; up to 2 "
                         "added seeds where the argmax is unclear; resolved "
                         "within tolerance 0.005; rungs from step 2, reduction "
                         "3; rung value = mean of the last 3 evaluations; "
                         "stops at 4.5 GPU-hours (slot-hours on CPU)\n"));
  const std::string agg = c.WriteFile(
      "agg.yaml", SweepYaml("agg", "1, 2") +
                      "search: {strategy: asha, metric: ood_acc, min_steps: "
                      "1, reduction: 2, aggregate_seeds: true, "
                      "keep_neighbors: top_k, group_by: [M]}\n");
  auto [rc7, out7] = RunCommand({c.smoe(), "sweep", "validate", agg}, no_token,
                                absl::Seconds(30));
  EXPECT_EQ(rc7, 0) << out7;
  EXPECT_THAT(out7,
              HasSubstr(agg + ": search settings: rungs from step 1, "
                              "reduction 2; configurations judged by their "
                              "seed mean; the rung best's top_k neighbours "
                              "kept\n"));
  const std::string bad_search = c.WriteFile(
      "bad-search.yaml", SweepYaml("bads", "1, 2") +
                             "search: {strategy: asha, metric: ood_acc, "
                             "min_steps: 1, reduction: 1}\n");
  auto [rc5, err5] = RunCommand({c.smoe(), "sweep", "validate", bad_search},
                                no_token, absl::Seconds(30));
  EXPECT_EQ(rc5, 65) << err5;
  EXPECT_THAT(err5, HasSubstr("search.reduction: value 1 out of range"));
}

TEST(E2eTest, KilledWorkerTrialIsReleasedAndCompletedWithoutDuplicates) {
  Cluster c("killworker", Plan(30, 100));
  c.StartCoordinator();
  c.StartWorker(0, 2);
  const std::string file = c.WriteFile("s.yaml", SweepYaml("kw", "1"));
  ASSERT_EQ(c.Smoe({"sweep", "submit", file}).first, 0);
  ASSERT_TRUE(c.WaitFor(
      "kw",
      [](const pb::GetSweepResponse& s) {
        return s.sweep().counts().running() == 2;
      },
      absl::Seconds(30)));
  std::this_thread::sleep_for(std::chrono::seconds(1));  // some metrics flow
  c.worker(0)->KillGroup();  // kill -9 the daemon and its trainers
  c.worker(0)->Wait(absl::Seconds(10));
  c.StartWorker(1, 2);
  ASSERT_TRUE(c.WaitFor("kw", Done, absl::Seconds(60)));
  auto s = c.GetSweep("kw");
  EXPECT_EQ(s->sweep().counts().succeeded(), 2);
  for (const auto& t : s->trials()) {
    EXPECT_EQ(t.attempt(), 2) << t.trial_id();
    EXPECT_EQ(t.error_count(), 0) << "a lost lease is not an error";
    EXPECT_EQ(t.preempt_count(), 1);
    ExpectCompleteLossCurve(c, t.trial_id(), 30);
    auto m = c.Metrics(t.trial_id());
    ASSERT_EQ(m->attempts_size(), 2);
    EXPECT_EQ(m->attempts(0).outcome(), pb::ATTEMPT_OUTCOME_LOST);
    EXPECT_EQ(m->attempts(1).outcome(), pb::ATTEMPT_OUTCOME_SUCCEEDED);
  }
}

TEST(E2eTest, KilledCoordinatorRestartsAndSweepCompletes) {
  Cluster c("killcoord", Plan(15, 100));
  c.StartCoordinator();
  c.StartWorker(0, 1);
  c.StartWorker(1, 1);
  const std::string file = c.WriteFile("s.yaml", SweepYaml("kc", "1, 2, 3"));
  ASSERT_EQ(c.Smoe({"sweep", "submit", file}).first, 0);
  ASSERT_TRUE(c.WaitFor(
      "kc",
      [](const pb::GetSweepResponse& s) {
        return s.sweep().counts().succeeded() >= 1 &&
               s.sweep().counts().running() >= 1;
      },
      absl::Seconds(60)));
  auto before = c.GetSweep("kc");
  std::map<std::string, double> done_before;
  for (const auto& t : before->trials()) {
    if (t.state() == pb::TRIAL_STATE_SUCCEEDED) {
      done_before[t.trial_id()] = t.results().at("ood_acc");
    }
  }
  c.coordinator()->KillGroup();
  c.coordinator()->Wait(absl::Seconds(10));
  std::this_thread::sleep_for(std::chrono::seconds(2));  // workers see it gone
  c.StartCoordinator();
  ASSERT_TRUE(c.WaitFor("kc", Done, absl::Seconds(90)));
  auto s = c.GetSweep("kc");
  EXPECT_EQ(s->sweep().counts().succeeded(), 6);
  for (const auto& t : s->trials()) {
    auto it = done_before.find(t.trial_id());
    if (it != done_before.end()) {
      EXPECT_EQ(t.results().at("ood_acc"), it->second);
      EXPECT_EQ(t.attempt(), 1) << "finished before the crash: never re-run";
    }
    ExpectCompleteLossCurve(c, t.trial_id(), 15);
  }
}

TEST(E2eTest, SigtermedWorkerRequeuesWithoutErrorBudget) {
  Cluster c("sigterm", Plan(60, 100));
  c.StartCoordinator();
  c.StartWorker(0, 1);
  const std::string file = c.WriteFile("s.yaml",
                                       "name: st\nkind: sraven\ngrid:\n  M: "
                                       "[1]\nfixed: {steps: 10}\nretries: 0\n");
  ASSERT_EQ(c.Smoe({"sweep", "submit", file}).first, 0);
  ASSERT_TRUE(c.WaitFor(
      "st",
      [](const pb::GetSweepResponse& s) {
        return s.sweep().counts().running() == 1;
      },
      absl::Seconds(30)));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  c.worker(0)->Signal(SIGTERM);
  EXPECT_EQ(c.worker(0)->Wait(absl::Seconds(30)), 0) << "drain exits cleanly";
  auto s = c.GetSweep("st");
  ASSERT_EQ(s->trials_size(), 1);
  const auto& t = s->trials(0);
  EXPECT_EQ(t.state(), pb::TRIAL_STATE_PENDING) << "re-queued immediately";
  EXPECT_EQ(t.error_count(), 0);
  EXPECT_EQ(t.preempt_count(), 1);
  auto m = c.Metrics(t.trial_id());
  ASSERT_EQ(m->attempts_size(), 1);
  EXPECT_EQ(m->attempts(0).outcome(), pb::ATTEMPT_OUTCOME_PREEMPTED);
  EXPECT_EQ(m->attempts(0).exit_code(), 75);
  // retries: 0, yet the preempted point still completes on another worker.
  c.StartWorker(1, 1);
  ASSERT_TRUE(c.WaitFor("st", Done, absl::Seconds(60)));
  EXPECT_EQ(c.GetSweep("st")->sweep().counts().succeeded(), 1);
}

TEST(E2eTest, AlwaysFailingPointFailsAfterBudgetOthersComplete) {
  Cluster c("fail", Plan(3, 10, R"({"match": {"M": 3}, "mode": "crash"})"));
  c.StartCoordinator();
  c.StartWorker(0, 2);
  const std::string file =
      c.WriteFile("s.yaml", SweepYaml("fl", "1, 2, 3", /*retries=*/1));
  auto [rc, out] = c.Smoe({"sweep", "submit", file, "--watch"});
  EXPECT_EQ(rc, 1) << "failed trials make --watch exit 1\n" << out;
  EXPECT_THAT(out, HasSubstr("4 succeeded, 2 failed"));
  auto s = c.GetSweep("fl");
  for (const auto& t : s->trials()) {
    const auto p = nlohmann::json::parse(t.params_json());
    if (p["M"] == 3) {
      EXPECT_EQ(t.state(), pb::TRIAL_STATE_FAILED);
      EXPECT_EQ(t.error_count(), 2);  // first try + 1 retry
      EXPECT_EQ(c.TrainerStarts(t.trial_id()), 2);
      EXPECT_FALSE(t.last_error().empty());
    } else {
      EXPECT_EQ(t.state(), pb::TRIAL_STATE_SUCCEEDED);
    }
  }
  // `smoe sweep retry` re-queues exactly the failed points.
  auto [rc2, out2] = c.Smoe({"sweep", "retry", "fl"});
  EXPECT_EQ(rc2, 0);
  EXPECT_THAT(out2, HasSubstr("re-queued 2 trials"));
}

TEST(E2eTest, MalformedSweepFilesAreRejectedNamingTheField) {
  Cluster c("malformed", Plan(1, 1));
  c.StartCoordinator();
  const std::pair<const char*, const char*> cases[] = {
      {"name: a\nkind: sraven\nbogus: 1\n", "unknown key 'bogus'"},
      {"name: b\nkind: sraven\ngrid:\n  M: [1, 99]\n", "grid.M"},
      {"name: c\nkind: sraven\ngrid:\n  M: []\n", "grid.M: empty axis"},
      {"name: d\nkind: sraven\nfixed: {lr: high}\n", "fixed.lr"},
      {"name: e\nkind: sraven\ngrid: {M: [1, 2\n", "YAML error"},
  };
  int i = 0;
  for (const auto& [yaml, expect] : cases) {
    const std::string f = c.WriteFile(absl::StrCat("bad", i++, ".yaml"), yaml);
    auto [rc, out] = c.Smoe({"sweep", "submit", f});
    EXPECT_EQ(rc, 65) << out;
    EXPECT_THAT(out, HasSubstr(expect));
    // One "smoe: FILE: " prefix, not "smoe: FILE: smoe: ...".
    EXPECT_THAT(out, HasSubstr("smoe: " + f + ": "));
    EXPECT_EQ(out.find("smoe: "), out.rfind("smoe: ")) << out;
  }
  auto [rc, out] = c.Smoe({"sweep", "submit", c.dir() + "/missing.yaml"});
  EXPECT_EQ(rc, 66) << out;
  auto [rc2, ls] = c.Smoe({"sweep", "ls"});
  EXPECT_EQ(rc2, 0);
  EXPECT_EQ(std::count(ls.begin(), ls.end(), '\n'), 1) << "nothing created\n"
                                                       << ls;
}

TEST(E2eTest, WrongOrMissingTokenIsRefusedAndTokenNeverLeaks) {
  Cluster c("token", Plan(2, 10));
  c.StartCoordinator();
  c.StartWorker(0, 1);
  auto [rc, out] = c.Smoe({"sweep", "ls"}, {{"SMOE_TOKEN", "smoe_wrong"}});
  EXPECT_EQ(rc, 77) << out;
  EXPECT_THAT(out, HasSubstr("invalid API token"));
  // Issue 31 item 8: the refusal names where the token came from.
  EXPECT_THAT(out, HasSubstr("(the token came from $SMOE_TOKEN)"));
  // An explicit --token-file wins over $SMOE_TOKEN.
  auto [rc1, out1] =
      RunCommand({c.smoe(), "sweep", "ls", "--coordinator", c.address(),
                  "--token-file", c.dir() + "/coord/token"},
                 {{"SMOE_TOKEN", "smoe_wrong"}}, absl::Seconds(30));
  EXPECT_EQ(rc1, 0) << out1;
  auto [rc2, out2] =
      RunCommand({c.smoe(), "sweep", "ls", "--coordinator", c.address(),
                  "--token-file", c.dir() + "/nope"},
                 {{"SMOE_TOKEN", ""}, {"HOME", c.dir()}}, absl::Seconds(30));
  EXPECT_EQ(rc2, 77) << out2;
  EXPECT_THAT(out2, HasSubstr("no API token"));
  // A raw call without metadata gets UNAUTHENTICATED.
  auto channel =
      grpc::CreateChannel(c.address(), grpc::InsecureChannelCredentials());
  auto stub = pb::Coordinator::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  pb::ListSweepsResponse resp;
  EXPECT_EQ(stub->ListSweeps(&ctx, {}, &resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // The token never lands in logs or the database.
  const std::string file = c.WriteFile("s.yaml", SweepYaml("tk", "1"));
  ASSERT_EQ(c.Smoe({"sweep", "submit", file, "--watch"}).first, 0);
  std::ifstream tf(c.dir() + "/coord/token");
  std::string token;
  tf >> token;
  ASSERT_GT(token.size(), 10u);
  for (const std::string& f :
       {c.dir() + "/coordinator.log", c.dir() + "/coord/smoe.db",
        c.dir() + "/coord/smoe.db-wal", c.dir() + "/worker-0/worker.log"}) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_FALSE(absl::StrContains(ss.str(), token)) << "token found in " << f;
  }
}

// A worker frozen past its lease (a long GC pause, a network partition) loses
// the trial; when it wakes it is told to cancel, and the trial's next attempt
// lands on the same host and resumes from its checkpoint. The earlier
// attempt's metrics were refused as stale, yet the series stays complete: the
// daemon re-sends the trial's metric history under the new attempt.
TEST(E2eTest, FrozenWorkerResumesTrialWithCompleteMetricHistory) {
  Cluster c("frozen", Plan(40, 200));
  c.StartCoordinator();
  Process* w = c.StartWorker(0, 1);
  const std::string file = c.WriteFile(
      "s.yaml",
      "name: fz\nkind: sraven\ngrid:\n  M: [1]\nfixed: {steps: 10}\n");
  ASSERT_EQ(c.Smoe({"sweep", "submit", file}).first, 0);
  ASSERT_TRUE(c.WaitFor(
      "fz",
      [](const pb::GetSweepResponse& s) {
        return s.sweep().counts().running() == 1;
      },
      absl::Seconds(30)));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  w->Signal(SIGSTOP);
  // Lease timeout 3 s + expiry tick: the coordinator re-queues the trial.
  ASSERT_TRUE(c.WaitFor(
      "fz",
      [](const pb::GetSweepResponse& s) {
        return s.sweep().counts().pending() == 1;
      },
      absl::Seconds(20)));
  w->Signal(SIGCONT);
  ASSERT_TRUE(c.WaitFor("fz", Done, absl::Seconds(60)));
  auto s = c.GetSweep("fz");
  ASSERT_EQ(s->trials_size(), 1);
  const auto& t = s->trials(0);
  EXPECT_EQ(t.state(), pb::TRIAL_STATE_SUCCEEDED);
  EXPECT_EQ(t.attempt(), 2);
  EXPECT_EQ(t.error_count(), 0);
  EXPECT_GT(t.results().at("start_step"), 0) << "attempt 2 resumed";
  ExpectCompleteLossCurve(c, t.trial_id(), 40);
}

// TLS end to end: a coordinator with --tls-cert/--tls-key serves a CLI and a
// worker that trust its CA (--tls-ca); a plaintext client cannot connect.
// The grpc.health.v1 service answers without a token (Kubernetes probes).
TEST(E2eTest, TlsAndHealthCheck) {
  Cluster c("tls", Plan(2, 10));
  const std::string cert = c.dir() + "/cert.pem", key = c.dir() + "/key.pem";
  auto [orc, oout] = RunCommand(
      {"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
       "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost",
       "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"},
      {}, absl::Seconds(60));
  ASSERT_EQ(orc, 0) << oout;
  const std::string port_file = c.dir() + "/port";
  auto coord = Process::Start(
      {c.smoe(), "coordinator", "--data-dir", c.dir() + "/coord", "--listen",
       "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--port-file", port_file,
       "--tls-cert", cert, "--tls-key", key},
      {}, c.dir() + "/coordinator.log");
  for (int i = 0; i < 300 && !std::ifstream(port_file); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  int port = 0;
  std::ifstream(port_file) >> port;
  ASSERT_GT(port, 0);
  const std::string addr = absl::StrCat("127.0.0.1:", port);
  const std::string token_file = c.dir() + "/coord/token";
  auto [rc, out] = RunCommand({c.smoe(), "sweep", "ls", "--coordinator", addr,
                               "--token-file", token_file, "--tls-ca", cert},
                              {}, absl::Seconds(30));
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("SWEEP"));
  auto [rc2, out2] = RunCommand({c.smoe(), "sweep", "ls", "--coordinator", addr,
                                 "--token-file", token_file, "--timeout", "3"},
                                {}, absl::Seconds(30));
  EXPECT_EQ(rc2, 69) << "plaintext client vs TLS server\n" << out2;
  // A worker over TLS runs a sweep to completion.
  const std::string wdir = c.dir() + "/worker-0";
  std::filesystem::create_directories(wdir);
  auto worker = Process::Start(
      {c.smoe(), "worker", "--coordinator", addr, "--token-file", token_file,
       "--tls-ca", cert, "--work-dir", wdir, "--trainer",
       std::string(SMOE_BIN_DIR) + "/smoe-fake-trainer"},
      {{"SMOE_FAKE_TRAINER_PLAN", c.dir() + "/plan.json"}},
      wdir + "/worker.log");
  const std::string file =
      c.WriteFile("s.yaml", "name: tl\nkind: sraven\ngrid:\n  M: [1, 2]\n");
  auto [rc3, out3] =
      RunCommand({c.smoe(), "sweep", "submit", file, "--watch", "--coordinator",
                  addr, "--token-file", token_file, "--tls-ca", cert},
                 {}, absl::Seconds(60));
  EXPECT_EQ(rc3, 0) << out3;
  EXPECT_THAT(out3, HasSubstr("2 succeeded"));
  // grpc.health.v1.Health/Check with an empty request and no token: the
  // reply is HealthCheckResponse{status: SERVING (1)} = bytes 08 01.
  grpc::SslCredentialsOptions ssl;
  std::ifstream cin(cert);
  std::stringstream pem;
  pem << cin.rdbuf();
  ssl.pem_root_certs = pem.str();
  auto channel = grpc::CreateChannel(addr, grpc::SslCredentials(ssl));
  grpc::GenericStub generic(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::ByteBuffer request, response;
  grpc::Slice empty("");
  request = grpc::ByteBuffer(&empty, 1);
  std::promise<grpc::Status> done;
  generic.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(),
                    &request, &response,
                    [&done](grpc::Status s) { done.set_value(s); });
  grpc::Status hs = done.get_future().get();
  ASSERT_TRUE(hs.ok()) << hs.error_message();
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (const auto& sl : slices) {
    bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
  }
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));
  worker->Signal(SIGTERM);
  EXPECT_EQ(worker->Wait(absl::Seconds(30)), 0);
}

// `smoe train sraven` runs the real trainer as a child and summarises it.
TEST(E2eTest, TrainCommandRunsTheRealTrainer) {
  const std::string bin = SMOE_BIN_DIR;
  if (!std::ifstream(bin + "/smoe-trainer")) {
    GTEST_SKIP() << "smoe-trainer not built (LibTorch missing)";
  }
  // A fresh dir: an existing checkpoint there would (correctly) be resumed.
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "smoe-train-e2e-", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(dir + "-bad");
  auto [rc, out] = RunCommand({bin + "/smoe",
                               "train",
                               "sraven",
                               "--M",
                               "2",
                               "--top-k",
                               "2",
                               "--attention",
                               "hyla",
                               "--width",
                               "0.25",
                               "--depth",
                               "1",
                               "--steps",
                               "6",
                               "--batch-size",
                               "8",
                               "--param",
                               "num_eval=16",
                               "--param",
                               "eval_every=3",
                               "--workdir",
                               dir},
                              {{"OMP_NUM_THREADS", "1"}}, absl::Seconds(120));
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("SRAVEN run finished"));
  EXPECT_THAT(out, HasSubstr("ood_acc"));
  EXPECT_THAT(out, HasSubstr("step 6/6"));
  // Evaluations show their progress; nothing shows 0/0 before the first step.
  EXPECT_THAT(out, HasSubstr("evaluating test 0/16"));
  EXPECT_THAT(out, HasSubstr("evaluating ood 8/16"));
  EXPECT_THAT(out, testing::Not(HasSubstr(" 0/0")));
  auto [rc2, out2] =
      RunCommand({bin + "/smoe", "train", "sraven", "--steps", "2", "--param",
                  "bogus=1", "--workdir", dir + "-bad"},
                 {}, absl::Seconds(60));
  EXPECT_EQ(rc2, 64) << out2;
  EXPECT_THAT(out2, HasSubstr("bogus"));
  // The README's one-off example (defaults: width 1, 2000 steps) says up
  // front that it takes a while on the CPU and how to make it quick; the
  // trainer here is /bin/false, so nothing trains.
  auto [rc3, out3] =
      RunCommand({bin + "/smoe", "train", "sraven", "--M", "4", "--top-k", "2",
                  "--attention", "hyla", "--trainer", "/bin/false", "--workdir",
                  dir + "-bad"},
                 {}, absl::Seconds(60));
  EXPECT_EQ(rc3, 1) << out3;
  EXPECT_THAT(out3, HasSubstr("2000 steps take tens of minutes"));
  EXPECT_THAT(out3, HasSubstr("--width 0.25 --steps 500"));
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(dir + "-bad");
}

}  // namespace
}  // namespace smoe::e2e
