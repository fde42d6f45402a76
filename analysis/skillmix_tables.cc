// Copyright 2026 SMoE Lab authors.
#include "analysis/skillmix_tables.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "analysis/cells.h"

namespace smoe::analysis {

using internal::KeyOf;
using internal::NumOrNull;
using internal::ParamOf;
using nlohmann::json;

std::vector<SkillMixTable> SkillMixTables(const std::vector<TrialPoint>& trials,
                                          const std::string& row_param,
                                          const std::string& col_param) {
  const json& defaults = KindDefaults("skillmix");
  std::set<std::string> metrics;
  std::set<GroupKey> rows, cols;
  // metric -> (row, col) -> values ; and the per-trial _se when n == 1
  std::map<std::string, std::map<std::pair<GroupKey, GroupKey>,
                                 std::vector<std::pair<double, double>>>>
      acc;
  for (const TrialPoint& t : trials) {
    if (t.state != store::TrialState::kSucceeded) continue;
    const GroupKey r = KeyOf(ParamOf(t, row_param, defaults));
    const GroupKey c = KeyOf(ParamOf(t, col_param, defaults));
    bool any = false;
    for (const auto& [name, v] : t.results) {
      if (absl::EndsWith(name, "_se") || !std::isfinite(v)) continue;
      auto se = t.results.find(name + "_se");
      acc[name][{r, c}].emplace_back(
          v, se == t.results.end() ? std::numeric_limits<double>::quiet_NaN()
                                   : se->second);
      metrics.insert(name);
      any = true;
    }
    if (any) {
      rows.insert(r);
      cols.insert(c);
    }
  }
  std::vector<SkillMixTable> out;
  for (const std::string& m : metrics) {
    SkillMixTable t;
    t.metric = m;
    t.rows.assign(rows.begin(), rows.end());
    t.cols.assign(cols.begin(), cols.end());
    t.cells.assign(t.rows.size(), std::vector<CellStats>(t.cols.size()));
    for (size_t i = 0; i < t.rows.size(); ++i) {
      for (size_t j = 0; j < t.cols.size(); ++j) {
        auto it = acc[m].find({t.rows[i], t.cols[j]});
        if (it == acc[m].end()) continue;
        std::vector<double> vals;
        for (const auto& [v, se] : it->second) vals.push_back(v);
        CellStats s = Summarize(vals);
        // One trial: its own s.e. over combinations; NaN (JSON null:
        // unknown, not 0) when it reported none.
        if (s.n == 1) s.sem = it->second[0].second;
        s.ci_lo = s.mean - s.sem;
        s.ci_hi = s.mean + s.sem;
        t.cells[i][j] = s;
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<SkillMixBest> BestRowPerColumn(const SkillMixTable& table) {
  std::vector<SkillMixBest> out;
  for (size_t c = 0; c < table.cols.size(); ++c) {
    SkillMixBest b;
    b.col = c;
    for (size_t r = 0; r < table.rows.size(); ++r) {
      const CellStats& s = table.cells[r][c];
      if (s.n == 0 || !std::isfinite(s.mean)) continue;
      const int ri = static_cast<int>(r);
      if (b.best < 0 || s.mean > table.cells[b.best][c].mean) {
        b.runner_up = b.best;
        b.best = ri;
      } else if (b.runner_up < 0 || s.mean > table.cells[b.runner_up][c].mean) {
        b.runner_up = ri;
      }
    }
    out.push_back(b);
  }
  return out;
}

json ToJson(const SkillMixTable& t) {
  json rows = json::array(), cols = json::array(), cells = json::array();
  for (const GroupKey& r : t.rows) rows.push_back(ToJson(r));
  for (const GroupKey& c : t.cols) cols.push_back(ToJson(c));
  for (const auto& row : t.cells) {
    json jr = json::array();
    for (const CellStats& s : row) {
      if (s.n == 0) {
        jr.push_back(nullptr);
      } else {
        jr.push_back({{"n", s.n},
                      {"mean", NumOrNull(s.mean)},
                      {"sem", NumOrNull(s.sem)}});
      }
    }
    cells.push_back(std::move(jr));
  }
  json best = json::array();
  for (const SkillMixBest& b : BestRowPerColumn(t)) {
    json jb = {{"col", ToJson(t.cols[b.col])},
               {"best", nullptr},
               {"runner_up", nullptr}};
    if (b.best >= 0) jb["best"] = ToJson(t.rows[b.best]);
    if (b.runner_up >= 0) jb["runner_up"] = ToJson(t.rows[b.runner_up]);
    best.push_back(std::move(jb));
  }
  return {{"metric", t.metric},
          {"rows", rows},
          {"cols", cols},
          {"cells", cells},
          {"best", best}};
}

}  // namespace smoe::analysis
