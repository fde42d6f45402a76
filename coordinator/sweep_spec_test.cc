// Copyright 2026 SMoE Lab authors.
#include "coordinator/sweep_spec.h"

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kDemo[] = R"(
name: demo
kind: sraven
grid:
  M: [1, 2]
  top_k: [1, 2, 4, 8]
  attention: [softmax, hyla]
fixed:
  num_experts: 8
  steps: 300
  width: 0.25
seeds: [0, 1]
resources: {gpus_per_trial: 0, ep_size: 1, slots: 1}
retries: 3
priority: 5
)";

TEST(SweepSpecTest, ParsesAllFields) {
  auto spec = ParseSweepYaml(kDemo);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name, "demo");
  EXPECT_EQ(spec->kind, "sraven");
  ASSERT_EQ(spec->grid.size(), 3u);
  EXPECT_EQ(spec->grid[0].name, "M");
  EXPECT_EQ(spec->grid[2].values[1], "hyla");
  EXPECT_EQ(spec->fixed["width"], 0.25);
  EXPECT_EQ(spec->fixed["steps"], 300);
  EXPECT_EQ(spec->seeds, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(spec->retries, 3);
  EXPECT_EQ(spec->priority, 5);
  EXPECT_EQ(CountPoints(*spec), 2 * 4 * 2 * 2);
}

TEST(SweepSpecTest, ExpandsCartesianProductWithUniqueStableIds) {
  auto spec = ParseSweepYaml(kDemo);
  ASSERT_TRUE(spec.ok());
  const auto points = ExpandGrid(*spec);
  ASSERT_EQ(points.size(), 32u);
  std::set<std::string> ids;
  for (const auto& p : points) ids.insert(p.trial_id);
  EXPECT_EQ(ids.size(), 32u);
  // First axis outermost, seeds innermost.
  EXPECT_EQ(points[0].params["M"], 1);
  EXPECT_EQ(points[0].seed, 0);
  EXPECT_EQ(points[1].seed, 1);
  EXPECT_EQ(points[2].params["attention"], "hyla");
  EXPECT_EQ(points[31].params["M"], 2);
  EXPECT_EQ(points[0].params["num_experts"], 8);
  // Identity depends only on (kind, params, seed): key order is irrelevant.
  nlohmann::json a = {{"x", 1}, {"y", "z"}};
  nlohmann::json b;
  b["y"] = "z";
  b["x"] = 1;
  EXPECT_EQ(TrialId("s", "sraven", a, 0), TrialId("s", "sraven", b, 0));
  EXPECT_NE(TrialId("s", "sraven", a, 0), TrialId("s", "sraven", a, 1));
  EXPECT_NE(TrialId("s", "sraven", a, 0), TrialId("s", "skillmix", a, 0));
  EXPECT_THAT(TrialId("s", "sraven", a, 0),
              ::testing::MatchesRegex("s/[0-9a-f]{16}"));
  // A different sweep file with the same points yields the same ids.
  auto again = ParseSweepYaml(kDemo);
  EXPECT_EQ(ExpandGrid(*again)[7].trial_id, points[7].trial_id);
}

struct BadCase {
  const char* yaml;
  const char* expect;  // substring of the error: names field and value
};

