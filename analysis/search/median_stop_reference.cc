// Copyright 2026 SMoE Lab authors.
//
// The median rule as first written (until 2026-11-29 the coordinator's):
// for every trial and report step, the other trials' running averages are
// collected and sorted again, O(group^2 * steps) per plan. Kept as the test
// oracle of DecideMedian and the baseline of bench/search_replay_bench.
#include "analysis/search/median_stop_reference.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/stats.h"

namespace smoe::analysis::search {
namespace {

struct Curve {
  const Trial* trial = nullptr;
  std::vector<int64_t> steps;   // ascending
  std::vector<double> best;     // best value up to steps[i]
  std::vector<double> running;  // mean of values up to steps[i]
  int64_t progress() const { return steps.empty() ? -1 : steps.back(); }
  // Running average at step s (values at steps <= s); false when none.
  bool RunningAt(int64_t s, double* out) const {
    const auto it = std::upper_bound(steps.begin(), steps.end(), s);
    if (it == steps.begin()) return false;
    *out = running[static_cast<size_t>(it - steps.begin()) - 1];
    return true;
  }
};

std::string Num(double v) { return absl::StrFormat("%.4g", v); }

}  // namespace

std::vector<Decision> DecideMedianReference(
    const MedianConfig& c, const std::vector<Trial>& trials,
    const std::vector<Report>& reports) {
  const std::vector<Trial> sorted = SortedUniqueTrials(trials);
  std::vector<Curve> curves(sorted.size());
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < sorted.size(); ++i) {
    curves[i].trial = &sorted[i];
    index[sorted[i].trial_id] = i;
  }
  for (const Report& r : Canonical(reports, c.mode)) {
    auto it = index.find(r.trial_id);
    if (it == index.end()) continue;
    Curve& cv = curves[it->second];
    const size_t n = cv.steps.size();
    cv.best.push_back(n == 0 || Better(c.mode, r.value, cv.best.back())
                          ? r.value
                          : cv.best.back());
    cv.running.push_back(NextRunningAverage(
        c.mode, n == 0 ? 0.0 : cv.running.back(), n, r.value));
    cv.steps.push_back(r.step);
  }
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < curves.size(); ++i) {
    groups[curves[i].trial->group].push_back(i);
  }
  std::vector<Decision> out;
  for (size_t t = 0; t < curves.size(); ++t) {
    const Curve& cv = curves[t];
    Decision d;
    d.trial_id = cv.trial->trial_id;
    d.group = cv.trial->group;
    d.step = std::max<int64_t>(cv.progress(), 0);
    if (cv.progress() >= c.max_steps) {
      d.action = Action::kComplete;
      d.value = cv.best.back();
      d.reason = absl::StrCat("reached max_steps ", c.max_steps);
      out.push_back(std::move(d));
      continue;
    }
    if (cv.trial->paused) {
      d.action = Action::kPrune;
      d.final = true;
      if (!cv.steps.empty()) d.value = cv.best.back();
      d.reason =
          "pruned by the median rule earlier; median prunes are final "
          "(no flip-flop as the median moves)";
      out.push_back(std::move(d));
      continue;
    }
    std::string last_check;
    bool pruned = false;
    for (size_t i = 0; i < cv.steps.size() && !pruned; ++i) {
      const int64_t s = cv.steps[i];
      if (s < c.min_steps) continue;
      std::vector<double> others;
      for (size_t u : groups[d.group]) {
        double a;
        if (u == t || curves[u].progress() < s) continue;
        if (curves[u].RunningAt(s, &a)) others.push_back(a);
      }
      if (static_cast<int>(others.size()) < MedianConfig::kMinOthers) {
        last_check = absl::StrCat("step ", s, ": ", others.size(),
                                  " other trials reached it (need ",
                                  MedianConfig::kMinOthers, ")");
        continue;
      }
      std::sort(others.begin(), others.end());
      const double median = Quantile(others, 0.5);
      if (Better(c.mode, median, cv.best[i])) {
        pruned = true;
        d.action = Action::kPrune;
        d.final = true;
        d.step = s;
        d.value = cv.best[i];
        d.cutoff = median;
        d.reason =
            absl::StrCat("step ", s, ": best ", Num(cv.best[i]),
                         " is worse than the median ", Num(median), " of ",
                         others.size(), " other trials' running averages");
      } else {
        last_check = absl::StrCat("step ", s, ": best ", Num(cv.best[i]),
                                  " is not worse than the median ", Num(median),
                                  " of ", others.size(), " other trials");
      }
    }
    if (!pruned) {
      d.action = cv.trial->errored ? Action::kRetry : Action::kRun;
      if (!cv.steps.empty()) d.value = cv.best.back();
      d.reason = last_check.empty()
                     ? absl::StrCat("no report at step >= min_steps ",
                                    c.min_steps, " yet")
                     : last_check;
      if (cv.trial->errored) {
        d.reason += "; errored: retry (an error is not a bad metric)";
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace smoe::analysis::search
