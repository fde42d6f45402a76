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

// Which parameters tell a set of trials apart, learned from all of them in
// one pass, so that only the trials shown need a label (the dashboard shows
// at most a few hundred decisions of a sweep of 10^5 trials; issue 35).
// Add() every trial, then Label() any of them: the same labels as
// TrialLabels. Add() compares each value with the first one seen for its
// parameter (by its text, as TrialLabels' sets of texts do) and counts
// where each parameter is present: O(params) per trial, no allocation for
// a value equal to the first.
class TrialLabeler {
 public:
  explicit TrialLabeler(std::vector<std::string> axis_order = {});
  // `params`: the trial's resolved parameters (anything but an object has
  // none).
  void Add(const nlohmann::json& params, int64_t seed);
  // "name=value" for each parameter whose values differ among the trials
  // added (in `axis_order` first, then the others by name), and "seed S"
  // when they have more than one seed (or nothing else tells them apart).
  std::string Label(const nlohmann::json& params, int64_t seed);

 private:
  struct Param {
    nlohmann::json first;
    std::string first_text;
    bool multi = false;  // a value whose text differs from the first's
    size_t present = 0;  // trials that have it
  };
  void Finish();

  std::vector<std::string> axis_order_;
  std::map<std::string, Param> params_;
  // The previous trial's parameters in order, to skip the map lookup when
  // the next trial has the same names (as a sweep's trials do).
  std::vector<std::pair<std::string, Param*>> last_;
  size_t trials_ = 0;
  bool have_seed_ = false;
  int64_t first_seed_ = 0;
  bool multi_seed_ = false;
  bool finished_ = false;
  std::vector<std::string> varying_;
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
