// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/train_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace smoe::trainer {
namespace {

using ::testing::HasSubstr;

TEST(TrainConfigTest, ParsesProtocolExampleAndDefaults) {
  auto spec = ParseTrialJson(R"({
    "sweep_id": "sw-20261122-1", "trial_id": "sw-20261122-1/t0007",
    "attempt": 2, "kind": "sraven", "seed": 1,
    "params": {"M": 4, "top_k": 2, "num_experts": 8, "attention": "hyla",
               "router": "topk", "steps": 20000, "batch_size": 128,
               "lr": 0.001, "device": "cuda"}})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->trial_id, "sw-20261122-1/t0007");
  EXPECT_EQ(spec->attempt, 2);
  const TrainConfig& c = spec->config;
  EXPECT_EQ(c.seed, 1u);
  EXPECT_EQ(c.model.attention, model::AttentionKind::kHyla);
  EXPECT_EQ(c.steps, 20000);
  EXPECT_EQ(c.device, "cuda");
  EXPECT_EQ(c.warmup, 1000);
  EXPECT_DOUBLE_EQ(c.weight_decay, 0.1);
  EXPECT_EQ(c.num_eval, 51200);
  EXPECT_DOUBLE_EQ(c.model.attention_dropout, 0.1);
}

void ExpectBad(const std::string& params, const std::string& a,
               const std::string& b) {
  auto spec = ParseTrialJson(R"({"kind": "sraven", "params": )" + params + "}");
  ASSERT_FALSE(spec.ok()) << params;
  EXPECT_TRUE(absl::IsInvalidArgument(spec.status())) << spec.status();
  EXPECT_TRUE(absl::StrContains(spec.status().message(), a))
      << spec.status().message();
  EXPECT_TRUE(absl::StrContains(spec.status().message(), b))
      << spec.status().message();
}

TEST(TrainConfigTest, RejectsBadParamsNamingKeyAndValue) {
  ExpectBad(R"({"top_kk": 2})", "top_kk", "2");
  ExpectBad(R"({"attention": "foo"})", "attention", "foo");
  ExpectBad(R"({"M": 9})", "M", "9");
  ExpectBad(R"({"width": 0.3})", "width", "0.3");
  ExpectBad(R"({"steps": "ten"})", "steps", "ten");
  ExpectBad(R"({"top_k": 9})", "top_k", "9");
  ExpectBad(R"({"bf16": 1})", "bf16", "1");
  ExpectBad(R"({"device": "tpu"})", "device", "tpu");
  ExpectBad(R"({"frac_ood": 1.0})", "frac_ood", "1.0");
  auto top = ParseTrialJson(R"({"kind": "sraven", "sed": 3})");
  EXPECT_TRUE(absl::StrContains(top.status().message(), "sed"));
  EXPECT_FALSE(ParseTrialJson("{not json").ok());
}

// Issue 36: the bound sweeps are held to (trials::CheckSravenModelSize)
// applies to TRIAL.json too; each field alone is within its range.
TEST(TrainConfigTest, ModelsOfMoreThan1e10ParametersAreRefused) {
  auto huge =
      ParseTrialJson(R"({"kind":"sraven","params":{"depth":256,"width":256,)"
                     R"("num_experts":256}})");
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(huge.status().message(),
              HasSubstr("depth=256, width=256, num_experts=256 make a model of "
                        "about 2.82e+14 parameters, more than 1e+10"));
  EXPECT_TRUE(ParseTrialJson(R"({"kind":"sraven","params":{"depth":24,)"
                             R"("width":8,"num_experts":64}})")
                  .ok());
}

TEST(TrainConfigTest, Bf16IsAllowedOnCpuAndCuda) {
  // bf16 autocast runs on the CPU too (worker/model/autocast.h), so CI
  // trains through the same mixed-precision code a GPU run takes.
  for (const char* device : {"cpu", "cuda"}) {
    auto spec = ParseTrialJson(absl::StrCat(
        R"({"kind": "sraven", "params": {"bf16": true, "device": ")", device,
        R"("}})"));
    ASSERT_TRUE(spec.ok()) << device << ": " << spec.status();
    EXPECT_TRUE(spec->config.bf16);
  }
}

