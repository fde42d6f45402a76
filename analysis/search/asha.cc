// Copyright 2026 SMoE Lab authors.
#include "analysis/search/asha.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace smoe::analysis::search {
namespace {

struct RungValue {
  int64_t step = 0;
  double value = 0;
};

struct TrialView {
  const Trial* trial = nullptr;
  std::vector<std::optional<RungValue>> at;  // per rung
  int64_t progress = -1;                     // highest reported step
  double last_value = kNoValue;
  std::vector<double> recent;  // the last `smooth` values, oldest first
};

// What is ranked, promoted and pruned: one trial, or (aggregate_seeds) the
// seeds of one configuration.
struct Unit {
  std::string key;  // ties are broken by it
  std::string group;
  std::vector<size_t> members;               // trial views, in trial-id order
  std::vector<std::optional<RungValue>> at;  // mean over the members
  const Trial* first = nullptr;              // axis and rest
};

struct RungState {
  std::vector<size_t> ranked;  // units with a value here, best first
  int64_t keep = 0;
  std::set<size_t> promoted;  // the top `keep`, and the best's neighbours
  bool complete = false;
};

std::string Num(double v) { return absl::StrFormat("%.4g", v); }

}  // namespace

std::vector<int64_t> AshaRungs(const AshaConfig& c) {
  std::vector<int64_t> out;
  for (int64_t r = c.min_steps; r >= 1 && r < c.max_steps;) {
    out.push_back(r);
    if (r > c.max_steps / c.reduction) break;  // next would reach max_steps
    r *= c.reduction;
  }
  return out;
}

