// Copyright 2026 SMoE Lab authors.
#include "analysis/search/asha.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/rng.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::analysis::search {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::map<std::string, Decision> ById(const std::vector<Decision>& ds) {
  std::map<std::string, Decision> out;
  for (const Decision& d : ds) out[d.trial_id] = d;
  return out;
}

std::string Id(int i) { return absl::StrCat("t", i < 10 ? "0" : "", i); }

TEST(SearchTypesTest, GroupLabelAndCanonicalReports) {
  const nlohmann::json params = {{"M", 2}, {"attention", "softmax"}};
  EXPECT_EQ(GroupLabel(params, {"M", "attention"}), "M=2,attention=softmax");
  EXPECT_EQ(GroupLabel(params, {"width"}), "width=-");
  EXPECT_EQ(GroupLabel(params, {}), "");
  // One report per (trial, step): the highest attempt's; NaN is the worst.
  const std::vector<Report> c = Canonical({{"b", 1, 10, 0.5},
                                           {"a", 1, 20, std::nan("")},
                                           {"a", 2, 10, 0.7},
                                           {"a", 1, 10, 0.9}},
                                          Mode::kMax);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].trial_id, "a");
  EXPECT_EQ(c[0].attempt, 2);
  EXPECT_DOUBLE_EQ(c[0].value, 0.7);
  EXPECT_EQ(c[1].value, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(c[2].trial_id, "b");
  EXPECT_EQ(Canonical({{"a", 1, 10, std::nan("")}}, Mode::kMin)[0].value,
            std::numeric_limits<double>::infinity());
}

TEST(AshaTest, RungArithmetic) {
  EXPECT_THAT(AshaRungs({Mode::kMax, 10, 3, 300}),
              ElementsAre(10, 30, 90, 270));
  EXPECT_THAT(AshaRungs({Mode::kMax, 10, 3, 270}), ElementsAre(10, 30, 90));
  EXPECT_THAT(AshaRungs({Mode::kMax, 1, 2, 8}), ElementsAre(1, 2, 4));
  EXPECT_THAT(AshaRungs({Mode::kMax, 100, 4, 1600}), ElementsAre(100, 400));
  EXPECT_TRUE(AshaRungs({Mode::kMax, 300, 3, 300}).empty());
  // No overflow near the top of int64.
  const int64_t big = int64_t{1} << 62;
  EXPECT_THAT(AshaRungs({Mode::kMax, big / 2, 1000, big}),
              ElementsAre(big / 2));
}

// Nine trials of one group at rung 0 (step 10 of 90; rungs 10, 30).
TEST(AshaTest, PromotesTheTopThirdOfACompleteRung) {
  const AshaConfig c{Mode::kMax, 10, 3, 90};
  std::vector<Trial> trials;
  std::vector<Report> reports;
  for (int i = 0; i < 9; ++i) {
    trials.push_back({Id(i), "M=1", false});
    reports.push_back({Id(i), 1, 10, 0.1 * (i + 1)});
  }
  const auto d = ById(DecideAsha(c, trials, reports));
  for (int i = 0; i < 9; ++i) {
    const Decision& x = d.at(Id(i));
    EXPECT_EQ(x.rung, 0);
    EXPECT_EQ(x.step, 10);
    EXPECT_DOUBLE_EQ(x.cutoff, 0.7);
    if (i >= 6) {
      EXPECT_EQ(x.action, Action::kPromote) << x.reason;
      EXPECT_THAT(x.reason, HasSubstr("continue to step 30"));
    } else {
      EXPECT_EQ(x.action, Action::kPrune) << x.reason;
      EXPECT_TRUE(x.final) << "all nine reached the rung";
      EXPECT_THAT(x.reason, HasSubstr("below the cutoff 0.7 of the top 3"));
    }
  }
  EXPECT_THAT(d.at(Id(8)).reason,
              HasSubstr("rung 0 (step 10): 0.9 ranks 1 of 9 in M=1"));
}

