// Copyright 2026 SMoE Lab authors.
//
// File: cli/analyze_cmd.h
//
// `smoe analyze SWEEP`: fetches the sweep's trials over gRPC and prints the
// optimal k per difficulty (argmax of the mean over seeds, bootstrap CI of the
// argmax, smallest k within one s.e.) and the fit of the paper's total error
// E(k, N) = a*N^2/k + b*sqrt(N*k/m*log(T/k)) (analysis/ does the work; the text
// tables are formatted here). For a `kind: skillmix` sweep it prints the EPT x
// k_skills tables (mean +- s.e. over combinations) of every result metric (or
// --metric) and the best EPT per k_skills with the runner-up; --x / --series
// then name the rows / columns (default ept / k_skills).
#ifndef SMOE_CLI_ANALYZE_CMD_H_
#define SMOE_CLI_ANALYZE_CMD_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "analysis/skillmix_tables.h"
#include "analysis/stats.h"
#include "cli/client.h"
#include "nlohmann/json.hpp"
#include "proto/smoe.pb.h"

namespace smoe::cli {

struct AnalyzeFlags {
  // Empty: the kind's default (sraven: ood_acc, top_k, M; skillmix: every
  // metric, ept, k_skills).
  std::string metric;
  std::string x;
  std::string series;
  std::string facet;             // empty: attention for sraven, none otherwise
  std::string format = "table";  // table | json
  int bootstrap = 1000;
  uint64_t seed = 0;
};

// Human-readable table of analysis::AnalyzeSweep's result.
std::string FormatAnalysisTable(const nlohmann::json& analysis);

// Human-readable Skill-Mix tables of a skillmix sweep: per metric (all, or
// only `metric` when not empty) the rows x cols grid of "mean +- s.e." and the
// best row per column with its runner-up.
std::string FormatSkillMixTables(
    const std::vector<analysis::SkillMixTable>& tables,
    const std::string& row_param, const std::string& col_param,
    const std::string& metric = "");

// The parameters a sweep's trials actually vary (two or more distinct
// values), sorted: what --x, --series and --facet may name.
std::vector<std::string> SweptParams(
    const std::vector<analysis::TrialPoint>& trials);

// OK when every axis the user named (non-empty --x, --series, --facet) is a
// swept parameter; else InvalidArgument naming the flag, the value, the
// swept parameters and a near miss ("did you mean 'top_k'?"). Nothing is
// checked before the sweep has trials.
absl::Status CheckAnalysisAxes(const std::vector<analysis::TrialPoint>& trials,
                               const AnalyzeFlags& flags,
                               absl::string_view sweep_id);

// Trials an adaptive search pruned (issue 31 item 5): they have no final
// results, so the analysis leaves them out; the note says so, and which
// values of the x axis lost every trial that way.
struct PrunedSummary {
  int trials = 0;
  std::vector<std::string> all_pruned;  // x values whose trials were all pruned
};
PrunedSummary SummarizePruned(const smoe::v1::GetSweepResponse& resp,
                              const std::string& x);
// "" when nothing was pruned; else one "  note: ..." line.
std::string FormatPrunedNote(const PrunedSummary& p, const std::string& x);

// Returns a process exit code (cli/client.h).
int AnalyzeCmd(CoordinatorClient& client, const std::string& sweep_id,
               const AnalyzeFlags& flags, std::ostream& out);

}  // namespace smoe::cli

#endif  // SMOE_CLI_ANALYZE_CMD_H_
