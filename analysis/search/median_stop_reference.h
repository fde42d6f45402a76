// Copyright 2026 SMoE Lab authors.
//
// File: analysis/search/median_stop_reference.h
//
// DecideMedianReference: the median stopping rule written the direct way
// (median_stop.h states the rule), quadratic in the group: the oracle that
// DecideMedian must equal decision for decision (median_stop_test.cc) and
// the baseline of the planning bench (bench/search_replay_bench.cc). Not
// linked by the coordinator (library smoe_search_reference).
//
// Thread-safety: a pure function.
#ifndef SMOE_ANALYSIS_SEARCH_MEDIAN_STOP_REFERENCE_H_
#define SMOE_ANALYSIS_SEARCH_MEDIAN_STOP_REFERENCE_H_

#include <vector>

#include "analysis/search/median_stop.h"

namespace smoe::analysis::search {

std::vector<Decision> DecideMedianReference(const MedianConfig& config,
                                            const std::vector<Trial>& trials,
                                            const std::vector<Report>& reports);

}  // namespace smoe::analysis::search

#endif  // SMOE_ANALYSIS_SEARCH_MEDIAN_STOP_REFERENCE_H_
