// Copyright 2026 SMoE Lab authors.
//
// A short SRAVEN training run with ep_size=2 (two processes over Gloo) must
// reproduce the single-process run's per-step training losses and final
// accuracies (label ep).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "nlohmann/json.hpp"
#include "tests/ep/launcher.h"

namespace smoe::ep_test {
namespace {

constexpr double kDeadlineS = 120;

// Tiny SRAVEN config (as tests/golden/tiny_smoe_losses.txt): 2 layers, 4
// experts, top-2.
// attention_dropout 0: dropout masks are drawn per rank slice, so with
// dropout the EP run is the same model in distribution only.
std::string Trial(int ep_size) {
  nlohmann::json params = {{"M", 1},
                           {"num_experts", 4},
                           {"top_k", 2},
                           {"width", 0.125},
                           {"depth", 2},
                           {"steps", 6},
                           {"batch_size", 8},
                           {"warmup", 2},
                           {"eval_every", 6},
                           {"num_eval", 20},
                           {"log_every", 1},
                           {"checkpoint_every", 3},
                           {"attention_dropout", 0.0},
                           {"load_balance_alpha", 0.01}};
  if (ep_size > 1) params["ep_size"] = ep_size;
  return nlohmann::json{{"sweep_id", "ep"}, {"trial_id", "ep/t"},
                        {"attempt", 1},     {"kind", "sraven"},
                        {"seed", 3},        {"params", params}}
      .dump();
}

struct TrainRun {
  std::map<int64_t, double> loss;  // train/loss by step
  nlohmann::json result;
};

TrainRun Parse(const std::string& out) {
  TrainRun r;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    if (j["event"] == "metric" && j["name"] == "train/loss") {
      r.loss[j["step"].get<int64_t>()] = j["value"].get<double>();
    }
    if (j["event"] == "result") r.result = j["metrics"];
  }
  return r;
}

TrainRun Train(int world, int ep_size) {
  const std::string dir = MakeTempDir("smoe-ep-train-");
  std::ofstream(dir + "/trial.json") << Trial(ep_size);
  std::vector<RankExit> exits =
      RunRanks({SMOE_EP_TRAIN_BINARY, dir + "/trial.json", dir + "/work"},
               world, dir + "/rendezvous", dir, kDeadlineS);
  for (size_t r = 0; r < exits.size(); ++r) {
    EXPECT_EQ(exits[r].code, 0) << "rank " << r << ":\n"
                                << ReadFile(exits[r].stderr_path);
  }
  for (size_t r = 1; r < exits.size(); ++r) {
    EXPECT_EQ(ReadFile(exits[r].stdout_path), "") << "only rank 0 reports";
  }
  return Parse(ReadFile(exits[0].stdout_path));
}

TEST(EpTrainTest, TwoRanksMatchTheSingleProcessRun) {
  TrainRun single = Train(1, 1);
  TrainRun ep = Train(2, 2);
  ASSERT_EQ(single.loss.size(), 6u);
  ASSERT_EQ(ep.loss.size(), single.loss.size());
  // Tolerance: per step the EP gradients equal the single-process ones to a
  // few float32 ulp (expert_parallel_test); AdamW normalises updates, so
  // tiny differences can grow over steps, but over 6 steps they stay far
  // below 1e-4 relative, while a wrong gradient scale or a misrouted token
  // changes the loss at the 1e-2 level within a step or two.
  for (const auto& [step, loss] : single.loss) {
    EXPECT_NEAR(ep.loss.at(step), loss, 1e-4 * std::abs(loss))
        << "step " << step;
  }
  ASSERT_TRUE(ep.result.is_object());
  EXPECT_EQ(ep.result["test_acc"], single.result["test_acc"]);
  EXPECT_EQ(ep.result["steps"], single.result["steps"]);
}

}  // namespace
}  // namespace smoe::ep_test
