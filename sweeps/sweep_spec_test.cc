// Copyright 2026 SMoE Lab authors.
#include "sweeps/sweep_spec.h"

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::sweeps {
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
       "grid.topk: unknown parameter 'topk' for kind sraven (did you mean "
       "'top_k'?)"},
      {"name: x\nkind: sraven\nfixed:\n  atention: softmax\n",
       "fixed.atention: unknown parameter 'atention' for kind sraven (did you "
       "mean 'attention'?)"},
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
      // Issue 31 item 1: a warmup that does not end before the run.
      {"name: x\nkind: sraven\nfixed: {steps: 500, warmup: 1000}\n",
       "warmup=1000 must be smaller than steps=500"},
      {"name: x\nkind: sraven\ngrid:\n  warmup: [10, 200000]\n",
       "warmup=200000 must be smaller than steps=156250"},
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

// Issue 36 item 8: one large file must not cost seconds or gigabytes, and
// its error must fit in gRPC's metadata.
std::string SeedsFile(int n, absl::string_view seed_prefix = "") {
  std::string text = "name: big\nkind: sraven\nseeds:\n";
  for (int i = 0; i < n; ++i)
    absl::StrAppend(&text, "  - ", seed_prefix, i, "\n");
  return text;
}

double SecondsSince(absl::Time start) {
  return absl::ToDoubleSeconds(absl::Now() - start);
}

TEST(SweepSpecLimitsTest, ALargeFileIsRefusedByItsSizeBeforeParsing) {
  const std::string text = SeedsFile(300000);  // ~2.6 MB, as in the issue
  const absl::Time start = absl::Now();
  auto spec = ParseSweepYaml(text);
  const double took = SecondsSince(start);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(),
              HasSubstr(absl::StrCat("sweep file: ", text.size(),
                                     " bytes, more than max 1048576 bytes")));
  EXPECT_LT(took, 0.5);
}

TEST(SweepSpecLimitsTest, AListLongerThanMaxPointsIsNotRead) {
  ParseOptions o;
  o.max_points = 1000;
  o.max_bytes = int64_t{64} << 20;
  const absl::Time start = absl::Now();
  auto spec = ParseSweepYaml(SeedsFile(150000), o);
  const double took = SecondsSince(start);
  ASSERT_FALSE(spec.ok());
  const std::string msg(spec.status().message());
  EXPECT_THAT(msg, HasSubstr("seeds: 150000 values, more than max 1000"));
  // One problem, not one per seed.
  EXPECT_THAT(msg, Not(HasSubstr("problems")));
  // yaml-cpp's parse of the 1.2 MB text remains (about 2 s on a loaded
  // 2-core VM); the list itself is not read (its duplicate check was
  // quadratic: 300,000 seeds held the scheduler 13 s).
  EXPECT_LT(took, 15.0);

  auto axis = ParseSweepYaml(
      absl::StrCat("name: a\nkind: sraven\ngrid:\n  M: [",
                   absl::StrJoin(std::vector<int>(1001, 1), ", "), "]\n"),
      o);
  ASSERT_FALSE(axis.ok());
  EXPECT_THAT(axis.status().message(),
              HasSubstr("grid.M: 1001 values, more than max 1000"));
}

TEST(SweepSpecLimitsTest, ErrorListsAreTruncatedWithACount) {
  // 20,000 bad seeds: 20,000 problems, of which 50 are listed.
  const std::string text = SeedsFile(20000, "x");
  ASSERT_LT(text.size(), size_t{1} << 20);
  auto spec = ParseSweepYaml(text);
  ASSERT_FALSE(spec.ok());
  const std::string msg(spec.status().message());
  EXPECT_THAT(msg, HasSubstr("20000 problems:\n"));
  EXPECT_THAT(msg, HasSubstr("seeds[49]: expected an integer"));
  EXPECT_THAT(msg, Not(HasSubstr("seeds[50]:")));
  EXPECT_THAT(msg, HasSubstr("\n  ... and 19950 more problems"));
  // gRPC's default metadata limit is 8 KiB; the message goes in
  // grpc-message, percent-encoded.
  EXPECT_LT(msg.size(), size_t{4096}) << msg.size();
}

