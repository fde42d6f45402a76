// Copyright 2026 SMoE Lab authors.
#include "analysis/search/refine.h"

#include <algorithm>
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

// A unit of proposals: one x with one or more seeds.
struct Unit {
  std::vector<RefineProposal> points;
};

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

RefineResult DecideRefine(const RefineConfig& c,
                          const std::vector<RefinePoint>& points) {
  // Order-free: sort and deduplicate (group, x, seed).
  std::vector<RefinePoint> sorted = points;
  auto key = [](const RefinePoint& p) {
    return std::tie(p.group, p.x, p.seed);
  };
  std::sort(sorted.begin(), sorted.end(),
            [&](const RefinePoint& a, const RefinePoint& b) {
              if (key(a) != key(b)) return key(a) < key(b);
              return a.done > b.done;  // a measured duplicate first
            });
  sorted.erase(std::unique(sorted.begin(), sorted.end(),
                           [&](const RefinePoint& a, const RefinePoint& b) {
                             return key(a) == key(b);
                           }),
               sorted.end());
  std::map<std::string, std::vector<const RefinePoint*>> groups;
  for (const RefinePoint& p : sorted) groups[p.group].push_back(&p);
  const std::set<int64_t> base_seeds(c.seeds.begin(), c.seeds.end());
  RefineResult result;
  result.trials = static_cast<int64_t>(sorted.size());
  std::vector<std::vector<Unit>> wants;  // per group, in order
  for (const auto& [label, pts] : groups) {
    RefineGroup g;
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
    std::vector<Unit> units;
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
      result.groups.push_back(std::move(g));
      wants.push_back({});
      continue;
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
      Unit u;
      for (int64_t seed : c.seeds) {
        u.points.push_back(
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
      g.reason = absl::StrCat(
          at, " resolved: neighbours measured, P(argmax = ", g.best,
          ") = ", Num(o.best_freq), " >= ", Num(c.resolve_p), " over ",
          o.bootstrap_samples, " bootstrap resamples of ", g.seeds, " seeds",
          stopped_note);
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
          units.push_back({{{label, x, seed,
                             absl::StrCat(why, "; seed ", seed, " for ", x)}}});
        }
        g.state = RefineState::kAddingSeeds;
        g.reason = absl::StrCat(why, "; adding seed ", seed);
      } else {
        g.state = RefineState::kUnresolved;
        g.reason = absl::StrCat(why, "; add_seeds (", c.add_seeds, ") spent",
                                stopped_note);
      }
    }
    result.groups.push_back(std::move(g));
    wants.push_back(std::move(units));
  }
  // Grant round-robin within the budget.
  int64_t total = result.trials;
  for (size_t round = 0;; ++round) {
    bool any = false;
    for (size_t gi = 0; gi < wants.size(); ++gi) {
      if (round >= wants[gi].size()) continue;
      any = true;
      const Unit& u = wants[gi][round];
      const int64_t n = static_cast<int64_t>(u.points.size());
      if (!c.stop_adding.empty() || (c.budget > 0 && total + n > c.budget)) {
        RefineGroup& g = result.groups[gi];
        if (g.state != RefineState::kBudget) {
          g.state = RefineState::kBudget;
          g.reason = absl::StrCat(
              g.reason, "; ",
              c.stop_adding.empty()
                  ? absl::StrCat("budget ", c.budget, " trials spent")
                  : c.stop_adding,
              ": x*=", g.best, " not resolved");
        }
        continue;
      }
      total += n;
      for (const RefineProposal& p : u.points) result.proposals.push_back(p);
    }
    if (!any) break;
  }
  return result;
}

}  // namespace smoe::analysis::search
