// Copyright 2026 SMoE Lab authors.
#include "analysis/search/refine.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/optimal_k.h"
#include "analysis/stats.h"

namespace smoe::analysis::search {
namespace {

std::string Num(double v) { return absl::StrFormat("%.4g", v); }

}  // namespace

const char* RefineStateName(RefineState s) {
  switch (s) {
    case RefineState::kWaiting:
      return "waiting";
    case RefineState::kExploring:
      return "exploring";
    case RefineState::kAddingSeeds:
      return "adding_seeds";
    case RefineState::kResolved:
      return "resolved";
    case RefineState::kUnresolved:
      return "unresolved";
    case RefineState::kBudget:
      return "budget";
  }
  return "?";
}

namespace {

// Sorted by (group, x, seed), a measured duplicate first; a total order
// (value, then the flags), so that equal keys sort alike whatever the input
// order and whether the whole sweep or one group is sorted.
bool PointBefore(const RefinePoint& a, const RefinePoint& b) {
  if (a.group != b.group) return a.group < b.group;
  if (a.x != b.x) return a.x < b.x;
  if (a.seed != b.seed) return a.seed < b.seed;
  if (a.done != b.done) return a.done;
  const bool an = std::isnan(a.value), bn = std::isnan(b.value);
  if (an != bn) return bn;
  if (!an && a.value != b.value) return a.value < b.value;
  if (a.pending != b.pending) return a.pending;
  return a.stopped < b.stopped;
}

bool SamePoint(const RefinePoint& a, const RefinePoint& b) {
  return a.group == b.group && a.x == b.x && a.seed == b.seed;
}

// Order-free: sorted and deduplicated (group, x, seed).
std::vector<RefinePoint> SortedUnique(std::vector<RefinePoint> points) {
  std::sort(points.begin(), points.end(), PointBefore);
  points.erase(std::unique(points.begin(), points.end(), SamePoint),
               points.end());
  return points;
}

// DecideRefineGroup on sorted unique points of one group.
RefineGroupPlan DecideSortedGroup(const RefineConfig& c,
                                  const std::string& label,
                                  const std::vector<const RefinePoint*>& pts) {
  const std::set<int64_t> base_seeds(c.seeds.begin(), c.seeds.end());
  RefineGroupPlan plan;
  plan.points = static_cast<int64_t>(pts.size());
  RefineGroup& g = plan.group;
  std::vector<std::vector<RefineProposal>>& units = plan.wants;
  g.group = label;
  std::set<int64_t> xs, seeds;
  std::map<int64_t, std::vector<std::pair<int64_t, double>>> measured;
  bool pending = false;
  std::set<int64_t> stopped;
  for (const RefinePoint* p : pts) {
    xs.insert(p->x);
    seeds.insert(p->seed);
    if (p->stopped) stopped.insert(p->x);
    if (p->done) {
      // Maximise internally: mode min negates.
      measured[p->x].push_back(
          {p->seed, c.mode == Mode::kMax ? p->value : -p->value});
    } else if (p->pending) {
      pending = true;  // a failed point counts as tried, not measured
    }
  }
  Series series;
  std::set<int64_t> measured_seeds;
  for (const auto& [x, vals] : measured) {
    CurvePoint cp;
    cp.x.label = NumberLabel(static_cast<double>(x));
    cp.x.number = static_cast<double>(x);
    cp.x.numeric = true;
    for (const auto& [seed, v] : vals) {  // ascending seed
      cp.seeds.push_back(seed);
      cp.values.push_back(v);
      measured_seeds.insert(seed);
    }
    cp.stats = Summarize(cp.values);
    g.mean[x] = c.mode == Mode::kMax ? cp.stats.mean : -cp.stats.mean;
    series.points.push_back(std::move(cp));
  }
  g.seeds = static_cast<int>(measured_seeds.size());
  for (int64_t x : stopped) {
    if (!measured.count(x)) g.stopped.push_back(x);
  }
  const std::string stopped_note =
      g.stopped.empty()
          ? ""
          : absl::StrCat("; stopped early: ", absl::StrJoin(g.stopped, ", "));
  if (pending || series.points.empty()) {
    g.state = RefineState::kWaiting;
    g.reason = series.points.empty() ? "no point measured yet"
                                     : "waiting for pending points";
    if (!series.points.empty()) {
      // Report the current argmax anyway.
      size_t b = 0;
      for (size_t i = 1; i < series.points.size(); ++i) {
        if (series.points[i].stats.mean > series.points[b].stats.mean) b = i;
      }
      g.best = static_cast<int64_t>(series.points[b].x.number);
      g.best_mean = g.mean[g.best];
    }
    return plan;
  }
  AggregateOptions opts;
  opts.metric = "value";  // maximised (values negated for mode min)
  opts.bootstrap_samples = c.bootstrap_samples;
  opts.seed = c.bootstrap_seed;
  GroupKey facet;
  series.key.label = label;
  const OptimalK o = OptimalForSeries(opts, facet, series);
  g.best = static_cast<int64_t>(o.best.number);
  g.best_mean = g.mean[g.best];
  g.best_freq = o.best_freq;
  const std::string at =
      absl::StrCat("x*=", g.best, " (mean ", Num(g.best_mean), ")");
  // 1. Untried neighbours.
  for (int64_t x : {g.best - 1, g.best + 1}) {
    if (x < c.lo || x > c.hi || xs.count(x)) continue;
    std::vector<RefineProposal> u;
    for (int64_t seed : c.seeds) {
      u.push_back(
          {label, x, seed, absl::StrCat(at, ": neighbour ", x, " untried")});
    }
    units.push_back(std::move(u));
  }
  // The indifference zone: the bootstrap mass on x* and on the values
  // whose mean is within `tolerance` of x*'s.
  double equivalent_freq = 0;
  std::vector<int64_t> equivalent;
  if (c.tolerance > 0) {
    for (const CurvePoint& cp : series.points) {
      if (cp.stats.mean < o.best_mean - c.tolerance) continue;
      equivalent.push_back(static_cast<int64_t>(cp.x.number));
      auto f = o.argmax_freq.find(cp.x.label);
      if (f != o.argmax_freq.end()) equivalent_freq += f->second;
    }
  }
  const bool within = c.tolerance > 0 && equivalent.size() > 1 &&
                      o.best_freq < c.resolve_p &&
                      equivalent_freq >= c.resolve_p;
  if (!units.empty()) {
    g.state = RefineState::kExploring;
    g.reason = absl::StrCat(at, ": adding its untried neighbours");
  } else if (g.seeds >= 2 && o.best_freq >= c.resolve_p) {
    g.state = RefineState::kResolved;
    g.reason =
        absl::StrCat(at, " resolved: neighbours measured, P(argmax = ", g.best,
                     ") = ", Num(o.best_freq), " >= ", Num(c.resolve_p),
                     " over ", o.bootstrap_samples, " bootstrap resamples of ",
                     g.seeds, " seeds", stopped_note);
  } else if (g.seeds >= 2 && within) {
    g.state = RefineState::kResolved;
    std::sort(equivalent.begin(), equivalent.end());
    g.equivalent = equivalent;
    // Not "x* resolved": the x of the set cannot be told apart at this
    // tolerance; x* is only the best mean among them.
    g.reason = absl::StrCat(
        "x in {", absl::StrJoin(equivalent, ", "),
        "} indistinguishable within tolerance ", Num(c.tolerance),
        " (means within it of the best, x=", g.best, ", mean ",
        Num(g.best_mean), "): neighbours measured, P(argmax in {",
        absl::StrJoin(equivalent, ", "), "}) = ", Num(equivalent_freq),
        " >= ", Num(c.resolve_p), " (P(argmax = ", g.best,
        ") = ", Num(o.best_freq), ") over ", o.bootstrap_samples,
        " bootstrap resamples of ", g.seeds, " seeds", stopped_note);
  } else {
    // 3. Ambiguous: seeds where the argmax's bootstrap lands.
    std::vector<int64_t> covered;
    for (const CurvePoint& cp : series.points) {
      auto f = o.argmax_freq.find(cp.x.label);
      if (f != o.argmax_freq.end() && f->second >= 0.05) {
        covered.push_back(static_cast<int64_t>(cp.x.number));
      }
    }
    if (g.seeds < 2 &&
        std::find(covered.begin(), covered.end(), g.best) == covered.end()) {
      covered.push_back(g.best);
    }
    std::sort(covered.begin(), covered.end());
    int64_t extra = 0;
    for (int64_t s : seeds) extra += base_seeds.count(s) ? 0 : 1;
    const std::string why =
        g.seeds < 2 ? absl::StrCat(at, ": one seed cannot separate it")
                    : absl::StrCat(at, ": P(argmax) = ", Num(o.best_freq),
                                   " < ", Num(c.resolve_p), " (covers ",
                                   absl::StrJoin(covered, ", "), ")");
    if (extra < c.add_seeds) {
      const int64_t seed = *seeds.rbegin() + 1;
      for (int64_t x : covered) {
        units.push_back(std::vector<RefineProposal>{
            {label, x, seed, absl::StrCat(why, "; seed ", seed, " for ", x)}});
      }
      g.state = RefineState::kAddingSeeds;
      g.reason = absl::StrCat(why, "; adding seed ", seed);
    } else {
      g.state = RefineState::kUnresolved;
      g.reason = absl::StrCat(why, "; add_seeds (", c.add_seeds, ") spent",
                              stopped_note);
    }
  }
  return plan;
}

}  // namespace

RefineGroupPlan DecideRefineGroup(const RefineConfig& c,
                                  const std::string& label,
                                  const std::vector<RefinePoint>& points) {
  // Sorted and deduplicated as SortedUnique does, without copying them.
  std::vector<const RefinePoint*> pts;
  pts.reserve(points.size());
  for (const RefinePoint& p : points) pts.push_back(&p);
  std::sort(pts.begin(), pts.end(),
            [](const RefinePoint* a, const RefinePoint* b) {
              return PointBefore(*a, *b);
            });
  pts.erase(std::unique(pts.begin(), pts.end(),
                        [](const RefinePoint* a, const RefinePoint* b) {
                          return SamePoint(*a, *b);
                        }),
            pts.end());
  return DecideSortedGroup(c, label, pts);
}

RefineGrant GrantRefine(const RefineConfig& c,
                        const std::vector<const RefineGroupPlan*>& groups,
                        int64_t trials) {
  RefineGrant grant;
  std::vector<bool> over(groups.size(), false);
  int64_t total = trials;
  for (size_t round = 0;; ++round) {
    bool any = false;
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const RefineGroupPlan& g = *groups[gi];
      if (round >= g.wants.size()) continue;
      any = true;
      const std::vector<RefineProposal>& u = g.wants[round];
      const int64_t n = static_cast<int64_t>(u.size());
      if (!c.stop_adding.empty() || (c.budget > 0 && total + n > c.budget)) {
        if (!over[gi]) {
          over[gi] = true;
          grant.budget.emplace_back(
              gi, absl::StrCat(
                      g.group.reason, "; ",
                      c.stop_adding.empty()
                          ? absl::StrCat("budget ", c.budget, " trials spent")
                          : c.stop_adding,
                      ": x*=", g.group.best, " not resolved"));
        }
        continue;
      }
      total += n;
      for (const RefineProposal& p : u) grant.proposals.push_back(p);
    }
    if (!any) break;
  }
  return grant;
}

