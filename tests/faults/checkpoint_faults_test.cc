// Copyright 2026 SMoE Lab authors.
//
// Checkpoints that outlive their worker (ctest label `faults`; issue 16
// item 7, issue 18 item 2): real `smoe` coordinator and worker processes on
// 127.0.0.1 (port 0) with the fake trainer, whose checkpoint.json the worker
// daemon uploads to the coordinator and downloads on another worker.
//   * a trial drained on worker A after a checkpoint resumes on worker B (A's
//     work dir deleted) at the checkpointed step, not step 0, and the
//     coordinator's blobs are garbage-collected when it ends;
//   * a stored checkpoint corrupted on the coordinator's disk is set aside on
//     download and the attempt resumes from the previous one, or from
//     scratch when both are bad; reported as checkpoint/download_corrupt;
//   * a checkpoint over --checkpoint-max-bytes is refused naming its size;
//     the trial still completes;
//   * a failed trial keeps its checkpoints, and a retry resumes from them.
// The artifacts of a trial are listed and downloaded with `smoe artifacts`.
// Every wait is bounded.
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/cluster.h"

namespace smoe::e2e {
namespace {

namespace fs = std::filesystem;
namespace pb = smoe::v1;
using ::testing::HasSubstr;

bool Done(const pb::GetSweepResponse& s) {
  return s.sweep().state() != pb::SWEEP_STATE_ACTIVE;
}

// Values of metric `name` of a trial by step.
std::map<int64_t, double> Series(Cluster& c, const std::string& trial,
                                 const std::string& name) {
  std::map<int64_t, double> out;
  auto m = c.Metrics(trial);
  if (!m.ok()) return out;
  for (const auto& p : m->metrics()) {
    if (p.name() == name) out[p.step()] = p.value();
  }
  return out;
}

// The coordinator's stored blobs of `trial` (step -> path).
std::map<int64_t, std::string> Blobs(Cluster& c, const std::string& trial) {
  std::map<int64_t, std::string> out;
  std::string d = trial;
  std::replace(d.begin(), d.end(), '/', '_');
  const fs::path dir = fs::path(c.dir()) / "coord" / "checkpoints" / d;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    int64_t step = 0;
    if (absl::EndsWith(name, ".blob") &&
        absl::SimpleAtoi(name.substr(0, name.size() - 5), &step)) {
      out[step] = e.path().string();
    }
  }
  return out;
}

int FilesUnder(const std::string& dir) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    n += e.is_regular_file() ? 1 : 0;
  }
  return n;
}

// The step inside a stored fake-trainer checkpoint (checkpoint.json). The
// daemon labels a blob with its event's step; when the trainer writes the
// next checkpoint before the daemon reads the event, the content is newer
// than the label (never older), so resumption is checked against content.
int64_t ContentStep(const std::string& path) {
  const auto j = nlohmann::json::parse(ReadText(path), nullptr, false);
  return j.is_object() && j.contains("step") ? j["step"].get<int64_t>() : -1;
}

void FlipByte(const std::string& path, std::streamoff at) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(at);
  char ch = 0;
  f.get(ch);
  f.seekp(at);
  f.put(static_cast<char>(ch ^ 0x5a));
}

