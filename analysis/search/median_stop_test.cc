// Copyright 2026 SMoE Lab authors.
#include "analysis/search/median_stop.h"

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/search/median_stop_reference.h"
#include "common/rng.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::analysis::search {
namespace {

using ::testing::HasSubstr;

std::map<std::string, Decision> ById(const std::vector<Decision>& ds) {
  std::map<std::string, Decision> out;
  for (const Decision& d : ds) out[d.trial_id] = d;
  return out;
}

// Flat curves at steps 10, 20 (of 100).
std::vector<Report> Flat(const std::map<std::string, double>& level,
                         int64_t last = 20) {
  std::vector<Report> out;
  for (const auto& [id, v] : level) {
    for (int64_t s = 10; s <= last; s += 10) out.push_back({id, 1, s, v});
  }
  return out;
}

TEST(MedianStopTest, PrunesBelowTheMedianOfTheOthersRunningAverages) {
  const MedianConfig c{Mode::kMax, 10, 100};
  const std::vector<Trial> trials = {
      {"a", "", false}, {"b", "", false}, {"c", "", false}, {"d", "", false}};
  const auto d = ById(DecideMedian(
      c, trials, Flat({{"a", 0.9}, {"b", 0.8}, {"c", 0.7}, {"d", 0.1}})));
  EXPECT_EQ(d.at("d").action, Action::kPrune);
  EXPECT_EQ(d.at("d").step, 10);
  EXPECT_DOUBLE_EQ(d.at("d").cutoff, 0.8);  // median of 0.9, 0.8, 0.7
  EXPECT_TRUE(d.at("d").final);  // median prunes are final (monotone)
  EXPECT_THAT(d.at("d").reason,
              HasSubstr("step 10: best 0.1 is worse than the median 0.8 of 3"));
  EXPECT_EQ(d.at("c").action, Action::kPrune);  // 0.7 < median(0.9, 0.8, 0.1)
  EXPECT_EQ(d.at("b").action, Action::kRun);    // 0.8 >= median(0.9, 0.7, 0.1)
  EXPECT_EQ(d.at("a").action, Action::kRun);
}

// The flip-flop: d is pruned while the others are good; slower, worse
// trials arrive and drag the median below d. Without the pause d would run
// again (and be pruned again when better ones arrive): a paused trial stays
// pruned, final.
TEST(MedianStopTest, PausedTrialsStayPrunedWhenTheMedianFalls) {
  const MedianConfig c{Mode::kMax, 10, 100};
  std::vector<Trial> trials = {
      {"a", "", false}, {"b", "", false}, {"c", "", false}, {"d", "", false}};
  const auto first = ById(DecideMedian(
      c, trials, Flat({{"a", 0.9}, {"b", 0.8}, {"c", 0.7}, {"d", 0.3}})));
  ASSERT_EQ(first.at("d").action, Action::kPrune);
  // Four worse trials arrive: d's 0.3 now beats the median of the others.
  std::map<std::string, double> level = {{"a", 0.9},  {"b", 0.8}, {"c", 0.7},
                                         {"d", 0.3},  {"e", 0.1}, {"f", 0.1},
                                         {"g", 0.05}, {"h", 0.05}};
  for (const char* id : {"e", "f", "g", "h"}) trials.push_back({id, "", false});
  const auto unpaused = ById(DecideMedian(c, trials, Flat(level)));
  EXPECT_EQ(unpaused.at("d").action, Action::kRun);  // the old flip
  trials[3].paused = true;                           // d was pruned
  const auto paused = ById(DecideMedian(c, trials, Flat(level)));
  EXPECT_EQ(paused.at("d").action, Action::kPrune);
  EXPECT_TRUE(paused.at("d").final);
  EXPECT_THAT(paused.at("d").reason, HasSubstr("median prunes are final"));
  // The others are decided as before.
  EXPECT_EQ(paused.at("a").action, unpaused.at("a").action);
  EXPECT_EQ(paused.at("e").action, unpaused.at("e").action);
}

TEST(MedianStopTest, UsesBestSoFarAgainstRunningAverages) {
  const MedianConfig c{Mode::kMax, 0, 100};
  const std::vector<Trial> trials = {
      {"a", "", false}, {"b", "", false}, {"c", "", false}, {"x", "", false}};
  // Others climb 0.2 -> 0.8 (running average 0.5 at step 20); x had 0.6
  // once and then 0.1: its best so far (0.6) beats the median 0.5.
  std::vector<Report> r;
  for (const char* id : {"a", "b", "c"}) {
    r.push_back({id, 1, 10, 0.2});
    r.push_back({id, 1, 20, 0.8});
  }
  r.push_back({"x", 1, 10, 0.6});
  r.push_back({"x", 1, 20, 0.1});
  EXPECT_EQ(ById(DecideMedian(c, trials, r)).at("x").action, Action::kRun);
}

TEST(MedianStopTest, NeedsThreeOthersAndRespectsMinSteps) {
  const std::vector<Trial> three = {
      {"a", "", false}, {"b", "", false}, {"c", "", false}};
  const auto few =
      ById(DecideMedian({Mode::kMax, 10, 100}, three,
                        Flat({{"a", 0.9}, {"b", 0.8}, {"c", 0.1}})));
  EXPECT_EQ(few.at("c").action, Action::kRun);
  EXPECT_THAT(few.at("c").reason, HasSubstr("(need 3)"));
  const std::vector<Trial> four = {
      {"a", "", false}, {"b", "", false}, {"c", "", false}, {"d", "", false}};
  // Reports only at steps 10, 20 and min_steps 30: nothing judged.
  const auto early = ById(
      DecideMedian({Mode::kMax, 30, 100}, four,
                   Flat({{"a", 0.9}, {"b", 0.8}, {"c", 0.7}, {"d", 0.1}})));
  EXPECT_EQ(early.at("d").action, Action::kRun);
  EXPECT_THAT(early.at("d").reason,
              HasSubstr("no report at step >= min_steps"));
}

TEST(MedianStopTest, ErroredRetriedCompletedAndModeMin) {
  const MedianConfig c{Mode::kMin, 10, 20};
  const std::vector<Trial> trials = {
      {"a", "", false}, {"b", "", false}, {"c", "", false}, {"e", "", true}};
  // Losses: a, b, c finish (step 20 = max_steps); e errored at step 10 with
  // the best loss: retried, not pruned.
  std::vector<Report> r = Flat({{"a", 2.0}, {"b", 1.0}, {"c", 3.0}});
  r.push_back({"e", 1, 10, 0.5});
  const auto d = ById(DecideMedian(c, trials, r));
  EXPECT_EQ(d.at("a").action, Action::kComplete);
  EXPECT_EQ(d.at("e").action, Action::kRetry);
  EXPECT_THAT(d.at("e").reason, HasSubstr("an error is not a bad metric"));
}

TEST(MedianStopTest, SameReportsInAnyOrderGiveTheSameDecisions) {
  const MedianConfig c{Mode::kMax, 5, 50};
  Rng rng(11);
  std::vector<Trial> trials;
  std::vector<Report> reports;
  for (int i = 0; i < 24; ++i) {
    const std::string id = absl::StrCat("t", i);
    trials.push_back({id, absl::StrCat("g", i % 2), false});
    const int64_t last = 5 * static_cast<int64_t>(rng.UniformRange(0, 10));
    for (int64_t s = 5; s <= last; s += 5) {
      reports.push_back({id, 1, s, rng.UniformDouble()});
    }
  }
  const auto want = DecideMedian(c, trials, reports);
  int pruned = 0;
  for (const Decision& d : want) pruned += d.action == Action::kPrune;
  EXPECT_GT(pruned, 0);
  for (int round = 0; round < 20; ++round) {
    rng.Shuffle(reports);
    rng.Shuffle(trials);
    EXPECT_EQ(DecideMedian(c, trials, reports), want);
  }
}

// DecideMedian sorts each (group, step)'s running averages once; the
// reference collects and sorts the others again per trial and step. On
// random sweeps (groups, ties from a coarse value grid, infinities and NaN,
// retries reporting the same step, late and missing reports, paused and
// errored trials, both modes) every decision is the same, reason and cutoff
// included.
TEST(MedianStopTest, EqualsTheReferenceOnRandomSweeps) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    Rng rng = Rng::ForStream(seed, {0x6d656469616eULL});
    MedianConfig c;
    c.mode = rng.Bernoulli(0.5) ? Mode::kMax : Mode::kMin;
    c.min_steps = rng.UniformRange(0, 30);
    c.max_steps = rng.UniformRange(40, 120);
    const int n = static_cast<int>(rng.UniformRange(1, 60));
    const int groups = static_cast<int>(rng.UniformRange(1, 4));
    std::vector<Trial> trials;
    std::vector<Report> reports;
    for (int i = 0; i < n; ++i) {
      Trial t;
      t.trial_id = absl::StrCat("t", 100 + i);
      t.group = absl::StrCat("g", rng.UniformInt(groups));
      t.paused = rng.Bernoulli(0.1);
      t.errored = rng.Bernoulli(0.1);
      trials.push_back(t);
      const int64_t last = rng.UniformRange(-10, 130);  // < 0: no report
      for (int64_t step = 10; step <= last; step += 10) {
        if (rng.Bernoulli(0.15)) continue;  // a missed evaluation
        double v = static_cast<double>(rng.UniformInt(8)) / 8;  // ties
        if (rng.Bernoulli(0.02)) v = std::nan("");
        if (rng.Bernoulli(0.02)) v = -std::numeric_limits<double>::infinity();
        reports.push_back({t.trial_id, 1, step, v});
        if (rng.Bernoulli(0.05)) {  // a retry reporting the step again
          reports.push_back({t.trial_id, 2, step, v + 0.25});
        }
      }
    }
    rng.Shuffle(reports);
    const std::vector<Decision> fast = DecideMedian(c, trials, reports);
    const std::vector<Decision> ref = DecideMedianReference(c, trials, reports);
    ASSERT_EQ(fast.size(), ref.size()) << "seed " << seed;
    for (size_t i = 0; i < fast.size(); ++i) {
      EXPECT_TRUE(fast[i] == ref[i])
          << "seed " << seed << " trial " << ref[i].trial_id << ": "
          << ToJson(fast[i]).dump() << " vs " << ToJson(ref[i]).dump();
    }
  }
}

}  // namespace
}  // namespace smoe::analysis::search
