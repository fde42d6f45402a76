// Copyright 2026 SMoE Lab authors.
//
// File: cli/search_show.h
//
// What `smoe sweep show` prints about an adaptive sweep
// (docs/adaptive-sweeps.md): the strategy, trial-steps used against the full
// grid's, and the last entries of the decision log with their reasons.
#ifndef SMOE_CLI_SEARCH_SHOW_H_
#define SMOE_CLI_SEARCH_SHOW_H_

#include <ostream>
#include <string>

#include "proto/smoe.pb.h"

namespace smoe::cli {

// Decisions `smoe sweep show` asks for (the newest ones).
inline constexpr int kShownDecisions = 20;

// One decision as a line: "#12 a/1f2e... prune (final): <reason>" (the
// reason names the rung, step, value and cutoff).
std::string FormatDecision(const smoe::v1::Decision& d);

// Prints the search block of a GetSweep answer; nothing for a grid sweep.
void PrintSearchSummary(const smoe::v1::GetSweepResponse& resp,
                        std::ostream& out);

}  // namespace smoe::cli

#endif  // SMOE_CLI_SEARCH_SHOW_H_
