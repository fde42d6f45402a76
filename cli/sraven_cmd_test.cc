// Copyright 2026 SMoE Lab authors.
#include "cli/sraven_cmd.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "worker/data/sraven/sraven.h"

namespace smoe::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result RunCli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = RunSravenCommand(args, out, err);
  return {code, out.str(), err.str()};
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

std::vector<int> Flat(const nlohmann::json& j) {
  std::vector<int> out;
  if (j.is_array()) {
    for (const auto& e : j) {
      const std::vector<int> sub = Flat(e);
      out.insert(out.end(), sub.begin(), sub.end());
    }
  } else {
    out.push_back(j.get<int>());
  }
  return out;
}

TEST(SravenCmdTest, JsonLinesHaveRequiredKeysAndMatchTheGenerator) {
  for (const char* split : {"train", "test", "ood", "val"}) {
    const Result r = RunCli({"sample", "--M", "4", "--n", "5", "--split", split,
                             "--seed", "0", "--json"});
    ASSERT_EQ(r.code, 0) << r.err;
    const std::vector<std::string> lines = Lines(r.out);
    ASSERT_EQ(lines.size(), 5u);
    sraven::SravenConfig config;
    const sraven::Generator gen = *sraven::Generator::Create(config);
    for (size_t i = 0; i < lines.size(); ++i) {
      const nlohmann::json j = nlohmann::json::parse(lines[i], nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << lines[i];
      for (const char* key : {"M", "F", "split", "rules", "grid", "permutation",
                              "panels", "answer"}) {
        EXPECT_TRUE(j.contains(key)) << key;
      }
      EXPECT_EQ(j["M"], 4);
      EXPECT_EQ(j["F"], 8);
      EXPECT_EQ(j["split"], split);
      // Shapes: grid/panels [3][3][4], permutation [3][4].
      ASSERT_EQ(j["grid"].size(), 3u);
      ASSERT_EQ(j["grid"][2].size(), 3u);
      ASSERT_EQ(j["grid"][2][1].size(), 4u);
      ASSERT_EQ(j["panels"][1][2].size(), 4u);
      ASSERT_EQ(j["permutation"].size(), 3u);
      ASSERT_EQ(j["permutation"][0].size(), 4u);
      EXPECT_EQ(j["answer"], j["panels"][2][2]);
      // panels[r][c][s] = grid[r][c][permutation[c][s]].
      for (int row = 0; row < 3; ++row) {
        for (int c = 0; c < 3; ++c) {
          for (int s = 0; s < 4; ++s) {
            const int f = j["permutation"][c][s];
            EXPECT_EQ(j["panels"][row][c][s], j["grid"][row][c][f]);
          }
        }
      }
      const sraven::Problem p =
          gen.Sample(*sraven::ParseSplit(split), 0, static_cast<int>(i));
      EXPECT_EQ(j["rules"].get<std::vector<int>>(), p.rules);
      EXPECT_EQ(Flat(j["grid"]), p.grid);
      EXPECT_EQ(Flat(j["permutation"]), p.permutation);
      EXPECT_EQ(Flat(j["panels"]), p.panels);
      EXPECT_EQ(j["answer"].get<std::vector<int>>(), p.answer);
    }
  }
}

TEST(SravenCmdTest, BatchFlagSelectsTheBatch) {
  const Result r = RunCli({"sample", "--n=2", "--batch=7", "--json", "--M=2",
                           "--seed=5", "--split=test"});
  ASSERT_EQ(r.code, 0) << r.err;
  sraven::SravenConfig config;
  config.num_features = 2;
  config.seed = 5;
  const sraven::Generator gen = *sraven::Generator::Create(config);
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const nlohmann::json j = nlohmann::json::parse(lines[i]);
    EXPECT_EQ(j["batch"], 7);
    EXPECT_EQ(j["index"], i);
    EXPECT_EQ(Flat(j["panels"]), gen.Sample(sraven::Split::kTest, 7, i).panels);
  }
}