// min_keep (replay guard): a complete rung keeps at least min(min_keep, n);
// an incomplete one keeps floor(n / eta) as before.
TEST(AshaTest, MinKeepGuardsACompleteRung) {
  AshaConfig c{Mode::kMax, 10, 3, 90};
  c.min_keep = 3;
  std::vector<Trial> trials;
  std::vector<Report> reports;
  for (int i = 0; i < 4; ++i) {
    trials.push_back({Id(i), "M=1", false});
    reports.push_back({Id(i), 1, 10, 0.1 * (i + 1)});
  }
  auto d = ById(DecideAsha(c, trials, reports));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(d.at(Id(i)).action, i >= 1 ? Action::kPromote : Action::kPrune)
        << i << " " << d.at(Id(i)).reason;
  }
  EXPECT_TRUE(d.at(Id(0)).final);
  EXPECT_DOUBLE_EQ(d.at(Id(0)).cutoff, 0.2);
  // A fifth trial has not reported: the rung is open, floor(4 / 3) = 1.
  trials.push_back({Id(4), "M=1", false});
  d = ById(DecideAsha(c, trials, reports));
  EXPECT_EQ(d.at(Id(3)).action, Action::kPromote);
  EXPECT_EQ(d.at(Id(2)).action, Action::kPrune);
  EXPECT_FALSE(d.at(Id(2)).final);
}

TEST(AshaTest, PausedTrialsArePromotedWhenLaterResultsLowerTheCutoff) {
  const AshaConfig c{Mode::kMax, 10, 3, 90};
  std::vector<Trial> trials;
  for (int i = 0; i < 6; ++i) trials.push_back({Id(i), "", false});
  // Two results: fewer than eta, rung open -> both paused, not final.
  std::vector<Report> reports = {{Id(0), 1, 10, 0.9}, {Id(1), 1, 10, 0.6}};
  auto d = ById(DecideAsha(c, trials, reports));
  EXPECT_EQ(d.at(Id(0)).action, Action::kPrune);
  EXPECT_FALSE(d.at(Id(0)).final);
  EXPECT_THAT(d.at(Id(0)).reason, HasSubstr("paused until 3 results"));
  EXPECT_EQ(d.at(Id(3)).action, Action::kRun);
  EXPECT_THAT(d.at(Id(3)).reason, HasSubstr("below the first rung"));
  // A third: the best of three continues, 0.6 waits below the cutoff.
  reports.push_back({Id(2), 1, 12, 0.5});  // first report past the rung
  d = ById(DecideAsha(c, trials, reports));
  EXPECT_EQ(d.at(Id(0)).action, Action::kPromote);
  EXPECT_EQ(d.at(Id(1)).action, Action::kPrune);
  EXPECT_FALSE(d.at(Id(1)).final);
  EXPECT_THAT(d.at(Id(1)).reason, HasSubstr("(may be promoted later)"));
  // Three worse results: n = 6, top 2 -> 0.6 is promoted now, and the rung
  // is complete, so the rest are pruned for good.
  for (int i = 3; i < 6; ++i) reports.push_back({Id(i), 1, 10, 0.1 * i - 0.2});
  d = ById(DecideAsha(c, trials, reports));
  EXPECT_EQ(d.at(Id(1)).action, Action::kPromote) << d.at(Id(1)).reason;
  EXPECT_DOUBLE_EQ(d.at(Id(1)).cutoff, 0.6);
  EXPECT_EQ(d.at(Id(2)).action, Action::kPrune);
  EXPECT_TRUE(d.at(Id(2)).final);
  // The promoted one reaches rung 1 and max_steps.
  reports.push_back({Id(0), 1, 30, 0.95});
  reports.push_back({Id(1), 1, 90, 0.97});
  d = ById(DecideAsha(c, trials, reports));
  EXPECT_EQ(d.at(Id(1)).action, Action::kComplete);
  // Rung 1 is complete only when every promoted trial reached it: t01 did
  // (its step-90 report counts for rung 1) and so did t00: keep 1 of 2.
  EXPECT_EQ(d.at(Id(0)).rung, 1);
  EXPECT_EQ(d.at(Id(0)).action, Action::kPrune);
  EXPECT_TRUE(d.at(Id(0)).final);
}

TEST(AshaTest, GroupsAreComparedSeparately) {
  const AshaConfig c{Mode::kMax, 10, 3, 90};
  std::vector<Trial> trials;
  std::vector<Report> reports;
  for (int i = 0; i < 6; ++i) {
    const bool hard = i >= 3;
    trials.push_back({Id(i), hard ? "M=8" : "M=1", false});
    // Every hard trial is worse than every easy one.
    reports.push_back({Id(i), 1, 10, (hard ? 0.1 : 0.8) + 0.01 * i});
  }
  const auto d = ById(DecideAsha(c, trials, reports));
  EXPECT_EQ(d.at(Id(2)).action, Action::kPromote);
  EXPECT_EQ(d.at(Id(5)).action, Action::kPromote);
  EXPECT_EQ(d.at(Id(0)).action, Action::kPrune);
  EXPECT_EQ(d.at(Id(3)).action, Action::kPrune);
}

