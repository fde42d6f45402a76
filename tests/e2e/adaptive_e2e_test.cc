// Copyright 2026 SMoE Lab authors.
//
// Adaptive sweeps end to end (docs/adaptive-sweeps.md; ctest label `e2e`): a
// real coordinator and worker daemon on 127.0.0.1 running the fake trainer,
// which reports eval/ood_acc every `eval_every` steps on a rising curve whose
// final value is 1 / (1 + |top_k - M|). ASHA prunes and promotes (a pruned
// trial is stopped through the heartbeat, checkpoints, and resumes from its
// checkpoint when promoted); refine adds the untried neighbours of the best
// top_k and stops when resolved; a coordinator killed with SIGKILL mid-sweep
// loses no decision and takes none twice.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/e2e/cluster.h"

namespace smoe::e2e {
namespace {

namespace fs = std::filesystem;
namespace pb = smoe::v1;
using ::testing::HasSubstr;

// M = 1, top_k in {1, 2, 4, 8}: final ood_acc 1, 0.5, 0.25, 0.125. 40 steps,
// rungs at 10 and 20 (eta 2). top_k = 1 runs fastest (`fast_ms` per step),
// so it reaches each rung first, alone, and is paused there until the others
// report: it is pruned and then promoted, and resumes from its checkpoint.
std::string AshaPlan(int fast_ms, int slow_ms) {
  return absl::StrCat(
      R"({"default": {"mode": "succeed", "steps": 40, "step_ms": )", slow_ms,
      R"(, "eval_every": 10, "checkpoint_every": 2}, "rules": [)",
      R"({"match": {"top_k": 1}, "step_ms": )", fast_ms, "}]}");
}

std::string AshaYaml(const std::string& name) {
  return absl::StrCat(
      "name: ", name,
      "\nkind: sraven\ngrid:\n  M: [1]\n  top_k: [1, 2, 4, 8]\n"
      "fixed: {steps: 40}\nretries: 2\n"
      "search: {strategy: asha, metric: ood_acc, min_steps: 10, "
      "reduction: 2}\n");
}

bool Done(const pb::GetSweepResponse& s) {
  return s.sweep().state() != pb::SWEEP_STATE_ACTIVE;
}

int TopK(const pb::Trial& t) {
  return nlohmann::json::parse(t.params_json()).at("top_k").get<int>();
}

// The start steps of every attempt the fake trainer began for `trial_id`.
std::vector<int> StartSteps(Cluster& c, const std::string& trial_id) {
  const std::string hash = trial_id.substr(trial_id.find('/') + 1);
  std::vector<int> out;
  for (const auto& e : fs::recursive_directory_iterator(c.dir())) {
    if (e.path().filename() != "attempts.log") continue;
    if (!absl::StrContains(e.path().parent_path().string(), hash)) continue;
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      out.push_back(nlohmann::json::parse(line).at("start_step").get<int>());
    }
  }
  return out;
}

// Checks the finished ASHA sweep: top_k = 1 won, the rest are pruned with no
// error budget spent, and the decision log is consistent: per trial, state
// changes alternate (never the same one twice in a row) and a pruned trial's
// last decision is a prune.
//
// With `outage` (the coordinator was killed mid-sweep) a promoted trial may
// run to its end while no coordinator can pause it again: it may then
// succeed, with a promote as its last decision. The decision log's rules
// stay the same.
void ExpectAshaOutcome(const pb::GetSweepResponse& s, bool outage = false) {
  if (!outage) {
    EXPECT_EQ(s.sweep().counts().succeeded(), 1);
    EXPECT_EQ(s.sweep().counts().pruned(), 3);
  } else {
    EXPECT_GE(s.sweep().counts().succeeded(), 1);
    EXPECT_EQ(s.sweep().counts().succeeded() + s.sweep().counts().pruned(), 4);
  }
  EXPECT_EQ(s.sweep().counts().failed(), 0);
  std::map<std::string, int> k_of;
  for (const pb::Trial& t : s.trials()) {
    k_of[t.trial_id()] = TopK(t);
    EXPECT_EQ(t.error_count(), 0) << t.trial_id();
    if (TopK(t) == 1) {
      EXPECT_EQ(t.state(), pb::TRIAL_STATE_SUCCEEDED);
      EXPECT_DOUBLE_EQ(t.results().at("ood_acc"), 1.0);
    } else if (!outage || t.state() != pb::TRIAL_STATE_SUCCEEDED) {
      EXPECT_EQ(t.state(), pb::TRIAL_STATE_PRUNED) << TopK(t);
    }
  }
  std::map<std::string, std::vector<const pb::Decision*>> by_trial;
  std::set<std::tuple<std::string, std::string, int, bool>> seen;
  for (const pb::Decision& d : s.decisions()) {
    by_trial[d.trial_id()].push_back(&d);
    // No decision is taken twice: (trial, action, rung, final) repeats only
    // when a state change came between (a pause, a promotion, a pause again).
    seen.insert({d.trial_id(), d.action(), d.rung(), d.final()});
  }
  EXPECT_GE(s.search_usage().decisions(), 4);
  for (const auto& [trial, ds] : by_trial) {
    SCOPED_TRACE(absl::StrCat("top_k=", k_of[trial]));
    for (size_t i = 1; i < ds.size(); ++i) {
      const pb::Decision& a = *ds[i - 1];
      const pb::Decision& b = *ds[i];
      EXPECT_FALSE(a.action() == b.action() && a.rung() == b.rung() &&
                   a.final() == b.final())
          << "decision taken twice: " << b.action() << " rung " << b.rung()
          << ": " << b.reason();
      EXPECT_GT(b.seq(), a.seq());
    }
    if (k_of[trial] != 1 && !(outage && ds.back()->action() == "promote")) {
      EXPECT_EQ(ds.back()->action(), "prune");
      EXPECT_TRUE(ds.back()->final()) << ds.back()->reason();
    }
  }
  EXPECT_GT(s.search_usage().full_grid_trial_steps(),
            s.search_usage().trial_steps_used());
  EXPECT_EQ(s.search_usage().full_grid_trial_steps(), 4 * 40);
}

TEST(AdaptiveE2eTest, AshaSweepPrunesPromotesResumesAndFinishes) {
  Cluster c("asha", AshaPlan(100, 400));
  c.StartCoordinator();
  c.StartWorker(0, 4);  // one work dir: a promoted trial finds its checkpoint
  const std::string file = c.WriteFile("asha.yaml", AshaYaml("asha"));
  auto [rc, out] = c.Smoe({"sweep", "submit", file});
  ASSERT_EQ(rc, 0) << out;
  ASSERT_TRUE(c.WaitFor("asha", Done, absl::Seconds(120)));
  auto s = c.GetSweep("asha");
  ASSERT_TRUE(s.ok()) << s.status();
  ExpectAshaOutcome(*s);
  // top_k = 1 was paused at rung 0 (alone there) and promoted back: it ran
  // again from its checkpoint, not from step 1.
  for (const pb::Trial& t : s->trials()) {
    if (TopK(t) != 1) continue;
    std::vector<std::string> actions;
    for (const pb::Decision& d : s->decisions()) {
      if (d.trial_id() == t.trial_id()) actions.push_back(d.action());
    }
    ASSERT_GE(actions.size(), 2u);
    EXPECT_EQ(actions[0], "prune");
    EXPECT_EQ(actions[1], "promote");
    EXPECT_GE(t.attempt(), 2);
    const std::vector<int> starts = StartSteps(c, t.trial_id());
    ASSERT_GE(starts.size(), 2u);
    EXPECT_EQ(starts[0], 1);
    EXPECT_GE(starts[1], 11) << "resumed from its checkpoint";
  }
  // Pruned trials stopped early: their trainers never reached the end.
  for (const pb::Trial& t : s->trials()) {
    if (TopK(t) == 4 || TopK(t) == 8) {
      EXPECT_LT(s->search_usage().trial_steps_used(), 4 * 40);
    }
  }
  // `smoe sweep show` prints the pruned state and the decisions.
  auto [show_rc, show] = c.Smoe({"sweep", "show", "asha"});
  EXPECT_EQ(show_rc, 0) << show;
  std::printf("%s", show.c_str());  // the log shows what users see
  EXPECT_THAT(show, HasSubstr("pruned"));
  EXPECT_THAT(show, HasSubstr("trial-steps"));
  EXPECT_THAT(show, HasSubstr("rung 0"));
  // Issue 31 item 5: decisions name the trial's parameters, not only its
  // hash ("#3 top_k=8 (1f2e...) prune (final): ...").
  EXPECT_THAT(
      show, ::testing::ContainsRegex("#[0-9]+ top_k=8 \\([0-9a-f]+\\) prune"));
  // `smoe results`: a pruned trial shows the rung it stopped at and the
  // value it was judged by there (no final results).
  auto [res_rc, res] = c.Smoe({"results", "asha", "--format", "csv"});
  ASSERT_EQ(res_rc, 0) << res;
  std::printf("%s", res.c_str());
  EXPECT_THAT(res, HasSubstr("pruned_at,pruned_value"));
  int pruned_rows = 0;
  for (absl::string_view line : absl::StrSplit(res, '\n')) {
    if (!absl::StrContains(line, ",pruned,")) continue;
    ++pruned_rows;
    EXPECT_THAT(std::string(line),
                ::testing::ContainsRegex(
                    ",rung [0-9]+ \\(step [0-9]+\\),[0-9][0-9.e-]*$"))
        << line;
  }
  EXPECT_EQ(pruned_rows, 3) << res;
  // `smoe sweep ls` counts them.
  auto [ls_rc, ls] = c.Smoe({"sweep", "ls"});
  ASSERT_EQ(ls_rc, 0) << ls;
  EXPECT_THAT(ls, HasSubstr("PRUNED"));
  EXPECT_THAT(ls, ::testing::ContainsRegex("asha +sraven .* 3 *\n"));
  // `smoe analyze` says the best top_k is the best of the survivors.
  auto [an_rc, an] = c.Smoe({"analyze", "asha"});
  ASSERT_EQ(an_rc, 0) << an;
  std::printf("%s", an.c_str());
  EXPECT_THAT(an, HasSubstr("note: 3 trial(s) were pruned by the search"));
  EXPECT_THAT(an, HasSubstr("every trial was pruned at top_k = 2, 4, 8"));
}

TEST(AdaptiveE2eTest, RefineSweepAddsNeighboursAndStops) {
  Cluster c("refine",
            R"({"default": {"mode": "succeed", "steps": 4, "step_ms": 20}})");
  c.StartCoordinator();
  c.StartWorker(0, 2);
  // M = 2: ood_acc peaks at top_k = 2. Start from {1, 4}: x* = 1, so 2 is
  // added; then x* = 2 and 3 is added; then both neighbours are measured.
  const std::string file = c.WriteFile(
      "refine.yaml",
      "name: refine\nkind: sraven\ngrid:\n  M: [2]\n  top_k: [1, 4]\n"
      "fixed: {steps: 4}\nseeds: [0, 1]\n"
      "search: {strategy: refine, metric: ood_acc, axis: top_k, "
      "bounds: [1, 8], group_by: [M]}\n");
  auto [rc, out] = c.Smoe({"sweep", "submit", file});
  ASSERT_EQ(rc, 0) << out;
  ASSERT_TRUE(c.WaitFor("refine", Done, absl::Seconds(90)));
  auto s = c.GetSweep("refine");
  ASSERT_TRUE(s.ok()) << s.status();
  std::multiset<int> ks;
  for (const pb::Trial& t : s->trials()) {
    ks.insert(TopK(t));
    EXPECT_EQ(t.state(), pb::TRIAL_STATE_SUCCEEDED);
  }
  EXPECT_EQ(ks, (std::multiset<int>{1, 1, 2, 2, 3, 3, 4, 4}));
  int adds = 0;
  std::string resolved;
  for (const pb::Decision& d : s->decisions()) {
    if (d.action() == "add") ++adds;
    if (d.action() == "resolved") {
      EXPECT_TRUE(resolved.empty()) << "resolved twice";
      resolved = d.group();
      EXPECT_EQ(d.rung(), 2);  // x* = 2
    }
  }
  EXPECT_EQ(adds, 4);
  EXPECT_EQ(resolved, "M=2");
  EXPECT_EQ(s->search_usage().full_grid_trial_steps(), 8 * 2 * 4);
  EXPECT_EQ(s->search_usage().trial_steps_used(), 8 * 4);
}

// Refine + asha on real workers. M = 3: final ood_acc 1 / (1 + |top_k - 3|).
// The fake trainer is told no eval cadence: it evaluates only at the rung
// the coordinator puts in the lease (step 4 of 8) and at the end. Start from
// top_k {1, 4}: per seed, 4 beats 1 at the rung (1 is stopped); refine adds
// 3 and 5 around x* = 4; 3 wins the rung, 5 is stopped; then 2 is added;
// x* = 3 is resolved.
TEST(AdaptiveE2eTest, RefineWithAshaStopsLosersAtTheLeasedRung) {
  Cluster c("refine-asha",
            R"({"default": {"mode": "succeed", "steps": 8, "step_ms": 40,)"
            R"( "checkpoint_every": 2}})");
  c.StartCoordinator();
  c.StartWorker(0, 4);
  const std::string file = c.WriteFile(
      "ra.yaml",
      "name: ra\nkind: sraven\ngrid:\n  M: [3]\n  top_k: [1, 4]\n"
      "fixed: {steps: 8}\nseeds: [0, 1]\n"
      "search: {strategy: refine, metric: ood_acc, axis: top_k, "
      "bounds: [1, 8], group_by: [M], early_stop: asha, min_steps: 4, "
      "reduction: 2}\n");
  auto [rc, out] = c.Smoe({"sweep", "submit", file});
  ASSERT_EQ(rc, 0) << out;
  ASSERT_TRUE(c.WaitFor("ra", Done, absl::Seconds(90)));
  auto s = c.GetSweep("ra");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->sweep().state(), pb::SWEEP_STATE_COMPLETED);
  std::multiset<int> ks;
  for (const pb::Trial& t : s->trials()) {
    ks.insert(TopK(t));
    EXPECT_EQ(t.error_count(), 0);
    if (TopK(t) == 3) {
      EXPECT_EQ(t.state(), pb::TRIAL_STATE_SUCCEEDED);
    }
    if (TopK(t) == 1 || TopK(t) == 5) {
      EXPECT_EQ(t.state(), pb::TRIAL_STATE_PRUNED) << TopK(t);
    }
  }
  EXPECT_EQ(ks, (std::multiset<int>{1, 1, 2, 2, 3, 3, 4, 4, 5, 5}));
  int resolved = 0;
  bool rung_value_checked = false;
  std::map<std::string, int> k_of;
  for (const pb::Trial& t : s->trials()) k_of[t.trial_id()] = TopK(t);
  for (const pb::Decision& d : s->decisions()) {
    if (d.action() == "resolved") {
      ++resolved;
      EXPECT_EQ(d.group(), "M=3");
      EXPECT_EQ(d.rung(), 3);
      EXPECT_THAT(d.reason(), HasSubstr("stopped early"));
    }
    if (d.action() == "prune" && d.final() && k_of[d.trial_id()] == 1) {
      // Judged on the evaluation at the rung step itself (1/3 * 4/8), not on
      // the final one at step 8: the lease asked for it.
      EXPECT_EQ(d.step(), 4);
      EXPECT_NEAR(d.value(), 1.0 / 3 * 4 / 8, 1e-9);
      rung_value_checked = true;
    }
  }
  EXPECT_EQ(resolved, 1);
  EXPECT_TRUE(rung_value_checked);
  EXPECT_EQ(s->search_usage().full_grid_trial_steps(), 8 * 2 * 8);
  EXPECT_LT(s->search_usage().trial_steps_used(), 10 * 8);
}

