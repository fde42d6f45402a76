// Copyright 2026 SMoE Lab authors.
//
// File: sweeps/test_sweeps.h
//
// Test-only: sweep files and helpers shared by the sweep-file tests
// (sweeps/*_test.cc) and the scheduler tests that run the same sweeps
// (coordinator/command_scheduler_test.cc, sampled_scheduler_test.cc), so
// each is written once. Linked by tests only (header-only, gtest).
#ifndef SMOE_SWEEPS_TEST_SWEEPS_H_
#define SMOE_SWEEPS_TEST_SWEEPS_H_

#include <string>

#include "gtest/gtest.h"
#include "sweeps/sweep_spec.h"

namespace smoe::sweeps::test_sweeps {

// A `kind: command` sweep: 2 lr x 2 opt x 2 seeds of a toy program with one
// parameter of each type.
inline constexpr char kToy[] = R"(
name: toy
kind: command
command:
  program: /opt/toy/train_toy.py
  args: [--workdir, "{workdir}", "--params={params}", "{trial}", "-v"]
params:
  steps: {type: int, default: 20, min: 1, max: 100000, doc: "training steps"}
  lr: {type: number, default: 0.1, min: 0, max: 1}
  opt: {type: string, default: sgd, choices: [sgd, adam]}
  bias: {type: bool, default: true}
  data: {type: string, doc: "dataset name"}
  scale: {type: number}
grid:
  lr: [0.01, 0.1]
  opt: [sgd, adam]
fixed: {data: tiny, scale: 2}
seeds: [0, 1]
retries: 1
)";

// M x top_k x 8 sampled configurations x 2 seeds.
inline constexpr char kSampled[] = R"(
name: tuned
kind: sraven
grid:
  M: [1, 2]
  top_k: [1, 2]
sample:
  lr: {loguniform: [1e-4, 1e-2]}
  weight_decay: {uniform: [0, 0.2]}
  warmup: {int: [50, 500]}
  width: {choice: [0.25, 0.5]}
samples: 8
sample_seed: 7
fixed: {steps: 1000, num_experts: 8}
seeds: [0, 1]
)";

// `text` with its first `from` replaced by `to` (a failed expectation when
// `from` is not there).
inline std::string WithReplaced(std::string text, const std::string& from,
                                const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// The parsed sweep (a failed expectation and an empty spec on an error).
inline SweepSpec Parse(const std::string& text) {
  auto spec = ParseSweepYaml(text);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : SweepSpec{};
}

}  // namespace smoe::sweeps::test_sweeps

#endif  // SMOE_SWEEPS_TEST_SWEEPS_H_
