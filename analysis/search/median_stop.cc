// Copyright 2026 SMoE Lab authors.
#include "analysis/search/median_stop.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace smoe::analysis::search {
namespace {

std::string Num(double v) { return absl::StrFormat("%.4g", v); }

// Quantile(sorted without one copy of `own`, 0.5) on `sorted`, which holds
// `own` and at least two other values, with the same arithmetic (so the
// same double) as sorting the others alone.
double MedianWithout(const std::vector<double>& sorted, double own) {
  const size_t skip = static_cast<size_t>(
      std::lower_bound(sorted.begin(), sorted.end(), own) - sorted.begin());
  const size_t n = sorted.size() - 1;
  auto at = [&](size_t j) { return sorted[j < skip ? j : j + 1]; };
  if (n == 1) return at(0);
  const double pos = 0.5 * static_cast<double>(n - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, n - 1);
  const double frac = pos - static_cast<double>(lo);
  return at(lo) + (at(hi) - at(lo)) * frac;
}

}  // namespace

bool MedianCurve::RunningAt(int64_t s, double* out) const {
  const auto it = std::upper_bound(steps.begin(), steps.end(), s);
  if (it == steps.begin()) return false;
  *out = running[static_cast<size_t>(it - steps.begin()) - 1];
  return true;
}

void ExtendMedianCurve(Mode mode, const Report& r, MedianCurve* cv) {
  const size_t n = cv->steps.size();
  cv->best.push_back(n == 0 || Better(mode, r.value, cv->best.back())
                         ? r.value
                         : cv->best.back());
  cv->running.push_back(
      NextRunningAverage(mode, n == 0 ? 0.0 : cv->running.back(), n, r.value));
  cv->steps.push_back(r.step);
}

MedianCurve MedianCurveOf(Mode mode, std::vector<Report> reports) {
  MedianCurve cv;
  for (const Report& r : Canonical(std::move(reports), mode)) {
    ExtendMedianCurve(mode, r, &cv);
  }
  return cv;
}

Decision DecideMedianTrial(
    const MedianConfig& c, const Trial& trial, const MedianCurve& cv,
    const std::function<const std::vector<double>&(int64_t)>& sorted_at) {
  Decision d;
  d.trial_id = trial.trial_id;
  d.group = trial.group;
  d.step = std::max<int64_t>(cv.progress(), 0);
  if (cv.progress() >= c.max_steps) {
    d.action = Action::kComplete;
    d.value = cv.best.back();
    d.reason = absl::StrCat("reached max_steps ", c.max_steps);
    return d;
  }
  if (trial.paused) {
    d.action = Action::kPrune;
    d.final = true;
    if (!cv.steps.empty()) d.value = cv.best.back();
    d.reason =
        "pruned by the median rule earlier; median prunes are final "
        "(no flip-flop as the median moves)";
    return d;
  }
  std::string last_check;
  for (size_t i = 0; i < cv.steps.size(); ++i) {
    const int64_t s = cv.steps[i];
    if (s < c.min_steps) continue;
    // Every running average at s of the group (this trial's included: it
    // reported at s); the others are that without one copy of this
    // trial's own.
    const std::vector<double>& at_s = sorted_at(s);
    const double own = cv.running[i];
    const size_t n_others = at_s.size() - 1;
    if (static_cast<int>(n_others) < MedianConfig::kMinOthers) {
      last_check = absl::StrCat("step ", s, ": ", n_others,
                                " other trials reached it (need ",
                                MedianConfig::kMinOthers, ")");
      continue;
    }
    const double median = MedianWithout(at_s, own);
    if (Better(c.mode, median, cv.best[i])) {
      d.action = Action::kPrune;
      d.final = true;
      d.step = s;
      d.value = cv.best[i];
      d.cutoff = median;
      d.reason = absl::StrCat("step ", s, ": best ", Num(cv.best[i]),
                              " is worse than the median ", Num(median), " of ",
                              n_others, " other trials' running averages");
      return d;
    }
    last_check = absl::StrCat("step ", s, ": best ", Num(cv.best[i]),
                              " is not worse than the median ", Num(median),
                              " of ", n_others, " other trials");
  }
  d.action = trial.errored ? Action::kRetry : Action::kRun;
  if (!cv.steps.empty()) d.value = cv.best.back();
  d.reason =
      last_check.empty()
          ? absl::StrCat("no report at step >= min_steps ", c.min_steps, " yet")
          : last_check;
  if (trial.errored) {
    d.reason += "; errored: retry (an error is not a bad metric)";
  }
  return d;
}

std::vector<Decision> DecideMedian(const MedianConfig& c,
                                   const std::vector<Trial>& trials,
                                   const std::vector<Report>& reports) {
  const std::vector<Trial> sorted = SortedUniqueTrials(trials);
  std::vector<MedianCurve> curves(sorted.size());
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < sorted.size(); ++i) index[sorted[i].trial_id] = i;
  for (const Report& r : Canonical(reports, c.mode)) {
    auto it = index.find(r.trial_id);
    if (it == index.end()) continue;
    ExtendMedianCurve(c.mode, r, &curves[it->second]);
  }
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < curves.size(); ++i) {
    groups[sorted[i].group].push_back(i);
  }
  // The sorted running averages at step s of the group's trials that
  // reported at a step >= s, built when first asked for.
  std::map<std::pair<std::string, int64_t>, std::vector<double>> sorted_at;
  std::vector<Decision> out;
  out.reserve(curves.size());
  for (size_t t = 0; t < curves.size(); ++t) {
    const std::string& group = sorted[t].group;
    out.push_back(DecideMedianTrial(
        c, sorted[t], curves[t], [&](int64_t s) -> const std::vector<double>& {
          auto [it, inserted] = sorted_at.try_emplace({group, s});
          if (inserted) {
            for (size_t u : groups[group]) {
              double a;
              if (curves[u].progress() >= s && curves[u].RunningAt(s, &a)) {
                it->second.push_back(a);
              }
            }
            std::sort(it->second.begin(), it->second.end());
          }
          return it->second;
        }));
  }
  return out;
}

}  // namespace smoe::analysis::search
