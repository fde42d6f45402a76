// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/json_params.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace smoe::trainer {
namespace {

using json = nlohmann::json;

// The message of GetJsonInt(key "n", json text `text`) under `rules`, or "ok
// <value>".
std::string ReadInt(const std::string& text, int64_t lo, int64_t hi,
                    JsonIntRules rules) {
  int64_t x = -7;
  const absl::Status s = GetJsonInt("n", json::parse(text), lo, hi, rules, &x);
  if (s.ok()) return "ok " + std::to_string(x);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(x, -7) << "out written on error: " << text;
  return std::string(s.message());
}

TEST(JsonParamsTest, ErrorNamesKeyAndJsonValue) {
  const absl::Status s = JsonParamError("lr", json("x"), "must be > 0");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "lr=\"x\": must be > 0");
}

TEST(JsonParamsTest, SravenIntegersAcceptIntegralFloats) {
  const JsonIntRules r = kSravenIntRules;
  EXPECT_EQ(ReadInt("3", 1, 8, r), "ok 3");
  EXPECT_EQ(ReadInt("3.0", 1, 8, r), "ok 3");
  EXPECT_EQ(ReadInt("1e3", 1, 5000, r), "ok 1000");
  EXPECT_EQ(ReadInt("-0.0", 0, 8, r), "ok 0");
  EXPECT_EQ(ReadInt("2.5", 1, 8, r), "n=2.5: must be an integer");
  EXPECT_EQ(ReadInt("1e16", 1, 8, r), "n=1e+16: must be an integer");
  EXPECT_EQ(ReadInt("\"3\"", 1, 8, r), "n=\"3\": must be an integer");
  EXPECT_EQ(ReadInt("true", 1, 8, r), "n=true: must be an integer");
  EXPECT_EQ(ReadInt("9", 1, 8, r), "n=9: must be in 1..8");
  EXPECT_EQ(ReadInt("9.0", 1, 8, r), "n=9.0: must be in 1..8");
  EXPECT_EQ(ReadInt("-1", 0, 8, r), "n=-1: must be in 0..8");
}

TEST(JsonParamsTest, SkillMixIntegersAreJsonIntegersOnly) {
  const JsonIntRules r = kSkillMixIntRules;
  EXPECT_EQ(ReadInt("3", 1, 10, r), "ok 3");
  EXPECT_EQ(ReadInt("3.0", 1, 10, r), "n=3.0: must be an integer");
  EXPECT_EQ(ReadInt("1e3", 1, 5000, r), "n=1000.0: must be an integer");
  EXPECT_EQ(ReadInt("11", 1, 10, r), "n=11: must be in [1, 10]");
  EXPECT_EQ(ReadInt("null", 1, 10, r), "n=null: must be an integer");
}

// JSON integers above INT64_MAX arrive as unsigned values; they are out of
// every range (not wrapped to negative numbers).
TEST(JsonParamsTest, HugeUnsignedIsOutOfRange) {
  const std::string max_u64 = "18446744073709551615";
  EXPECT_EQ(ReadInt(max_u64, 0, std::numeric_limits<int64_t>::max(),
                    kSkillMixIntRules),
            "n=" + max_u64 + ": must be in [0, 9223372036854775807]");
  EXPECT_EQ(
      ReadInt(max_u64, std::numeric_limits<int64_t>::min(), 0, kSravenIntRules),
      "n=" + max_u64 + ": must be in -9223372036854775808..0");
  EXPECT_EQ(ReadInt("9223372036854775807", 0,
                    std::numeric_limits<int64_t>::max(), kSravenIntRules),
            "ok 9223372036854775807");
}

TEST(JsonParamsTest, NarrowIntegerTarget) {
  int k = 0;
  ASSERT_TRUE(GetJsonInt("k", json(4), 1, 10, kSkillMixIntRules, &k).ok());
  EXPECT_EQ(k, 4);
  EXPECT_FALSE(GetJsonInt("k", json(40), 1, 10, kSkillMixIntRules, &k).ok());
  EXPECT_EQ(k, 4);
}

