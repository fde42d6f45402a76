// Copyright 2026 SMoE Lab authors.
#include "analysis/search/median_incremental.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace smoe::analysis::search {
namespace {

// The contribution of `cv` at step s: its running average there when it has
// a value at a step <= s and reported at a step >= s.
bool AverageAt(const MedianCurve& cv, int64_t s, double* out) {
  return cv.progress() >= s && cv.RunningAt(s, out);
}

// Its best value up to s when it reported exactly at s.
bool JudgedAt(const MedianCurve& cv, int64_t s, double* best) {
  const auto it = std::lower_bound(cv.steps.begin(), cv.steps.end(), s);
  if (it == cv.steps.end() || *it != s) return false;
  *best = cv.best[static_cast<size_t>(it - cv.steps.begin())];
  return true;
}

bool SameOptional(bool has_a, double a, bool has_b, double b) {
  return has_a == has_b && (!has_a || a == b);
}

const MedianCurve& Empty() {
  static const MedianCurve* const kEmpty = new MedianCurve();
  return *kEmpty;
}

}  // namespace

IncrementalMedian::IncrementalMedian(const MedianConfig& c) : c_(c) {}

uint32_t IncrementalMedian::ViewOf(const std::string& trial_id) {
  auto [it, inserted] =
      index_.try_emplace(trial_id, static_cast<uint32_t>(views_.size()));
  if (inserted) {
    views_.emplace_back();
    views_.back().trial_id = trial_id;
  }
  return it->second;
}

int IncrementalMedian::GroupOf(const std::string& group) {
  auto [it, inserted] =
      group_index_.try_emplace(group, static_cast<int>(groups_.size()));
  if (inserted) {
    groups_.emplace_back();
    groups_.back().label = group;
  }
  return it->second;
}

bool IncrementalMedian::Has(const std::string& trial_id) const {
  auto it = index_.find(trial_id);
  return it != index_.end() && views_[it->second].present;
}

IncrementalMedian::Bounds IncrementalMedian::BoundsOf(const StepData& d) const {
  Bounds b;
  const size_t m = d.averages.size();
  if (m < static_cast<size_t>(MedianConfig::kMinOthers) + 1) {
    b.all = true;
    return b;
  }
  // MedianWithout (median_stop.cc) over the m - 1 others reads positions
  // lo and hi of the others, i.e. among lo .. hi + 1 of all m.
  const size_t n = m - 1;
  const double pos = 0.5 * static_cast<double>(n - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, n - 1);
  b.lo = d.averages[lo];
  b.hi = d.averages[hi + 1];
  if (!std::isfinite(b.lo) || !std::isfinite(b.hi)) {
    b.all = true;
    return b;
  }
  // One ulp of slack for the interpolation's rounding.
  b.lo = std::nextafter(b.lo, -std::numeric_limits<double>::infinity());
  b.hi = std::nextafter(b.hi, std::numeric_limits<double>::infinity());
  return b;
}

void IncrementalMedian::MarkRange(const StepData& d, const Bounds& before,
                                  const Bounds& after) {
  if (before.all || after.all) {
    for (const Judged& j : d.judged) affected_.insert(j.trial);
    return;
  }
  const double lo = std::min(before.lo, after.lo);
  const double hi = std::max(before.hi, after.hi);
  for (auto it =
           std::lower_bound(d.judged.begin(), d.judged.end(), Judged{lo, 0});
       it != d.judged.end() && it->best <= hi; ++it) {
    affected_.insert(it->trial);
  }
}

