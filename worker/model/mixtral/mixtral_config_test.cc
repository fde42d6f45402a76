// Copyright 2026 SMoE Lab authors.
#include "worker/model/mixtral/mixtral_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace smoe::model::mixtral {
namespace {

using ::testing::HasSubstr;

TEST(MixtralConfigTest, Mixtral8x7BJsonMatchesHfAndRoundTrips) {
  const MixtralConfig c = MixtralConfig::Mixtral8x7B();
  const std::string text = MixtralConfigToJson(c);
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["architectures"], nlohmann::json({"MixtralForCausalLM"}));
  EXPECT_EQ(j["model_type"], "mixtral");
  EXPECT_TRUE(j["sliding_window"].is_null());
  EXPECT_EQ(j["hidden_size"], 4096);
  EXPECT_EQ(j["intermediate_size"], 14336);
  EXPECT_EQ(j["num_key_value_heads"], 8);
  EXPECT_EQ(j["rope_theta"], 1e6);
  EXPECT_EQ(j["rms_norm_eps"], 1e-5);
  EXPECT_EQ(j["torch_dtype"], "bfloat16");
  EXPECT_FALSE(j.contains("head_dim"));  // the HF default, not written
  auto back = ParseMixtralConfigJson(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->head_dim, 128);
  EXPECT_EQ(back->num_experts_per_tok, 2);
  EXPECT_FALSE(back->sliding_window.has_value());
  EXPECT_EQ(MixtralConfigToJson(*back), text);
}

TEST(MixtralConfigTest, ParameterCountsMatchSpec) {
  const MixtralConfig c = MixtralConfig::Mixtral8x7B();
  // docs/skillmix.md 2.2: total 46.70 B; active 7.24 B at EPT 1 and 12.88 B
  // at EPT 2.
  EXPECT_NEAR(c.TotalParameters() / 1e9, 46.70, 0.005);
  EXPECT_NEAR(c.ActiveParameters(1) / 1e9, 7.24, 0.005);
  EXPECT_NEAR(c.ActiveParameters(2) / 1e9, 12.88, 0.005);
}

TEST(MixtralConfigTest, SlidingWindowAndDefaults) {
  auto c = ParseMixtralConfigJson(
      R"({"hidden_size": 64, "num_attention_heads": 4,
          "num_key_value_heads": 2, "sliding_window": 16, "vocab_size": 300})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->sliding_window, 16);
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_EQ(c->num_local_experts, 8);
}

TEST(MixtralConfigTest, BadFieldsNameFieldAndValue) {
  struct Case {
    const char* json;
    const char* want;
  } cases[] = {
      {R"({"num_experts_per_tok": 9})", "num_experts_per_tok 9"},
      {R"({"num_experts_per_tok": 0})", "num_experts_per_tok 0"},
      {R"({"num_attention_heads": 32, "num_key_value_heads": 5})",
       "num_key_value_heads 5"},
      {R"({"model_type": "llama"})", "model_type"},
      {R"({"hidden_act": "gelu"})", "hidden_act"},
      {R"({"hidden_size": "big"})", "'hidden_size'"},
      {R"({"sliding_window": -3})", "sliding_window"},
      {R"({"rope_scaling": {"type": "linear"}})", "rope_scaling"},
      {R"({"eos_token_id": 40000})", "eos_token_id 40000"},
      {"[1, 2]", "not a JSON object"},
  };
  for (const Case& c : cases) {
    auto r = ParseMixtralConfigJson(c.json);
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(c.want)) << c.json;
  }
}

}  // namespace
}  // namespace smoe::model::mixtral