// kind sraven reads integers with integral floats allowed
// (trials::TrialKind::integral_floats); anything else is named.
TEST(TrainConfigTest, IntegersMayBeWrittenAsIntegralFloats) {
  auto spec = ParseTrialJson(
      R"({"kind": "sraven", "params": {"steps": 2e3, "M": 3.0}})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->config.steps, 2000);
  EXPECT_EQ(spec->config.model.num_features, 3);
  ExpectBad(R"({"M": 2.5})", "M=2.5", "must be an integer");
  ExpectBad(R"({"steps": 18446744073709551615})", "steps=18446744073709551615",
            "must be in 1..");
}

// smoe-trainer dispatches on kind before parsing; this parser takes sraven
// trials only and names any other kind.
TEST(TrainConfigTest, OtherKindsAreRejectedByName) {
  for (const char* text :
       {R"({"kind": "skillmix"})", R"({"kind": "llm"})", R"({"params": {}})"}) {
    auto spec = ParseTrialJson(text);
    EXPECT_TRUE(absl::IsInvalidArgument(spec.status())) << text;
    EXPECT_TRUE(absl::StrContains(spec.status().message(), "kind=")) << text;
  }
}

TEST(TrainConfigTest, LearningRateSchedule) {
  TrainConfig c;  // lr 1e-3, W 1000, S 156250
  EXPECT_DOUBLE_EQ(LearningRate(c, 0), 0.0);
  EXPECT_DOUBLE_EQ(LearningRate(c, 500), 5e-4);
  EXPECT_DOUBLE_EQ(LearningRate(c, 1000), 1e-3);
  const int64_t mid = 1000 + (156250 - 2000) / 2;
  EXPECT_NEAR(LearningRate(c, mid), 1e-3 * (0.1 + 0.45), 1e-15);
  EXPECT_NEAR(LearningRate(c, 156250 - 1000), 1e-4, 1e-15);
  EXPECT_NEAR(LearningRate(c, 156250 - 1), 1e-4, 1e-15);
  EXPECT_GT(LearningRate(c, 2000), LearningRate(c, 3000));
  // Issue 31 item 1: a run too short for the reference's constant tail
  // (S <= 2W) decays over the rest of the run; before, every step after
  // warmup got 0.1 lr at once (and a 60-step run never passed 6e-5).
  c.steps = 1500;
  EXPECT_DOUBLE_EQ(LearningRate(c, 500), 5e-4);
  EXPECT_DOUBLE_EQ(LearningRate(c, 1000), 1e-3);
  EXPECT_NEAR(LearningRate(c, 1250), 1e-3 * (0.1 + 0.45), 1e-15);
  EXPECT_NEAR(LearningRate(c, 1499), 1e-3 * 0.1, 1e-8);
  EXPECT_GT(LearningRate(c, 1001), 0.99e-3);
  c.steps = 2000;  // S == 2W: the same
  EXPECT_NEAR(LearningRate(c, 1500), 1e-3 * (0.1 + 0.45), 1e-15);
  c.steps = 2001;  // S > 2W: the reference (a one-step cosine, then 0.1 lr)
  EXPECT_NEAR(LearningRate(c, 1001), 1e-4, 1e-15);
  c.warmup = 0;
  c.steps = 10;
  EXPECT_DOUBLE_EQ(LearningRate(c, 0), 1e-3);
  EXPECT_NEAR(LearningRate(c, 5), 1e-3 * (0.1 + 0.45), 1e-15);
  EXPECT_NEAR(LearningRate(c, 10), 1e-4, 1e-15);
}

// Issue 31 item 1: warmup >= steps is refused, naming both; a trial that
// leaves warmup out gets min(1000, steps / 10), so `--steps 500` peaks at
// lr at step 50 (it never got above 0.5 lr with warmup 1000).
TEST(TrainConfigTest, WarmupMustEndBeforeTheRun) {
  TrainConfig c;
  c.steps = 500;
  c.warmup = 1000;
  absl::Status s = ValidateTrainConfig(c);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("warmup=1000"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("steps=500"));
  c.warmup = 500;
  EXPECT_FALSE(ValidateTrainConfig(c).ok());
  c.warmup = 499;
  EXPECT_TRUE(ValidateTrainConfig(c).ok());

  EXPECT_EQ(DefaultWarmup(156250), 1000);  // the paper's runs: unchanged
  EXPECT_EQ(DefaultWarmup(500), 50);
  EXPECT_EQ(DefaultWarmup(5), 0);
  auto spec = ParseTrialJson(
      R"({"sweep_id":"s","trial_id":"s/t","attempt":1,"kind":"sraven",)"
      R"("seed":0,"params":{"steps":500}})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->config.warmup, 50);
  double peak = 0;
  for (int64_t t = 0; t < 500; ++t) {
    peak = std::max(peak, LearningRate(spec->config, t));
  }
  EXPECT_DOUBLE_EQ(peak, 1e-3);
  auto given = ParseTrialJson(
      R"({"sweep_id":"s","trial_id":"s/t","attempt":1,"kind":"sraven",)"
      R"("seed":0,"params":{"steps":500,"warmup":500}})");
  ASSERT_FALSE(given.ok());
  EXPECT_THAT(std::string(given.status().message()),
              HasSubstr("warmup=500 must be smaller than steps=500"));
  auto paper = ParseTrialJson(
      R"({"sweep_id":"s","trial_id":"s/t","attempt":1,"kind":"sraven",)"
      R"("seed":0,"params":{}})");
  ASSERT_TRUE(paper.ok()) << paper.status();
  EXPECT_EQ(paper->config.warmup, 1000);
}

// Issue 34 item 4: the trainer and the coordinator check the rules between
// parameters with one function (trials/sraven_rules.h), so the trainer
// refuses what a sweep would, with the sweep's words.
TEST(TrainConfigTest, RulesBetweenParamsAreTheSweepsOwn) {
  TrainConfig c;
  c.ep_size = 2;
  c.batch_size = 63;
  absl::Status s = ValidateTrainConfig(c);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("ep_size=2 does not divide batch_size=63"));
  c.batch_size = 64;
  c.model.router = model::RouterKind::kSoft;
  s = ValidateTrainConfig(c);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("ep_size=2 needs router: topk (got router: soft)"));
  c.model.router = model::RouterKind::kTopK;
  c.model.num_experts = 6;
  c.ep_size = 4;
  c.batch_size = 64;
  s = ValidateTrainConfig(c);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("ep_size=4 does not divide num_experts=6"));
  c.ep_size = 2;
  EXPECT_TRUE(ValidateTrainConfig(c).ok()) << ValidateTrainConfig(c);
}