TEST(SweepSpecTest, RejectsBadFilesNamingFieldAndValue) {
  const BadCase cases[] = {
      {"name: x\nkind: sraven\ncolour: red\n", "unknown key 'colour'"},
      {"kind: sraven\n", "name: required"},
      {"name: Bad Name\nkind: sraven\n", "name: 'Bad Name'"},
      {"name: x\nkind: llm\n", "kind: 'llm'"},
      {"name: x\nkind: sraven\ngrid:\n  M: []\n", "grid.M: empty axis"},
      {"name: x\nkind: sraven\ngrid:\n  M: [1, 1]\n",
       "grid.M: duplicate value 1"},
      {"name: x\nkind: sraven\ngrid:\n  M: [1, 9]\n",
       "grid.M: expected a value in [1, 8], got 9"},
      {"name: x\nkind: sraven\ngrid:\n  M: [two]\n",
       "grid.M: expected an integer, got \"two\""},
      {"name: x\nkind: sraven\ngrid:\n  topk: [1]\n",
       "grid.topk: unknown parameter 'topk'"},
      {"name: x\nkind: sraven\nfixed:\n  attention: cosine\n",
       "fixed.attention: expected one of {softmax"},
      {"name: x\nkind: sraven\nfixed: {lr: fast}\n",
       "fixed.lr: expected a number, got \"fast\""},
      {"name: x\nkind: sraven\nseeds: [0, x]\n",
       "seeds[1]: expected an integer"},
      {"name: x\nkind: sraven\nseeds: [0, 0]\n", "seeds[1]: duplicate seed 0"},
      {"name: x\nkind: sraven\nretries: -1\n",
       "retries: value -1 out of range"},
      {"name: x\nkind: sraven\nresources: {gpus: 1}\n",
       "unknown key 'resources.gpus'"},
      {"name: x\nkind: sraven\nresources: {progress_timeout_s: 0}\n",
       "resources.progress_timeout_s: value 0 out of range"},
      {"name: x\nkind: sraven\nresources: {progress_timeout_s: 604801}\n",
       "resources.progress_timeout_s: value 604801 out of range"},
      {"name: x\nkind: sraven\ngrid:\n  top_k: [16]\nfixed: {num_experts: 8}\n",
       "top_k=16 is larger than num_experts=8"},
      {"name: x\nkind: skillmix\nfixed: {model: /m}\n"
       "resources: {ep_size: 2, gpus_per_trial: 1}\n",
       "resources.gpus_per_trial: 1 must equal resources.ep_size (2)"},
      {"name: x\nkind: skillmix\nfixed: {model: /m, grader_api_key_env: "
       "AWS_SECRET_ACCESS_KEY}\n",
       "grader_api_key_env: 'AWS_SECRET_ACCESS_KEY' is not an API-key"},
      {"name: x\nkind: sraven\nfixed: {ep_size: 2}\n",
       "ep_size=2 must equal resources.ep_size=1"},
      {"name: x\nkind: sraven\ngrid:\n  ep_size: [2, 4]\n"
       "resources: {ep_size: 2, gpus_per_trial: 2}\n",
       "ep_size=4 must equal resources.ep_size=2"},
      // Combinations that could only fail at run time are refused here.
      {"name: x\nkind: sraven\nfixed: {device: cuda}\n",
       "resources.gpus_per_trial: 0, but the point"},
      {"name: x\nkind: skillmix\nfixed: {model: /m}\n",
       "trains on device: cuda (the default for this kind); set "
       "resources.gpus_per_trial >= 1, or device: cpu"},
      {"name: x\nkind: sraven\nfixed: {batch_size: 63}\n"
       "resources: {ep_size: 2}\n",
       "ep_size=2 does not divide batch_size=63"},
      {"name: x\nkind: sraven\nfixed: {router: soft}\n"
       "resources: {ep_size: 2}\n",
       "ep_size=2 needs router: topk (got router: soft"},
      {"name: x\nkind: sraven\nfixed: {ep_size: 2, batch_size: 63}\n"
       "resources: {ep_size: 2}\n",
       "ep_size=2 does not divide batch_size=63"},
      {"name: x\nkind: sraven\ngrid:\n  M: [1\n", "YAML error at line"},
      {"name: x\nkind: sraven\ngrid: [1, 2]\n", "grid: expected a map"},
      {"- 1\n- 2\n", "expected a YAML map"},
      {"", "empty document"},
  };
  for (const BadCase& c : cases) {
    auto spec = ParseSweepYaml(c.yaml);
    ASSERT_FALSE(spec.ok()) << c.yaml;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(spec.status().message()), HasSubstr(c.expect))
        << "for file:\n"
        << c.yaml;
  }
}

