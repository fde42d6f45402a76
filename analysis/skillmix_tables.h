// Copyright 2026 SMoE Lab authors.
//
// File: analysis/skillmix_tables.h
//
// Skill-Mix tables: EPT x k_skills tables of every result metric, mean +- s.e.
// over seeds (a trial's own `<metric>_se` is used when there is one seed), and
// the best EPT per k_skills with its runner-up. The text form is `smoe
// analyze`'s (cli/analyze_cmd.h); the JSON form is the dashboard's.
//
// Thread safety: every function is pure.
#ifndef SMOE_ANALYSIS_SKILLMIX_TABLES_H_
#define SMOE_ANALYSIS_SKILLMIX_TABLES_H_

#include <cstddef>
#include <string>
#include <vector>

#include "analysis/stats.h"
#include "nlohmann/json.hpp"

namespace smoe::analysis {

struct SkillMixTable {
  std::string metric;
  std::vector<GroupKey> rows;  // ept values
  std::vector<GroupKey> cols;  // k_skills values
  // cells[r][c]; n = 0 when empty.
  std::vector<std::vector<CellStats>> cells;
};

// One table per result metric present (metrics ending in "_se" are used as
// the s.e. of their base metric, not tabled). Rows = `row_param` (default
// "ept"), columns = `col_param` (default "k_skills").
std::vector<SkillMixTable> SkillMixTables(
    const std::vector<TrialPoint>& trials, const std::string& row_param = "ept",
    const std::string& col_param = "k_skills");

// The best row (EPT) of one column (k_skills) of a Skill-Mix table: argmax
// of the cell means (ties -> the smaller row, rows being sorted), and the
// runner-up, so a reader sees whether the gap is within the s.e.
struct SkillMixBest {
  size_t col = 0;
  int best = -1;       // row index; -1 when the column has no cell
  int runner_up = -1;  // row index; -1 when the column has one cell
};
std::vector<SkillMixBest> BestRowPerColumn(const SkillMixTable& table);

nlohmann::json ToJson(const SkillMixTable& t);

}  // namespace smoe::analysis

#endif  // SMOE_ANALYSIS_SKILLMIX_TABLES_H_