// Waits until every trial of `sweep` has at least `uploads` stored
// checkpoints reported (checkpoint/uploaded metric points).
bool WaitForUploads(Cluster& c, const std::string& sweep, int uploads,
                    absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (absl::Now() < end) {
    auto s = c.GetSweep(sweep);
    bool all = s.ok() && s->trials_size() > 0;
    if (all) {
      for (const auto& t : s->trials()) {
        if (static_cast<int>(
                Series(c, t.trial_id(), "checkpoint/uploaded").size()) <
            uploads) {
          all = false;
        }
      }
    }
    if (all) return true;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return false;
}

// Issue 16 item 7: drain on worker A, resume on worker B at the
// checkpointed step; artifacts listed and downloaded; blobs GC'd at the end.
TEST(CheckpointFaultsTest, DrainedTrialResumesOnAnotherWorkerAtItsCheckpoint) {
  Cluster c("ckpt-move", R"({"default": {"mode": "succeed", "steps": 400,
      "step_ms": 25, "checkpoint_every": 5}})");
  c.StartCoordinator();
  c.StartWorker(0, 1);
  const std::string file = c.WriteFile(
      "s.yaml",
      "name: mv\nkind: sraven\ngrid:\n  M: [1]\nfixed: {steps: 10}\n");
  auto [rc, out] = c.Smoe({"sweep", "submit", file});
  ASSERT_EQ(rc, 0) << out;
  ASSERT_TRUE(WaitForUploads(c, "mv", 2, absl::Seconds(60)));
  auto s = c.GetSweep("mv");
  ASSERT_TRUE(s.ok()) << s.status();
  const std::string trial = s->trials(0).trial_id();

  // Drain worker A: SIGTERM -> the trainer checkpoints and exits 75; the
  // daemon uploads that checkpoint before reporting the preemption.
  const absl::Time drain_start = absl::Now();
  c.worker(0)->Signal(SIGTERM);
  ASSERT_EQ(c.worker(0)->Wait(absl::Seconds(40)), 0);
  const absl::Duration drain_took = absl::Now() - drain_start;
  s = c.GetSweep("mv");
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->trials(0).state(), pb::TRIAL_STATE_PENDING);
  const std::map<int64_t, double> uploaded =
      Series(c, trial, "checkpoint/uploaded");
  ASSERT_FALSE(uploaded.empty());
  const int64_t checkpointed = uploaded.rbegin()->first;
  EXPECT_GT(checkpointed, 0);
  EXPECT_LT(checkpointed, 400) << "drained before the end";
  auto blobs = Blobs(c, trial);
  ASSERT_FALSE(blobs.empty());
  EXPECT_EQ(blobs.rbegin()->first, checkpointed)
      << "the SIGTERM checkpoint is stored before Fail(PREEMPTED)";
  EXPECT_LE(blobs.size(), 2u) << "the newest two are kept";
  EXPECT_EQ(ContentStep(blobs.rbegin()->second), checkpointed)
      << "the checkpoint written at SIGTERM";

  // Worker A's host is gone: nothing of the trial is left on any worker.
  fs::remove_all(c.dir() + "/worker-0");

  // Artifacts: listed and downloaded (verified) while the trial waits.
  auto [lrc, listing] = c.Smoe({"artifacts", trial});
  ASSERT_EQ(lrc, 0) << listing;
  const std::string name =
      absl::StrCat("checkpoint-", checkpointed, "-checkpoint.json");
  EXPECT_THAT(listing, HasSubstr(name));
  const std::string got = c.dir() + "/downloaded.json";
  auto [drc, dout] =
      c.Smoe({"artifacts", trial, "--download", name, "-o", got});
  ASSERT_EQ(drc, 0) << dout;
  const auto ckpt = nlohmann::json::parse(ReadText(got), nullptr, false);
  ASSERT_TRUE(ckpt.is_object()) << ReadText(got);
  EXPECT_EQ(ckpt["step"], checkpointed);
  auto [nrc, nout] = c.Smoe({"artifacts", trial, "--download", "nope.bin"});
  EXPECT_EQ(nrc, 66) << nout;
  EXPECT_THAT(nout, HasSubstr("no artifact 'nope.bin'"));

  // Worker B, on a fresh work dir, resumes at the checkpointed step.
  c.StartWorker(1, 1);
  ASSERT_TRUE(c.WaitFor("mv", Done, absl::Seconds(60)));
  s = c.GetSweep("mv");
  ASSERT_TRUE(s.ok());
  const pb::Trial& t = s->trials(0);
  EXPECT_EQ(t.state(), pb::TRIAL_STATE_SUCCEEDED);
  EXPECT_EQ(t.results().at("start_step"), checkpointed + 1)
      << "resumed from the stored checkpoint, not from step 0";
  EXPECT_EQ(t.error_count(), 0);
  auto m = c.Metrics(trial);
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->attempts_size(), 2);
  EXPECT_EQ(m->attempts(0).outcome(), pb::ATTEMPT_OUTCOME_PREEMPTED);
  EXPECT_EQ(m->attempts(0).worker_id(), "e2e-0");
  EXPECT_EQ(m->attempts(1).worker_id(), "e2e-1");
  const auto downloaded = Series(c, trial, "checkpoint/downloaded");
  ASSERT_EQ(downloaded.size(), 1u);
  EXPECT_EQ(downloaded.begin()->first, checkpointed);

  // result.json is an artifact now; the blobs are collected (trial ended).
  auto [rrc, rout] = c.Smoe({"artifacts", trial, "--download", "result.json",
                             "-o", c.dir() + "/result.json"});
  ASSERT_EQ(rrc, 0) << rout;
  const auto result =
      nlohmann::json::parse(ReadText(c.dir() + "/result.json"), nullptr, false);
  ASSERT_TRUE(result.is_object());
  EXPECT_EQ(result["results"]["start_step"], checkpointed + 1);
  EXPECT_EQ(result["state"], "succeeded");
  const absl::Time end = absl::Now() + absl::Seconds(20);
  while (absl::Now() < end && FilesUnder(c.dir() + "/coord/checkpoints") > 0) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(FilesUnder(c.dir() + "/coord/checkpoints"), 0);
  auto [arc, aout] = c.Smoe({"artifacts", trial});
  ASSERT_EQ(arc, 0) << aout;
  EXPECT_THAT(aout, HasSubstr("result.json"));
  EXPECT_THAT(aout, ::testing::Not(HasSubstr("checkpoint-")));
  std::cout << "drain with upload took " << drain_took << "; checkpointed step "
            << checkpointed << "\n";
}