TEST(SravenCmdTest, SharedStreamMakesTestEqualTrain) {
  const auto panels = [](const char* split, bool shared) {
    std::vector<std::string> args = {"sample", "--n",     "4",
                                     "--json", "--split", split};
    if (shared) args.push_back("--shared-stream");
    const Result r = RunCli(args);
    EXPECT_EQ(r.code, 0) << r.err;
    std::vector<std::vector<int>> out;
    for (const std::string& line : Lines(r.out)) {
      const nlohmann::json j = nlohmann::json::parse(line);
      EXPECT_EQ(j["stream"], shared ? "shared" : "independent");
      out.push_back(Flat(j["panels"]));
    }
    return out;
  };
  EXPECT_EQ(panels("train", true), panels("test", true));
  EXPECT_NE(panels("train", false), panels("test", false));
  EXPECT_EQ(panels("train", false), panels("train", true));
}

TEST(SravenCmdTest, NoPermuteGivesIdentityPermutations) {
  const Result r = RunCli({"sample", "--n", "3", "--json", "--no-permute"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const std::string& line : Lines(r.out)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(j["permutation"][c].get<std::vector<int>>(),
                (std::vector<int>{0, 1, 2, 3}));
    }
    EXPECT_EQ(j["panels"], j["grid"]);
  }
}

