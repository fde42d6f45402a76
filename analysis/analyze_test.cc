// Copyright 2026 SMoE Lab authors.
//
// Unit tests of the analysis JSON.
#include "analysis/analyze.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>

#include "analysis/test_trials.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::analysis {
namespace {

using nlohmann::json;
using test_trials::Grid;

// The text form of this JSON is tested in cli/analyze_cmd_test.cc.
TEST(AnalysisTest, AnalyzeSweepJson) {
  const json a = AnalyzeSweep(Grid(3), AggregateOptions{});
  EXPECT_EQ(a["optimal"].size(), 4u);
  EXPECT_EQ(a["fits"].size(), 2u);
  EXPECT_EQ(a["curves"]["facets"].size(), 2u);
  const json empty = AnalyzeSweep({}, AggregateOptions{});
  EXPECT_TRUE(empty["optimal"].empty());
}

}  // namespace
}  // namespace smoe::analysis