void IncrementalMedian::Update(uint32_t t, const MedianCurve& old_curve,
                               bool was_present) {
  View& v = views_[t];
  Group& g = groups_[v.group];
  const MedianCurve& before = was_present ? old_curve : Empty();
  const MedianCurve& after = v.present ? v.curve : Empty();
  affected_.insert(t);
  // Their common prefix contributes the same at every step up to its end.
  size_t k = 0;
  while (k < before.steps.size() && k < after.steps.size() &&
         before.steps[k] == after.steps[k] &&
         before.running[k] == after.running[k] &&
         before.best[k] == after.best[k]) {
    ++k;
  }
  if (k == before.steps.size() && k == after.steps.size()) return;
  const int64_t from =
      k == 0 ? std::numeric_limits<int64_t>::min() : before.steps[k - 1];
  const int64_t to = std::max(before.progress(), after.progress());
  for (auto it = g.steps.upper_bound(from);
       it != g.steps.end() && it->first <= to; ++it) {
    const int64_t s = it->first;
    StepData& d = it->second;
    double a_old = 0, a_new = 0, b_old = 0, b_new = 0;
    const bool has_a_old = AverageAt(before, s, &a_old);
    const bool has_a_new = AverageAt(after, s, &a_new);
    const bool has_b_old = JudgedAt(before, s, &b_old);
    const bool has_b_new = JudgedAt(after, s, &b_new);
    if (!SameOptional(has_b_old, b_old, has_b_new, b_new)) {
      if (has_b_old) {
        auto j = std::lower_bound(d.judged.begin(), d.judged.end(),
                                  Judged{b_old, t});
        d.judged.erase(j);
      }
      if (has_b_new) {
        const Judged e{b_new, t};
        d.judged.insert(std::upper_bound(d.judged.begin(), d.judged.end(), e),
                        e);
      }
    }
    if (SameOptional(has_a_old, a_old, has_a_new, a_new)) continue;
    const Bounds b0 = BoundsOf(d);
    if (has_a_old) {
      d.averages.erase(
          std::lower_bound(d.averages.begin(), d.averages.end(), a_old));
    }
    if (has_a_new) {
      d.averages.insert(
          std::upper_bound(d.averages.begin(), d.averages.end(), a_new), a_new);
    }
    MarkRange(d, b0, BoundsOf(d));
  }
  // The steps no trial of the group reported at before: built from the
  // trials that reached them (none judged there but t).
  for (size_t i = 0; i < after.steps.size(); ++i) {
    const int64_t s = after.steps[i];
    if (s < c_.min_steps || s >= c_.max_steps) continue;
    auto [it, inserted] = g.steps.try_emplace(s);
    if (!inserted) continue;
    StepData& d = it->second;
    for (auto p = g.by_progress.lower_bound({s, 0}); p != g.by_progress.end();
         ++p) {
      if (p->second == t) continue;
      double a;
      if (AverageAt(views_[p->second].curve, s, &a)) d.averages.push_back(a);
    }
    d.averages.push_back(after.running[i]);
    std::sort(d.averages.begin(), d.averages.end());
    d.judged.push_back({after.best[i], t});
  }
  if (!before.steps.empty()) g.by_progress.erase({before.progress(), t});
  if (!after.steps.empty()) g.by_progress.insert({after.progress(), t});
}

void IncrementalMedian::Set(const std::string& trial_id,
                            const std::string& group,
                            const std::vector<Report>& reports) {
  const uint32_t t = ViewOf(trial_id);
  const int gi = GroupOf(group);
  View& v = views_[t];
  if (v.present && v.group != gi) Remove(trial_id);
  MedianCurve old = std::move(views_[t].curve);
  const bool was_present = views_[t].present;
  views_[t].group = gi;
  views_[t].curve = MedianCurveOf(c_.mode, reports);
  views_[t].present = true;
  Update(t, old, was_present);
}

void IncrementalMedian::Remove(const std::string& trial_id) {
  auto it = index_.find(trial_id);
  if (it == index_.end() || !views_[it->second].present) return;
  const uint32_t t = it->second;
  views_[t].present = false;
  Update(t, views_[t].curve, true);
}

void IncrementalMedian::Load(const std::vector<Initial>& trials) {
  std::vector<std::vector<uint32_t>> members(groups_.size());
  for (const Initial& in : trials) {
    const uint32_t t = ViewOf(*in.trial_id);
    const int gi = GroupOf(*in.group);
    if (members.size() < groups_.size()) members.resize(groups_.size());
    View& v = views_[t];
    v.group = gi;
    v.present = true;
    v.curve = MedianCurveOf(c_.mode, *in.reports);
    members[gi].push_back(t);
  }
  for (size_t gi = 0; gi < members.size(); ++gi) {
    Group& g = groups_[gi];
    for (uint32_t t : members[gi]) {
      for (int64_t s : views_[t].curve.steps) {
        if (s >= c_.min_steps && s < c_.max_steps) g.steps.try_emplace(s);
      }
    }
    for (uint32_t t : members[gi]) {
      const MedianCurve& cv = views_[t].curve;
      if (cv.steps.empty()) continue;
      g.by_progress.insert({cv.progress(), t});
      size_t i = 0;  // the last curve step <= s
      for (auto it = g.steps.lower_bound(cv.steps.front());
           it != g.steps.end() && it->first <= cv.progress(); ++it) {
        const int64_t s = it->first;
        while (i + 1 < cv.steps.size() && cv.steps[i + 1] <= s) ++i;
        it->second.averages.push_back(cv.running[i]);
        if (cv.steps[i] == s) it->second.judged.push_back({cv.best[i], t});
      }
    }
    for (auto& [s, d] : g.steps) {
      std::sort(d.averages.begin(), d.averages.end());
      std::sort(d.judged.begin(), d.judged.end());
    }
  }
}

Decision IncrementalMedian::Decide(const std::string& trial_id, bool errored,
                                   bool paused) const {
  const View& v = views_[index_.at(trial_id)];
  const Group& g = groups_[v.group];
  Trial trial;
  trial.trial_id = trial_id;
  trial.group = g.label;
  trial.errored = errored;
  trial.paused = paused;
  return DecideMedianTrial(c_, trial, v.curve,
                           [&](int64_t s) -> const std::vector<double>& {
                             return g.steps.at(s).averages;
                           });
}

std::set<std::string> IncrementalMedian::TakeAffected() {
  std::set<std::string> out;
  for (uint32_t t : affected_) out.insert(views_[t].trial_id);
  affected_.clear();
  return out;
}

}  // namespace smoe::analysis::search