TEST(SravenCmdTest, GridOutputIsReadable) {
  const Result r = RunCli({"sample", "--M", "4", "--n", "2", "--seed", "0"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("problem 0"));
  EXPECT_THAT(r.out, HasSubstr("problem 1"));
  EXPECT_THAT(r.out, Not(HasSubstr("problem 2")));
  EXPECT_THAT(r.out, HasSubstr("split=train"));
  EXPECT_THAT(r.out, HasSubstr("rules (feature: rule):"));
  EXPECT_THAT(r.out, HasSubstr("permutation (column: slot -> feature):"));
  EXPECT_THAT(r.out, HasSubstr("row 2"));
  EXPECT_THAT(r.out, HasSubstr("col 2"));
  EXPECT_THAT(r.out, HasSubstr("answer: "));
  EXPECT_TRUE(r.err.empty());

  // The rule names, permutation and the marked answer panel of problem 0.
  sraven::SravenConfig config;
  const sraven::Problem p =
      sraven::Generator::Create(config)->Sample(sraven::Split::kTrain, 0, 0);
  EXPECT_THAT(r.out,
              HasSubstr(std::string("f0=") + sraven::RuleName(p.rules[0])));
  EXPECT_THAT(r.out,
              HasSubstr(std::string("f3=") + sraven::RuleName(p.rules[3])));
  std::string col0 = "col0=[";
  for (int s = 0; s < 4; ++s) {
    col0 += (s ? " " : "") + std::to_string(p.PermAt(0, s));
  }
  EXPECT_THAT(r.out, HasSubstr(col0 + "]"));
  std::string answer_panel = "[";
  for (int s = 0; s < 4; ++s) {
    answer_panel += (s ? " " : "") + std::to_string(p.answer[s]);
  }
  EXPECT_THAT(r.out, HasSubstr(answer_panel + "]*"));
}

TEST(SravenCmdTest, LatentsListsTheSplit) {
  const Result ood = RunCli({"latents", "--M", "4", "--split", "ood"});
  ASSERT_EQ(ood.code, 0) << ood.err;
  EXPECT_EQ(Lines(ood.out).size(), 82u);
  const Result train = RunCli({"latents", "--M", "4"});
  ASSERT_EQ(train.code, 0) << train.err;
  EXPECT_EQ(Lines(train.out).size(), 248u);
  const Result r3 = RunCli({"latents", "--M", "2", "--num-rules", "3"});
  ASSERT_EQ(r3.code, 0);
  // C(4, 2) = 6 latents, floor(1.5) = 1 held out.
  EXPECT_EQ(Lines(r3.out).size(), 5u);
}

TEST(SravenCmdTest, HelpExitsZero) {
  const Result r = RunCli({"sample", "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("Usage: smoe sraven sample"));
  EXPECT_THAT(r.out, HasSubstr("--shared-stream"));
}

TEST(SravenCmdTest, BadFlagsExit64NamingFlagAndValue) {
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> needles;
  };
  const Case cases[] = {
      {{}, {"smoe sraven: a subcommand is required: one of sample, latents"}},
      {{"smaple"},
       {"smoe sraven: 'smaple' is not a subcommand: one of sample, latents"}},
      {{"sample", "--M", "9"}, {"--M: '9' (must be in 1..8)"}},
      {{"sample", "--M", "0"}, {"--M: '0'"}},
      {{"sample", "--M=four"}, {"--M: 'four' (expected an integer)"}},
      {{"sample", "--n", "-1"}, {"--n: '-1'"}},
      {{"sample", "--split", "validation"},
       {"--split: 'validation' (one of train, test, ood, val)"}},
      {{"sample", "--seed", "-3"}, {"--seed: '-3'"}},
      {{"sample", "--batch", "x"}, {"--batch: 'x'"}},
      {{"sample", "--num-rules", "12"}, {"--num-rules: '12'"}},
      {{"sample", "--bogus", "1"}, {"--bogus", "not expected"}},
      {{"sample", "--M"}, {"--M", "missing"}},
      {{"sample", "--json=yes"}, {"json", "disallowed flag override"}},
      {{"sample", "stray"}, {"stray", "not expected"}},
      {{"latents", "--json"}, {"--json", "not expected"}},
      // R = 1: one latent, none held out, so the OOD split is empty.
      {{"sample", "--num-rules", "1", "--split", "ood"}, {"--split=ood"}},
  };
  for (const Case& tc : cases) {
    const Result r = RunCli(tc.args);
    EXPECT_EQ(r.code, 64) << testing::PrintToString(tc.args);
    EXPECT_TRUE(r.out.empty());
    for (const std::string& needle : tc.needles) {
      EXPECT_THAT(r.err, HasSubstr(needle)) << testing::PrintToString(tc.args);
    }
  }
}

// ---------------------------------------------------------------------------
// Golden data for worker/data/sraven/testdata. The generator's own test
// (sraven_test) checks it against Generator::Sample; this one checks that the
// CLI prints exactly these lines. SMOE_UPDATE_GOLDEN=1 rewrites the files.

std::string TestdataDir() {
  const char* dir = std::getenv("SMOE_SOURCE_DIR");
  return std::string(dir != nullptr ? dir : ".") +
         "/worker/data/sraven/testdata";
}

std::string GoldenJsonl() {
  const std::vector<std::vector<std::string>> runs = {
      {"sample", "--M", "4", "--seed", "0", "--split", "train", "--n", "4"},
      {"sample", "--M", "4", "--seed", "0", "--split", "test", "--n", "3"},
      {"sample", "--M", "4", "--seed", "0", "--split", "ood", "--n", "3"},
      {"sample", "--M", "4", "--seed", "0", "--split", "test", "--n", "2",
       "--shared-stream"},
      {"sample", "--M", "2", "--seed", "1", "--split", "ood", "--n", "2",
       "--batch", "5"},
      {"sample", "--M", "8", "--seed", "2", "--split", "train", "--n", "1",
       "--batch", "156249"},
  };
  std::string all;
  for (std::vector<std::string> args : runs) {
    args.push_back("--json");
    const Result r = RunCli(args);
    EXPECT_EQ(r.code, 0) << r.err;
    all += r.out;
  }
  return all;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SravenGoldenTest, CliOutputMatchesTestdata) {
  const std::string jsonl = GoldenJsonl();
  const Result ood =
      RunCli({"latents", "--M", "4", "--seed", "0", "--split", "ood"});
  ASSERT_EQ(ood.code, 0);
  const char* update = std::getenv("SMOE_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream golden(TestdataDir() + "/golden.jsonl");
    std::ofstream ood_file(TestdataDir() + "/ood_seed0_m4.txt");
    ASSERT_TRUE(golden.good() && ood_file.good()) << "cannot write testdata";
    golden << jsonl;
    ood_file << ood.out;
    GTEST_SKIP() << "rewrote " << TestdataDir();
  }
  EXPECT_EQ(ReadFile(TestdataDir() + "/golden.jsonl"), jsonl);
  EXPECT_EQ(ReadFile(TestdataDir() + "/ood_seed0_m4.txt"), ood.out);
}

}  // namespace
}  // namespace smoe::cli
