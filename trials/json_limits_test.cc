// Copyright 2026 SMoE Lab authors.
#include "trials/json_limits.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trials/events.h"

namespace smoe::trials {
namespace {

using ::testing::HasSubstr;

TEST(CheckJsonDepthTest, CountsBracketsOutsideStringsOnly) {
  EXPECT_TRUE(CheckJsonDepth(R"({"a":[1,{"b":2}]})", "x", 3).ok());
  EXPECT_FALSE(CheckJsonDepth(R"({"a":[1,{"b":[2]}]})", "x", 3).ok());
  // Brackets inside strings, with escaped quotes, are text.
  EXPECT_TRUE(CheckJsonDepth(R"({"a":"[[[[\"[[[["})", "x", 1).ok());
  EXPECT_TRUE(CheckJsonDepth("not json [[", "x", 2).ok());
}

TEST(CheckJsonDepthTest, HundredThousandDeepIsRefusedNamingWhat) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  absl::Status s = CheckJsonDepth(deep, "TRIAL.json");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("TRIAL.json nests deeper than 64 levels (at byte 64)"));
}

TEST(ParseJsonLineTest, OverflowingNumbersReadAsInfinity) {
  nlohmann::json j = ParseJsonLine(
      R"({"a":1e999,"b":[-1e999,2.5],"s":"1e999","c":-0.0,"d":1e-999})");
  ASSERT_FALSE(j.is_discarded());
  EXPECT_TRUE(std::isinf(j["a"].get<double>()));
  EXPECT_GT(j["a"].get<double>(), 0);
  EXPECT_TRUE(std::isinf(j["b"][0].get<double>()));
  EXPECT_LT(j["b"][0].get<double>(), 0);
  EXPECT_EQ(j["b"][1].get<double>(), 2.5);
  EXPECT_EQ(j["s"], "1e999");  // a string stays a string
  EXPECT_EQ(j["d"].get<double>(), 0.0);
}

TEST(ParseJsonLineTest, InvalidOrTooDeepIsDiscarded) {
  EXPECT_TRUE(ParseJsonLine("{\"a\":1e999").is_discarded());
  EXPECT_TRUE(ParseJsonLine(std::string(1000, '[')).is_discarded());
  EXPECT_TRUE(ParseJsonLine("").is_discarded());
}

TEST(ParseEventTest, ResultBeyondDoubleRangeIsAResultNotALostLine) {
  absl::StatusOr<TrialEvent> e =
      ParseEvent(R"({"event":"result","metrics":{"test_acc":1e999}})");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->type, TrialEvent::Type::kResult);
  EXPECT_TRUE(std::isinf(e->metrics["test_acc"].get<double>()));
}

TEST(ParseEventTest, MetricStepBeyondInt64OrNameTooLongIsRefused) {
  EXPECT_FALSE(
      ParseEvent(R"({"event":"metric","step":1e300,"name":"x","value":1})")
          .ok());
  EXPECT_FALSE(ParseEvent(R"({"event":"metric","step":18446744073709551615,)"
                          R"("name":"x","value":1})")
                   .ok());
  const std::string long_name(kMaxMetricNameBytes + 1, 'n');
  EXPECT_FALSE(ParseEvent(R"({"event":"metric","step":1,"name":")" + long_name +
                          R"(","value":1})")
                   .ok());
  EXPECT_TRUE(ParseEvent(R"({"event":"metric","step":1,"name":")" +
                         long_name.substr(1) + R"(","value":1})")
                  .ok());
}

// One metric-name rule for the worker and the coordinator: a name the worker
// accepts is never refused later (with the rest of its batch).
TEST(ParseEventTest, MetricNamesFollowTheCoordinatorsRule) {
  for (const char* ok : {"eval/ood_acc", "router/load[3]", "a:b-c.d_e@f#1"}) {
    EXPECT_TRUE(ValidateMetricName(ok).ok()) << ok;
    EXPECT_TRUE(
        ParseEvent(absl::StrCat(R"({"event":"metric","step":1,"name":")", ok,
                                R"(","value":1})"))
            .ok())
        << ok;
  }
  for (const char* bad : {"", "has space", "quote'd", "\u00e9"}) {
    const auto e = ParseEvent(absl::StrCat(
        R"({"event":"metric","step":1,"name":")", bad, R"(","value":1})"));
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_THAT(std::string(e.status().message()), HasSubstr("metric name"))
        << bad;
  }
}

TEST(ParseEventTest, DeeplyNestedLineIsInvalidNotACrash) {
  absl::StatusOr<TrialEvent> e =
      ParseEvent(R"({"event":"result","metrics":)" + std::string(100000, '[') +
                 std::string(100000, ']') + "}");
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace smoe::trials