TEST(AshaTest, ACompleteRungSmallerThanEtaStillPromotesItsBest) {
  const AshaConfig c{Mode::kMin, 10, 4, 160};  // loss: lower is better
  std::vector<Trial> trials = {{"a", "", false}, {"b", "", false}};
  const auto d =
      ById(DecideAsha(c, trials, {{"a", 1, 10, 2.0}, {"b", 1, 10, 1.5}}));
  EXPECT_EQ(d.at("b").action, Action::kPromote);
  EXPECT_EQ(d.at("a").action, Action::kPrune);
  EXPECT_TRUE(d.at("a").final);
  EXPECT_DOUBLE_EQ(d.at("a").cutoff, 1.5);
}

TEST(AshaTest, ErroredTrialsAreRetriedAndHoldTheRungOpen) {
  const AshaConfig c{Mode::kMax, 10, 3, 90};
  std::vector<Trial> trials = {
      {"a", "", false}, {"b", "", false}, {"c", "", true}};
  std::vector<Report> reports = {
      {"a", 1, 10, 0.9}, {"b", 1, 10, 0.8}, {"c", 1, 5, 0.1}};
  auto d = ById(DecideAsha(c, trials, reports));
  EXPECT_EQ(d.at("c").action, Action::kRetry);
  EXPECT_THAT(d.at("c").reason, HasSubstr("an error is not a bad metric"));
  // Without c's result the rung is open: nobody is pruned for good, and
  // with 2 < eta results nobody is promoted yet.
  EXPECT_EQ(d.at("b").action, Action::kPrune);
  EXPECT_FALSE(d.at("b").final);
  EXPECT_EQ(d.at("a").action, Action::kPrune);
  EXPECT_FALSE(d.at("a").final);
  // The retry's attempt 2 reports; its value supersedes attempt 1's at the
  // same step.
  trials[2].errored = false;
  reports.push_back({"c", 2, 5, 0.2});
  reports.push_back({"c", 2, 10, 0.85});
  reports.push_back({"c", 1, 10, 0.0});  // the errored attempt's, superseded
  d = ById(DecideAsha(c, trials, reports));
  EXPECT_EQ(d.at("a").action, Action::kPromote);
  EXPECT_EQ(d.at("c").action, Action::kPrune);
  EXPECT_DOUBLE_EQ(d.at("c").value, 0.85);
  EXPECT_TRUE(d.at("c").final);
}

// A trial of configuration `config` (seed `seed`) on axis value `k`.
Trial Seeded(const std::string& config, int k, int seed,
             const std::string& group = "M=1") {
  Trial t{absl::StrCat(config, "-s", seed), group, false};
  t.config = config;
  t.has_axis = true;
  t.axis = k;
  t.rest = group;
  return t;
}

// aggregate_seeds: configuration A has one lucky seed (0.9) and one bad
// (0.1), B two good ones (0.6, 0.6). Per trial, A's lucky seed wins the
// rung; per configuration, B's mean 0.6 beats A's 0.5 and both of A's
// seeds stop, for good.
TEST(AshaTest, AggregateSeedsRanksConfigurationsByTheirSeedMean) {
  AshaConfig c{Mode::kMax, 10, 2, 40};  // rungs 10, 20
  const std::vector<Trial> trials = {Seeded("A", 1, 0), Seeded("A", 1, 1),
                                     Seeded("B", 2, 0), Seeded("B", 2, 1)};
  const std::vector<Report> reports = {{"A-s0", 1, 10, 0.9},
                                       {"A-s1", 1, 10, 0.1},
                                       {"B-s0", 1, 10, 0.6},
                                       {"B-s1", 1, 10, 0.6}};
  auto d = ById(DecideAsha(c, trials, reports));
  EXPECT_EQ(d.at("A-s0").action, Action::kPromote) << "per trial: 0.9 wins";
  EXPECT_EQ(d.at("B-s0").action, Action::kPromote);  // top 2 of 4
  c.aggregate_seeds = true;
  d = ById(DecideAsha(c, trials, reports));
  for (const char* id : {"A-s0", "A-s1"}) {
    EXPECT_EQ(d.at(id).action, Action::kPrune) << id;
    EXPECT_TRUE(d.at(id).final) << id;
    EXPECT_DOUBLE_EQ(d.at(id).value, 0.5);
    EXPECT_DOUBLE_EQ(d.at(id).cutoff, 0.6);
    EXPECT_THAT(d.at(id).reason,
                HasSubstr("0.5 (mean of 2 seeds) ranks 2 of 2 in M=1"));
  }
  for (const char* id : {"B-s0", "B-s1"}) {
    EXPECT_EQ(d.at(id).action, Action::kPromote) << d.at(id).reason;
    EXPECT_DOUBLE_EQ(d.at(id).value, 0.6);
  }
  // Without a configuration label a trial is its own unit.
  std::vector<Trial> bare = trials;
  for (Trial& t : bare) t.config.clear();
  EXPECT_EQ(ById(DecideAsha(c, bare, reports)).at("A-s0").action,
            Action::kPromote);
}