TEST(TrainConfigTest, EvaluatesAtRungStepsWhenAsked) {
  TrainConfig c;
  c.steps = 2700;
  c.eval_every = 500;
  std::vector<int64_t> due;
  for (int64_t s = 0; s <= c.steps; ++s) {
    if (EvalDue(c, s)) due.push_back(s);
  }
  EXPECT_EQ(due, (std::vector<int64_t>{1, 500, 1000, 1500, 2000, 2500, 2700}));
  c.eval_rungs_from = 100;  // ASHA min_steps 100, eta 3: 100, 300, 900
  c.eval_rungs_eta = 3;
  due.clear();
  for (int64_t s = 0; s <= c.steps; ++s) {
    if (EvalDue(c, s)) due.push_back(s);
  }
  EXPECT_EQ(due, (std::vector<int64_t>{1, 100, 300, 500, 900, 1000, 1500, 2000,
                                       2500, 2700}));
  auto spec = ParseTrialJson(
      R"({"kind": "sraven", "seed": 0, "params": {"eval_rungs_from": 300,
          "eval_rungs_eta": 2}})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->config.eval_rungs_from, 300);
  EXPECT_EQ(spec->config.eval_rungs_eta, 2);
  TrainConfig bad;
  bad.eval_rungs_eta = 1;
  EXPECT_TRUE(absl::StrContains(ValidateTrainConfig(bad).message(),
                                "eval_rungs_eta >= 2"));
}

TEST(TrainConfigTest, FingerprintIgnoresCadence) {
  TrainConfig b0;
  b0.eval_rungs_from = 300;
  EXPECT_EQ(TrajectoryFingerprint(TrainConfig{}), TrajectoryFingerprint(b0));
  TrainConfig a, b;
  b.eval_every = 7;
  b.checkpoint_every = 3;
  b.num_eval = 5;
  b.device = "cuda";
  EXPECT_EQ(TrajectoryFingerprint(a), TrajectoryFingerprint(b));
  b.seed = 9;
  EXPECT_NE(TrajectoryFingerprint(a), TrajectoryFingerprint(b));
}

}  // namespace
}  // namespace smoe::trainer
