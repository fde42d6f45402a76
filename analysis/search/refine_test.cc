// Copyright 2026 SMoE Lab authors.
#include "analysis/search/refine.h"

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/rng.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::analysis::search {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// A concave curve peaking at `peak`, plus a per-seed offset.
double Curve(int64_t x, int64_t peak, int64_t seed, double seed_sd = 0.002) {
  const double d = static_cast<double>(x - peak);
  return 0.9 - 0.02 * d * d + seed_sd * static_cast<double>(seed - 1);
}

std::vector<RefinePoint> Measured(const std::string& group,
                                  const std::vector<int64_t>& xs, int64_t peak,
                                  const std::vector<int64_t>& seeds = {0, 1,
                                                                       2}) {
  std::vector<RefinePoint> out;
  for (int64_t x : xs) {
    for (int64_t s : seeds) {
      out.push_back({group, x, s, true, false, Curve(x, peak, s)});
    }
  }
  return out;
}

std::set<std::pair<int64_t, int64_t>> XSeeds(const RefineResult& r,
                                             const std::string& group) {
  std::set<std::pair<int64_t, int64_t>> out;
  for (const RefineProposal& p : r.proposals) {
    if (p.group == group) out.insert({p.x, p.seed});
  }
  return out;
}

RefineConfig Config() {
  RefineConfig c;
  c.lo = 1;
  c.hi = 8;
  c.seeds = {0, 1, 2};
  return c;
}

// Refine + asha: an x whose points were all stopped early is tried (not
// proposed again), never x*, and left out of the bootstrap.
TEST(RefineTest, StoppedPointsAreTriedButNeverTheArgmax) {
  std::vector<RefinePoint> pts = Measured("g", {4}, 4);
  for (int64_t x : {3, 5}) {
    for (int64_t s : {0, 1, 2}) {
      RefinePoint p{"g", x, s, false, false, kNoValue};
      p.stopped = true;
      pts.push_back(p);
    }
  }
  const RefineResult r = DecideRefine(Config(), pts);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_TRUE(r.proposals.empty());
  EXPECT_EQ(r.groups[0].state, RefineState::kResolved);
  EXPECT_EQ(r.groups[0].best, 4);
  EXPECT_EQ(r.groups[0].stopped, (std::vector<int64_t>{3, 5}));
  EXPECT_THAT(r.groups[0].reason, HasSubstr("stopped early: 3, 5"));
  // A stopped x next to a measured one: the measured one is x*, and its
  // other neighbour is proposed.
  std::vector<RefinePoint> two = Measured("g", {2}, 2);
  RefinePoint p{"g", 1, 0, false, false, kNoValue};
  p.stopped = true;
  two.push_back(p);
  const RefineResult r2 = DecideRefine(Config(), two);
  EXPECT_EQ(r2.groups[0].best, 2);
  EXPECT_EQ(XSeeds(r2, "g"),
            (std::set<std::pair<int64_t, int64_t>>{{3, 0}, {3, 1}, {3, 2}}));
}

TEST(RefineTest, ProposesTheUntriedNeighboursOfTheBest) {
  const RefineResult r =
      DecideRefine(Config(), Measured("M=4", {1, 2, 4, 8}, 5));
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].best, 4);  // the measured argmax
  EXPECT_EQ(r.groups[0].state, RefineState::kExploring);
  EXPECT_EQ(XSeeds(r, "M=4"),
            (std::set<std::pair<int64_t, int64_t>>{
                {3, 0}, {3, 1}, {3, 2}, {5, 0}, {5, 1}, {5, 2}}));
  EXPECT_THAT(r.proposals[0].reason, HasSubstr("x*=4"));
  EXPECT_EQ(r.trials, 12);
  // At the bound only the inner neighbour exists.
  const RefineResult top =
      DecideRefine(Config(), Measured("M=8", {1, 2, 4, 8}, 9));
  EXPECT_EQ(XSeeds(top, "M=8"),
            (std::set<std::pair<int64_t, int64_t>>{{7, 0}, {7, 1}, {7, 2}}));
}

