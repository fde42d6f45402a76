// Copyright 2026 SMoE Lab authors.
//
// File: analysis/trial_labels.h
//
// Short human names for a sweep's trials: the parameters that tell them
// apart ("top_k=4 seed 1"), for decision logs and tables that would
// otherwise show a trial's hash (issue 31 item 5). Used by `smoe sweep show`
// and the dashboard's search panel (GET /api/sweeps/<id>/search).
#ifndef SMOE_ANALYSIS_TRIAL_LABELS_H_
#define SMOE_ANALYSIS_TRIAL_LABELS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace smoe::analysis {

struct LabelInput {
  std::string trial_id;
  nlohmann::json params;  // the trial's resolved parameters (an object)
  int64_t seed = 0;
};

// trial id -> label: "name=value" for each parameter whose values differ
// among the trials (in `axis_order` first, then the others by name), and
// "seed S" when the trials have more than one seed (or nothing else tells
// them apart).
std::map<std::string, std::string> TrialLabels(
    const std::vector<LabelInput>& trials,
    const std::vector<std::string>& axis_order = {});

}  // namespace smoe::analysis

#endif  // SMOE_ANALYSIS_TRIAL_LABELS_H_