// A seed that reaches a rung before the other seeds of its configuration
// pauses there (not final) and goes on once its configuration is promoted.
TEST(AshaTest, AggregateSeedsPausesASeedAheadOfItsConfiguration) {
  AshaConfig c{Mode::kMax, 10, 2, 40};
  c.aggregate_seeds = true;
  const std::vector<Trial> trials = {Seeded("A", 1, 0), Seeded("A", 1, 1),
                                     Seeded("B", 2, 0), Seeded("B", 2, 1)};
  std::vector<Report> reports = {{"A-s0", 1, 10, 0.9}, {"A-s1", 1, 5, 0.4}};
  auto d = ById(DecideAsha(c, trials, reports));
  EXPECT_EQ(d.at("A-s0").action, Action::kPrune);
  EXPECT_FALSE(d.at("A-s0").final);
  EXPECT_THAT(d.at("A-s0").reason,
              HasSubstr("waiting for the other seeds of its configuration "
                        "(1 of 2 at the rung)"));
  EXPECT_EQ(d.at("A-s1").action, Action::kRun);
  EXPECT_EQ(d.at("B-s0").action, Action::kRun);
  // A's second seed arrives: A (mean 0.7) is alone at the rung, both pause
  // until eta = 2 configurations reach it; then B (0.3) arrives and A wins.
  reports.push_back({"A-s1", 1, 10, 0.5});
  d = ById(DecideAsha(c, trials, reports));
  EXPECT_EQ(d.at("A-s0").action, Action::kPrune);
  EXPECT_THAT(d.at("A-s0").reason, HasSubstr("paused until 2 results"));
  reports.push_back({"B-s0", 1, 10, 0.3});
  reports.push_back({"B-s1", 1, 10, 0.3});
  d = ById(DecideAsha(c, trials, reports));
  EXPECT_EQ(d.at("A-s0").action, Action::kPromote);
  EXPECT_EQ(d.at("A-s1").action, Action::kPromote);
  EXPECT_EQ(d.at("B-s1").action, Action::kPrune);
  EXPECT_TRUE(d.at("B-s1").final);
  // A's first seed reaches rung 1 alone: it waits for its sibling again.
  reports.push_back({"A-s0", 1, 20, 0.95});
  d = ById(DecideAsha(c, trials, reports));
  EXPECT_EQ(d.at("A-s0").action, Action::kPrune);
  EXPECT_FALSE(d.at("A-s0").final);
  EXPECT_EQ(d.at("A-s0").rung, 1);
  EXPECT_EQ(d.at("A-s1").action, Action::kPromote);
}

// keep_neighbors: six configurations k = 1..6 at a complete rung (eta 3:
// keep 2). The best is k = 4, the second k = 1; k = 3 and k = 5 are promoted
// as the best's neighbours, k = 2 and k = 6 are pruned for good.
TEST(AshaTest, KeepNeighborsPromotesTheBestsIntegerNeighbours) {
  AshaConfig c{Mode::kMax, 10, 3, 90};
  c.keep_neighbors = true;
  std::vector<Trial> trials;
  std::vector<Report> reports;
  const std::map<int, double> value = {{1, 0.8}, {2, 0.5}, {3, 0.6},
                                       {4, 0.9}, {5, 0.4}, {6, 0.7}};
  for (const auto& [k, v] : value) {
    trials.push_back(Seeded(absl::StrCat("k", k), k, 0));
    reports.push_back({absl::StrCat("k", k, "-s0"), 1, 10, v});
  }
  // Another group's k = 5 is not a neighbour of this group's best.
  Trial other = Seeded("k5x", 5, 0, "M=2");
  trials.push_back(other);
  reports.push_back({"k5x-s0", 1, 10, 0.1});
  auto d = ById(DecideAsha(c, trials, reports));
  for (int k : {1, 3, 4, 5}) {
    EXPECT_EQ(d.at(absl::StrCat("k", k, "-s0")).action, Action::kPromote) << k;
  }
  EXPECT_THAT(d.at("k5-s0").reason,
              HasSubstr("below the cutoff 0.8 of the top 2 but a neighbour "
                        "(5) of the best (4)"));
  for (int k : {2, 6}) {
    EXPECT_EQ(d.at(absl::StrCat("k", k, "-s0")).action, Action::kPrune) << k;
    EXPECT_TRUE(d.at(absl::StrCat("k", k, "-s0")).final) << k;
  }
  // Without it: the top 2 only.
  c.keep_neighbors = false;
  d = ById(DecideAsha(c, trials, reports));
  EXPECT_EQ(d.at("k5-s0").action, Action::kPrune);
  EXPECT_EQ(d.at("k3-s0").action, Action::kPrune);
  // An open rung with keep 0 promotes no one, neighbours included.
  c.keep_neighbors = true;
  d = ById(DecideAsha(c, {trials[3], trials[4], trials[0]},
                      {reports[3], reports[4]}));
  EXPECT_EQ(d.at("k5-s0").action, Action::kPrune);
  EXPECT_FALSE(d.at("k5-s0").final);
}

