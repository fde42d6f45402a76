// Copyright 2026 SMoE Lab authors.
//
// trials/sraven_rules.h: each rule between SRAVEN parameters refuses its
// case and names the values; the reference setup and the edges just inside
// pass.
#include "trials/sraven_rules.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trials/params.h"

namespace smoe::trials {
namespace {

using ::testing::HasSubstr;

SravenShape Reference() {
  SravenShape s;
  s.steps = 156250;
  s.num_experts = 8;
  s.top_k = 2;
  s.depth = 2;
  s.width = 1;
  s.ep_size = 1;
  s.batch_size = 128;
  s.router = "topk";
  return s;
}

std::string Message(const SravenShape& s) {
  return std::string(CheckSravenRules(s).message());
}

TEST(SravenRulesTest, ReferenceAndEdgesPass) {
  SravenShape s = Reference();
  EXPECT_TRUE(CheckSravenRules(s).ok());
  s.warmup = s.steps - 1;
  s.top_k = s.num_experts;
  s.ep_size = 8;  // divides 8 experts and 128 problems
  EXPECT_TRUE(CheckSravenRules(s).ok()) << CheckSravenRules(s);
  s.router = "soft";
  s.ep_size = 1;  // a soft router is fine without expert parallelism
  EXPECT_TRUE(CheckSravenRules(s).ok()) << CheckSravenRules(s);
}

TEST(SravenRulesTest, EachRuleNamesItsValues) {
  SravenShape s = Reference();
  s.warmup = s.steps;
  EXPECT_THAT(Message(s),
              HasSubstr("warmup=156250 must be smaller than steps=156250"));
  s = Reference();
  s.top_k = 9;
  EXPECT_THAT(Message(s), HasSubstr("top_k=9 is larger than num_experts=8"));
  s = Reference();
  s.depth = 256;
  s.width = 256;
  s.num_experts = 256;
  EXPECT_THAT(Message(s), HasSubstr("make a model of about"));
  s = Reference();
  s.ep_size = 3;
  EXPECT_THAT(Message(s), HasSubstr("ep_size=3 does not divide num_experts=8"));
  s = Reference();
  s.ep_size = 2;
  s.batch_size = 63;
  EXPECT_THAT(Message(s), HasSubstr("ep_size=2 does not divide batch_size=63"));
  s = Reference();
  s.ep_size = 2;
  s.router = "soft";
  EXPECT_THAT(Message(s),
              HasSubstr("ep_size=2 needs router: topk (got router: soft)"));
}

}  // namespace
// The kind's rules hook (TrialKind::rules) is these rules on a sweep point
// with the defaults filled in; skillmix has none.
TEST(SravenRulesTest, PointRulesAreTheKindsRulesWithDefaults) {
  EXPECT_EQ(SravenKind().rules, &CheckSravenPointRules);
  EXPECT_EQ(SkillMixKind().rules, nullptr);
  EXPECT_TRUE(CheckSravenPointRules(nlohmann::json::object()).ok());
  EXPECT_THAT(std::string(CheckSravenPointRules({{"top_k", 16}}).message()),
              HasSubstr("top_k=16 is larger than num_experts=8"));
  EXPECT_THAT(
      std::string(CheckSravenPointRules({{"ep_size", 2}, {"batch_size", 63}})
                      .message()),
      HasSubstr("ep_size=2 does not divide batch_size=63"));
  EXPECT_THAT(
      std::string(CheckSravenPointRules({{"ep_size", 2}, {"router", "soft"}})
                      .message()),
      HasSubstr("needs router: topk (got router: soft)"));
  EXPECT_THAT(
      std::string(
          CheckSravenPointRules({{"steps", 500}, {"warmup", 1000}}).message()),
      HasSubstr("warmup=1000 must be smaller than steps=500"));
}

}  // namespace smoe::trials
