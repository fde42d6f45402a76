// Copyright 2026 SMoE Lab authors.
//
// The checks and formats of trials/params.h on small synthetic tables (the
// real tables are pinned against the coordinator and the trainer in
// tests/trials/trial_params_test.cc). The TRIAL.json messages are the ones
// the trainer's typed reads (worker/trainer/json_params.h, merged here) gave.
#include "trials/params.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"

namespace smoe::trials {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

TrialKind Kind(bool integral_floats, bool dotted, Param p) {
  return TrialKind{"t", "test", integral_floats, dotted, {std::move(p)}, {}};
}
const TrialKind kSravenLike = Kind(true, true, Bool("unused", false, ""));
const TrialKind kSkillMixLike = Kind(false, false, Bool("unused", false, ""));

// The trainer's verdict on `text` for parameter `p`: "ok" or the message.
std::string Trial(const TrialKind& kind, const Param& p,
                  const std::string& text) {
  const absl::Status s = CheckTrialValue(kind, p, json::parse(text));
  if (s.ok()) return "ok";
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  return std::string(s.message());
}

// An integer parameter "n" in [lo, hi] read from `text`: "ok <value>" or the
// message.
std::string ReadInt(const std::string& text, int64_t lo, int64_t hi,
                    const TrialKind& kind) {
  const Param p = Int("n", lo, lo, hi, "");
  const json v = json::parse(text);
  const absl::Status s = CheckTrialValue(kind, p, v);
  if (s.ok()) return "ok " + std::to_string(v.get<int64_t>());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  return std::string(s.message());
}

TEST(TrialsParamsTest, ErrorNamesKeyAndJsonValue) {
  const absl::Status s = JsonParamError("lr", json("x"), "must be > 0");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "lr=\"x\": must be > 0");
}

