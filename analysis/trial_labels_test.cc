// Copyright 2026 SMoE Lab authors.
#include "analysis/trial_labels.h"

#include <algorithm>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

// TrialLabels as it was before TrialLabeler (a set of value texts per
// parameter): the oracle the labeler must agree with.
std::string OldText(const json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}
std::map<std::string, std::string> OldTrialLabels(
    const std::vector<LabelInput>& trials,
    const std::vector<std::string>& axis_order) {
  std::map<std::string, std::set<std::string>> values;
  std::set<int64_t> seeds;
  for (const LabelInput& t : trials) {
    seeds.insert(t.seed);
    if (!t.params.is_object()) continue;
    for (const auto& [k, v] : t.params.items()) values[k].insert(OldText(v));
  }
  std::vector<std::string> varying;
  auto varies = [&](const std::string& name) {
    auto it = values.find(name);
    if (it == values.end()) return false;
    if (it->second.size() > 1) return true;
    return std::any_of(trials.begin(), trials.end(), [&](const LabelInput& t) {
      return !t.params.is_object() || !t.params.contains(name);
    });
  };
  for (const std::string& a : axis_order) {
    if (varies(a) &&
        std::find(varying.begin(), varying.end(), a) == varying.end()) {
      varying.push_back(a);
    }
  }
  for (const auto& [name, vs] : values) {
    if (varies(name) &&
        std::find(varying.begin(), varying.end(), name) == varying.end()) {
      varying.push_back(name);
    }
  }
  std::map<std::string, std::string> out;
  for (const LabelInput& t : trials) {
    std::vector<std::string> parts;
    for (const std::string& a : varying) {
      if (t.params.is_object() && t.params.contains(a)) {
        parts.push_back(absl::StrCat(a, "=", OldText(t.params[a])));
      }
    }
    if (seeds.size() > 1 || parts.empty()) {
      parts.push_back(absl::StrCat("seed ", t.seed));
    }
    out[t.trial_id] = absl::StrJoin(parts, " ");
  }
  return out;
}

// Values whose texts collide across types (4, 4.0, "4", 4u), -0.0 and 0.0,
// arrays, objects, missing parameters and non-object params.
TEST(TrialLabelsTest, LabelerAgreesWithTheSetOfTexts) {
  const std::vector<json> pool = {
      json(4),           json(4.0),           json("4"),
      json(uint64_t{4}), json(-0.0),          json(0.0),
      json(0),           json(true),          json(nullptr),
      json("softmax"),   json::array({1, 2}), json{{"a", 1}},
      json(0.1),         json(0.1 + 1e-17)};
  const std::vector<std::string> names = {"M", "top_k", "attention", "lr"};
  std::mt19937 rng(7);
  for (int round = 0; round < 400; ++round) {
    const int n = 1 + static_cast<int>(rng() % 6);
    // Narrow pools make "all equal" likely.
    const size_t width = 1 + rng() % 3;
    const size_t base = rng() % (pool.size() - width + 1);
    std::vector<LabelInput> trials;
    for (int i = 0; i < n; ++i) {
      LabelInput t;
      t.trial_id = absl::StrCat("s/", i);
      t.seed = static_cast<int64_t>(rng() % 4 == 0 ? rng() % 2 : 0);
      if (rng() % 10 == 0) {
        t.params = json::parse("not json", nullptr, false);
      } else {
        t.params = json::object();
        for (const std::string& name : names) {
          if (rng() % 5 == 0) continue;
          t.params[name] = pool[base + rng() % width];
        }
      }
      trials.push_back(std::move(t));
    }
    const std::vector<std::string> axes =
        rng() % 2 ? std::vector<std::string>{"top_k", "M"}
                  : std::vector<std::string>{};
    ASSERT_EQ(TrialLabels(trials, axes), OldTrialLabels(trials, axes))
        << "round " << round;
  }
}

}  // namespace
}  // namespace smoe::analysis
