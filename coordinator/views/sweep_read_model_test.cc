// Copyright 2026 SMoE Lab authors.
//
// The dashboard read model's incremental path (issue 35 item 1) against the
// full recompute: after random sequences of completions, failures, retries
// and lost leases, the snapshot refreshed from the change log equals one
// loaded from the store, and the curves and analysis bodies the aggregators
// keep (changed rows only, spliced from per-cell fragments) equal the
// from-scratch functions over the store's rows. FakeClock, InMemoryStore.
#include "coordinator/views/sweep_read_model.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/analyze.h"
#include "common/clock.h"
#include "common/rng.h"
#include "coordinator/scheduler.h"
#include "gtest/gtest.h"
#include "store/in_memory_store.h"

namespace smoe::coordinator {
namespace {

using nlohmann::json;

std::string Dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

TEST(SweepReadModelTest, IncrementalEqualsFullRecomputeUnderRandomChanges) {
  store::InMemoryStore store;
  FakeClock clock;
  SchedulerOptions opts;
  opts.lease_timeout = absl::Seconds(30);
  auto created = Scheduler::Create(&store, &clock, opts);
  ASSERT_TRUE(created.ok()) << created.status();
  Scheduler& sched = **created;
  auto sub = sched.SubmitSweep(
      "name: s\nkind: sraven\ngrid:\n  attention: [softmax, hyla]\n"
      "  M: [1, 2, 3]\n  top_k: [1, 2, 4, 8]\n"
      "fixed: {steps: 100, device: cpu}\nseeds: [0, 1, 2, 3, 4]\n"
      "retries: 1\n",
      false);
  ASSERT_TRUE(sub.ok()) << sub.status();
  WorkerInfo info;
  info.hostname = "w";
  info.slots = 16;
  std::string worker = sched.Register(info)->worker_id;
  SweepReadModel model(&sched, &store);
  analysis::AggregateOptions o;
  o.kind = "sraven";
  o.bootstrap_samples = 40;
  const std::string key = "curves\x1fs\x1food_acc";
  Rng rng = Rng::ForStream(3, {0x726d});
  int refreshed = 0;
  for (int step = 0; step < 60; ++step) {
    auto grants =
        sched.Lease(worker, 1 + static_cast<int>(rng.UniformInt(4)), 0);
    ASSERT_TRUE(grants.ok()) << grants.status();
    for (const LeaseGrant& g : *grants) {
      const uint64_t e = rng.UniformInt(10);
      if (e < 7) {
        ASSERT_TRUE(
            sched
                .Complete(worker, g.trial_id, g.attempt,
                          {{"ood_acc", 0.3 + 0.01 * static_cast<double>(
                                                        rng.UniformInt(50))},
                           {"test_acc", 0.5}},
                          1)
                .ok());
      } else if (e < 9) {
        ASSERT_TRUE(sched
                        .Fail(worker, g.trial_id, g.attempt, FailReason::kError,
                              1, "boom")
                        .ok());
      }  // else: left running (a lease that may expire below)
    }
    if (rng.UniformInt(8) == 0) {
      clock.Advance(absl::Seconds(40));
      ASSERT_TRUE(sched.ExpireLeases().ok());
      worker = sched.Register(info)->worker_id;
    }
    // Not every version is read: the model also catches up over several.
    if (rng.UniformInt(3) == 0) continue;
    auto got = model.Get("s");
    ASSERT_TRUE(got.ok()) << got.status();
    const auto& snap = got->second;
    refreshed += snap->base_version >= 0 ? 1 : 0;
    // The oracle: everything from the store's rows.
    auto rows = store.ListSummaries("s");
    ASSERT_TRUE(rows.ok());
    const std::vector<analysis::TrialPoint> points =
        analysis::FromSummaries(*rows);
    ASSERT_EQ(snap->rows.size(), points.size());
    for (size_t i = 0; i < points.size(); ++i) {
      EXPECT_EQ(snap->rows[i]->trial_id, points[i].trial_id);
      EXPECT_EQ(snap->rows[i]->state, points[i].state);
      EXPECT_EQ(snap->rows[i]->results.ToMap(), points[i].results);
    }
    const analysis::Curves want = analysis::AggregateCurves(points, o);
    json want_opt = json::array();
    for (const auto& k : analysis::ComputeOptimalK(want)) {
      want_opt.push_back(analysis::ToJson(k));
    }
    json want_curves = analysis::ToJson(want);
    want_curves["optimal"] = want_opt;
    want_curves["version"] = snap->version;
    json want_analysis = analysis::AnalyzeSweep(points, o);
    want_analysis["version"] = snap->version;
    model.Aggregator(key)->With(snap, o, [&](analysis::CurveAggregator& agg) {
      json opt = json::array();
      for (const auto& k : agg.optimal()) opt.push_back(analysis::ToJson(k));
      EXPECT_EQ(agg.CurvesBody({{"optimal", opt}, {"version", snap->version}}),
                Dump(want_curves))
          << "step " << step;
      EXPECT_EQ(agg.AnalysisBody({{"version", snap->version}}),
                Dump(want_analysis))
          << "step " << step;
      return 0;
    });
  }
  // Most reads took the incremental path (a refresh from the change log).
  EXPECT_GT(refreshed, 10);
}

// Issue 35: many distinct analysis queries keep the aggregators' estimated
// memory under the model's bound (the least recently used go), and every
// answer, from a kept or a rebuilt aggregator, equals the from-scratch one.
TEST(SweepReadModelTest, AggregatorsStayUnderTheirMemoryBound) {
  store::InMemoryStore store;
  FakeClock clock;
  auto created = Scheduler::Create(&store, &clock, SchedulerOptions());
  ASSERT_TRUE(created.ok()) << created.status();
  Scheduler& sched = **created;
  ASSERT_TRUE(
      sched
          .SubmitSweep("name: s\nkind: sraven\ngrid:\n  attention: [softmax, "
                       "hyla]\n  M: [1, 2, 3]\n  top_k: [1, 2, 4, 8]\n"
                       "fixed: {steps: 100, device: cpu}\nseeds: [0, 1, 2, 3, "
                       "4]\n",
                       false)
          .ok());
  WorkerInfo info;
  info.hostname = "w";
  info.slots = 200;
  const std::string worker = sched.Register(info)->worker_id;
  auto grants = sched.Lease(worker, 200, 0);
  ASSERT_TRUE(grants.ok()) << grants.status();
  ASSERT_EQ(grants->size(), 120u);
  int i = 0;
  for (const LeaseGrant& g : *grants) {
    ASSERT_TRUE(sched
                    .Complete(worker, g.trial_id, g.attempt,
                              {{"ood_acc", 0.3 + 0.01 * (i++ % 37)},
                               {"test_acc", 0.5 + 0.001 * (i % 11)}},
                              1)
                    .ok());
  }
  SweepReadModel model(&sched, &store);
  auto got = model.Get("s");
  ASSERT_TRUE(got.ok()) << got.status();
  const auto snap = got->second;
  auto rows = store.ListSummaries("s");
  ASSERT_TRUE(rows.ok());
  const std::vector<analysis::TrialPoint> points =
      analysis::FromSummaries(*rows);
  auto options = [](int q) {
    analysis::AggregateOptions o;
    o.kind = "sraven";
    o.metric = q % 2 ? "ood_acc" : "test_acc";
    o.bootstrap_samples = 10 + q;  // a distinct query each
    return o;
  };
  auto ask = [&](int q) {
    const analysis::AggregateOptions o = options(q);
    auto entry = model.Aggregator(absl::StrCat("curves\x1fs\x1f", q));
    // Handing one out enforces the bound on the others.
    EXPECT_LE(model.aggregator_bytes(),
              model.max_aggregator_bytes() + entry->bytes());
    json want = analysis::ToJson(analysis::AggregateCurves(points, o));
    want["version"] = snap->version;
    entry->With(snap, o, [&](analysis::CurveAggregator& agg) {
      EXPECT_EQ(agg.CurvesBody({{"version", snap->version}}), Dump(want))
          << "query " << q;
      return 0;
    });
    EXPECT_GT(entry->bytes(), 0u);
    return entry->bytes();
  };
  const size_t one = ask(0);
  // Room for about three.
  model.set_max_aggregator_bytes(3 * one + one / 2);
  size_t most = 0;
  for (int q = 1; q < 30; ++q) {
    ask(q);
    most = std::max(most, model.aggregator_count());
    // At most the bound, plus the newest one until the next hand-out.
    EXPECT_LE(model.aggregator_bytes(), model.max_aggregator_bytes() + 2 * one);
  }
  EXPECT_GE(most, 3u);
  EXPECT_LE(most, 5u);
  // The first queries were evicted: asked again, they are rebuilt (and
  // equal the from-scratch answers, checked in ask()).
  ask(0);
  ask(1);
  EXPECT_LE(model.aggregator_count(), 5u);
  // Unbounded by bytes, the count bound remains.
  model.set_max_aggregator_bytes(~size_t{0});
  for (int q = 0; q < 70; ++q) {
    model.Aggregator(absl::StrCat("curves\x1fs\x1fmany", q));
  }
  EXPECT_EQ(model.aggregator_count(), SweepReadModel::kMaxAggregators);
}

// TrialIndex: every id of the rows at its position, none for other ids
// (also ones that differ only in case or by a prefix).
TEST(SweepReadModelTest, TrialIndexFindsEveryIdAndNoOther) {
  std::vector<std::shared_ptr<const TrialRow>> rows;
  RowInterner interner;
  for (int i = 0; i < 3000; ++i) {
    store::TrialSummary s;
    s.trial_id = absl::StrCat("s/", i * 7919 % 10007);
    s.params_json = "{}";
    rows.push_back(MakeTrialRow(s, &interner));
  }
  const RowTable table(rows);
  const TrialIndex index(table);
  EXPECT_EQ(index.size(), 3000u);
  for (size_t i = 0; i < table.size(); ++i) {
    const std::optional<size_t> at = index.Find(table, table[i]->trial_id);
    ASSERT_TRUE(at.has_value()) << i;
    EXPECT_EQ(*at, i);
  }
  EXPECT_FALSE(index.Find(table, "s/10008").has_value());
  EXPECT_FALSE(index.Find(table, "S/0").has_value());
  EXPECT_FALSE(index.Find(table, "s/").has_value());
  EXPECT_FALSE(index.Find(table, "").has_value());
  SweepSnapshot snap;
  EXPECT_FALSE(snap.Find("s/0").has_value());  // no index yet
}

}  // namespace
}  // namespace smoe::coordinator