TEST(TrialsParamsTest, SravenIntegersAcceptIntegralFloats) {
  const TrialKind& r = kSravenLike;
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

TEST(TrialsParamsTest, SkillMixIntegersAreJsonIntegersOnly) {
  const TrialKind& r = kSkillMixLike;
  EXPECT_EQ(ReadInt("3", 1, 10, r), "ok 3");
  EXPECT_EQ(ReadInt("3.0", 1, 10, r), "n=3.0: must be an integer");
  EXPECT_EQ(ReadInt("1e3", 1, 5000, r), "n=1000.0: must be an integer");
  EXPECT_EQ(ReadInt("11", 1, 10, r), "n=11: must be in [1, 10]");
  EXPECT_EQ(ReadInt("null", 1, 10, r), "n=null: must be an integer");
}

// JSON integers above INT64_MAX arrive as unsigned values; they are out of
// every range (not wrapped to negative numbers). A range open on one side
// reads ">= lo" / "<= hi" (a sweep file's declared params may leave out min
// or max).
TEST(TrialsParamsTest, HugeUnsignedIsOutOfRange) {
  const std::string max_u64 = "18446744073709551615";
  EXPECT_EQ(
      ReadInt(max_u64, 0, std::numeric_limits<int64_t>::max(), kSkillMixLike),
      "n=" + max_u64 + ": must be >= 0");
  EXPECT_EQ(
      ReadInt(max_u64, std::numeric_limits<int64_t>::min(), 0, kSravenLike),
      "n=" + max_u64 + ": must be <= 0");
  EXPECT_EQ(ReadInt("9223372036854775807", 0,
                    std::numeric_limits<int64_t>::max(), kSravenLike),
            "ok 9223372036854775807");
}

TEST(TrialsParamsTest, Numbers) {
  const Param lr = Number("lr", 1e-3, OpenClosed(0, 1), "");
  EXPECT_EQ(Trial(kSravenLike, lr, "0.5"), "ok");
  EXPECT_EQ(Trial(kSravenLike, lr, "1"), "ok");
  EXPECT_EQ(Trial(kSravenLike, lr, "\"0.5\""), "lr=\"0.5\": must be a number");
  EXPECT_EQ(Trial(kSravenLike, lr, "0"), "lr=0: must be in (0, 1]");
  // nlohmann dumps a non-finite double as null.
  EXPECT_EQ(CheckTrialValue(kSravenLike, lr,
                            json(std::numeric_limits<double>::infinity()))
                .message(),
            "lr=null: must be in (0, 1]");
  const Param t = Number("t", 1, Closed(0, 10), "");
  EXPECT_EQ(Trial(kSkillMixLike, t, "10"), "ok");
  EXPECT_EQ(Trial(kSkillMixLike, t, "10.5"), "t=10.5: must be in [0, 10]");
  EXPECT_EQ(Trial(kSkillMixLike, t, "true"), "t=true: must be a number");
  const Param rps = Number("rps", 2, AnyNumber(), "");
  EXPECT_TRUE(CheckTrialValue(kSkillMixLike, rps,
                              json(std::numeric_limits<double>::infinity()))
                  .ok());
  const Param frac = Number("frac_ood", 0.25, ClosedOpen(0, 1), "");
  EXPECT_EQ(Trial(kSravenLike, frac, "1.0"), "frac_ood=1.0: must be in [0, 1)");
  const Param w =
      Number("width", 1, Closed(1.0 / 16, 256), "").MultipleOf(1.0 / 16);
  EXPECT_EQ(Trial(kSravenLike, w, "0.25"), "ok");
  EXPECT_EQ(Trial(kSravenLike, w, "0.3"),
            "width=0.3: must be a multiple of 0.0625");
  EXPECT_EQ(Trial(kSravenLike, w, "0.03125"),
            "width=0.03125: must be in [0.0625, 256]");
  const Param a = Number(
      "alpha", 0, Closed(0, std::numeric_limits<double>::infinity()), "");
  EXPECT_EQ(Trial(kSravenLike, a, "-1"), "alpha=-1: must be >= 0");
}

TEST(TrialsParamsTest, BoolAndString) {
  const Param bf16 = Bool("bf16", false, "");
  EXPECT_EQ(Trial(kSravenLike, bf16, "true"), "ok");
  EXPECT_EQ(Trial(kSravenLike, bf16, "1"), "bf16=1: must be true or false");
  const Param path = String("path", "", "");
  EXPECT_EQ(Trial(kSravenLike, path, "\"\""), "ok");
  EXPECT_EQ(Trial(kSravenLike, path, "1"), "path=1: must be a string");
  const Param model = RequiredString("model", "");
  EXPECT_EQ(Trial(kSravenLike, model, "\"\""),
            "model=\"\": must be a non-empty string");
}

TEST(TrialsParamsTest, OneOf) {
  const Param device = Choice("device", "cpu", {"cpu", "cuda"}, "");
  EXPECT_EQ(Trial(kSravenLike, device, "\"cuda\""), "ok");
  EXPECT_EQ(Trial(kSravenLike, device, "\"tpu\""),
            "device=\"tpu\": must be one of {cpu, cuda}");
  EXPECT_EQ(Trial(kSravenLike, device, "3"), "device=3: must be a string");
}

absl::Status NoX(absl::string_view v) {
  if (v.find('x') == absl::string_view::npos) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("name: '", v, "' has an x"));
}

TEST(TrialsParamsTest, ExtraCheckReturnsItsOwnError) {
  const Param p = String("name", "", "").Checked(&NoX);
  EXPECT_EQ(Trial(kSravenLike, p, "\"abc\""), "ok");
  EXPECT_EQ(Trial(kSravenLike, p, "\"xyz\""), "name: 'xyz' has an x");
  EXPECT_EQ(CheckSweepValue(p, json("xyz"), "fixed").message(),
            "name: 'xyz' has an x");
}

