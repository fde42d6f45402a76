// Copyright 2026 SMoE Lab authors.
//
// `kind: command` sweeps: the command and params blocks, validation against
// the declared table, the stored-YAML round trip. What the scheduler does
// with them: coordinator/command_scheduler_test.cc.
#include "sweeps/command_spec.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sweeps/sweep_spec.h"
#include "sweeps/test_sweeps.h"

namespace smoe::sweeps {
namespace {

using nlohmann::json;
using test_sweeps::kToy;
using test_sweeps::WithReplaced;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Error(const std::string& text) {
  auto spec = ParseSweepYaml(text);
  EXPECT_FALSE(spec.ok()) << text;
  return spec.ok() ? "" : std::string(spec.status().message());
}

TEST(CommandSpecTest, ParsesCommandAndDeclaredParams) {
  auto spec = ParseSweepYaml(kToy);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->kind, "command");
  EXPECT_EQ(spec->command.program, "/opt/toy/train_toy.py");
  EXPECT_THAT(spec->command.args,
              ElementsAre("--workdir", "{workdir}", "--params={params}",
                          "{trial}", "-v"));
  const trials::TrialKind* kind = SweepKind(*spec);
  ASSERT_EQ(kind, &spec->command_kind);
  ASSERT_EQ(kind->params.size(), 6u);
  const trials::Param* steps = kind->Find("steps");
  ASSERT_NE(steps, nullptr);
  EXPECT_EQ(steps->type, trials::ParamType::kInt);
  EXPECT_EQ(steps->int_lo, 1);
  EXPECT_EQ(steps->int_hi, 100000);
  EXPECT_EQ(steps->default_value, 20);
  EXPECT_EQ(steps->doc, "training steps");
  EXPECT_EQ(kind->Find("lr")->range.hi, 1.0);
  EXPECT_THAT(kind->Find("opt")->choices, ElementsAre("sgd", "adam"));
  EXPECT_EQ(kind->Find("bias")->default_value, true);
  EXPECT_TRUE(kind->Find("data")->default_value.is_null());  // required
  EXPECT_EQ(trials::Defaults(*kind),
            json({{"steps", 20}, {"lr", 0.1}, {"opt", "sgd"}, {"bias", true}}));
  EXPECT_EQ(CountPoints(*spec), 8);
  const std::vector<ExpandedTrial> points = ExpandGrid(*spec);
  ASSERT_EQ(points.size(), 8u);
  EXPECT_EQ(
      points[0].params,
      json({{"lr", 0.01}, {"opt", "sgd"}, {"data", "tiny"}, {"scale", 2}}));
  // The built-in kinds keep their tables.
  auto sraven = ParseSweepYaml("name: s\nkind: sraven\ngrid: {M: [1]}\n");
  ASSERT_TRUE(sraven.ok());
  EXPECT_EQ(SweepKind(*sraven), trials::FindKind("sraven"));
}

TEST(CommandSpecTest, RoundTripsThroughTheStoredYaml) {
  auto spec = ParseSweepYaml(kToy);
  ASSERT_TRUE(spec.ok()) << spec.status();
  const std::string yaml = SweepSpecToYaml(*spec);
  auto again = ParseSweepYaml(yaml);
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << yaml;
  EXPECT_EQ(again->command, spec->command);
  EXPECT_TRUE(SameSchema(again->command_kind, spec->command_kind)) << yaml;
  EXPECT_EQ(again->fixed, spec->fixed);
  EXPECT_EQ(again->seeds, spec->seeds);
  ASSERT_EQ(again->grid.size(), 2u);
  EXPECT_EQ(again->grid[0].values, spec->grid[0].values);
  EXPECT_EQ(ExpandGrid(*again)[3].trial_id, ExpandGrid(*spec)[3].trial_id);
  EXPECT_EQ(SweepSpecToYaml(*again), yaml);  // a fixed point
  // Integral number bounds and defaults stay numbers, quoted strings stay
  // strings, unbounded ends stay unbounded.
  auto tricky = ParseSweepYaml(R"(
name: t
kind: command
command: {program: "/bin/x y"}
params:
  w: {type: number, default: 2, min: 1, max: 4}
  n: {type: int, min: -5}
  s: {type: string, default: "123", choices: ["123", "true", "a b"]}
fixed: {n: -5}
)");
  ASSERT_TRUE(tricky.ok()) << tricky.status();
  auto back = ParseSweepYaml(SweepSpecToYaml(*tricky));
  ASSERT_TRUE(back.ok()) << back.status() << SweepSpecToYaml(*tricky);
  EXPECT_TRUE(SameSchema(back->command_kind, tricky->command_kind))
      << SweepSpecToYaml(*tricky);
  EXPECT_EQ(back->command.program, "/bin/x y");
  EXPECT_TRUE(back->command.args.empty());
  EXPECT_EQ(back->command_kind.Find("s")->default_value, "123");
  EXPECT_EQ(back->command_kind.Find("n")->int_hi,
            std::numeric_limits<int64_t>::max());
  // ExtendAxis (sweep extend, re-submission) goes through the same text.
  SweepSpec extended = *spec;
  ASSERT_TRUE(ExtendAxis(&extended, "lr", {json(0.5)}).ok());
  EXPECT_EQ(CountPoints(extended), 12);
  EXPECT_EQ(extended.command, spec->command);
  EXPECT_FALSE(ExtendAxis(&extended, "lr", {json(3)}).ok());
}

TEST(CommandSpecTest,
     ValuesAreCheckedAgainstTheDeclarationNamingFieldAndValue) {
  EXPECT_EQ(Error(WithReplaced(kToy, "lr: [0.01, 0.1]", "lr: [0.01, 2]")),
            "grid.lr: expected a value in [0, 1], got 2");
  EXPECT_THAT(Error(WithReplaced(kToy, "opt: [sgd, adam]", "opt: [sgd, rms]")),
              HasSubstr("grid.opt: expected one of"));
  EXPECT_THAT(Error(WithReplaced(kToy, "fixed: {data: tiny, scale: 2}",
                                 "fixed: {data: tiny, scale: 2, steps: 0}")),
              HasSubstr("fixed.steps: expected"));
  EXPECT_THAT(Error(WithReplaced(kToy, "fixed: {data: tiny, scale: 2}",
                                 "fixed: {data: tiny, scale: 2, epochs: 3}")),
              HasSubstr("fixed.epochs: unknown parameter 'epochs' for kind "
                        "command (known: steps, lr, opt, bias, data, scale)"));
  EXPECT_THAT(Error(WithReplaced(kToy, "fixed: {data: tiny, scale: 2}",
                                 "fixed: {scale: 2}")),
              HasSubstr("params.data: required (declared without a default) "
                        "but not set for the point"));
  EXPECT_THAT(
      Error(WithReplaced(kToy, "fixed: {data: tiny, scale: 2}",
                         "fixed: {data: tiny, scale: 2, bias: yes please}")),
      HasSubstr("fixed.bias: expected"));
}

TEST(CommandSpecTest, BadCommandAndParamsBlocksAreRefusedNamingTheField) {
  EXPECT_EQ(Error(WithReplaced(kToy, "program: /opt/toy/train_toy.py",
                               "program: train_toy.py")),
            "command.program: 'train_toy.py' is not an absolute path");
  EXPECT_EQ(Error(WithReplaced(kToy, "  program: /opt/toy/train_toy.py\n",
                               "  program: /opt/toy/train_toy.py\n  env: x\n")),
            "unknown key 'command.env' (allowed: program, args)");
  EXPECT_THAT(Error(WithReplaced(kToy, "\"{trial}\"", "\"{trail}\"")),
              HasSubstr("command.args[3]: unknown placeholder '{trail}'"));
  EXPECT_THAT(Error(WithReplaced(kToy, "doc: \"dataset name\"",
                                 "doc: \"dataset name\", help: x")),
              HasSubstr("unknown key 'params.data.help' (allowed: type, "
                        "default, min, max, choices, doc)"));
  EXPECT_EQ(Error(WithReplaced(kToy, "bias: {type: bool", "bias: {type: flag")),
            "params.bias.type: 'flag' is not one of {int, number, string, "
            "bool}");
  EXPECT_EQ(Error(WithReplaced(kToy, "min: 1, max: 100000", "min: 10, max: 5")),
            "params.steps: min 10 is larger than max 5");
  EXPECT_EQ(Error(WithReplaced(kToy, "default: 20", "default: 0")),
            "params.steps.default: expected a value in [1, 100000], got 0");
  EXPECT_EQ(Error(WithReplaced(kToy, "min: 1, max: 100000", "min: 1.5")),
            "params.steps.min: expected an integer, got 1.5");
  EXPECT_THAT(Error(WithReplaced(kToy, "bias: {type: bool, default: true}",
                                 "bias: {type: bool, choices: [a]}")),
              HasSubstr("params.bias.choices: only string parameters"));
  EXPECT_THAT(Error(WithReplaced(kToy, "  scale: {type: number}\n",
                                 "  scale: {type: number}\n  SCALE: "
                                 "{type: int}\n")),
              HasSubstr("params.SCALE: declared twice"));
  EXPECT_THAT(
      Error(WithReplaced(kToy, "  scale: {type: number}\n",
                         "  scale: {type: number}\n  2x: {type: int}\n")),
      HasSubstr("params.2x: invalid parameter name"));
  // Both blocks belong to kind command only; kind command needs `command`.
  EXPECT_THAT(Error("name: s\nkind: sraven\ncommand: {program: /x}\n"),
              HasSubstr("command: only for kind: command"));
  EXPECT_THAT(Error("name: s\nkind: command\n"),
              HasSubstr("command: required for kind: command"));
  EXPECT_THAT(Error("name: s\nkind: mine\n"),
              HasSubstr("is not one of {sraven, skillmix, command}"));
  // No params at all is a valid (seeds-only) sweep.
  auto bare = ParseSweepYaml(
      "name: s\nkind: command\ncommand: {program: /x}\nseeds: [0, 1]\n");
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ(CountPoints(*bare), 2);
}

}  // namespace
}  // namespace smoe::sweeps