std::vector<Decision> DecideAsha(const AshaConfig& c,
                                 const std::vector<Trial>& trials,
                                 const std::vector<Report>& reports) {
  const std::vector<int64_t> rungs = AshaRungs(c);
  const size_t L = rungs.size();
  const std::vector<Trial> sorted = SortedUniqueTrials(trials);
  std::vector<TrialView> views(sorted.size());
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < sorted.size(); ++i) {
    views[i].trial = &sorted[i];
    views[i].at.resize(L);
    index[sorted[i].trial_id] = i;
  }
  for (const Report& r : Canonical(reports, c.mode)) {  // by trial, step
    auto it = index.find(r.trial_id);
    if (it == index.end()) continue;
    TrialView& v = views[it->second];
    v.progress = std::max(v.progress, r.step);
    v.last_value = r.value;
    v.recent.push_back(r.value);
    if (static_cast<int64_t>(v.recent.size()) >
        std::max<int64_t>(1, c.smooth)) {
      v.recent.erase(v.recent.begin());
    }
    for (size_t i = 0; i < L; ++i) {
      if (!v.at[i] && r.step >= rungs[i]) {
        double sum = 0;
        for (double x : v.recent) sum += x;
        v.at[i] = RungValue{r.step, sum / static_cast<double>(v.recent.size())};
      }
    }
  }
  // Units: one per trial, or one per configuration (its seeds).
  std::map<std::pair<std::string, std::string>, size_t> unit_index;
  std::vector<Unit> units;
  std::vector<size_t> unit_of(views.size());
  {
    std::map<std::pair<std::string, std::string>, std::vector<size_t>> by_key;
    for (size_t i = 0; i < views.size(); ++i) {
      const Trial& t = *views[i].trial;
      const std::string& key =
          c.aggregate_seeds && !t.config.empty() ? t.config : t.trial_id;
      by_key[{t.group, key}].push_back(i);
    }
    for (const auto& [key, members] : by_key) {
      Unit u;
      u.group = key.first;
      u.key = key.second;
      u.members = members;
      u.first = views[members.front()].trial;
      u.at.resize(L);
      for (size_t i = 0; i < L; ++i) {
        double sum = 0;
        int64_t step = 0;
        bool all = true;
        for (size_t m : members) {
          if (!views[m].at[i]) {
            all = false;
            break;
          }
          sum += views[m].at[i]->value;
          step = std::max(step, views[m].at[i]->step);
        }
        if (all) {
          u.at[i] = RungValue{step, sum / static_cast<double>(members.size())};
        }
      }
      for (size_t m : members) unit_of[m] = units.size();
      units.push_back(std::move(u));
    }
  }
  auto neighbours = [&](size_t a, size_t b) {
    const Trial& x = *units[a].first;
    const Trial& y = *units[b].first;
    return x.has_axis && y.has_axis && x.rest == y.rest &&
           (x.axis - y.axis == 1 || y.axis - x.axis == 1);
  };
  // Rung states per group, bottom up.
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t u = 0; u < units.size(); ++u) {
    groups[units[u].group].push_back(u);
  }
  std::map<std::string, std::vector<RungState>> state;
  for (const auto& [group, members] : groups) {
    std::vector<RungState>& rs = state[group];
    rs.resize(L);
    std::vector<size_t> expected = members;  // who can reach this rung
    bool complete = true;
    for (size_t i = 0; i < L; ++i) {
      RungState& s = rs[i];
      for (size_t m : members) {
        if (units[m].at[i]) s.ranked.push_back(m);
      }
      std::sort(s.ranked.begin(), s.ranked.end(), [&](size_t a, size_t b) {
        const double va = units[a].at[i]->value;
        const double vb = units[b].at[i]->value;
        if (va != vb) return Better(c.mode, va, vb);
        return units[a].key < units[b].key;
      });
      for (size_t e : expected) complete &= units[e].at[i].has_value();
      s.complete = complete;
      const int64_t n = static_cast<int64_t>(s.ranked.size());
      s.keep = n / c.reduction;
      if (s.complete && n > 0) {
        s.keep =
            std::max(s.keep, std::min(n, std::max<int64_t>(1, c.min_keep)));
      }
      s.promoted.insert(s.ranked.begin(), s.ranked.begin() + s.keep);
      if (c.keep_neighbors && s.keep > 0) {
        for (size_t r : s.ranked) {
          if (neighbours(r, s.ranked.front())) s.promoted.insert(r);
        }
      }
      expected.assign(s.promoted.begin(), s.promoted.end());
    }
  }
  auto highest = [&](const std::vector<std::optional<RungValue>>& at) {
    int h = -1;
    for (size_t i = 0; i < L; ++i) {
      if (at[i]) h = static_cast<int>(i);
    }
    return h;
  };
  std::vector<Decision> out;
  out.reserve(views.size());
  for (size_t idx = 0; idx < views.size(); ++idx) {
    const TrialView& v = views[idx];
    const size_t ui = unit_of[idx];
    const Unit& u = units[ui];
    const std::string seeds_note =
        u.members.size() > 1
            ? absl::StrCat(" (mean of ", u.members.size(), " seeds)")
            : "";
    Decision d;
    d.trial_id = v.trial->trial_id;
    d.group = v.trial->group;
    if (v.progress >= c.max_steps) {
      d.action = Action::kComplete;
      d.step = v.progress;
      d.value = v.last_value;
      d.reason = absl::StrCat("reached max_steps ", c.max_steps);
      out.push_back(std::move(d));
      continue;
    }
    const int ht = highest(v.at);  // this trial's highest rung
    const int h = highest(u.at);   // its unit's (<= ht)
    if (ht < 0) {
      d.action = v.trial->errored ? Action::kRetry : Action::kRun;
      d.step = std::max<int64_t>(v.progress, 0);
      d.reason =
          v.trial->errored
              ? "errored before a rung: retry (an error is not a bad metric)"
              : absl::StrCat("below the first rung (step ",
                             std::max<int64_t>(v.progress, 0), " < ",
                             L > 0 ? rungs[0] : c.max_steps, ")");
      out.push_back(std::move(d));
      continue;
    }
    // A seed ahead of its configuration's others waits at its rung.
    auto wait = [&](const std::string& before) {
      int at_rung = 0;
      for (size_t m : u.members) at_rung += views[m].at[ht].has_value();
      d.action = Action::kPrune;
      d.final = false;
      d.rung = ht;
      d.step = rungs[static_cast<size_t>(ht)];
      d.value = v.at[static_cast<size_t>(ht)]->value;
      d.reason =
          absl::StrCat(before, "rung ", ht, " (step ", d.step,
                       "): waiting for the other seeds of its "
                       "configuration (",
                       at_rung, " of ", u.members.size(), " at the rung)");
      out.push_back(std::move(d));
    };
    if (h < 0) {
      wait("");
      continue;
    }
    const RungState& s = state[u.group][static_cast<size_t>(h)];
    const size_t pos = static_cast<size_t>(
        std::find(s.ranked.begin(), s.ranked.end(), ui) - s.ranked.begin());
    d.rung = h;
    d.step = rungs[static_cast<size_t>(h)];
    d.value = u.at[static_cast<size_t>(h)]->value;
    if (s.keep > 0) d.cutoff = units[s.ranked[s.keep - 1]].at[h]->value;
    const std::string where =
        absl::StrCat("rung ", h, " (step ", d.step, "): ", Num(d.value),
                     seeds_note, " ranks ", pos + 1, " of ", s.ranked.size(),
                     d.group.empty() ? "" : " in ", d.group);
    if (s.promoted.count(ui)) {
      if (ht > h) {
        wait(absl::StrCat(where, "; promoted; "));
        continue;
      }
      const int64_t next = static_cast<size_t>(h) + 1 < L
                               ? rungs[static_cast<size_t>(h) + 1]
                               : c.max_steps;
      const std::string why =
          static_cast<int64_t>(pos) < s.keep
              ? absl::StrCat("; top ", s.keep, " (cutoff ", Num(d.cutoff), ")")
              : absl::StrCat("; below the cutoff ", Num(d.cutoff),
                             " of the top ", s.keep, " but a neighbour (",
                             u.first->axis, ") of the best (",
                             units[s.ranked.front()].first->axis, ")");
      d.action = v.trial->errored ? Action::kRetry : Action::kPromote;
      d.reason = absl::StrCat(where, why, " continue to step ", next,
                              v.trial->errored ? "; errored: retry" : "");
    } else {
      d.action = Action::kPrune;
      d.final = s.complete;
      if (s.keep > 0) {
        d.reason = absl::StrCat(
            where, "; below the cutoff ", Num(d.cutoff), " of the top ", s.keep,
            s.complete ? " (rung complete)" : " (may be promoted later)");
      } else {
        d.reason =
            absl::StrCat(where, "; paused until ", c.reduction,
                         " results reach the rung (eta) or it completes");
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace smoe::analysis::search