TEST(RefineTest, WaitsWhileAPointIsPendingAndIgnoresFailedOnes) {
  auto pts = Measured("g", {1, 2, 4, 8}, 5);
  pts.push_back({"g", 3, 0, false, true, kNoValue});
  RefineResult r = DecideRefine(Config(), pts);
  EXPECT_EQ(r.groups[0].state, RefineState::kWaiting);
  EXPECT_TRUE(r.proposals.empty());
  pts.back().pending = false;  // failed for good: tried, not measured
  r = DecideRefine(Config(), pts);
  EXPECT_EQ(XSeeds(r, "g"),
            (std::set<std::pair<int64_t, int64_t>>{{5, 0}, {5, 1}, {5, 2}}));
}

TEST(RefineTest, StopsWhenTheBestIsBracketedAndSeparated) {
  const RefineResult r =
      DecideRefine(Config(), Measured("g", {1, 2, 3, 4, 5, 8}, 4));
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].state, RefineState::kResolved) << r.groups[0].reason;
  EXPECT_EQ(r.groups[0].best, 4);
  EXPECT_GE(r.groups[0].best_freq, 0.9);
  EXPECT_THAT(r.groups[0].reason, HasSubstr("x*=4"));
  EXPECT_THAT(r.groups[0].reason, HasSubstr("resolved"));
  EXPECT_TRUE(r.proposals.empty());
}

// 4 and 5 tie on average; the seeds disagree on which is best.
std::vector<RefinePoint> Ambiguous() {
  std::vector<RefinePoint> pts;
  const std::map<int64_t, std::vector<double>> v = {{3, {0.70, 0.71, 0.69}},
                                                    {4, {0.80, 0.78, 0.82}},
                                                    {5, {0.79, 0.81, 0.79}},
                                                    {6, {0.60, 0.61, 0.62}}};
  for (const auto& [x, vals] : v) {
    for (size_t s = 0; s < vals.size(); ++s) {
      pts.push_back({"g", x, static_cast<int64_t>(s), true, false, vals[s]});
    }
  }
  return pts;
}

TEST(RefineTest, AddsSeedsWhereTheArgmaxIsAmbiguousThenGivesUp) {
  RefineConfig c = Config();
  c.add_seeds = 1;
  RefineResult r = DecideRefine(c, Ambiguous());
  EXPECT_EQ(r.groups[0].state, RefineState::kAddingSeeds) << r.groups[0].reason;
  EXPECT_LT(r.groups[0].best_freq, 0.9);
  EXPECT_EQ(XSeeds(r, "g"),
            (std::set<std::pair<int64_t, int64_t>>{{4, 3}, {5, 3}}));
  EXPECT_THAT(r.groups[0].reason, HasSubstr("covers 4, 5"));
  // With the extra seed measured (the seeds still split 2:2 between 4 and
  // 5), add_seeds is spent.
  auto pts = Ambiguous();
  pts.push_back({"g", 4, 3, true, false, 0.78});
  pts.push_back({"g", 5, 3, true, false, 0.81});
  r = DecideRefine(c, pts);
  EXPECT_EQ(r.groups[0].state, RefineState::kUnresolved) << r.groups[0].reason;
  EXPECT_TRUE(r.proposals.empty());
  c.add_seeds = 0;
  EXPECT_EQ(DecideRefine(c, Ambiguous()).groups[0].state,
            RefineState::kUnresolved);
}

TEST(RefineTest, BudgetIsSharedRoundRobinOverGroups) {
  RefineConfig c = Config();
  auto pts = Measured("a", {1, 2, 4, 8}, 5);
  for (const RefinePoint& p : Measured("b", {1, 2, 4, 8}, 3)) pts.push_back(p);
  c.budget = 24 + 9;  // three units of three
  const RefineResult r = DecideRefine(c, pts);
  EXPECT_EQ(r.proposals.size(), 9u);
  // Round 1: a's 3 and b's 1 (b's best is 2: neighbours 1 measured, 3);
  // round 2: a's 5. b wanted only one unit.
  EXPECT_EQ(XSeeds(r, "a"),
            (std::set<std::pair<int64_t, int64_t>>{
                {3, 0}, {3, 1}, {3, 2}, {5, 0}, {5, 1}, {5, 2}}));
  EXPECT_EQ(XSeeds(r, "b"),
            (std::set<std::pair<int64_t, int64_t>>{{3, 0}, {3, 1}, {3, 2}}));
  c.budget = 24 + 3;
  const RefineResult tight = DecideRefine(c, pts);
  EXPECT_EQ(tight.proposals.size(), 3u);
  EXPECT_EQ(tight.groups[1].state, RefineState::kBudget);
  EXPECT_THAT(tight.groups[1].reason, HasSubstr("budget 27 trials spent"));
}