// Issue 31 item 8: a sweep with keep_final_checkpoint keeps each succeeded
// trial's final checkpoint as an artifact (the daemon lets its upload land
// before it reports the result; GC keeps the newest blob only).
TEST(CheckpointFaultsTest, KeepFinalCheckpointKeepsASucceededTrialsLastOne) {
  Cluster c("ckpt-final", R"({"default": {"mode": "succeed", "steps": 40,
      "step_ms": 5, "checkpoint_every": 5}})");
  c.StartCoordinator();
  c.StartWorker(0, 2);
  const std::string file = c.WriteFile(
      "s.yaml",
      "name: fin\nkind: sraven\ngrid:\n  M: [1, 2]\nfixed: {steps: 10}\n"
      "keep_final_checkpoint: true\n");
  const std::string plain = c.WriteFile(
      "p.yaml",
      "name: plain\nkind: sraven\ngrid:\n  M: [1]\nfixed: {steps: 10}\n");
  auto [rc, out] = c.Smoe({"sweep", "submit", file});
  ASSERT_EQ(rc, 0) << out;
  auto [prc, pout] = c.Smoe({"sweep", "submit", plain});
  ASSERT_EQ(prc, 0) << pout;
  ASSERT_TRUE(c.WaitFor("fin", Done, absl::Seconds(60)));
  ASSERT_TRUE(c.WaitFor("plain", Done, absl::Seconds(60)));
  auto s = c.GetSweep("fin");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->trials_size(), 2);
  // GC runs after a trial ends and periodically: give it a few rounds.
  absl::SleepFor(absl::Seconds(3));
  for (const pb::Trial& t : s->trials()) {
    ASSERT_EQ(t.state(), pb::TRIAL_STATE_SUCCEEDED);
    const auto blobs = Blobs(c, t.trial_id());
    ASSERT_EQ(blobs.size(), 1u) << t.trial_id() << ": the final one only";
    EXPECT_EQ(blobs.begin()->first, 40);
    EXPECT_EQ(ContentStep(blobs.begin()->second), 40);
    auto [lrc, listing] = c.Smoe({"artifacts", t.trial_id()});
    ASSERT_EQ(lrc, 0) << listing;
    EXPECT_THAT(listing, HasSubstr("checkpoint-40-checkpoint.json"));
    EXPECT_THAT(listing, HasSubstr("result.json"));
    const std::string got = c.dir() + "/final.json";
    auto [drc, dout] = c.Smoe({"artifacts", t.trial_id(), "--download",
                               "checkpoint-40-checkpoint.json", "-o", got});
    ASSERT_EQ(drc, 0) << dout;
    EXPECT_EQ(ContentStep(got), 40);
  }
  // The sweep without the option: its succeeded trial's blobs are collected.
  auto p = c.GetSweep("plain");
  ASSERT_TRUE(p.ok());
  const std::string pt = p->trials(0).trial_id();
  const absl::Time end = absl::Now() + absl::Seconds(20);
  while (absl::Now() < end && !Blobs(c, pt).empty()) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(Blobs(c, pt).empty());
  auto [arc, aout] = c.Smoe({"artifacts", pt});
  ASSERT_EQ(arc, 0) << aout;
  EXPECT_THAT(aout, ::testing::Not(HasSubstr("checkpoint-")));
}