TEST(AshaTest, SameReportsInAnyOrderGiveTheSameDecisions) {
  const AshaConfig c{Mode::kMax, 8, 2, 64};  // rungs 8, 16, 32
  Rng rng(7);
  std::vector<Trial> trials;
  std::vector<Report> reports;
  for (int i = 0; i < 30; ++i) {
    trials.push_back({Id(i), absl::StrCat("g", i % 3), i % 7 == 0});
    const int64_t last = 4 * static_cast<int64_t>(rng.UniformRange(0, 17));
    for (int64_t s = 4; s <= last; s += 4) {
      // Ties on purpose: values on a coarse grid.
      reports.push_back(
          {Id(i), 1, s, 0.05 * static_cast<double>(rng.UniformRange(0, 8))});
    }
  }
  const std::vector<Decision> want = DecideAsha(c, trials, reports);
  ASSERT_EQ(want.size(), 30u);
  int promoted = 0, pruned = 0;
  for (const Decision& d : want) {
    promoted += d.action == Action::kPromote;
    pruned += d.action == Action::kPrune;
  }
  EXPECT_GT(promoted, 0);
  EXPECT_GT(pruned, 0);
  for (int round = 0; round < 20; ++round) {
    std::vector<Report> shuffled = reports;
    std::vector<Trial> roster = trials;
    rng.Shuffle(shuffled);
    rng.Shuffle(roster);
    // Duplicated deliveries (an at-least-once report path) change nothing.
    shuffled.push_back(shuffled[static_cast<size_t>(round)]);
    EXPECT_EQ(DecideAsha(c, roster, shuffled), want) << "round " << round;
  }
}

// The same with aggregate_seeds and keep_neighbors: 8 k x 3 seeds in two
// groups, reports at staggered progress; shuffled and duplicated reports
// and a shuffled roster give the same decisions.
TEST(AshaTest, AggregatedDecisionsDoNotDependOnReportOrder) {
  AshaConfig c{Mode::kMax, 8, 3, 72};  // rungs 8, 24
  c.aggregate_seeds = true;
  c.keep_neighbors = true;
  c.smooth = 2;
  Rng rng(11);
  std::vector<Trial> trials;
  std::vector<Report> reports;
  for (int g = 0; g < 2; ++g) {
    for (int k = 1; k <= 8; ++k) {
      for (int seed = 0; seed < 3; ++seed) {
        const std::string group = absl::StrCat("g", g);
        Trial t = Seeded(absl::StrCat(group, "k", k), k, seed, group);
        t.errored = rng.UniformRange(0, 20) == 0;
        trials.push_back(t);
        const int64_t last = 4 * static_cast<int64_t>(rng.UniformRange(1, 10));
        for (int64_t s = 4; s <= last; s += 4) {
          reports.push_back(
              {t.trial_id, 1, s,
               0.05 * static_cast<double>(rng.UniformRange(0, 8))});
        }
      }
    }
  }
  const std::vector<Decision> want = DecideAsha(c, trials, reports);
  ASSERT_EQ(want.size(), 48u);
  int promoted = 0, pruned = 0;
  for (const Decision& d : want) {
    promoted += d.action == Action::kPromote;
    pruned += d.action == Action::kPrune;
  }
  EXPECT_GT(promoted, 0);
  EXPECT_GT(pruned, 0);
  for (int round = 0; round < 20; ++round) {
    std::vector<Report> shuffled = reports;
    std::vector<Trial> roster = trials;
    rng.Shuffle(shuffled);
    rng.Shuffle(roster);
    shuffled.push_back(shuffled[static_cast<size_t>(round)]);
    EXPECT_EQ(DecideAsha(c, roster, shuffled), want) << "round " << round;
  }
}

}  // namespace
}  // namespace smoe::analysis::search