// A file with several mistakes gets all of them at once, in file order,
// each naming its field once.
TEST(SweepSpecTest, ReportsEveryProblemInTheFile) {
  auto spec = ParseSweepYaml(
      "name: Bad Name\nkind: sraven\ncolour: red\n"
      "grid:\n  M: [1, 9]\n  topk: [1]\n  attention: [softmax, cosine]\n"
      "fixed: {lr: fast}\nseeds: [0, 0]\nretries: -1\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string msg(spec.status().message());
  const std::vector<std::string> want = {
      "8 problems:\n",
      "\n  unknown key 'colour'",
      "\n  name: 'Bad Name'",
      "\n  seeds[1]: duplicate seed 0",
      "\n  retries: value -1 out of range",
      "\n  grid.topk: unknown parameter 'topk'",
      "\n  grid.M: expected a value in [1, 8], got 9",
      "\n  grid.attention: expected one of {softmax",
      "\n  fixed.lr: expected a number, got \"fast\""};
  for (const std::string& w : want) EXPECT_THAT(msg, HasSubstr(w)) << msg;
  // No field is reported twice.
  EXPECT_EQ(msg.find("grid.M:"), msg.rfind("grid.M:")) << msg;
  EXPECT_EQ(msg.find("fixed.lr:"), msg.rfind("fixed.lr:")) << msg;
}

TEST(SweepSpecTest, PointRulesNameAtMostFivePoints) {
  auto spec = ParseSweepYaml(
      "name: x\nkind: sraven\ngrid:\n  top_k: [9, 10, 11, 12, 13, 14, 15]\n"
      "fixed: {num_experts: 8}\n");
  ASSERT_FALSE(spec.ok());
  const std::string msg(spec.status().message());
  EXPECT_THAT(msg, HasSubstr("6 problems:"));
  EXPECT_THAT(msg, HasSubstr("top_k=13 is larger than num_experts=8"));
  EXPECT_THAT(msg, Not(HasSubstr("top_k=14 is larger")));
  EXPECT_THAT(msg, HasSubstr("2 more grid points break the same rules"));
}

// `seeds: 3` reads as "three seeds" but used to mean the one seed 3.
TEST(SweepSpecTest, ScalarSeedsAreRefusedWithAHint) {
  auto spec = ParseSweepYaml("name: x\nkind: sraven\nseeds: 3\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            "seeds: 3 is not a list: seeds is a list; did you mean seeds: "
            "[0, 1, 2] (3 seeds) or seeds: [3] (only seed 3)?");
  spec = ParseSweepYaml("name: x\nkind: sraven\nseeds: 500\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("did you mean seeds: [500]?"));
  // Sweeps stored before the rule still load (Scheduler::Recover).
  ParseOptions stored;
  stored.allow_scalar_seeds = true;
  spec = ParseSweepYaml("name: x\nkind: sraven\nseeds: 3\n", stored);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->seeds, (std::vector<int64_t>{3}));
}

TEST(SweepSpecTest, RefusesTooManyPoints) {
  ParseOptions opts;
  opts.max_points = 31;
  auto spec = ParseSweepYaml(kDemo, opts);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("expands to 32 points, more than max 31"));
}