TEST(SweepSpecLimitsTest, ListedProblemsStayWithin4KiBInAll) {
  // 40 unknown parameters: each message lists the known ones (~600 bytes).
  std::string text = "name: a\nkind: sraven\nfixed:\n";
  for (int i = 0; i < 40; ++i) {
    absl::StrAppend(&text, "  unknown_parameter_", i, ": 1\n");
  }
  auto spec = ParseSweepYaml(text);
  ASSERT_FALSE(spec.ok());
  const std::string msg(spec.status().message());
  EXPECT_THAT(msg, HasSubstr("40 problems:\n"));
  EXPECT_THAT(msg, HasSubstr("more problems"));
  EXPECT_LT(msg.size(), size_t{4096 + 1024}) << msg.size();
}

// Issue 36: every size parameter within its own range still admitted a
// model of ~10^14 parameters; the product is bounded at 10^10.
TEST(SweepSpecLimitsTest, ModelsOfMoreThan1e10ParametersAreRefused) {
  auto huge = ParseSweepYaml(
      "name: a\nkind: sraven\nfixed: {width: 256, depth: 256, num_experts: "
      "256, top_k: 2}\n");
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(huge.status().message(),
              HasSubstr("depth=256, width=256, num_experts=256 make a model of "
                        "about 2.82e+14 parameters, more than 1e+10"));
  // The paper's sizes, and a large but plausible one, pass.
  EXPECT_TRUE(ParseSweepYaml(kDemo).ok());
  EXPECT_TRUE(ParseSweepYaml("name: a\nkind: sraven\nfixed: {width: 8, "
                             "depth: 24, num_experts: 64}\n")
                  .ok());
}

TEST(SweepSpecLimitsTest, LongValuesAreCutInMessages) {
  const std::string big(100000, 'a');
  auto spec = ParseSweepYaml(
      absl::StrCat("name: a\nkind: sraven\ngrid:\n  attention: [", big, "]\n"));
  ASSERT_FALSE(spec.ok());
  const std::string msg(spec.status().message());
  // Each listed problem is cut at 1 KiB, with its length.
  EXPECT_THAT(msg, HasSubstr("aaa... ("));
  EXPECT_THAT(msg, HasSubstr(" bytes)"));
  EXPECT_LT(msg.size(), size_t{2048});
}

TEST(SweepSpecLimitsTest, DuplicateKeysAreRefusedNamingKeyAndLines) {
  auto top = ParseSweepYaml("name: a\nkind: sraven\nseeds: [0]\nname: b\n");
  ASSERT_FALSE(top.ok());
  EXPECT_THAT(top.status().message(),
              HasSubstr("name: key given twice (line 1 and line 4)"));
  auto nested = ParseSweepYaml(
      "name: a\nkind: sraven\ngrid:\n  M: [1]\n  top_k: [1]\n  M: [2]\n");
  ASSERT_FALSE(nested.ok());
  EXPECT_THAT(nested.status().message(),
              HasSubstr("grid.M: key given twice (line 4 and line 6)"));
  auto fixed =
      ParseSweepYaml("name: a\nkind: sraven\nfixed: {steps: 10, steps: 20}\n");
  ASSERT_FALSE(fixed.ok());
  EXPECT_THAT(fixed.status().message(),
              HasSubstr("fixed.steps: key given twice"));
  // Stored sweeps (written before the check) still load.
  EXPECT_TRUE(
      ParseSweepYaml("name: a\nkind: sraven\nname: a\n", ParseOptions::Stored())
          .ok());
}

