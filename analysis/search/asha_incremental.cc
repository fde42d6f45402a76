// Copyright 2026 SMoE Lab authors.
#include "analysis/search/asha_incremental.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace smoe::analysis::search {
namespace {

// As asha.cc's.
std::string Num(double v) { return absl::StrFormat("%.4g", v); }

}  // namespace

bool IncrementalAsha::Supports(const AshaConfig& c) {
  return !c.aggregate_seeds && !c.keep_neighbors;
}

IncrementalAsha::IncrementalAsha(const AshaConfig& c)
    : c_(c), rungs_(AshaRungs(c)) {}

bool IncrementalAsha::Before(const Entry& a, const Entry& b) const {
  if (a.value != b.value) return Better(c_.mode, a.value, b.value);
  return views_[a.trial].trial_id < views_[b.trial].trial_id;
}

size_t IncrementalAsha::Position(const Group& g, size_t rung,
                                 const Entry& e) const {
  const std::vector<Entry>& r = g.ranked[rung];
  return static_cast<size_t>(
      std::lower_bound(
          r.begin(), r.end(), e,
          [&](const Entry& a, const Entry& b) { return Before(a, b); }) -
      r.begin());
}

void IncrementalAsha::Summarise(Group* g) const {
  const size_t L = rungs_.size();
  g->keep.assign(L, 0);
  g->complete.assign(L, false);
  bool complete = true;
  for (size_t i = 0; i < L; ++i) {
    const std::vector<Entry>& ranked = g->ranked[i];
    const int64_t n = static_cast<int64_t>(ranked.size());
    if (i == 0) {
      // Every considered trial of the group has a value here.
      complete = n == g->considered;
    } else if (complete) {
      // Every one promoted from the rung below has a value here.
      const std::vector<Entry>& below = g->ranked[i - 1];
      for (int64_t k = 0; complete && k < g->keep[i - 1]; ++k) {
        complete =
            views_[below[static_cast<size_t>(k)].trial].at[i].has_value();
      }
    }
    g->complete[i] = complete;
    int64_t keep = n / c_.reduction;
    if (complete && n > 0) {
      keep = std::max(keep, std::min(n, std::max<int64_t>(1, c_.min_keep)));
    }
    g->keep[i] = keep;
  }
}

void IncrementalAsha::Unlink(uint32_t t) {
  View& v = views_[t];
  if (!v.present) return;
  Group& g = groups_[static_cast<size_t>(v.group)];
  for (size_t i = 0; i < rungs_.size(); ++i) {
    if (!v.at[i]) continue;
    const Entry e{v.at[i]->value, t};
    std::vector<Entry>& r = g.ranked[i];
    const size_t pos = Position(g, i, e);
    if (pos < r.size() && r[pos].trial == t) r.erase(r.begin() + pos);
  }
  --g.considered;
  v.present = false;
}

void IncrementalAsha::Link(uint32_t t) {
  View& v = views_[t];
  Group& g = groups_[static_cast<size_t>(v.group)];
  for (size_t i = 0; i < rungs_.size(); ++i) {
    if (!v.at[i]) continue;
    const Entry e{v.at[i]->value, t};
    const size_t pos = Position(g, i, e);
    g.ranked[i].insert(g.ranked[i].begin() + pos, e);
  }
  ++g.considered;
  v.present = true;
}

void IncrementalAsha::MarkAround(const Group& g,
                                 const std::vector<int64_t>& old_keep,
                                 const std::vector<bool>& old_complete) {
  // Others' ranks moved by at most one: a promotion can change only around
  // the boundary (old or new keep); below it when completeness flipped.
  for (size_t i = 0; i < rungs_.size(); ++i) {
    const int64_t lo = std::min(old_keep[i], g.keep[i]);
    const int64_t hi = std::max(old_keep[i], g.keep[i]);
    const int64_t n = static_cast<int64_t>(g.ranked[i].size());
    const int64_t end = old_complete[i] != g.complete[i] ? n - 1 : hi;
    for (int64_t p = std::max<int64_t>(0, lo - 1); p <= std::min(end, n - 1);
         ++p) {
      affected_.insert(
          views_[g.ranked[i][static_cast<size_t>(p)].trial].trial_id);
    }
  }
}

void IncrementalAsha::Change(uint32_t t, int group,
                             const std::vector<Report>* reports) {
  affected_.insert(views_[t].trial_id);
  const int old_group = views_[t].present ? views_[t].group : -1;
  if (old_group >= 0 && old_group != group) {
    // Leaving a group (or the sweep): the group it left changes.
    Group& g = groups_[static_cast<size_t>(old_group)];
    const std::vector<int64_t> old_keep = g.keep;
    const std::vector<bool> old_complete = g.complete;
    Unlink(t);
    Summarise(&g);
    MarkAround(g, old_keep, old_complete);
  }
  if (group < 0) return;
  Group& g = groups_[static_cast<size_t>(group)];
  const std::vector<int64_t> old_keep = g.keep;
  const std::vector<bool> old_complete = g.complete;
  Unlink(t);
  views_[t].group = group;
  Evaluate(t, *reports);
  Link(t);
  Summarise(&g);
  MarkAround(g, old_keep, old_complete);
}

void IncrementalAsha::Evaluate(uint32_t t, const std::vector<Report>& reports) {
  // The trial's rung values from its reports, as DecideAsha computes them.
  View& v = views_[t];
  const size_t L = rungs_.size();
  v.at.assign(L, std::nullopt);
  v.progress = -1;
  v.last_value = kNoValue;
  std::vector<double> recent;
  for (const Report& r : Canonical(reports, c_.mode)) {
    v.progress = std::max(v.progress, r.step);
    v.last_value = r.value;
    recent.push_back(r.value);
    if (static_cast<int64_t>(recent.size()) > std::max<int64_t>(1, c_.smooth)) {
      recent.erase(recent.begin());
    }
    for (size_t i = 0; i < L; ++i) {
      if (!v.at[i] && r.step >= rungs_[i]) {
        double sum = 0;
        for (double x : recent) sum += x;
        v.at[i] = RungValue{r.step, sum / static_cast<double>(recent.size())};
      }
    }
  }
}

