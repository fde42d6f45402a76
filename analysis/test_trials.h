// Copyright 2026 SMoE Lab authors.
//
// File: analysis/test_trials.h
//
// Test-only: SRAVEN-like trial points for the analysis tests.
#ifndef SMOE_ANALYSIS_TEST_TRIALS_H_
#define SMOE_ANALYSIS_TEST_TRIALS_H_

#include <cmath>
#include <string>
#include <vector>

#include "analysis/stats.h"

namespace smoe::analysis::test_trials {

inline TrialPoint Trial(
    int m, int k, const std::string& att, int64_t seed, double ood,
    store::TrialState state = store::TrialState::kSucceeded) {
  TrialPoint t;
  t.trial_id = "s/" + std::to_string(m) + att + std::to_string(k) + "-" +
               std::to_string(seed);
  t.params = {{"M", m},           {"top_k", k},   {"attention", att},
              {"num_experts", 8}, {"steps", 100}, {"batch_size", 10}};
  t.seed = seed;
  t.state = state;
  t.results = {{"ood_acc", ood}, {"test_acc", ood + 0.05}};
  return t;
}

// A Figure-1-like grid: accuracy peaks at k = 2M, seeds add +-0.01 noise.
inline std::vector<TrialPoint> Grid(int seeds) {
  std::vector<TrialPoint> out;
  for (const char* att : {"softmax", "hyla"}) {
    for (int m : {1, 2}) {
      for (int k : {1, 2, 4, 8}) {
        for (int s = 0; s < seeds; ++s) {
          const double base =
              0.9 - 0.05 * std::fabs(std::log2(k) - std::log2(2.0 * m));
          out.push_back(Trial(m, k, att, s, base + 0.01 * ((s % 3) - 1)));
        }
      }
    }
  }
  return out;
}

}  // namespace smoe::analysis::test_trials

#endif  // SMOE_ANALYSIS_TEST_TRIALS_H_