RefineResult DecideRefine(const RefineConfig& c,
                          const std::vector<RefinePoint>& points,
                          std::vector<RefineGroupPlan>* group_plans) {
  const std::vector<RefinePoint> sorted = SortedUnique(points);
  std::map<std::string, std::vector<const RefinePoint*>> groups;
  for (const RefinePoint& p : sorted) groups[p.group].push_back(&p);
  RefineResult result;
  result.trials = static_cast<int64_t>(sorted.size());
  std::vector<RefineGroupPlan> plans;
  plans.reserve(groups.size());
  for (const auto& [label, pts] : groups) {
    plans.push_back(DecideSortedGroup(c, label, pts));
  }
  std::vector<const RefineGroupPlan*> order;
  for (const RefineGroupPlan& p : plans) order.push_back(&p);
  RefineGrant grant = GrantRefine(c, order, result.trials);
  for (const RefineGroupPlan& p : plans) result.groups.push_back(p.group);
  for (auto& [gi, reason] : grant.budget) {
    result.groups[gi].state = RefineState::kBudget;
    result.groups[gi].reason = std::move(reason);
  }
  result.proposals = std::move(grant.proposals);
  if (group_plans != nullptr) *group_plans = std::move(plans);
  return result;
}

}  // namespace smoe::analysis::search