TEST(SweepSpecLimitsTest, ASecondYamlDocumentIsRefused) {
  auto spec =
      ParseSweepYaml("name: a\nkind: sraven\n---\nname: b\nkind: sraven\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(),
              HasSubstr("a second YAML document at line 4"));
  // A document end marker or a trailing empty document is not a second one.
  EXPECT_TRUE(ParseSweepYaml("name: a\nkind: sraven\n...\n").ok());
  EXPECT_TRUE(ParseSweepYaml("---\nname: a\nkind: sraven\n").ok());
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

// The rules are checked once per configuration; a failing one is counted and
// listed once per seed, as when every point (seed) was checked.
TEST(SweepSpecTest, PointRulesCountAFailingConfigurationOncePerSeed) {
  auto spec = ParseSweepYaml(
      "name: x\nkind: sraven\ngrid:\n  top_k: [9, 10, 11]\n"
      "fixed: {num_experts: 8}\nseeds: [0, 1]\n");
  ASSERT_FALSE(spec.ok());
  std::vector<std::string> lines;
  for (int k : {9, 9, 10, 10, 11}) {
    const absl::Status s = ValidateTrialParams(
        "sraven", nlohmann::json{{"num_experts", 8}, {"top_k", k}});
    ASSERT_FALSE(s.ok());
    lines.push_back(std::string(s.message()));
  }
  EXPECT_EQ(spec.status().message(),
            absl::StrCat("6 problems:\n  ", absl::StrJoin(lines, "\n  "),
                         "\n  params: 1 more grid points break the same "
                         "rules"));
}

TEST(SweepSpecTest, ManySeedsCheckEachConfigurationOnce) {
  std::vector<int> seeds(10000);
  for (int i = 0; i < 10000; ++i) seeds[static_cast<size_t>(i)] = i;
  const int64_t before = internal::ConfigurationsCheckedForTesting();
  auto spec = ParseSweepYaml(absl::StrCat(
      "name: x\nkind: sraven\ngrid:\n  top_k: [1, 2]\n"
      "  attention: [softmax, hyla]\nfixed: {num_experts: 8}\nseeds: [",
      absl::StrJoin(seeds, ", "), "]\n"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(CountPoints(*spec), 40000);
  EXPECT_EQ(internal::ConfigurationsCheckedForTesting() - before, 4);
  // Sampled axes: grid points x distinct draws.
  const int64_t before_sampled = internal::ConfigurationsCheckedForTesting();
  auto sampled = ParseSweepYaml(
      "name: y\nkind: sraven\ngrid:\n  top_k: [1, 2]\n"
      "sample:\n  width: {choice: [0.25, 0.5]}\n  lr: {loguniform: [1e-4, "
      "1e-2]}\nsamples: 3\nfixed: {num_experts: 8}\nseeds: [0, 1, 2, 3]\n");
  ASSERT_TRUE(sampled.ok()) << sampled.status();
  EXPECT_EQ(CountPoints(*sampled), 2 * 3 * 4);
  EXPECT_EQ(internal::ConfigurationsCheckedForTesting() - before_sampled, 6);
}

// ExpandGrid builds TrialId's canonical text per configuration: the same ids.
TEST(SweepSpecTest, ExpandGridIdsAreTrialIds) {
  auto spec = ParseSweepYaml(
      "name: ids\nkind: sraven\ngrid:\n  top_k: [1, 2]\n"
      "  attention: [softmax, hyla]\nsample:\n  lr: {loguniform: [1e-4, "
      "1e-2]}\nsamples: 2\nfixed: {num_experts: 8, width: 0.25}\n"
      "seeds: [0, 7, 2147483647]\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const std::vector<ExpandedTrial> points = ExpandGrid(*spec);
  ASSERT_EQ(points.size(), 24u);
  for (const ExpandedTrial& t : points) {
    EXPECT_EQ(t.trial_id, TrialId("ids", "sraven", t.params, t.seed));
  }
}

// Stored specs were checked at submit: a point that a later rule refuses
// does not stop the coordinator's restart (ParseOptions::check_points).
TEST(SweepSpecTest, StoredSpecsSkipThePointRules) {
  constexpr char kYaml[] =
      "name: x\nkind: sraven\ngrid:\n  top_k: [2, 9]\n"
      "fixed: {num_experts: 8}\nseeds: [0, 1]\n";
  EXPECT_FALSE(ParseSweepYaml(kYaml).ok());
  const int64_t before = internal::ConfigurationsCheckedForTesting();
  auto stored = ParseSweepYaml(kYaml, ParseOptions::Stored());
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(internal::ConfigurationsCheckedForTesting(), before);
  EXPECT_EQ(ExpandGrid(*stored).size(), 4u);
  // The per-value checks against the kind's table stay.
  auto unknown = ParseSweepYaml("name: x\nkind: sraven\ngrid:\n  nope: [1]\n",
                                ParseOptions::Stored());
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(),
              HasSubstr("unknown parameter 'nope'"));
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

// Issue 31 item 8: keep_final_checkpoint is a boolean, round-trips, and
// leaves the canonical YAML (and so the stored form) of sweeps without it
// unchanged; its trials hash as without it.
TEST(SweepSpecTest, KeepFinalCheckpointParsesAndRoundTrips) {
  auto plain = ParseSweepYaml(kDemo);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->keep_final_checkpoint);
  EXPECT_THAT(SweepSpecToYaml(*plain), Not(HasSubstr("keep_final_checkpoint")));
  auto kept =
      ParseSweepYaml(std::string(kDemo) + "keep_final_checkpoint: true\n");
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_TRUE(kept->keep_final_checkpoint);
  auto back = ParseSweepYaml(SweepSpecToYaml(*kept));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->keep_final_checkpoint);
  EXPECT_EQ(ExpandGrid(*kept)[0].trial_id, ExpandGrid(*plain)[0].trial_id);
  auto bad =
      ParseSweepYaml(std::string(kDemo) + "keep_final_checkpoint: yes\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("keep_final_checkpoint: 'yes' is not a boolean"));
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
}  // namespace smoe::sweeps

namespace smoe::sweeps {
namespace {

// Two inputs the fuzzer found on which yaml-cpp 0.7's LoadAll never returns
// (the check for a second document used it): parsing them ends, with an
// answer either way. A hang here is ctest's timeout.
TEST(SweepSpecLimitsTest, MalformedDocumentsThatHungLoadAllReturn) {
  const char* src = std::getenv("SMOE_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  for (const char* name : {"tests/fuzz/corpus/regress-loadall-hang-1.yaml",
                           "tests/fuzz/corpus/regress-loadall-hang-2.yaml"}) {
    std::ifstream in(std::string(src) + "/" + name);
    ASSERT_TRUE(in) << name;
    std::stringstream text;
    text << in.rdbuf();
    const auto spec = ParseSweepYaml(text.str());
    EXPECT_FALSE(spec.ok()) << name;  // malformed either way
  }
}

// The shipped examples must always parse.
TEST(SweepSpecTest, ShippedExamplesParse) {
  const char* src = std::getenv("SMOE_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  const std::pair<const char*, int64_t> files[] = {
      {"examples/sraven-demo.yaml", 16},
      {"examples/sraven-paper.yaml", 192},
      {"examples/skillmix-mixtral.yaml", 32},
      {"examples/sraven-paper-asha.yaml", 192},
      {"examples/sraven-paper-median.yaml", 192},
      {"examples/sraven-paper-refine.yaml", 192},
      {"examples/sraven-paper-refine-asha.yaml", 192},
      {"examples/sraven-k1to8-asha-seeds.yaml", 384},
      {"examples/command-sweep.yaml", 12}};
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
}  // namespace smoe::sweeps

namespace smoe::sweeps {
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
}  // namespace smoe::sweeps

namespace smoe::sweeps {
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

// ---- search: ----------------------------------------------------------------

constexpr char kStudyHead[] = R"(
name: study
kind: sraven
grid:
  M: [1, 2]
  top_k: [1, 2, 4, 8]
  attention: [softmax, hyla]
fixed: {num_experts: 8, steps: 900, device: cpu}
seeds: [0, 1, 2]
)";

absl::StatusOr<SweepSpec> WithSearch(const std::string& search) {
  return ParseSweepYaml(std::string(kStudyHead) + "search:\n" + search);
}

TEST(SweepSpecSearchTest, GridIsTheDefaultAndYamlIsUnchanged) {
  auto spec = ParseSweepYaml(kDemo);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->search.strategy, "grid");
  EXPECT_THAT(SweepSpecToYaml(*spec), Not(HasSubstr("search")));
  auto explicit_grid = WithSearch("  strategy: grid\n");
  ASSERT_TRUE(explicit_grid.ok()) << explicit_grid.status();
  EXPECT_EQ(explicit_grid->search, SearchSpec{});
}

TEST(SweepSpecSearchTest, ParsesAsha) {
  auto spec = WithSearch(
      "  strategy: asha\n  metric: ood_acc\n  min_steps: 100\n"
      "  reduction: 3\n  max_steps: 900\n  group_by: [M, attention]\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const SearchSpec& s = spec->search;
  EXPECT_EQ(s.strategy, "asha");
  EXPECT_EQ(s.metric, "ood_acc");
  EXPECT_EQ(s.mode, "max");
  EXPECT_EQ(s.min_steps, 100);
  EXPECT_EQ(s.reduction, 3);
  EXPECT_EQ(s.max_steps, 900);
  EXPECT_EQ(s.group_by, (std::vector<std::string>{"M", "attention"}));
  // Round trip.
  auto again = ParseSweepYaml(SweepSpecToYaml(*spec));
  ASSERT_TRUE(again.ok()) << again.status() << SweepSpecToYaml(*spec);
  EXPECT_EQ(again->search, s);
}

TEST(SweepSpecSearchTest, AshaDefaultsMaxStepsAndModeFromTheMetric) {
  auto spec =
      WithSearch("  strategy: asha\n  metric: eval/loss\n  min_steps: 50\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->search.max_steps, 900);  // fixed.steps
  EXPECT_EQ(spec->search.mode, "min");     // a loss
  EXPECT_EQ(spec->search.reduction, 3);
  EXPECT_TRUE(spec->search.group_by.empty());
}

TEST(SweepSpecSearchTest, ParsesMedianAndRefineWithRoundTrip) {
  auto median = WithSearch(
      "  {strategy: median, metric: ood_acc, mode: max, min_steps: 200,"
      " group_by: M}\n");
  ASSERT_TRUE(median.ok()) << median.status();
  EXPECT_EQ(median->search.strategy, "median");
  EXPECT_EQ(median->search.min_steps, 200);
  EXPECT_EQ(median->search.group_by, (std::vector<std::string>{"M"}));
  auto refine = WithSearch(
      "  strategy: refine\n  metric: ood_acc\n  axis: top_k\n"
      "  bounds: [1, 8]\n  group_by: [M, attention]\n  budget: 60\n"
      "  add_seeds: 2\n");
  ASSERT_TRUE(refine.ok()) << refine.status();
  const SearchSpec& r = refine->search;
  EXPECT_EQ(r.axis, "top_k");
  EXPECT_EQ(r.bounds_lo, 1);
  EXPECT_EQ(r.bounds_hi, 8);
  EXPECT_EQ(r.budget, 60);
  EXPECT_EQ(r.add_seeds, 2);
  for (const SweepSpec* spec : {&*median, &*refine}) {
    auto again = ParseSweepYaml(SweepSpecToYaml(*spec));
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->search, spec->search);
    // Same trials as the grid they start from.
    EXPECT_EQ(ExpandGrid(*again).size(), 48u);
  }
  // Refine's bounds default to the axis' grid range.
  auto bare = WithSearch("  {strategy: refine, metric: ood_acc, axis: M}\n");
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ(bare->search.bounds_lo, 1);
  EXPECT_EQ(bare->search.bounds_hi, 2);
  EXPECT_EQ(bare->search.budget, 0);
}

TEST(SweepSpecSearchTest, ParsesRefineWithAshaEarlyStopAndRoundTrips) {
  auto spec = WithSearch(
      "  strategy: refine\n  metric: ood_acc\n  axis: top_k\n"
      "  group_by: [M, attention]\n  early_stop: asha\n  min_steps: 100\n"
      "  reduction: 3\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const SearchSpec& s = spec->search;
  EXPECT_EQ(s.strategy, "refine");
  EXPECT_EQ(s.early_stop, "asha");
  EXPECT_EQ(s.min_steps, 100);
  EXPECT_EQ(s.reduction, 3);
  EXPECT_EQ(s.max_steps, 900);  // fixed.steps
  const std::string yaml = SweepSpecToYaml(*spec);
  EXPECT_THAT(yaml, HasSubstr("early_stop: asha"));
  auto again = ParseSweepYaml(yaml);
  ASSERT_TRUE(again.ok()) << again.status() << yaml;
  EXPECT_EQ(again->search, s);
  // early_stop: none is refine alone, written without the key.
  auto none = WithSearch(
      "  {strategy: refine, metric: ood_acc, axis: top_k, early_stop: none}\n");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->search.early_stop, "");
  EXPECT_THAT(SweepSpecToYaml(*none), Not(HasSubstr("early_stop")));
}

TEST(SweepSpecSearchTest, SmoothEvalsAndGpuHourBudgetRoundTrip) {
  auto asha = WithSearch(
      "  {strategy: asha, metric: ood_acc, min_steps: 100, smooth_evals: 3,"
      " budget_gpu_hours: 12.5}\n");
  ASSERT_TRUE(asha.ok()) << asha.status();
  EXPECT_EQ(asha->search.smooth_evals, 3);
  EXPECT_DOUBLE_EQ(asha->search.budget_gpu_hours, 12.5);
  auto refine = WithSearch(
      "  {strategy: refine, metric: ood_acc, axis: top_k, early_stop: asha,"
      " min_steps: 100, smooth_evals: 5, budget_gpu_hours: 0.1}\n");
  ASSERT_TRUE(refine.ok()) << refine.status();
  EXPECT_EQ(refine->search.smooth_evals, 5);
  auto median = WithSearch(
      "  {strategy: median, metric: ood_acc, budget_gpu_hours: 7}\n");
  ASSERT_TRUE(median.ok()) << median.status();
  EXPECT_DOUBLE_EQ(median->search.budget_gpu_hours, 7);
  for (const SweepSpec* spec : {&*asha, &*refine, &*median}) {
    const std::string yaml = SweepSpecToYaml(*spec);
    auto again = ParseSweepYaml(yaml);
    ASSERT_TRUE(again.ok()) << again.status() << yaml;
    EXPECT_EQ(again->search, spec->search) << yaml;
  }
  EXPECT_THAT(SweepSpecToYaml(*asha), HasSubstr("smooth_evals: 3"));
  EXPECT_THAT(SweepSpecToYaml(*asha), HasSubstr("budget_gpu_hours: 12.5"));
  // Defaults (1, 0) are not written: older stored sweeps read the same.
  auto plain = WithSearch("  {strategy: asha, metric: a, min_steps: 10}\n");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->search.smooth_evals, 1);
  EXPECT_EQ(plain->search.budget_gpu_hours, 0);
  EXPECT_THAT(SweepSpecToYaml(*plain), Not(HasSubstr("smooth_evals")));
  EXPECT_THAT(SweepSpecToYaml(*plain), Not(HasSubstr("budget_gpu_hours")));
}

TEST(SweepSpecSearchTest, AggregateSeedsAndKeepNeighborsRoundTrip) {
  auto asha = WithSearch(
      "  {strategy: asha, metric: ood_acc, min_steps: 100, aggregate_seeds:"
      " true, keep_neighbors: top_k, group_by: [M, attention]}\n");
  ASSERT_TRUE(asha.ok()) << asha.status();
  EXPECT_TRUE(asha->search.aggregate_seeds);
  EXPECT_EQ(asha->search.keep_neighbors, "top_k");
  const std::string yaml = SweepSpecToYaml(*asha);
  EXPECT_THAT(yaml, HasSubstr("aggregate_seeds: true"));
  EXPECT_THAT(yaml, HasSubstr("keep_neighbors: top_k"));
  auto again = ParseSweepYaml(yaml);
  ASSERT_TRUE(again.ok()) << again.status() << yaml;
  EXPECT_EQ(again->search, asha->search) << yaml;
  // false is the default and is not written back.
  auto off = WithSearch(
      "  {strategy: asha, metric: a, min_steps: 10, aggregate_seeds: "
      "false}\n");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->search.aggregate_seeds);
  EXPECT_THAT(SweepSpecToYaml(*off), Not(HasSubstr("aggregate_seeds")));
  EXPECT_THAT(SweepSpecToYaml(*off), Not(HasSubstr("keep_neighbors")));
  EXPECT_NE(off->search, asha->search);
  // refine's tolerance (also with early_stop: asha).
  for (const char* extra : {"", ", early_stop: asha, min_steps: 100"}) {
    auto refine = WithSearch(absl::StrCat(
        "  {strategy: refine, metric: ood_acc, axis: top_k, tolerance: "
        "0.005",
        extra, "}\n"));
    ASSERT_TRUE(refine.ok()) << refine.status();
    EXPECT_DOUBLE_EQ(refine->search.tolerance, 0.005);
    const std::string ryaml = SweepSpecToYaml(*refine);
    EXPECT_THAT(ryaml, HasSubstr("tolerance: 0.005"));
    auto back = ParseSweepYaml(ryaml);
    ASSERT_TRUE(back.ok()) << back.status() << ryaml;
    EXPECT_EQ(back->search, refine->search) << ryaml;
  }
}

TEST(SweepSpecSearchTest, BadSearchBlocksNameTheFieldAndValue) {
  struct Case {
    std::string search;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"  strategy: hyperband\n",
       "search.strategy: 'hyperband' is not one of {grid, asha, median, "
       "refine}"},
      {"  strategy: grid\n  metric: ood_acc\n",
       "search.metric: not used by strategy grid"},
      {"  {strategy: asha, metric: a, min_steps: 10, patience: 3}\n",
       "unknown key 'search.patience' (allowed for asha: strategy, metric"},
      {"  {strategy: refine, metric: a, axis: top_k, reduction: 3}\n",
       "search.reduction: not used by strategy refine"},
      {"  {strategy: asha, min_steps: 10}\n",
       "search.metric: required for strategy asha"},
      {"  {strategy: asha, metric: a, min_steps: 10, mode: maximum}\n",
       "search.mode: 'maximum' is not one of {max, min}"},
      {"  {strategy: asha, metric: a}\n",
       "search.min_steps: required for strategy asha"},
      {"  {strategy: asha, metric: a, min_steps: 10, aggregate_seeds: "
       "maybe}\n",
       "search.aggregate_seeds: 'maybe' is not a boolean"},
      {"  {strategy: asha, metric: a, min_steps: 10, aggregate_seeds: [1]}\n",
       "search.aggregate_seeds: '(not a scalar)' is not a boolean"},
      {"  {strategy: asha, metric: a, min_steps: 10, keep_neighbors: k}\n",
       "search.keep_neighbors: 'k' is not a grid axis (axes: M, top_k, "
       "attention)"},
      {"  {strategy: asha, metric: a, min_steps: 10, keep_neighbors: "
       "attention}\n",
       "search.keep_neighbors: attention has the non-integer value "
       "\"softmax\""},
      {"  {strategy: asha, metric: a, min_steps: 10, keep_neighbors: M, "
       "group_by: [M]}\n",
       "search.keep_neighbors: 'M' is also in group_by"},
      {"  {strategy: refine, metric: a, axis: top_k, tolerance: -0.1}\n",
       "search.tolerance: -0.1 is not a number >= 0 in the metric's units"},
      {"  {strategy: refine, metric: a, axis: top_k, tolerance: half}\n",
       "search.tolerance: \"half\" is not a number >= 0"},
      {"  {strategy: asha, metric: a, min_steps: 10, tolerance: 0.01}\n",
       "search.tolerance: not used by strategy asha"},
      {"  {strategy: median, metric: a, aggregate_seeds: true}\n",
       "search.aggregate_seeds: not used by strategy median"},
      {"  {strategy: refine, metric: a, axis: top_k, keep_neighbors: "
       "top_k}\n",
       "search.keep_neighbors: not used by strategy refine"},
      {"  {strategy: asha, metric: a, min_steps: 0}\n",
       "search.min_steps: value 0 out of range [1, "},
      {"  {strategy: asha, metric: a, min_steps: 10, reduction: 1}\n",
       "search.reduction: value 1 out of range [2, 1000]"},
      {"  {strategy: asha, metric: a, min_steps: 10, reduction: 2.5}\n",
       "search.reduction: expected an integer, got 2.5"},
      {"  {strategy: asha, metric: a, min_steps: 10, max_steps: 1000}\n",
       "search.max_steps: 1000 must equal the trials' steps (900)"},
      {"  {strategy: asha, metric: a, min_steps: 1000}\n",
       "search.min_steps: 1000 is above max_steps 900"},
      {"  {strategy: median, metric: a, min_steps: 900}\n",
       "search.min_steps: 900 leaves no step to stop at"},
      {"  {strategy: asha, metric: a, min_steps: 10, group_by: [M, width]}\n",
       "search.group_by[1]: 'width' is not a grid axis (axes: M, top_k, "
       "attention)"},
      {"  {strategy: asha, metric: a, min_steps: 10, group_by: [M, M]}\n",
       "search.group_by[1]: duplicate axis 'M'"},
      {"  {strategy: refine, metric: a}\n", "search.axis: required"},
      {"  {strategy: refine, metric: a, axis: experts}\n",
       "search.axis: 'experts' is not a grid axis"},
      {"  {strategy: refine, metric: a, axis: attention}\n",
       "search.axis: attention has the non-integer value \"softmax\""},
      {"  {strategy: refine, metric: a, axis: top_k, group_by: [top_k]}\n",
       "search.group_by: contains the refined axis 'top_k'"},
      {"  {strategy: refine, metric: a, axis: top_k, bounds: [2, 8]}\n",
       "search.bounds: [2, 8] leaves out grid.top_k values (1..8)"},
      {"  {strategy: refine, metric: a, axis: top_k, bounds: [8, 1]}\n",
       "search.bounds: [8, 1] is empty (lo > hi)"},
      {"  {strategy: refine, metric: a, axis: top_k, bounds: 8}\n",
       "search.bounds: expected [lo, hi]"},
      {"  {strategy: refine, metric: a, axis: top_k, bounds: [1, 9]}\n",
       "search.bounds: top_k=9 is not a valid trial: params: top_k=9 is "
       "larger than num_experts=8"},
      {"  {strategy: refine, metric: a, axis: top_k, budget: 47}\n",
       "search.budget: 47 is below the initial grid's 48 trials"},
      {"  {strategy: refine, metric: a, axis: top_k, add_seeds: -1}\n",
       "search.add_seeds: value -1 out of range [0, 1000]"},
      {"  [asha]\n", "search: expected a map"},
      {"  {strategy: refine, metric: a, axis: top_k, early_stop: hyperband}\n",
       "search.early_stop: 'hyperband' is not one of {none, asha}"},
      {"  {strategy: refine, metric: a, axis: top_k, early_stop: asha}\n",
       "search.min_steps: required for early_stop: asha"},
      {"  {strategy: refine, metric: a, axis: top_k, min_steps: 10}\n",
       "search.min_steps: not used by strategy refine (its keys: strategy, "
       "metric, mode, axis, bounds, group_by, budget, budget_gpu_hours, "
       "add_seeds, tolerance, early_stop); with early_stop: asha refine "
       "takes "
       "min_steps"},
      {"  {strategy: asha, metric: a, min_steps: 10, smooth_evals: 0}\n",
       "search.smooth_evals: value 0 out of range [1, 1000]"},
      {"  {strategy: asha, metric: a, min_steps: 10, smooth_evals: 2.5}\n",
       "search.smooth_evals: expected an integer, got 2.5"},
      {"  {strategy: median, metric: a, smooth_evals: 3}\n",
       "search.smooth_evals: not used by strategy median"},
      {"  {strategy: refine, metric: a, axis: top_k, smooth_evals: 3}\n",
       "search.smooth_evals: not used by strategy refine"},
      {"  {strategy: asha, metric: a, min_steps: 10, budget_gpu_hours: -1}\n",
       "search.budget_gpu_hours: -1 is not a number of hours in [0, 1e9]"},
      {"  {strategy: asha, metric: a, min_steps: 10, budget_gpu_hours: lots}\n",
       "search.budget_gpu_hours: \"lots\" is not a number of hours"},
      {"  {strategy: grid, budget_gpu_hours: 3}\n",
       "search.budget_gpu_hours: not used by strategy grid"},
      {"  {strategy: refine, metric: a, axis: top_k, early_stop: asha,"
       " min_steps: 10, reduction: 1}\n",
       "search.reduction: value 1 out of range [2, 1000]"},
      {"  {strategy: refine, metric: a, axis: top_k, early_stop: asha,"
       " min_steps: 10, max_steps: 1000}\n",
       "search.max_steps: 1000 must equal the trials' steps (900)"},
      {"  {strategy: asha, metric: a, min_steps: 10, early_stop: asha}\n",
       "search.early_stop: not used by strategy asha"},
  };
  for (const Case& c : cases) {
    auto spec = WithSearch(c.search);
    ASSERT_FALSE(spec.ok()) << c.search;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(spec.status().message()), HasSubstr(c.expect))
        << c.search;
  }
}