TEST(SweepSpecTest, YamlRoundTripAndExtend) {
  auto spec = ParseSweepYaml(kDemo);
  ASSERT_TRUE(spec.ok());
  auto back = ParseSweepYaml(SweepSpecToYaml(*spec));
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << SweepSpecToYaml(*spec);
  EXPECT_EQ(ExpandGrid(*back).size(), 32u);
  for (size_t i = 0; i < 32; ++i) {
    EXPECT_EQ(ExpandGrid(*back)[i].trial_id, ExpandGrid(*spec)[i].trial_id);
  }
  SweepSpec s = *spec;
  ASSERT_TRUE(ExtendAxis(&s, "M", {3, 2}).ok());  // 2 is ignored
  EXPECT_EQ(CountPoints(s), 48);
  ASSERT_TRUE(ExtendAxis(&s, "seeds", {2}).ok());
  EXPECT_EQ(CountPoints(s), 72);
  EXPECT_EQ(ExtendAxis(&s, "depth", {2}).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ExtendAxis(&s, "M", {9}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CountPoints(s), 72);  // a failed extend changes nothing
}

TEST(SweepSpecTest, QuotedNumbersStayStrings) {
  auto spec = ParseSweepYaml(
      "name: q\nkind: skillmix\ngrid:\n  ept: [1, 2]\nfixed:\n  model: "
      "\"123\"\n  device: cpu\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->fixed["model"].is_string());
}

// A Skill-Mix model split over two GPUs (Mixtral-8x7B on two 80 GB cards).
TEST(SweepSpecTest, CudaTrialsWithGpusAndCpuTrialsWithoutAreAccepted) {
  EXPECT_TRUE(ParseSweepYaml("name: a\nkind: sraven\nfixed: {device: cuda}\n"
                             "resources: {gpus_per_trial: 1}\n")
                  .ok());
  EXPECT_TRUE(
      ParseSweepYaml("name: b\nkind: skillmix\nfixed: {model: /m, device: "
                     "cpu}\n")
          .ok());
  // resources.ep_size alone (no params.ep_size) that divides batch_size.
  EXPECT_TRUE(ParseSweepYaml("name: c\nkind: sraven\nfixed: {batch_size: 64}"
                             "\nresources: {ep_size: 2}\n")
                  .ok());
}

TEST(SweepSpecTest, SkillMixMaySpanSeveralRanks) {
  auto spec = ParseSweepYaml(
      "name: big\nkind: skillmix\ngrid:\n  ept: [1, 2]\nfixed:\n"
      "  model: /models/mixtral\nresources: {gpus_per_trial: 2, ep_size: 2}\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->resources.ep_size, 2);
  EXPECT_EQ(spec->resources.gpus_per_trial, 2);
}

}  // namespace
}  // namespace smoe::coordinator

namespace smoe::coordinator {
namespace {

// The shipped examples must always parse.
TEST(SweepSpecTest, ShippedExamplesParse) {
  const char* src = std::getenv("SMOE_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  const std::pair<const char*, int64_t> files[] = {
      {"examples/sraven-demo.yaml", 16},
      {"examples/sraven-paper.yaml", 192},
      {"examples/skillmix-mixtral.yaml", 32}};
  for (const auto& [name, points] : files) {
    std::ifstream in(std::string(src) + "/" + name);
    ASSERT_TRUE(in) << name;
    std::stringstream ss;
    ss << in.rdbuf();
    auto spec = ParseSweepYaml(ss.str());
    ASSERT_TRUE(spec.ok()) << name << ": " << spec.status();
    EXPECT_EQ(CountPoints(*spec), points) << name;
  }
}

}  // namespace
}  // namespace smoe::coordinator

namespace smoe::coordinator {
namespace {

// Regression (found by tests/fuzz): a value with invalid UTF-8 made JSON
// serialisation throw. It must be a clean InvalidArgument.
TEST(SweepSpecTest, InvalidUtf8IsRejected) {
  const std::string bad =
      std::string("name: x\nkind: sraven\nfixed: {attention: ") + "\xD2\x28" +
      "}\n";
  auto spec = ParseSweepYaml(bad);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              ::testing::HasSubstr("not valid UTF-8 at byte"));
  EXPECT_TRUE(
      ParseSweepYaml("name: x\nkind: skillmix\nfixed: {model: \"caf\xC3\xA9\", "
                     "device: cpu}\n")
          .ok());
  EXPECT_FALSE(ParseSweepYaml("name: x\nkind: sraven\n# \xED\xA0\x80\n")
                   .ok());  // surrogate
  EXPECT_FALSE(
      ParseSweepYaml("name: x\nkind: sraven\n# \xC0\xAF\n").ok());  // overlong
  const char* src = std::getenv("SMOE_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  std::ifstream in(std::string(src) +
                   "/tests/fuzz/regressions/invalid_utf8.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  ASSERT_FALSE(ss.str().empty());
  EXPECT_EQ(ParseSweepYaml(ss.str()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace smoe::coordinator

namespace smoe::coordinator {
namespace {

// Regression (found by tests/fuzz): a NUL byte inside a flow sequence made
// yaml-cpp mis-decode the stream and JSON serialisation throw.
TEST(SweepSpecTest, ControlCharactersAreRejected) {
  static constexpr char kBad[] =
      "name: x\nkind: sraven\ngrid:\n  M: [1, 8\0_]\n";
  const std::string bad(kBad, sizeof(kBad) - 1);
  auto spec = ParseSweepYaml(bad);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              ::testing::HasSubstr("control character 0x0 at byte"));
  const char* src = std::getenv("SMOE_SOURCE_DIR");
  std::ifstream in(std::string(src) + "/tests/fuzz/regressions/nul_byte.yaml",
                   std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  ASSERT_FALSE(ss.str().empty());
  EXPECT_EQ(ParseSweepYaml(ss.str()).status().code(),
            absl::StatusCode::kInvalidArgument);
  // CR LF line ends are fine.
  EXPECT_TRUE(ParseSweepYaml("name: x\r\nkind: sraven\r\n").ok());
}

}  // namespace
}  // namespace smoe::coordinator