// A stored checkpoint that fails verification on download is set aside (on
// the coordinator) and the attempt resumes from the previous stored one, or
// from scratch when that is bad too; both reported.
TEST(CheckpointFaultsTest,
     CorruptStoredCheckpointIsSetAsideAndThePreviousUsed) {
  Cluster c("ckpt-corrupt", R"({"default": {"mode": "succeed", "steps": 400,
      "step_ms": 25, "checkpoint_every": 5}})");
  c.StartCoordinator();
  c.StartWorker(0, 2);
  const std::string file = c.WriteFile(
      "s.yaml",
      "name: cr\nkind: sraven\ngrid:\n  M: [1, 2]\nfixed: {steps: 10}\n");
  auto [rc, out] = c.Smoe({"sweep", "submit", file});
  ASSERT_EQ(rc, 0) << out;
  ASSERT_TRUE(WaitForUploads(c, "cr", 2, absl::Seconds(60)));
  c.worker(0)->Signal(SIGTERM);
  ASSERT_EQ(c.worker(0)->Wait(absl::Seconds(40)), 0);
  fs::remove_all(c.dir() + "/worker-0");
  auto s = c.GetSweep("cr");
  ASSERT_TRUE(s.ok());
  std::map<std::string, int64_t> expect_start;  // trial -> start_step
  std::map<std::string, int64_t> newest;
  for (const auto& t : s->trials()) {
    ASSERT_EQ(t.state(), pb::TRIAL_STATE_PENDING);
    auto blobs = Blobs(c, t.trial_id());
    ASSERT_EQ(blobs.size(), 2u) << t.trial_id();
    const auto p = nlohmann::json::parse(t.params_json());
    newest[t.trial_id()] = blobs.rbegin()->first;
    const int64_t previous = ContentStep(blobs.begin()->second);
    ASSERT_GT(previous, 0);
    FlipByte(blobs.rbegin()->second, 3);
    if (p["M"] == 1) {
      expect_start[t.trial_id()] = previous + 1;
    } else {
      FlipByte(blobs.begin()->second, 3);
      expect_start[t.trial_id()] = 1;  // scratch
    }
  }
  c.StartWorker(1, 2);
  ASSERT_TRUE(c.WaitFor("cr", Done, absl::Seconds(60)));
  s = c.GetSweep("cr");
  ASSERT_TRUE(s.ok());
  for (const auto& t : s->trials()) {
    EXPECT_EQ(t.state(), pb::TRIAL_STATE_SUCCEEDED);
    EXPECT_EQ(t.results().at("start_step"), expect_start[t.trial_id()])
        << t.params_json();
    const auto corrupt = Series(c, t.trial_id(), "checkpoint/download_corrupt");
    ASSERT_FALSE(corrupt.empty()) << "reported on the trial";
    EXPECT_EQ(corrupt.rbegin()->first, newest[t.trial_id()]);
    const auto p = nlohmann::json::parse(t.params_json());
    EXPECT_EQ(Series(c, t.trial_id(), "checkpoint/downloaded").size(),
              p["M"] == 1 ? 1u : 0u);
  }
  EXPECT_THAT(ReadText(c.dir() + "/coordinator.log"),
              HasSubstr("failed verification"));
  EXPECT_THAT(
      ReadText(c.dir() + "/worker-1/worker.log"),
      HasSubstr("no verified stored checkpoint; starting from scratch"));
}