TEST(SweepSpecSearchTest, StepsOnAGridAxisOrAKindWithoutStepsIsRefused) {
  auto axis = ParseSweepYaml(
      "name: s\nkind: sraven\ngrid: {top_k: [1, 2], steps: [10, 20]}\n"
      "fixed: {device: cpu}\n"
      "search: {strategy: asha, metric: a, min_steps: 5}\n");
  ASSERT_FALSE(axis.ok());
  EXPECT_THAT(std::string(axis.status().message()),
              HasSubstr("asha needs one training length: steps is a grid "
                        "axis (give it in fixed)"));
  auto refine = ParseSweepYaml(
      "name: s\nkind: sraven\ngrid: {top_k: [1, 2], steps: [10, 20]}\n"
      "fixed: {device: cpu}\n"
      "search: {strategy: refine, metric: a, axis: top_k, early_stop: asha,"
      " min_steps: 5}\n");
  ASSERT_FALSE(refine.ok());
  EXPECT_THAT(std::string(refine.status().message()),
              HasSubstr("search.early_stop: asha needs one training length: "
                        "steps is a grid axis"));
  auto skillmix = ParseSweepYaml(
      "name: s\nkind: skillmix\ngrid: {ept: [1, 2]}\nfixed: {device: cpu}\n"
      "search: {strategy: median, metric: a}\n");
  ASSERT_FALSE(skillmix.ok());
  EXPECT_THAT(std::string(skillmix.status().message()),
              HasSubstr("median needs one training length: kind skillmix has "
                        "no steps"));
}

TEST(SweepSpecSearchTest, SearchProblemsJoinTheFileReport) {
  auto spec = WithSearch(
      "  {strategy: asha, metric: a, min_steps: 10, reduction: 1, "
      "group_by: [width]}\n");
  ASSERT_FALSE(spec.ok());
  const std::string msg(spec.status().message());
  EXPECT_THAT(msg, HasSubstr("2 problems:"));
  EXPECT_THAT(msg, HasSubstr("search.reduction"));
  EXPECT_THAT(msg, HasSubstr("search.group_by[0]"));
}

}  // namespace smoe::sweeps
