// Copyright 2026 SMoE Lab authors.
#include "analysis/search/asha_incremental.h"

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/search/asha.h"
#include "common/rng.h"
#include "gtest/gtest.h"

namespace smoe::analysis::search {
namespace {

// Random replays: trials of a few groups report at random steps (some
// twice, from a retry, some NaN), some leave (failed) and come back; after
// every change every decision equals DecideAsha's from all trials, and a
// trial outside TakeAffected() has the same action, rung and final as
// before the change (what the coordinator relies on to plan only those).
void Replay(const AshaConfig& c, uint64_t seed) {
  Rng rng = Rng::ForStream(seed, {0x617368614943ULL});
  const int kTrials = 40;
  std::vector<Trial> trials(kTrials);
  std::map<std::string, std::vector<Report>> reports;
  std::set<std::string> present;
  IncrementalAsha inc(c);
  std::vector<IncrementalAsha::Initial> initial;
  for (int i = 0; i < kTrials; ++i) {
    trials[i].trial_id = absl::StrCat("t", i < 10 ? "0" : "", i);
    trials[i].group = absl::StrCat("g", i % 3);
    // Configurations of about 3 seeds each (aggregate_seeds), on an axis
    // line (keep_neighbors): i = 3 * (ci + 4 * seed) + group.
    const int ci = (i / 3) % 4;
    trials[i].config = absl::StrCat("c", ci);
    trials[i].has_axis = true;
    trials[i].axis = ci;
    trials[i].rest = "r";
    // Some trials start with reports (a restart's index).
    if (i % 4 == 0) {
      reports[trials[i].trial_id] = {
          {trials[i].trial_id, 1, 2 + i % 5, static_cast<double>(i % 7) / 4}};
    }
    present.insert(trials[i].trial_id);
  }
  for (int i = 0; i < kTrials; ++i) {
    initial.push_back({&trials[i].trial_id, &trials[i].group,
                       &reports[trials[i].trial_id], &trials[i]});
  }
  if (seed % 2 == 0) {
    inc.Load(initial);
  } else {
    for (const auto& in : initial)
      inc.Set(*in.trial_id, *in.group, *in.reports, in.facts);
  }
  inc.TakeAffected();
  std::map<std::string, Decision> before;
  auto full = [&]() {
    std::vector<Trial> considered;
    std::vector<Report> all;
    for (const Trial& t : trials) {
      if (!present.count(t.trial_id)) continue;
      considered.push_back(t);
      const auto& rs = reports[t.trial_id];
      all.insert(all.end(), rs.begin(), rs.end());
    }
    std::map<std::string, Decision> out;
    for (const Decision& d : DecideAsha(c, considered, all)) {
      out[d.trial_id] = d;
    }
    return out;
  };
  before = full();
  for (int step = 0; step < 400; ++step) {
    const int i = static_cast<int>(rng.UniformInt(kTrials));
    const std::string& id = trials[i].trial_id;
    const uint64_t event = rng.UniformInt(20);
    if (event == 0 && present.count(id)) {
      inc.Remove(id);
      present.erase(id);
    } else {
      auto& rs = reports[id];
      if (event > 2) {
        const int64_t last = rs.empty() ? 0 : rs.back().step;
        Report r;
        r.trial_id = id;
        // event 3: a retry reports its last step again (a new value).
        const bool again = event == 3 && !rs.empty();
        r.attempt = again ? rs.back().attempt + 1 : 1;
        r.step =
            again ? last : last + 1 + static_cast<int64_t>(rng.UniformInt(4));
        r.value = event == 4 ? std::nan("")
                             : static_cast<double>(rng.UniformInt(8)) / 4;
        rs.push_back(r);
      }
      inc.Set(id, trials[i].group, rs, &trials[i]);
      present.insert(id);
    }
    const std::set<std::string> affected = inc.TakeAffected();
    EXPECT_TRUE(affected.count(id));
    const std::map<std::string, Decision> now = full();
    for (const auto& [tid, d] : now) {
      SCOPED_TRACE(
          absl::StrCat("seed ", seed, " change ", step, " trial ", tid));
      ASSERT_TRUE(inc.Has(tid));
      EXPECT_EQ(ToJson(inc.Decide(tid, false)).dump(), ToJson(d).dump());
      auto b = before.find(tid);
      if (!affected.count(tid) && b != before.end()) {
        EXPECT_EQ(b->second.action, d.action);
        EXPECT_EQ(b->second.rung, d.rung);
        EXPECT_EQ(b->second.final, d.final);
      }
    }
    for (const Trial& t : trials) {
      EXPECT_EQ(inc.Has(t.trial_id), present.count(t.trial_id) > 0);
    }
    before = now;
  }
}

TEST(IncrementalAshaTest, AgreesWithDecideAshaAfterEveryChange) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    AshaConfig c;
    c.min_steps = 2;
    c.reduction = 2 + static_cast<int64_t>(seed % 2);
    c.max_steps = 40;
    c.mode = seed % 2 ? Mode::kMax : Mode::kMin;
    c.smooth = seed == 3 ? 2 : 1;
    c.min_keep = seed == 4 ? 2 : 1;
    Replay(c, seed);
  }
}

TEST(IncrementalAshaTest, AggregateSeedsAndKeepNeighborsAgreeWithDecideAsha) {
  for (uint64_t seed = 11; seed <= 22; ++seed) {
    AshaConfig c;
    c.min_steps = 2;
    c.reduction = 2 + static_cast<int64_t>(seed % 2);
    c.max_steps = 40;
    c.mode = seed % 2 ? Mode::kMax : Mode::kMin;
    c.smooth = seed % 3 == 0 ? 2 : 1;
    c.aggregate_seeds = seed % 3 != 1;
    c.keep_neighbors = seed % 3 != 2;
    Replay(c, seed);
  }
}

TEST(IncrementalAshaTest, ErroredTrialsRetryAsDecideAsha) {
  AshaConfig c;
  c.min_steps = 1;
  c.reduction = 2;
  c.max_steps = 8;
  IncrementalAsha inc(c);
  std::vector<Trial> trials(2);
  trials[0].trial_id = "a";
  trials[1].trial_id = "b";
  trials[1].errored = true;
  const std::vector<Report> reports = {{"a", 1, 1, 0.5}, {"b", 1, 1, 0.9}};
  inc.Set("a", "", {reports[0]});
  inc.Set("b", "", {reports[1]});
  for (const Decision& d : DecideAsha(c, trials, reports)) {
    EXPECT_EQ(ToJson(inc.Decide(d.trial_id, d.trial_id == "b")).dump(),
              ToJson(d).dump());
  }
  EXPECT_EQ(inc.Decide("b", true).action, Action::kRetry);
}

TEST(IncrementalAshaTest, SupportsEveryConfiguration) {
  AshaConfig c;
  EXPECT_TRUE(IncrementalAsha::Supports(c));
  c.aggregate_seeds = true;
  EXPECT_TRUE(IncrementalAsha::Supports(c));
  c.keep_neighbors = true;
  EXPECT_TRUE(IncrementalAsha::Supports(c));
}

}  // namespace
}  // namespace smoe::analysis::search