// A checkpoint over the coordinator's cap is refused with a message naming
// its size and the cap; the trial completes from its local checkpoints.
TEST(CheckpointFaultsTest, CheckpointOverTheCapIsRefusedNamingItsSize) {
  Cluster c("ckpt-cap", R"({"default": {"mode": "succeed", "steps": 30,
      "step_ms": 20, "checkpoint_every": 10, "checkpoint_bytes": 10000}})");
  c.StartCoordinator({"--checkpoint-max-bytes", "4096"});
  c.StartWorker(0, 1);
  const std::string file = c.WriteFile(
      "s.yaml",
      "name: cap\nkind: sraven\ngrid:\n  M: [1]\nfixed: {steps: 10}\n");
  auto [rc, out] = c.Smoe({"sweep", "submit", file});
  ASSERT_EQ(rc, 0) << out;
  ASSERT_TRUE(c.WaitFor("cap", Done, absl::Seconds(60)));
  auto s = c.GetSweep("cap");
  ASSERT_TRUE(s.ok());
  const pb::Trial& t = s->trials(0);
  EXPECT_EQ(t.state(), pb::TRIAL_STATE_SUCCEEDED);
  const auto refused = Series(c, t.trial_id(), "checkpoint/upload_refused");
  ASSERT_FALSE(refused.empty());
  EXPECT_GT(refused.begin()->second, 10000) << "value = the blob's bytes";
  EXPECT_TRUE(Series(c, t.trial_id(), "checkpoint/uploaded").empty());
  const std::string log = ReadText(c.dir() + "/worker-0/worker.log");
  EXPECT_THAT(log, HasSubstr("coordinator refused the checkpoint"));
  EXPECT_THAT(log, HasSubstr("over the coordinator's --checkpoint-max-bytes "
                             "of 4096 bytes"));
  EXPECT_THAT(
      log, HasSubstr(absl::StrCat(static_cast<int64_t>(refused.begin()->second),
                                  " bytes")));
  EXPECT_EQ(FilesUnder(c.dir() + "/coord/checkpoints"), 0);
}

// A failed trial keeps its stored checkpoints (--checkpoint-keep-failed,
// 24 h by default), so `smoe sweep retry` resumes it from the last one on
// any worker instead of from step 0; once it succeeds they are collected.
TEST(CheckpointFaultsTest, RetriedFailedTrialResumesFromItsKeptCheckpoint) {
  Cluster c("ckpt-retry", R"({"default": {"mode": "crash", "until_attempt": 1,
      "at_step": 40, "steps": 60, "step_ms": 20, "checkpoint_every": 5}})");
  c.StartCoordinator();
  c.StartWorker(0, 1);
  const std::string file = c.WriteFile(
      "s.yaml",
      "name: rt\nkind: sraven\ngrid:\n  M: [1]\nfixed: {steps: 10}\n"
      "retries: 0\n");
  auto [rc, out] = c.Smoe({"sweep", "submit", file});
  ASSERT_EQ(rc, 0) << out;
  ASSERT_TRUE(c.WaitFor("rt", Done, absl::Seconds(60)));
  auto s = c.GetSweep("rt");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->trials(0).state(), pb::TRIAL_STATE_FAILED);
  const std::string trial = s->trials(0).trial_id();
  // Worker A's host is gone; the coordinator's GC has run since the failure
  // (it runs when a trial ends) and kept the failed trial's checkpoints.
  c.worker(0)->Signal(SIGTERM);
  ASSERT_EQ(c.worker(0)->Wait(absl::Seconds(40)), 0);
  fs::remove_all(c.dir() + "/worker-0");
  const auto blobs = Blobs(c, trial);
  ASSERT_FALSE(blobs.empty()) << "a failed trial's checkpoints are kept";
  const int64_t stored = ContentStep(blobs.rbegin()->second);
  EXPECT_GT(stored, 0);
  EXPECT_LT(stored, 40) << "checkpointed before the crash at step 40";

  auto [rrc, rout] = c.Smoe({"sweep", "retry", "rt"});
  ASSERT_EQ(rrc, 0) << rout;
  c.StartWorker(1, 1);
  ASSERT_TRUE(c.WaitFor("rt", Done, absl::Seconds(60)));
  s = c.GetSweep("rt");
  ASSERT_TRUE(s.ok());
  const pb::Trial& t = s->trials(0);
  EXPECT_EQ(t.state(), pb::TRIAL_STATE_SUCCEEDED);
  EXPECT_EQ(t.results().at("start_step"), stored + 1)
      << "resumed from the kept checkpoint, not from step 0";
  EXPECT_EQ(Series(c, trial, "checkpoint/downloaded").size(), 1u);
  // Succeeded: its blobs are collected now.
  const absl::Time end = absl::Now() + absl::Seconds(20);
  while (absl::Now() < end && FilesUnder(c.dir() + "/coord/checkpoints") > 0) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_EQ(FilesUnder(c.dir() + "/coord/checkpoints"), 0);
}

}  // namespace
}  // namespace smoe::e2e
