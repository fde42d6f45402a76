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

std::string LineKey(int group, const std::string& rest, int64_t axis) {
  return absl::StrCat(group, "\x1f", rest, "\x1f", axis);
}

}  // namespace

bool IncrementalAsha::Supports(const AshaConfig&) { return true; }

IncrementalAsha::IncrementalAsha(const AshaConfig& c)
    : c_(c), rungs_(AshaRungs(c)) {}

bool IncrementalAsha::Before(const Entry& a, const Entry& b) const {
  if (a.value != b.value) return Better(c_.mode, a.value, b.value);
  return units_[a.unit].key < units_[b.unit].key;
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

bool IncrementalAsha::Neighbours(uint32_t a, uint32_t b) const {
  const Unit& x = units_[a];
  const Unit& y = units_[b];
  return x.has_axis && y.has_axis && x.rest == y.rest &&
         (x.axis - y.axis == 1 || y.axis - x.axis == 1);
}

std::vector<uint32_t> IncrementalAsha::NeighbourUnits(uint32_t u) const {
  std::vector<uint32_t> out;
  const Unit& x = units_[u];
  if (!x.has_axis) return out;
  for (int64_t d : {-1, 1}) {
    auto it = line_index_.find(LineKey(x.group, x.rest, x.axis + d));
    if (it != line_index_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
    }
  }
  return out;
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
      // Every considered unit of the group has a value here.
      complete = n == g->considered;
    } else if (complete) {
      // Every unit promoted from the rung below has a value here: its top
      // keep, and with keep_neighbors the best one's neighbours there.
      const std::vector<Entry>& below = g->ranked[i - 1];
      for (int64_t k = 0; complete && k < g->keep[i - 1]; ++k) {
        complete = units_[below[static_cast<size_t>(k)].unit].at[i].has_value();
      }
      if (complete && c_.keep_neighbors && g->keep[i - 1] > 0) {
        for (uint32_t nb : NeighbourUnits(below.front().unit)) {
          const Unit& n_unit = units_[nb];
          if (n_unit.linked && n_unit.at[i - 1].has_value() &&
              !n_unit.at[i].has_value()) {
            complete = false;
          }
        }
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

IncrementalAsha::Snapshot IncrementalAsha::Snap(const Group& g) const {
  Snapshot s;
  s.keep = g.keep;
  s.complete = g.complete;
  for (const std::vector<Entry>& r : g.ranked) {
    s.best.push_back(r.empty() ? -1 : static_cast<int64_t>(r.front().unit));
  }
  return s;
}

void IncrementalAsha::UnlinkUnit(uint32_t u) {
  Unit& x = units_[u];
  if (!x.linked) return;
  Group& g = groups_[static_cast<size_t>(x.group)];
  for (size_t i = 0; i < rungs_.size(); ++i) {
    if (!x.at[i]) continue;
    const Entry e{x.at[i]->value, u};
    std::vector<Entry>& r = g.ranked[i];
    const size_t pos = Position(g, i, e);
    if (pos < r.size() && r[pos].unit == u) r.erase(r.begin() + pos);
  }
  --g.considered;
  x.linked = false;
}

std::vector<std::optional<IncrementalAsha::RungValue>> IncrementalAsha::MeanAt(
    uint32_t u) const {
  const Unit& x = units_[u];
  const size_t L = rungs_.size();
  std::vector<std::optional<RungValue>> at(L);
  if (x.members.empty()) return at;
  // The mean over the members, summed in trial-id order as DecideAsha does.
  for (size_t i = 0; i < L; ++i) {
    if (x.reached[i] != static_cast<int64_t>(x.members.size())) continue;
    double sum = 0;
    int64_t step = 0;
    bool all = true;
    for (uint32_t m : x.members) {
      if (!views_[m].at[i]) {
        all = false;
        break;
      }
      sum += views_[m].at[i]->value;
      step = std::max(step, views_[m].at[i]->step);
    }
    if (all) {
      at[i] = RungValue{step, sum / static_cast<double>(x.members.size())};
    }
  }
  return at;
}

void IncrementalAsha::LinkUnit(uint32_t u) {
  Unit& x = units_[u];
  const size_t L = rungs_.size();
  x.at = MeanAt(u);
  if (x.members.empty()) return;
  Group& g = groups_[static_cast<size_t>(x.group)];
  for (size_t i = 0; i < L; ++i) {
    if (!x.at[i]) continue;
    const Entry e{x.at[i]->value, u};
    const size_t pos = Position(g, i, e);
    g.ranked[i].insert(g.ranked[i].begin() + pos, e);
  }
  ++g.considered;
  x.linked = true;
}

void IncrementalAsha::Count(uint32_t u, uint32_t t, int sign) {
  for (size_t i = 0; i < rungs_.size(); ++i) {
    if (views_[t].at[i]) units_[u].reached[i] += sign;
  }
}

void IncrementalAsha::MarkUnit(uint32_t u) {
  for (uint32_t m : units_[u].members) affected_.insert(views_[m].trial_id);
}

void IncrementalAsha::MarkAround(const Group& g, const Snapshot& old) {
  // Others' ranks moved by at most one: a promotion can change only around
  // the boundary (old or new keep); below it when completeness flipped.
  for (size_t i = 0; i < rungs_.size(); ++i) {
    const int64_t lo = std::min(old.keep[i], g.keep[i]);
    const int64_t hi = std::max(old.keep[i], g.keep[i]);
    const int64_t n = static_cast<int64_t>(g.ranked[i].size());
    const int64_t end = old.complete[i] != g.complete[i] ? n - 1 : hi;
    for (int64_t p = std::max<int64_t>(0, lo - 1); p <= std::min(end, n - 1);
         ++p) {
      MarkUnit(g.ranked[i][static_cast<size_t>(p)].unit);
    }
    if (!c_.keep_neighbors) continue;
    // The best unit's neighbours are promoted too (while keep > 0).
    const int64_t best = g.ranked[i].empty()
                             ? -1
                             : static_cast<int64_t>(g.ranked[i].front().unit);
    if (best != old.best[i] || (old.keep[i] > 0) != (g.keep[i] > 0)) {
      for (int64_t b : {old.best[i], best}) {
        if (b < 0) continue;
        MarkUnit(static_cast<uint32_t>(b));
        for (uint32_t nb : NeighbourUnits(static_cast<uint32_t>(b))) {
          MarkUnit(nb);
        }
      }
    }
  }
}

void IncrementalAsha::Change(uint32_t t, int group,
                             const std::vector<Report>* reports,
                             const Trial* facts) {
  affected_.insert(views_[t].trial_id);
  const int64_t old_unit =
      views_[t].present ? static_cast<int64_t>(views_[t].unit) : -1;
  const int64_t new_unit =
      group < 0
          ? -1
          : static_cast<int64_t>(UnitOf(group, views_[t].trial_id, facts));
  View& w = views_[t];
  if (old_unit >= 0 && old_unit != new_unit) {
    // Leaving a unit (or the sweep): its group changes.
    const uint32_t u = static_cast<uint32_t>(old_unit);
    Group& g = groups_[static_cast<size_t>(units_[u].group)];
    const Snapshot old = Snap(g);
    MarkUnit(u);
    UnlinkUnit(u);
    Count(u, t, -1);
    std::vector<uint32_t>& ms = units_[u].members;
    ms.erase(std::remove(ms.begin(), ms.end(), t), ms.end());
    w.present = false;
    LinkUnit(u);
    Summarise(&g);
    MarkAround(g, old);
    MarkUnit(u);
  }
  if (new_unit < 0) return;
  const uint32_t u = static_cast<uint32_t>(new_unit);
  Group& g = groups_[static_cast<size_t>(units_[u].group)];
  const bool member = w.present;
  if (member) {
    // Staying in its unit: when the unit's rung values do not change (a
    // report between rungs; a seed of a configuration whose other seeds
    // have not reached the rung), no ranking changes and only this trial's
    // decision can.
    Count(u, t, -1);
    Evaluate(t, *reports);
    Count(u, t, 1);
    const std::vector<std::optional<RungValue>> at = MeanAt(u);
    bool same = at.size() == units_[u].at.size();
    for (size_t i = 0; same && i < at.size(); ++i) {
      const auto& a = at[i];
      const auto& b = units_[u].at[i];
      same = a.has_value() == b.has_value() &&
             (!a || (a->step == b->step && a->value == b->value));
    }
    if (same) return;
  }
  const Snapshot old = Snap(g);
  UnlinkUnit(u);  // by its old values
  if (!member) {
    Evaluate(t, *reports);
    std::vector<uint32_t>& ms = units_[u].members;
    ms.insert(std::upper_bound(ms.begin(), ms.end(), t,
                               [&](uint32_t a, uint32_t b) {
                                 return views_[a].trial_id < views_[b].trial_id;
                               }),
              t);
    Count(u, t, 1);
    w.present = true;
    w.unit = u;
  }
  LinkUnit(u);
  Summarise(&g);
  MarkAround(g, old);
  MarkUnit(u);
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

uint32_t IncrementalAsha::UnitOf(int group, const std::string& trial_id,
                                 const Trial* facts) {
  const bool by_config =
      c_.aggregate_seeds && facts != nullptr && !facts->config.empty();
  const std::string& key = by_config ? facts->config : trial_id;
  auto [it, added] = unit_index_.emplace(absl::StrCat(group, "\x1f", key),
                                         static_cast<uint32_t>(units_.size()));
  if (added) {
    Unit u;
    u.key = key;
    u.group = group;
    u.at.assign(rungs_.size(), std::nullopt);
    u.reached.assign(rungs_.size(), 0);
    if (facts != nullptr) {
      u.has_axis = facts->has_axis;
      u.axis = facts->axis;
      u.rest = facts->rest;
    }
    units_.push_back(std::move(u));
    if (c_.keep_neighbors && units_.back().has_axis) {
      line_index_[LineKey(group, units_.back().rest, units_.back().axis)]
          .push_back(it->second);
    }
  }
  return it->second;
}

void IncrementalAsha::Set(const std::string& trial_id, const std::string& group,
                          const std::vector<Report>& reports,
                          const Trial* facts) {
  const uint32_t t = ViewOf(trial_id);
  const int g = GroupOf(group);
  Change(t, g, &reports, facts);
}

void IncrementalAsha::Load(const std::vector<Initial>& trials) {
  std::vector<bool> touched(groups_.size(), false);
  std::vector<uint32_t> loaded_units;
  for (const Initial& in : trials) {
    const uint32_t t = ViewOf(*in.trial_id);
    const int gi = GroupOf(*in.group);
    touched.resize(groups_.size(), false);
    touched[static_cast<size_t>(gi)] = true;
    const uint32_t u = UnitOf(gi, *in.trial_id, in.facts);
    View& v = views_[t];
    Evaluate(t, *in.reports);
    v.present = true;
    v.unit = u;
    units_[u].members.push_back(t);
    Count(u, t, 1);
    loaded_units.push_back(u);
  }
  std::sort(loaded_units.begin(), loaded_units.end());
  loaded_units.erase(std::unique(loaded_units.begin(), loaded_units.end()),
                     loaded_units.end());
  const size_t L = rungs_.size();
  for (uint32_t u : loaded_units) {
    Unit& x = units_[u];
    std::sort(x.members.begin(), x.members.end(), [&](uint32_t a, uint32_t b) {
      return views_[a].trial_id < views_[b].trial_id;
    });
    // LinkUnit without the sorted insertion: push, sort per rung below.
    x.at = MeanAt(u);
    Group& g = groups_[static_cast<size_t>(x.group)];
    for (size_t i = 0; i < L; ++i) {
      if (x.at[i]) g.ranked[i].push_back(Entry{x.at[i]->value, u});
    }
    ++g.considered;
    x.linked = true;
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
  Change(it->second, -1, nullptr, nullptr);
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
  const uint32_t ui = v.unit;
  const Unit& u = units_[ui];
  const Group& g = groups_[static_cast<size_t>(u.group)];
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
  auto highest = [&](const std::vector<std::optional<RungValue>>& at) {
    int h = -1;
    for (size_t i = 0; i < L; ++i) {
      if (at[i]) h = static_cast<int>(i);
    }
    return h;
  };
  const int ht = highest(v.at);  // this trial's highest rung
  const int h = highest(u.at);   // its unit's (<= ht)
  if (ht < 0) {
    d.action = errored ? Action::kRetry : Action::kRun;
    d.step = std::max<int64_t>(v.progress, 0);
    d.reason = errored ? "errored before a rung: retry (an error is not a bad "
                         "metric)"
                       : absl::StrCat("below the first rung (step ",
                                      std::max<int64_t>(v.progress, 0), " < ",
                                      L > 0 ? rungs_[0] : c_.max_steps, ")");
    return d;
  }
  const std::string seeds_note =
      u.members.size() > 1
          ? absl::StrCat(" (mean of ", u.members.size(), " seeds)")
          : "";
  // A seed ahead of its configuration's others waits at its rung.
  auto wait = [&](const std::string& before) {
    const int64_t at_rung = u.reached[static_cast<size_t>(ht)];
    d.action = Action::kPrune;
    d.final = false;
    d.rung = ht;
    d.step = rungs_[static_cast<size_t>(ht)];
    d.value = v.at[static_cast<size_t>(ht)]->value;
    d.reason = absl::StrCat(before, "rung ", ht, " (step ", d.step,
                            "): waiting for the other seeds of its "
                            "configuration (",
                            at_rung, " of ", u.members.size(), " at the rung)");
    return d;
  };
  if (h < 0) return wait("");
  const size_t hr = static_cast<size_t>(h);
  const std::vector<Entry>& ranked = g.ranked[hr];
  const int64_t keep = g.keep[hr];
  const size_t pos = Position(g, hr, Entry{u.at[hr]->value, ui});
  d.rung = h;
  d.step = rungs_[hr];
  d.value = u.at[hr]->value;
  if (keep > 0) d.cutoff = ranked[static_cast<size_t>(keep - 1)].value;
  const std::string where = absl::StrCat(
      "rung ", h, " (step ", d.step, "): ", Num(d.value), seeds_note, " ranks ",
      pos + 1, " of ", ranked.size(), d.group.empty() ? "" : " in ", d.group);
  const bool top = static_cast<int64_t>(pos) < keep;
  const bool neighbour = !top && c_.keep_neighbors && keep > 0 &&
                         Neighbours(ui, ranked.front().unit);
  if (top || neighbour) {
    if (ht > h) return wait(absl::StrCat(where, "; promoted; "));
    const int64_t next = hr + 1 < L ? rungs_[hr + 1] : c_.max_steps;
    const std::string why =
        top ? absl::StrCat("; top ", keep, " (cutoff ", Num(d.cutoff), ")")
            : absl::StrCat("; below the cutoff ", Num(d.cutoff), " of the top ",
                           keep, " but a neighbour (", u.axis,
                           ") of the best (", units_[ranked.front().unit].axis,
                           ")");
    d.action = errored ? Action::kRetry : Action::kPromote;
    d.reason = absl::StrCat(where, why, " continue to step ", next,
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