// Sweep files: the coordinator's wording, and integers are JSON integers.
TEST(TrialsParamsTest, SweepMessages) {
  auto msg = [](const Param& p, const json& v) {
    const absl::Status s = CheckSweepValue(p, v, "grid");
    return s.ok() ? std::string("ok") : std::string(s.message());
  };
  const Param m = Int("M", 4, 1, 8, "");
  EXPECT_EQ(msg(m, 8), "ok");
  EXPECT_EQ(msg(m, 9), "grid.M: expected a value in [1, 8], got 9");
  EXPECT_EQ(msg(m, 3.0), "grid.M: expected an integer, got 3.0");
  EXPECT_EQ(msg(m, "two"), "grid.M: expected an integer, got \"two\"");
  EXPECT_EQ(msg(Number("lr", 1e-3, OpenClosed(0, 1), ""), "fast"),
            "grid.lr: expected a number, got \"fast\"");
  EXPECT_EQ(msg(Number("lr", 1e-3, OpenClosed(0, 1), ""), 0),
            "grid.lr: expected a value in (0, 1], got 0");
  EXPECT_EQ(
      msg(Choice("attention", "softmax", {"softmax", "hyla"}, ""), "cosine"),
      "grid.attention: expected one of {softmax, hyla}, got \"cosine\"");
  EXPECT_EQ(msg(Bool("bf16", false, ""), "yes"),
            "grid.bf16: expected true or false, got \"yes\"");
  EXPECT_EQ(msg(RequiredString("model", ""), ""),
            "grid.model: expected a non-empty string, got \"\"");
}

TEST(TrialsParamsTest, TablesAreWellFormed) {
  for (const TrialKind* kind : AllKinds()) {
    EXPECT_EQ(FindKind(kind->name), kind);
    std::set<std::string> names;
    for (const Param& p : kind->params) {
      EXPECT_TRUE(names.insert(p.name).second) << kind->name << "." << p.name;
      EXPECT_FALSE(p.doc.empty()) << kind->name << "." << p.name;
      EXPECT_EQ(p.doc.find('|'), std::string::npos) << "breaks Markdown";
      if (!p.default_value.is_null()) {
        EXPECT_TRUE(CheckTrialValue(*kind, p, p.default_value).ok())
            << kind->name << "." << p.name;
        EXPECT_TRUE(CheckSweepValue(p, p.default_value, "fixed").ok())
            << kind->name << "." << p.name;
      }
    }
  }
  EXPECT_EQ(FindKind("llm"), nullptr);
  EXPECT_EQ(Defaults(SravenKind())["dispatch"], "ops");
  EXPECT_FALSE(Defaults(SkillMixKind()).contains("model"));  // required
}

TEST(TrialsParamsTest, Formats) {
  const TrialKind k{"demo",
                    "a demo kind",
                    true,
                    true,
                    {Int("M", 4, 1, 8, "difficulty"),
                     Choice("device", "cpu", {"cpu", "cuda"}, "where"),
                     RequiredString("model", "model directory"),
                     Number("lr", 1e-3, OpenClosed(0, 1), "learning rate")},
                    {}};
  EXPECT_EQ(FormatText(k),
            "demo: a demo kind\n"
            "\n"
            "name    type    allowed           default     meaning\n"
            "M       int     1..8              4           difficulty\n"
            "device  string  cpu, cuda         cpu         where\n"
            "model   string  non-empty string  (required)  model directory\n"
            "lr      number  (0, 1]            0.001       learning rate\n");
  // A long list of choices wraps under its column.
  const TrialKind wide{"w",
                       "wide",
                       false,
                       false,
                       {Choice("attention", "softmax",
                               {"softmax", "linear", "hyla", "linear_rms_head",
                                "hyla_no_rms_head"},
                               "variant")},
                       {}};
  EXPECT_EQ(FormatText(wide),
            "w: wide\n"
            "\n"
            "name       type    allowed                            default  "
            "meaning\n"
            "attention  string  softmax, linear, hyla,             softmax  "
            "variant\n"
            "                   linear_rms_head, hyla_no_rms_head\n");
  EXPECT_THAT(FormatMarkdown(k),
              HasSubstr("| param | type | allowed | default | meaning |\n"
                        "| --- | --- | --- | --- | --- |\n"
                        "| `M` | int | 1..8 | 4 | difficulty |\n"));
  EXPECT_EQ(Allowed(String("p", "", "")), "any string");
  EXPECT_EQ(Allowed(Bool("b", false, "")), "true, false");
  EXPECT_EQ(Allowed(Number("w", 1, Closed(0.0625, 256), "").MultipleOf(0.0625)),
            "[0.0625, 256], multiple of 0.0625");
  EXPECT_EQ(Allowed(Number("r", 2, AnyNumber(), "")), "any number");
}

}  // namespace
}  // namespace smoe::trials