TEST(RefineTest, ModeMinAndOrderFree) {
  RefineConfig c = Config();
  c.mode = Mode::kMin;
  auto pts = Measured("g", {1, 2, 4, 8}, 5);
  for (RefinePoint& p : pts) p.value = 1 - p.value;  // a loss
  const RefineResult want = DecideRefine(c, pts);
  EXPECT_EQ(want.groups[0].best, 4);
  EXPECT_NEAR(want.groups[0].best_mean, 1 - 0.88, 1e-9);
  Rng rng(3);
  for (int round = 0; round < 10; ++round) {
    rng.Shuffle(pts);
    const RefineResult r = DecideRefine(c, pts);
    EXPECT_EQ(r.proposals, want.proposals);
    EXPECT_EQ(r.groups[0].best_freq, want.groups[0].best_freq);
    EXPECT_EQ(r.groups[0].reason, want.groups[0].reason);
  }
}

// tolerance: x = 3 and 4 tie to 0.0005 with seed noise 0.004, so the
// argmax flips between them across resamples and the group cannot resolve
// (P(argmax = x*) < 0.9). With tolerance 0.002 they are practically
// equivalent and the group resolves, saying so; x = 2 and 5 (0.02 below)
// are not equivalent. The same points in any order give the same result.
TEST(RefineTest, ToleranceResolvesPracticallyEquivalentValues) {
  const std::map<int64_t, double> mean = {
      {2, 0.88}, {3, 0.9}, {4, 0.8995}, {5, 0.88}};
  const std::vector<double> noise = {0.004, -0.004, 0.0, 0.003, -0.003};
  std::vector<RefinePoint> pts;
  for (const auto& [x, m] : mean) {
    for (int64_t s = 0; s < 5; ++s) {
      // Independent noise per (x, seed): a different sign pattern per x.
      const double e = noise[static_cast<size_t>((s + x) % 5)];
      pts.push_back({"g", x, s, true, false, m + e});
    }
  }
  RefineConfig c = Config();
  c.seeds = {0, 1, 2, 3, 4};
  const RefineResult strict = DecideRefine(c, pts);
  ASSERT_EQ(strict.groups.size(), 1u);
  EXPECT_NE(strict.groups[0].state, RefineState::kResolved)
      << strict.groups[0].reason;
  EXPECT_LT(strict.groups[0].best_freq, 0.9);
  c.tolerance = 0.002;
  const RefineResult loose = DecideRefine(c, pts);
  const RefineGroup& g = loose.groups[0];
  EXPECT_EQ(g.state, RefineState::kResolved) << g.reason;
  EXPECT_TRUE(loose.proposals.empty());
  // Not "x*=3 resolved": 3 and 4 cannot be told apart at this tolerance,
  // and the reason says so, naming both (issue 31 item 5).
  EXPECT_THAT(
      g.reason,
      HasSubstr("x in {3, 4} indistinguishable within tolerance 0.002"));
  EXPECT_THAT(g.reason, Not(HasSubstr("x*=")));
  EXPECT_THAT(g.equivalent, ElementsAre(3, 4));
  EXPECT_EQ(g.best, 3);
  EXPECT_THAT(g.reason, HasSubstr("P(argmax in {3, 4}) = 1"));
  // A tolerance too small to cover x = 4 changes nothing.
  c.tolerance = 0.0001;
  EXPECT_EQ(DecideRefine(c, pts).groups[0].state, strict.groups[0].state);
  // Order-free.
  c.tolerance = 0.002;
  Rng rng(5);
  for (int round = 0; round < 5; ++round) {
    std::vector<RefinePoint> shuffled = pts;
    rng.Shuffle(shuffled);
    const RefineResult again = DecideRefine(c, shuffled);
    EXPECT_EQ(again.groups[0].reason, g.reason);
    EXPECT_EQ(again.proposals, loose.proposals);
  }
}

