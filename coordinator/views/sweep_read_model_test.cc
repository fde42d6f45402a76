// Copyright 2026 SMoE Lab authors.
//
// The dashboard read model's incremental path (issue 35 item 1) against the
// full recompute: after random sequences of completions, failures, retries
// and lost leases, the snapshot refreshed from the change log equals one
// loaded from the store, and the curves and analysis bodies the aggregators
// keep (changed rows only, spliced from per-cell fragments) equal the
// from-scratch functions over the store's rows. FakeClock, InMemoryStore.
#include "coordinator/views/sweep_read_model.h"

#include <memory>
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
      EXPECT_EQ(snap->rows[i]->point.trial_id, points[i].trial_id);
      EXPECT_EQ(snap->rows[i]->point.state, points[i].state);
      EXPECT_EQ(snap->rows[i]->point.results, points[i].results);
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

}  // namespace
}  // namespace smoe::coordinator
