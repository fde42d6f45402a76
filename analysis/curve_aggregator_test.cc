// Copyright 2026 SMoE Lab authors.
//
// The incremental aggregator against the from-scratch functions.
#include "analysis/curve_aggregator.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>

#include "analysis/analyze.h"
#include "analysis/test_trials.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::analysis {
namespace {

using nlohmann::json;
using test_trials::Grid;
using test_trials::Trial;

// The incremental aggregator against the from-scratch functions on random
// sweeps under random changes: new results, state changes, missing and NaN
// metrics, trials moving between cells, and new trials.
TEST(CurveAggregatorTest, EqualsFromScratchUnderRandomChanges) {
  std::mt19937_64 rng(7);
  auto random_trial = [&](int64_t seed) {
    const int m = 1 + static_cast<int>(rng() % 3);
    const int k = 1 << (rng() % 4);
    const std::string att = rng() % 2 ? "hyla" : "softmax";
    TrialPoint t = Trial(m, k, att, seed, 0.5 + (rng() % 1000) / 2000.0);
    switch (rng() % 8) {
      case 0:
        t.state = store::TrialState::kRunning;
        t.results.clear();
        break;
      case 1:
        t.results.erase("ood_acc");
        break;
      case 2:
        t.results["ood_acc"] = std::nan("");
        break;
      case 3:
        t.params["steps"] = 200;  // a cell's first trial sets (T, m)
        break;
      default:
        break;
    }
    return t;
  };
  AggregateOptions o;
  o.bootstrap_samples = 50;
  CurveAggregator agg(o);
  std::vector<TrialPoint> trials;
  for (int i = 0; i < 300; ++i) {
    trials.push_back(random_trial(i % 12));
    agg.Set(i, trials.back());
  }
  auto expect_equal = [&](const char* when) {
    const Curves want = AggregateCurves(trials, o);
    EXPECT_EQ(ToJson(agg.curves()).dump(), ToJson(want).dump()) << when;
    json want_opt = json::array(), got_opt = json::array();
    for (const OptimalK& k : ComputeOptimalK(want)) {
      want_opt.push_back(ToJson(k));
    }
    for (const OptimalK& k : agg.optimal()) got_opt.push_back(ToJson(k));
    EXPECT_EQ(got_opt.dump(), want_opt.dump()) << when;
    EXPECT_EQ(agg.Analysis().dump(), AnalyzeSweep(trials, o).dump()) << when;
    // The bodies spliced from per-cell fragments, byte for byte (as the
    // coordinator's DumpJson writes them).
    auto dump = [](const json& j) {
      return j.dump(-1, ' ', false, json::error_handler_t::replace);
    };
    const json extra = {{"optimal", want_opt}, {"version", 42}};
    json want_curves = ToJson(want);
    want_curves["optimal"] = want_opt;
    want_curves["version"] = 42;
    EXPECT_EQ(agg.CurvesBody(extra), dump(want_curves)) << when;
    json want_analysis = AnalyzeSweep(trials, o);
    want_analysis["version"] = 42;
    EXPECT_EQ(agg.AnalysisBody({{"version", 42}}), dump(want_analysis)) << when;
  };
  expect_equal("initial");
  const int64_t cells = agg.cells_computed();
  EXPECT_GT(cells, 20);
  for (int round = 0; round < 30; ++round) {
    // One trial completes: only its cell is recomputed.
    const size_t pos = rng() % trials.size();
    TrialPoint t = trials[pos];
    t.state = store::TrialState::kSucceeded;
    t.results["ood_acc"] = 0.25 + round / 100.0;
    trials[pos] = t;
    const int64_t before = agg.cells_computed();
    agg.Set(static_cast<int64_t>(pos), t);
    expect_equal("after one completion");
    EXPECT_LE(agg.cells_computed() - before, 1);
    // A burst of arbitrary changes, some moving trials between cells, and a
    // new trial at the end.
    for (int j = 0; j < 5; ++j) {
      const size_t p = rng() % trials.size();
      trials[p] = random_trial(trials[p].seed);
      agg.Set(static_cast<int64_t>(p), trials[p]);
    }
    trials.push_back(random_trial(round % 12));
    agg.Set(static_cast<int64_t>(trials.size() - 1), trials.back());
    expect_equal("after a burst");
  }
  // 61 comparisons: recomputing everything each time would cost cells * 61;
  // the changes touch at most 12 cells per round.
  EXPECT_LT(agg.cells_computed(), cells * 61 / 3);
}

// The incremental path (per-cell sorted values updated in place, dropped
// and rebuilt by a sort after a burst, points living in curves()) against a
// fresh aggregator fed every trial and against the from-scratch functions:
// cells of a few hundred trials with repeated seeds and values, single
// changes, bursts past the rebuild bound, and a cell emptied and made again
// between two reads.
TEST(CurveAggregatorTest, IncrementalEqualsAFreshAggregatorAndFromScratch) {
  std::mt19937_64 rng(11);
  auto random_trial = [&](int64_t seed) {
    const int m = 1 + static_cast<int>(rng() % 2);
    const int k = 1 << (rng() % 2);
    // Few distinct values: equal (seed, value) pairs in one cell.
    TrialPoint t = Trial(m, k, "softmax", seed, 0.5 + (rng() % 7) / 20.0);
    if (rng() % 10 == 0) t.results.erase("ood_acc");
    if (rng() % 10 == 0) t.state = store::TrialState::kRunning;
    return t;
  };
  AggregateOptions o;
  o.bootstrap_samples = 20;
  o.succeeded_only = true;
  CurveAggregator agg(o);
  std::vector<TrialPoint> trials;
  for (int i = 0; i < 1200; ++i) {
    trials.push_back(random_trial(i % 97));
    agg.Set(i, trials.back());
  }
  // A cell of one trial (M=3), to empty and make again.
  trials.push_back(Trial(3, 1, "softmax", 5, 0.7));
  const int64_t lone = static_cast<int64_t>(trials.size() - 1);
  agg.Set(lone, trials.back());
  auto dump = [](const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
  };
  auto expect_equal = [&](const std::string& when) {
    CurveAggregator fresh(o);
    for (size_t i = 0; i < trials.size(); ++i) {
      fresh.Set(static_cast<int64_t>(i), trials[i]);
    }
    const std::string body = agg.CurvesBody({{"version", 1}});
    EXPECT_EQ(body, fresh.CurvesBody({{"version", 1}})) << when;
    json want = ToJson(AggregateCurves(trials, o));
    want["version"] = 1;
    EXPECT_EQ(body, dump(want)) << when;
    EXPECT_EQ(agg.AnalysisBody({{"version", 1}}),
              fresh.AnalysisBody({{"version", 1}}))
        << when;
    EXPECT_EQ(ToJson(agg.curves()).dump(), ToJson(fresh.curves()).dump())
        << when;
  };
  expect_equal("initial");
  for (int round = 0; round < 12; ++round) {
    // One completion: its cell only, kept sorted in place.
    const size_t pos = rng() % 1200;
    trials[pos].state = store::TrialState::kSucceeded;
    trials[pos].results["ood_acc"] = 0.5 + (rng() % 7) / 20.0;
    const int64_t before = agg.cells_computed();
    agg.Set(static_cast<int64_t>(pos), trials[pos]);
    expect_equal("after one completion, round " + std::to_string(round));
    EXPECT_LE(agg.cells_computed() - before, 1);
    // A burst: small on even rounds, past the rebuild bound (64 + n/16
    // changes of a cell) on odd ones; some trials change cells.
    const int burst = round % 2 ? 400 : 20;
    for (int j = 0; j < burst; ++j) {
      const size_t p = rng() % 1200;
      trials[p] = random_trial(trials[p].seed);
      agg.Set(static_cast<int64_t>(p), trials[p]);
    }
    expect_equal("after a burst, round " + std::to_string(round));
    // The lone cell emptied (its trial moves away) and made again (back)
    // between two reads.
    TrialPoint away = trials[lone];
    away.params["M"] = 1;
    agg.Set(lone, away);
    trials[lone].results["ood_acc"] = 0.6 + round / 100.0;
    agg.Set(lone, trials[lone]);
    expect_equal("after the lone cell came back, round " +
                 std::to_string(round));
  }
}

// Large cells (stats.h): the spliced bodies carry "seed_count" instead of
// the "seeds" list from normal_ci_min_seeds seeds on, as ToJson does, and
// keep the list below.
TEST(CurveAggregatorTest, LargeCellsCarryTheSeedCountInTheBodies) {
  AggregateOptions o;
  o.bootstrap_samples = 50;
  o.normal_ci_min_seeds = 4;
  std::vector<TrialPoint> trials = Grid(4);
  // One cell with 3 seeds: its list stays.
  trials.erase(std::find_if(trials.begin(), trials.end(),
                            [](const auto& t) { return t.seed == 3; }));
  CurveAggregator agg(o);
  for (size_t i = 0; i < trials.size(); ++i) {
    agg.Set(static_cast<int64_t>(i), trials[i]);
  }
  const json body = json::parse(agg.CurvesBody({{"version", 1}}));
  json want = ToJson(AggregateCurves(trials, o));
  want["version"] = 1;
  EXPECT_EQ(body, want);
  int small = 0, large = 0;
  for (const json& f : body.at("facets")) {
    for (const json& s : f.at("series")) {
      for (const json& p : s.at("points")) {
        if (p.at("n") >= 4) {
          ++large;
          EXPECT_EQ(p.count("seeds"), 0u);
          EXPECT_EQ(p.at("seed_count"), 4);
        } else {
          ++small;
          EXPECT_EQ(p.count("seed_count"), 0u);
          EXPECT_EQ(p.at("seeds"), json({0, 1, 2}));
        }
      }
    }
  }
  EXPECT_EQ(small, 1);
  EXPECT_GT(large, 10);
  const json analysis = json::parse(agg.AnalysisBody({{"version", 1}}));
  EXPECT_EQ(analysis.dump().find("\"seeds\":[0,1,2,3]"), std::string::npos);
  EXPECT_NE(analysis.dump().find("\"seed_count\":4"), std::string::npos);
}

}  // namespace
}  // namespace smoe::analysis