// DecideRefine is GrantRefine over each group's DecideRefineGroup (what the
// coordinator's incremental refine plan keeps per group): random sweeps of
// several groups with pending, failed, stopped and duplicated points (a
// duplicate (group, x, seed) with another value: the sort is total, so the
// same one is kept whether the sweep or one group is sorted), shuffled,
// with and without a budget, seeds to add and a tolerance.
TEST(RefineTest, GroupDecisionsAndTheGrantAreDecideRefine) {
  Rng rng(11);
  int proposals = 0, budget = 0, settled = 0;
  for (int round = 0; round < 120; ++round) {
    RefineConfig c = Config();
    c.lo = 1;
    c.hi = 8;
    c.budget =
        rng.Bernoulli(0.5) ? 0 : 30 + static_cast<int64_t>(rng.UniformInt(40));
    c.add_seeds = static_cast<int64_t>(rng.UniformInt(3));
    c.tolerance = rng.Bernoulli(0.3) ? 0.01 : 0;
    c.bootstrap_samples = 200;
    if (rng.Bernoulli(0.1)) c.stop_adding = "the budget is spent";
    std::vector<RefinePoint> pts;
    const int groups = 1 + static_cast<int>(rng.UniformInt(5));
    for (int g = 0; g < groups; ++g) {
      const std::string label = "M=" + std::to_string(g);
      const int64_t peak = 1 + static_cast<int64_t>(rng.UniformInt(8));
      for (int64_t x : {1, 2, 4, 8}) {
        if (rng.Bernoulli(0.15)) continue;
        for (int64_t s = 0; s < 3 + static_cast<int64_t>(rng.UniformInt(2));
             ++s) {
          RefinePoint p{label, x,
                        s,     true,
                        false, Curve(x, peak, s, 0.01 * rng.UniformDouble())};
          const uint64_t kind = rng.UniformInt(20);
          if (kind == 0) p = {label, x, s, false, true};    // pending
          if (kind == 1) p = {label, x, s, false, false};   // failed
          if (kind == 2) p.stopped = true, p.done = false;  // stopped
          if (kind == 3) p.value = std::nan("");            // NaN metric
          pts.push_back(p);
          if (rng.Bernoulli(0.05)) {  // a duplicate with another value
            p.value += 0.01;
            pts.push_back(p);
          }
        }
      }
    }
    rng.Shuffle(pts);
    const RefineResult want = DecideRefine(c, pts);
    std::map<std::string, std::vector<RefinePoint>> by_group;
    for (const RefinePoint& p : pts) by_group[p.group].push_back(p);
    std::vector<RefineGroupPlan> plans;
    int64_t trials = 0;
    for (auto& [label, gp] : by_group) {
      rng.Shuffle(gp);
      plans.push_back(DecideRefineGroup(c, label, gp));
      trials += plans.back().points;
    }
    EXPECT_EQ(trials, want.trials);
    std::vector<const RefineGroupPlan*> wanting;
    std::vector<size_t> index;
    for (size_t i = 0; i < plans.size(); ++i) {
      if (plans[i].wants.empty()) continue;  // takes no part in the grant
      wanting.push_back(&plans[i]);
      index.push_back(i);
    }
    const RefineGrant grant = GrantRefine(c, wanting, trials);
    EXPECT_EQ(grant.proposals, want.proposals) << "round " << round;
    ASSERT_EQ(plans.size(), want.groups.size());
    std::map<size_t, std::string> over;
    for (const auto& [i, reason] : grant.budget) over[index[i]] = reason;
    for (size_t i = 0; i < plans.size(); ++i) {
      const RefineGroup& w = want.groups[i];
      const RefineGroup& g = plans[i].group;
      SCOPED_TRACE(absl::StrCat("round ", round, " group ", w.group));
      EXPECT_EQ(g.group, w.group);
      EXPECT_EQ(over.count(i) ? RefineState::kBudget : g.state, w.state);
      EXPECT_EQ(over.count(i) ? over[i] : g.reason, w.reason);
      EXPECT_EQ(g.best, w.best);
      EXPECT_EQ(g.best_freq, w.best_freq);
      ASSERT_EQ(g.mean.size(), w.mean.size());
      for (const auto& [x, m] : w.mean) {
        ASSERT_TRUE(g.mean.count(x)) << x;
        EXPECT_TRUE(g.mean.at(x) == m ||
                    (std::isnan(g.mean.at(x)) && std::isnan(m)))
            << x;
      }
      EXPECT_EQ(g.equivalent, w.equivalent);
      settled += w.state == RefineState::kResolved ||
                 w.state == RefineState::kUnresolved;
    }
    proposals += static_cast<int>(want.proposals.size());
    budget += static_cast<int>(grant.budget.size());
  }
  EXPECT_GT(proposals, 0);
  EXPECT_GT(budget, 0);
  EXPECT_GT(settled, 0);
}

}  // namespace
}  // namespace smoe::analysis::search