TEST(JsonParamsTest, FiniteDouble) {
  double x = -1;
  ASSERT_TRUE(GetJsonFiniteDouble("lr", json(0.5), &x).ok());
  EXPECT_EQ(x, 0.5);
  ASSERT_TRUE(GetJsonFiniteDouble("lr", json(3), &x).ok());
  EXPECT_EQ(x, 3.0);
  EXPECT_EQ(GetJsonFiniteDouble("lr", json("0.5"), &x).message(),
            "lr=\"0.5\": must be a finite number");
  // nlohmann dumps a non-finite double as null.
  EXPECT_EQ(GetJsonFiniteDouble(
                "lr", json(std::numeric_limits<double>::infinity()), &x)
                .message(),
            "lr=null: must be a finite number");
  EXPECT_EQ(x, 3.0);
}

TEST(JsonParamsTest, DoubleInRange) {
  double x = -1;
  ASSERT_TRUE(GetJsonDouble("t", json(10), 0, 10, &x).ok());
  EXPECT_EQ(x, 10.0);
  EXPECT_EQ(GetJsonDouble("t", json(10.5), 0, 10, &x).message(),
            "t=10.5: must be in [0, 10]");
  EXPECT_EQ(GetJsonDouble("t", json(true), 0, 10, &x).message(),
            "t=true: must be a number");
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(GetJsonDouble("t", json(inf), 0, 10, &x).ok());
  EXPECT_EQ(x, 10.0);
  ASSERT_TRUE(GetJsonDouble("rps", json(inf), -inf, inf, &x).ok());
  EXPECT_EQ(x, inf);
}

TEST(JsonParamsTest, BoolAndString) {
  bool b = false;
  ASSERT_TRUE(GetJsonBool("bf16", json(true), &b).ok());
  EXPECT_TRUE(b);
  EXPECT_EQ(GetJsonBool("bf16", json(1), &b).message(),
            "bf16=1: must be true or false");
  std::string s = "keep";
  EXPECT_EQ(GetJsonString("device", json(1), &s).message(),
            "device=1: must be a string");
  EXPECT_EQ(s, "keep");
  ASSERT_TRUE(GetJsonString("device", json("cpu"), &s).ok());
  EXPECT_EQ(s, "cpu");
}

TEST(JsonParamsTest, OneOf) {
  std::string s = "cpu";
  ASSERT_TRUE(GetJsonOneOf("device", json("cuda"), {"cpu", "cuda"}, &s).ok());
  EXPECT_EQ(s, "cuda");
  EXPECT_EQ(GetJsonOneOf("device", json("tpu"), {"cpu", "cuda"}, &s).message(),
            "device=\"tpu\": must be one of {cpu, cuda}");
  EXPECT_EQ(s, "cuda");
  EXPECT_EQ(GetJsonOneOf("device", json(3), {"cpu", "cuda"}, &s).message(),
            "device=3: must be a string");
}

enum class Color { kRed, kBlue };
absl::StatusOr<Color> ParseColor(absl::string_view name) {
  if (name == "red") return Color::kRed;
  if (name == "blue") return Color::kBlue;
  return absl::InvalidArgumentError("color: no such color");
}

TEST(JsonParamsTest, EnumReturnsTheParsersError) {
  Color c = Color::kRed;
  ASSERT_TRUE(GetJsonEnum("color", json("blue"), &ParseColor, &c).ok());
  EXPECT_EQ(c, Color::kBlue);
  EXPECT_EQ(GetJsonEnum("color", json("green"), &ParseColor, &c).message(),
            "color: no such color");
  EXPECT_EQ(GetJsonEnum("color", json(1), &ParseColor, &c).message(),
            "color=1: must be a string");
  EXPECT_EQ(c, Color::kBlue);
}

}  // namespace
}  // namespace smoe::trainer
