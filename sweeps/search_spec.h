// Copyright 2026 SMoE Lab authors.
//
// File: sweeps/search_spec.h
//
// Internal to smoe_sweeps: a sweep file's `search:` block
// (docs/adaptive-sweeps.md), parsed after the grid, fixed params, seeds and
// sampled axes, which it refers to (sweep_spec.cc, ParseDocument).
#ifndef SMOE_SWEEPS_SEARCH_SPEC_H_
#define SMOE_SWEEPS_SEARCH_SPEC_H_

#include <string>
#include <vector>

#include "sweeps/sweep_spec.h"
#include "sweeps/sweep_yaml.h"
#include "yaml-cpp/yaml.h"

namespace smoe::sweeps::internal {

// The keys a strategy takes, in the order messages (and the stored YAML)
// list them. Refine with `early_stop: asha` also takes asha's step keys.
const std::vector<std::string>& SearchKeys(const std::string& strategy,
                                           const std::string& early_stop = "");

// Sets spec->search from `node` when it has no problem; adds each problem
// (naming the field and value) otherwise. Checks that need valid trial
// params run in CheckSearchPoints.
void ParseSearch(const YAML::Node& node, SweepSpec* spec, Problems* problems);

// Refine adds points up to its bounds: the points at either bound must be
// valid trials (e.g. top_k <= num_experts). Runs when the rest is valid.
void CheckSearchPoints(const SweepSpec& spec, Problems* problems);

}  // namespace smoe::sweeps::internal

#endif  // SMOE_SWEEPS_SEARCH_SPEC_H_
