// Copyright 2026 SMoE Lab authors.
#include "analysis/trial_labels.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::analysis {
namespace {

using nlohmann::json;

TEST(TrialLabelsTest, NamesWhatVariesAxesFirst) {
  const std::vector<LabelInput> trials = {
      {"s/a", json{{"M", 2}, {"top_k", 1}, {"attention", "softmax"}}, 0},
      {"s/b", json{{"M", 2}, {"top_k", 4}, {"attention", "hyla"}}, 0},
  };
  const auto labels = TrialLabels(trials, {"top_k"});
  // M is the same everywhere; one seed: not named. top_k first (axis
  // order), then the others by name.
  EXPECT_EQ(labels.at("s/a"), "top_k=1 attention=softmax");
  EXPECT_EQ(labels.at("s/b"), "top_k=4 attention=hyla");
}

TEST(TrialLabelsTest, SeedsWhenSeveralOrNothingElse) {
  const std::vector<LabelInput> two_seeds = {
      {"s/a", json{{"top_k", 1}}, 0},
      {"s/b", json{{"top_k", 1}}, 1},
  };
  EXPECT_EQ(TrialLabels(two_seeds).at("s/b"), "seed 1");
  const std::vector<LabelInput> one = {{"s/a", json{{"top_k", 1}}, 3}};
  EXPECT_EQ(TrialLabels(one).at("s/a"), "seed 3");
  // A parameter only some trials have varies.
  const std::vector<LabelInput> partial = {
      {"s/a", json{{"top_k", 1}}, 0},
      {"s/b", json{{"top_k", 1}, {"lr", 0.001}}, 0},
  };
  EXPECT_EQ(TrialLabels(partial).at("s/b"), "lr=0.001");
  EXPECT_EQ(TrialLabels(partial).at("s/a"), "seed 0");
}

}  // namespace
}  // namespace smoe::analysis
