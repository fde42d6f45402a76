// Copyright 2026 SMoE Lab authors.
//
// File: cli/search_show.h
//
// What `smoe sweep show` prints about an adaptive sweep
// (docs/adaptive-sweeps.md): the strategy, trial-steps used against the full
// grid's, and the last entries of the decision log with their reasons.
#ifndef SMOE_CLI_SEARCH_SHOW_H_
#define SMOE_CLI_SEARCH_SHOW_H_

#include <map>
#include <ostream>
#include <set>
#include <string>

#include "proto/smoe.pb.h"

namespace smoe::cli {

// Decisions `smoe sweep show` asks for (the newest ones).
inline constexpr int kShownDecisions = 20;

// trial id -> the parameters that tell it apart from the sweep's other
// trials ("top_k=4 seed 1": the axes whose values differ among the trials,
// and the seed when there is more than one).
using TrialLabels = std::map<std::string, std::string>;
// The sweep's axes: grid axes, then sampled axes (`sample:`).
std::vector<std::string> SpecAxisNames(const smoe::v1::SweepSpec& spec);
TrialLabels LabelTrials(const smoe::v1::GetSweepResponse& resp);

// One decision as a line: "#12 top_k=4 seed 1 (1f2e...) prune (final):
// <reason>" (the reason names the rung, step, value and cutoff); a trial
// without a label keeps its id.
std::string FormatDecision(const smoe::v1::Decision& d,
                           const TrialLabels& labels = {});

// The last "prune" decision of each pruned trial among the response's
// decisions (its rung, step and the rung value it was judged by).
std::map<std::string, smoe::v1::Decision> LastPrunes(
    const smoe::v1::GetSweepResponse& resp);

// Prints the search block of a GetSweep answer; nothing for a grid sweep.
void PrintSearchSummary(const smoe::v1::GetSweepResponse& resp,
                        std::ostream& out);

}  // namespace smoe::cli

#endif  // SMOE_CLI_SEARCH_SHOW_H_
