// Copyright 2026 SMoE Lab authors.
#include "analysis/search/median_incremental.h"

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/search/median_stop.h"
#include "analysis/search/median_stop_reference.h"
#include "common/rng.h"
#include "gtest/gtest.h"

namespace smoe::analysis::search {
namespace {

struct Sweep {
  std::vector<Trial> trials;
  std::map<std::string, std::vector<Report>> reports;
  std::set<std::string> present;

  std::vector<Trial> Considered() const {
    std::vector<Trial> out;
    for (const Trial& t : trials) {
      if (present.count(t.trial_id)) out.push_back(t);
    }
    return out;
  }
  std::vector<Report> All() const {
    std::vector<Report> out;
    for (const Trial& t : trials) {
      if (!present.count(t.trial_id)) continue;
      auto it = reports.find(t.trial_id);
      if (it != reports.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
      }
    }
    return out;
  }
};

std::unique_ptr<IncrementalMedian> Loaded(const MedianConfig& c,
                                          const Sweep& s) {
  auto inc = std::make_unique<IncrementalMedian>(c);
  static const std::vector<Report> kNone;
  std::vector<IncrementalMedian::Initial> initial;
  for (const Trial& t : s.trials) {
    if (!s.present.count(t.trial_id)) continue;
    auto it = s.reports.find(t.trial_id);
    initial.push_back(
        {&t.trial_id, &t.group, it != s.reports.end() ? &it->second : &kNone});
  }
  inc->Load(initial);
  return inc;
}

double RandomValue(Rng* rng, Mode mode) {
  const uint64_t k = rng->UniformInt(50);
  if (k == 0) return std::nan("");
  if (k == 1) return -std::numeric_limits<double>::infinity();
  if (k == 2) return std::numeric_limits<double>::infinity();
  (void)mode;
  return static_cast<double>(rng->UniformInt(8)) / 8;  // ties
}

// Random replays: trials of a few groups report (mostly the next
// evaluation; sometimes a step out of order, a retry's new value for a step
// it reported, NaN and infinities), fail and come back, are paused and
// errored, and the index is now and then rebuilt from scratch (a restart).
// After every change every decision equals DecideMedian's from all trials
// (reason and cutoff included) and the reference's, and a trial outside
// TakeAffected() has the same action, step and final as before the change
// (what the coordinator relies on to decide only those).
void Replay(uint64_t seed, int changes) {
  Rng rng = Rng::ForStream(seed, {0x6d6564696e63ULL});
  MedianConfig c;
  c.mode = rng.Bernoulli(0.5) ? Mode::kMax : Mode::kMin;
  c.min_steps = rng.UniformRange(0, 30);
  c.max_steps = rng.UniformRange(60, 160);
  const int n = static_cast<int>(rng.UniformRange(4, 48));
  const int groups = static_cast<int>(rng.UniformRange(1, 3));
  const int64_t cadence = rng.Bernoulli(0.3) ? 5 : 10;
  Sweep s;
  for (int i = 0; i < n; ++i) {
    Trial t;
    t.trial_id = absl::StrCat("t", 100 + i);
    t.group = absl::StrCat("g", rng.UniformInt(groups));
    s.trials.push_back(t);
    s.present.insert(t.trial_id);
    // Some trials start with reports (a restart's index).
    const int64_t first = rng.UniformRange(-3, 4);
    for (int64_t e = 1; e <= first; ++e) {
      s.reports[t.trial_id].push_back(
          {t.trial_id, 1, cadence * e, RandomValue(&rng, c.mode)});
    }
  }
  std::unique_ptr<IncrementalMedian> inc;
  if (rng.Bernoulli(0.5)) {
    inc = Loaded(c, s);
  } else {
    inc = std::make_unique<IncrementalMedian>(c);
    for (const Trial& t : s.trials) {
      inc->Set(t.trial_id, t.group, s.reports[t.trial_id]);
    }
  }
  inc->TakeAffected();
  auto full = [&]() {
    std::map<std::string, Decision> out;
    for (const Decision& d : DecideMedian(c, s.Considered(), s.All())) {
      out[d.trial_id] = d;
    }
    return out;
  };
  std::map<std::string, Decision> before = full();
  int pruned = 0;
  for (int change = 0; change < changes; ++change) {
    const int i = static_cast<int>(rng.UniformInt(n));
    Trial& t = s.trials[i];
    const std::string& id = t.trial_id;
    const uint64_t event = rng.UniformInt(40);
    bool restarted = false;
    if (event == 0 && s.present.count(id)) {
      inc->Remove(id);
      s.present.erase(id);
    } else if (event == 1) {
      // A restart: the index rebuilt from every trial.
      inc = Loaded(c, s);
      restarted = true;
    } else {
      std::vector<Report>& rs = s.reports[id];
      if (event == 2) {
        t.paused = !t.paused;
      } else if (event == 3) {
        t.errored = !t.errored;
      } else if (event == 4 && !rs.empty()) {
        // A retry reports a step it reported again, with a new value.
        const Report& old = rs[rng.UniformInt(rs.size())];
        rs.push_back(
            {id, old.attempt + 1, old.step, RandomValue(&rng, c.mode)});
      } else if (event == 5) {
        // A step out of order (a late report, or one a cadence skipped).
        rs.push_back({id, 1, rng.UniformRange(1, c.max_steps + 10),
                      RandomValue(&rng, c.mode)});
      } else if (event != 6) {  // 6: set again, unchanged
        const int64_t last = rs.empty() ? 0 : rs.back().step;
        const int64_t skip = rng.Bernoulli(0.1) ? 2 : 1;
        rs.push_back({id, 1, (last / cadence + skip) * cadence,
                      RandomValue(&rng, c.mode)});
      }
      inc->Set(id, t.group, rs);
      s.present.insert(id);
    }
    const std::set<std::string> affected = inc->TakeAffected();
    if (!restarted) {
      EXPECT_TRUE(affected.count(id)) << "seed " << seed;
    }
    const std::map<std::string, Decision> now = full();
    const std::vector<Decision> ref =
        DecideMedianReference(c, s.Considered(), s.All());
    ASSERT_EQ(ref.size(), now.size());
    for (const Decision& r : ref) {
      const Decision& d = now.at(r.trial_id);
      ASSERT_TRUE(d == r) << "seed " << seed << ": DecideMedian "
                          << ToJson(d).dump() << " vs reference "
                          << ToJson(r).dump();
    }
    for (const auto& [tid, d] : now) {
      SCOPED_TRACE(
          absl::StrCat("seed ", seed, " change ", change, " trial ", tid));
      ASSERT_TRUE(inc->Has(tid));
      const Trial* tr = nullptr;
      for (const Trial& x : s.trials) {
        if (x.trial_id == tid) tr = &x;
      }
      const Decision got = inc->Decide(tid, tr->errored, tr->paused);
      EXPECT_TRUE(got == d)
          << ToJson(got).dump() << " vs DecideMedian " << ToJson(d).dump();
      pruned += d.action == Action::kPrune && !tr->paused;
      auto b = before.find(tid);
      if (!restarted && !affected.count(tid) && b != before.end()) {
        EXPECT_EQ(b->second.action, d.action) << ToJson(d).dump();
        EXPECT_EQ(b->second.step, d.step);
        EXPECT_EQ(b->second.final, d.final);
      }
    }
    for (const Trial& x : s.trials) {
      EXPECT_EQ(inc->Has(x.trial_id), s.present.count(x.trial_id) > 0);
    }
    if (::testing::Test::HasFatalFailure()) return;
    before = now;
  }
  // The replays prune: the median is exercised, not only "too few others".
  if (changes >= 300 && n >= 12) {
    EXPECT_GT(pruned, 0) << "seed " << seed;
  }
}

TEST(IncrementalMedianTest, AgreesWithDecideMedianAfterEveryChange) {
  for (uint64_t seed = 1; seed <= 40; ++seed) Replay(seed, 400);
}

TEST(IncrementalMedianTest, AgreesOnLongReplays) {
  for (uint64_t seed = 100; seed <= 101; ++seed) Replay(seed, 1500);
}

// The marking is what makes a report cheap: in a group of 200 trials that
// all reported the same steps, a report far from the median marks only the
// reporting trial and the few trials near the median, not the group.
TEST(IncrementalMedianTest, AReportMarksTheTrialsNearTheMedianOnly) {
  MedianConfig c;
  c.min_steps = 0;
  c.max_steps = 1000;
  IncrementalMedian inc(c);
  std::vector<std::string> ids;
  for (int i = 0; i < 200; ++i) {
    const std::string id = absl::StrCat("t", 1000 + i);
    ids.push_back(id);
    std::vector<Report> rs;
    for (int64_t step = 10; step <= 50; step += 10) {
      rs.push_back({id, 1, step, static_cast<double>(i) / 200});
    }
    inc.Set(id, "", rs);
  }
  inc.TakeAffected();
  std::vector<Report> rs;
  for (int64_t step = 10; step <= 60; step += 10) {
    rs.push_back({ids[0], 1, step, 0.0});
  }
  inc.Set(ids[0], "", rs);  // one more report, at a new step
  const std::set<std::string> marked = inc.TakeAffected();
  EXPECT_TRUE(marked.count(ids[0]));
  EXPECT_LE(marked.size(), 4u);
  // A report at an existing step far below the median.
  std::vector<Report> r1 = {{ids[199], 1, 10, 0.99}, {ids[199], 1, 20, 0.99},
                            {ids[199], 1, 30, 0.99}, {ids[199], 1, 40, 0.99},
                            {ids[199], 1, 50, 0.99}, {ids[199], 1, 60, 0.0}};
  inc.Set(ids[199], "", r1);
  const std::set<std::string> marked2 = inc.TakeAffected();
  EXPECT_TRUE(marked2.count(ids[199]));
  EXPECT_LE(marked2.size(), 8u);
  std::vector<Trial> trials;
  std::vector<Report> all;
  for (const std::string& id : ids) trials.push_back({id, "", false});
  for (int i = 1; i < 199; ++i) {
    for (int64_t step = 10; step <= 50; step += 10) {
      all.push_back({ids[i], 1, step, static_cast<double>(i) / 200});
    }
  }
  all.insert(all.end(), rs.begin(), rs.end());
  all.insert(all.end(), r1.begin(), r1.end());
  for (const Decision& d : DecideMedian(c, trials, all)) {
    EXPECT_TRUE(inc.Decide(d.trial_id, false, false) == d) << d.trial_id;
  }
}

}  // namespace
}  // namespace smoe::analysis::search