TEST(AdaptiveE2eTest, KilledCoordinatorLosesNoDecisionAndTakesNoneTwice) {
  Cluster c("asha-kill", AshaPlan(100, 400));
  c.StartCoordinator();
  c.StartWorker(0, 4);
  const std::string file = c.WriteFile("asha.yaml", AshaYaml("ak"));
  ASSERT_EQ(c.Smoe({"sweep", "submit", file}).first, 0);
  // Kill -9 right after the first decision (top_k = 1 paused at rung 0).
  ASSERT_TRUE(c.WaitFor(
      "ak",
      [](const pb::GetSweepResponse& s) { return s.decisions_size() >= 1; },
      absl::Seconds(60)));
  auto before = c.GetSweep("ak");
  ASSERT_TRUE(before.ok());
  c.coordinator()->KillGroup();
  c.coordinator()->Wait(absl::Seconds(10));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  c.StartCoordinator();
  ASSERT_TRUE(c.WaitFor("ak", Done, absl::Seconds(150)));
  auto s = c.GetSweep("ak");
  ASSERT_TRUE(s.ok()) << s.status();
  // Every decision seen before the kill is still there, unchanged, first.
  ASSERT_GE(s->decisions_size(), before->decisions_size());
  for (int i = 0; i < before->decisions_size(); ++i) {
    EXPECT_EQ(s->decisions(i).seq(), before->decisions(i).seq());
    EXPECT_EQ(s->decisions(i).trial_id(), before->decisions(i).trial_id());
    EXPECT_EQ(s->decisions(i).action(), before->decisions(i).action());
  }
  ExpectAshaOutcome(*s, /*outage=*/true);
}

}  // namespace
}  // namespace smoe::e2e