uint32_t IncrementalAsha::ViewOf(const std::string& trial_id) {
  auto [it, added] =
      index_.emplace(trial_id, static_cast<uint32_t>(views_.size()));
  if (added) {
    View v;
    v.trial_id = trial_id;
    views_.push_back(std::move(v));
  }
  return it->second;
}

int IncrementalAsha::GroupOf(const std::string& group) {
  auto [it, added] =
      group_index_.emplace(group, static_cast<int>(groups_.size()));
  if (added) {
    Group g;
    g.label = group;
    g.ranked.resize(rungs_.size());
    Summarise(&g);
    groups_.push_back(std::move(g));
  }
  return it->second;
}

void IncrementalAsha::Set(const std::string& trial_id, const std::string& group,
                          const std::vector<Report>& reports) {
  const uint32_t t = ViewOf(trial_id);
  const int g = GroupOf(group);
  Change(t, g, &reports);
}

void IncrementalAsha::Load(const std::vector<Initial>& trials) {
  std::vector<bool> touched(groups_.size(), false);
  for (const Initial& in : trials) {
    const uint32_t t = ViewOf(*in.trial_id);
    const int gi = GroupOf(*in.group);
    touched.resize(groups_.size(), false);
    touched[static_cast<size_t>(gi)] = true;
    View& v = views_[t];
    Unlink(t);
    v.group = gi;
    Evaluate(t, *in.reports);
    Group& g = groups_[static_cast<size_t>(gi)];
    for (size_t i = 0; i < rungs_.size(); ++i) {
      if (v.at[i]) g.ranked[i].push_back(Entry{v.at[i]->value, t});
    }
    ++g.considered;
    v.present = true;
  }
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    if (!touched[gi]) continue;
    Group& g = groups_[gi];
    for (std::vector<Entry>& r : g.ranked) {
      std::sort(r.begin(), r.end(),
                [&](const Entry& a, const Entry& b) { return Before(a, b); });
    }
    Summarise(&g);
  }
}

void IncrementalAsha::Remove(const std::string& trial_id) {
  auto it = index_.find(trial_id);
  if (it == index_.end()) return;
  Change(it->second, -1, nullptr);
}

bool IncrementalAsha::Has(const std::string& trial_id) const {
  auto it = index_.find(trial_id);
  return it != index_.end() && views_[it->second].present;
}

std::set<std::string> IncrementalAsha::TakeAffected() {
  std::set<std::string> out;
  out.swap(affected_);
  return out;
}

Decision IncrementalAsha::Decide(const std::string& trial_id,
                                 bool errored) const {
  const uint32_t t = index_.at(trial_id);
  const View& v = views_[t];
  const Group& g = groups_[static_cast<size_t>(v.group)];
  const size_t L = rungs_.size();
  Decision d;
  d.trial_id = v.trial_id;
  d.group = g.label;
  if (v.progress >= c_.max_steps) {
    d.action = Action::kComplete;
    d.step = v.progress;
    d.value = v.last_value;
    d.reason = absl::StrCat("reached max_steps ", c_.max_steps);
    return d;
  }
  int h = -1;
  for (size_t i = 0; i < L; ++i) {
    if (v.at[i]) h = static_cast<int>(i);
  }
  if (h < 0) {
    d.action = errored ? Action::kRetry : Action::kRun;
    d.step = std::max<int64_t>(v.progress, 0);
    d.reason = errored ? "errored before a rung: retry (an error is not a bad "
                         "metric)"
                       : absl::StrCat("below the first rung (step ",
                                      std::max<int64_t>(v.progress, 0), " < ",
                                      L > 0 ? rungs_[0] : c_.max_steps, ")");
    return d;
  }
  const size_t hr = static_cast<size_t>(h);
  const std::vector<Entry>& ranked = g.ranked[hr];
  const int64_t keep = g.keep[hr];
  const size_t pos = Position(g, hr, Entry{v.at[hr]->value, t});
  d.rung = h;
  d.step = rungs_[hr];
  d.value = v.at[hr]->value;
  if (keep > 0) d.cutoff = ranked[static_cast<size_t>(keep - 1)].value;
  const std::string where = absl::StrCat(
      "rung ", h, " (step ", d.step, "): ", Num(d.value), " ranks ", pos + 1,
      " of ", ranked.size(), d.group.empty() ? "" : " in ", d.group);
  if (static_cast<int64_t>(pos) < keep) {
    const int64_t next = hr + 1 < L ? rungs_[hr + 1] : c_.max_steps;
    d.action = errored ? Action::kRetry : Action::kPromote;
    d.reason = absl::StrCat(where, "; top ", keep, " (cutoff ", Num(d.cutoff),
                            ")", " continue to step ", next,
                            errored ? "; errored: retry" : "");
  } else {
    d.action = Action::kPrune;
    d.final = g.complete[hr];
    if (keep > 0) {
      d.reason = absl::StrCat(
          where, "; below the cutoff ", Num(d.cutoff), " of the top ", keep,
          g.complete[hr] ? " (rung complete)" : " (may be promoted later)");
    } else {
      d.reason = absl::StrCat(where, "; paused until ", c_.reduction,
                              " results reach the rung (eta) or it completes");
    }
  }
  return d;
}

}  // namespace smoe::analysis::search
