// Copyright 2026 SMoE Lab authors.
#include "worker/data/sraven/sraven.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::sraven {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ---------------------------------------------------------------------------
// An independent checker of docs/sraven.md 1.1, written from the rule table,
// not from sraven.cc: does one feature's 3x3 grid v[r][c] obey `rule`?

int PyMod(int x, int n) { return ((x % n) + n) % n; }

bool RowObeys(int rule, int F, int a, int b, int c) {
  switch (rule) {
    case 0:
      return a == b && b == c;
    case 1:
      return b == PyMod(a + 1, F) && c == PyMod(a + 2, F);
    case 2:
      return b == PyMod(a + 2, F) && c == PyMod(a + 4, F);
    case 3:
      return b == PyMod(a - 1, F) && c == PyMod(a - 2, F);
    case 4:
      return b == PyMod(a - 2, F) && c == PyMod(a - 4, F);
    case 5:
      return c == PyMod(a + b, F);
    case 6:
      return c == PyMod(a - b, F);
    case 7:
      return a != b && b != c && a != c;
    default:
      return false;
  }
}

// Returns "" when the grid obeys the rule, else a description.
std::string CheckFeatureGrid(int rule, int F, const int v[3][3]) {
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) {
      if (v[r][c] < 0 || v[r][c] >= F) return "value out of range";
    }
    if (!RowObeys(rule, F, v[r][0], v[r][1], v[r][2])) {
      return "row " + std::to_string(r) + " breaks rule " +
             std::to_string(rule);
    }
  }
  if (rule == 7) {
    // One 3-symbol set per grid, shared by all rows.
    const std::set<int> row0 = {v[0][0], v[0][1], v[0][2]};
    for (int r = 1; r < 3; ++r) {
      if (std::set<int>{v[r][0], v[r][1], v[r][2]} != row0) {
        return "distribute-three rows use different symbol sets";
      }
    }
  }
  return "";
}

// Checks every invariant of one problem; returns "" when all hold.
std::string CheckProblem(const Generator& gen, Split split, const Problem& p) {
  const int M = gen.config().num_features;
  const int F = gen.config().num_values;
  if (p.M != M || p.F != F) return "M/F mismatch";
  if (static_cast<int>(p.rules.size()) != M ||
      static_cast<int>(p.grid.size()) != 9 * M ||
      static_cast<int>(p.permutation.size()) != 3 * M ||
      static_cast<int>(p.panels.size()) != 9 * M ||
      static_cast<int>(p.answer.size()) != M) {
    return "bad sizes";
  }
  // The rules are the latent and it belongs to the split.
  if (p.latent_id < 0 || p.latent_id >= gen.num_latents_total()) {
    return "bad latent id";
  }
  if (p.rules != gen.all_latents()[p.latent_id]) return "rules != latent";
  if (!std::is_sorted(p.rules.begin(), p.rules.end())) return "rules unsorted";
  if (gen.IsOod(p.latent_id) != (split == Split::kOod)) {
    return "latent from the wrong split";
  }
  for (int j = 0; j < M; ++j) {
    if (p.rules[j] < 0 || p.rules[j] >= gen.config().num_rules) {
      return "rule outside the pool";
    }
    int v[3][3];
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) v[r][c] = p.grid[(r * 3 + c) * M + j];
    }
    std::string why = CheckFeatureGrid(p.rules[j], F, v);
    if (!why.empty()) return "feature " + std::to_string(j) + ": " + why;
  }
  // Each column's permutation is a permutation of 0..M-1.
  for (int c = 0; c < 3; ++c) {
    std::vector<int> pi(p.permutation.begin() + c * M,
                        p.permutation.begin() + (c + 1) * M);
    std::sort(pi.begin(), pi.end());
    for (int s = 0; s < M; ++s) {
      if (pi[s] != s) return "column permutation is not a permutation";
    }
    if (!gen.config().permute_features) {
      for (int s = 0; s < M; ++s) {
        if (p.permutation[c * M + s] != s) return "unpermuted run permuted";
      }
    }
  }
  // panels[r][c][s] == grid[r][c][perm[c][s]], the same perm down a column.
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) {
      for (int s = 0; s < M; ++s) {
        const int feature = p.permutation[c * M + s];
        if (p.panels[(r * 3 + c) * M + s] !=
            p.grid[(r * 3 + c) * M + feature]) {
          return "panels != permuted grid";
        }
      }
    }
  }
  for (int s = 0; s < M; ++s) {
    if (p.answer[s] != p.panels[8 * M + s]) return "answer != panels[2][2]";
  }
  return "";
}

Generator MustCreate(const SravenConfig& config) {
  absl::StatusOr<Generator> gen = Generator::Create(config);
  EXPECT_TRUE(gen.ok()) << gen.status();
  return *std::move(gen);
}

SravenConfig Config(int M, uint64_t seed = 0) {
  SravenConfig c;
  c.num_features = M;
  c.seed = seed;
  return c;
}

bool SameProblem(const Problem& a, const Problem& b) {
  return a.M == b.M && a.F == b.F && a.latent_id == b.latent_id &&
         a.rules == b.rules && a.grid == b.grid &&
         a.permutation == b.permutation && a.panels == b.panels &&
         a.answer == b.answer;
}

const Split kSplits[] = {Split::kTrain, Split::kTest, Split::kOod};

// ---------------------------------------------------------------------------
// Splits and rule names.

TEST(SplitTest, ParseAndName) {
  for (Split s : kSplits) {
    absl::StatusOr<Split> parsed = ParseSplit(SplitName(s));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_STREQ(SplitName(Split::kOod), "ood");
  absl::StatusOr<Split> bad = ParseSplit("validation");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("validation"));
  EXPECT_FALSE(ParseSplit("Train").ok());
  EXPECT_FALSE(ParseSplit("").ok());
}

TEST(RuleTest, NamesInSpecOrder) {
  const char* want[] = {"constant",      "progression+1",   "progression+2",
                        "progression-1", "progression-2",   "addition",
                        "subtraction",   "distribute-three"};
  for (int r = 0; r < kMaxRules; ++r) EXPECT_STREQ(RuleName(r), want[r]);
  EXPECT_STREQ(RuleName(8), "unknown");
  EXPECT_STREQ(RuleName(-1), "unknown");
}

// ---------------------------------------------------------------------------
// Latents and the OOD split.

TEST(LatentTest, EnumerationMatchesBruteForce) {
  for (int R = 1; R <= 8; ++R) {
    for (int M = 1; M <= 5; ++M) {
      // All sorted M-tuples over 0..R-1, collected in a std::set (which
      // orders them lexicographically, as itertools does).
      std::set<std::vector<int>> want;
      std::vector<int> t(M, 0);
      while (true) {
        std::vector<int> s = t;
        std::sort(s.begin(), s.end());
        want.insert(s);
        int i = M - 1;
        while (i >= 0 && t[i] == R - 1) t[i--] = 0;
        if (i < 0) break;
        ++t[i];
      }
      const std::vector<std::vector<int>> got = EnumerateLatents(R, M);
      ASSERT_EQ(got.size(), want.size()) << "R=" << R << " M=" << M;
      EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin()))
          << "R=" << R << " M=" << M;
      EXPECT_EQ(NumLatents(R, M), static_cast<int64_t>(want.size()));
    }
  }
}

TEST(LatentTest, SpecOrderForR8M4) {
  const std::vector<std::vector<int>> l = EnumerateLatents(8, 4);
  ASSERT_EQ(l.size(), 330u);
  EXPECT_THAT(l[0], ElementsAre(0, 0, 0, 0));
  EXPECT_THAT(l[1], ElementsAre(0, 0, 0, 1));
  EXPECT_THAT(l[7], ElementsAre(0, 0, 0, 7));
  EXPECT_THAT(l[8], ElementsAre(0, 0, 1, 1));
  EXPECT_THAT(l[329], ElementsAre(7, 7, 7, 7));
}

TEST(LatentTest, SplitSizesForEveryDifficulty) {
  // floor(0.25 * C(M+7, M)) held out; the rest in distribution.
  const int64_t total[] = {8, 36, 120, 330, 792, 1716, 3432, 6435};
  const int64_t ood[] = {2, 9, 30, 82, 198, 429, 858, 1608};
  for (int M = 1; M <= 8; ++M) {
    for (uint64_t seed : {0u, 1u, 2u}) {
      const Generator gen = MustCreate(Config(M, seed));
      EXPECT_EQ(gen.num_latents_total(), total[M - 1]);
      EXPECT_EQ(static_cast<int64_t>(gen.latents(Split::kOod).size()),
                ood[M - 1])
          << "M=" << M;
      EXPECT_EQ(static_cast<int64_t>(gen.latents(Split::kTrain).size()),
                total[M - 1] - ood[M - 1])
          << "M=" << M;
    }
  }
  const Generator gen4 = MustCreate(Config(4));
  EXPECT_EQ(gen4.latents(Split::kOod).size(), 82u);
  EXPECT_EQ(gen4.latents(Split::kTrain).size(), 248u);
}

TEST(LatentTest, TrainTestIdenticalTrainOodDisjointSortedUnique) {
  for (int M = 1; M <= 8; ++M) {
    const Generator gen = MustCreate(Config(M, 7));
    const auto& train = gen.latents(Split::kTrain);
    const auto& test = gen.latents(Split::kTest);
    const auto& ood = gen.latents(Split::kOod);
    EXPECT_EQ(&train, &test);
    EXPECT_EQ(train, test);
    for (const auto* list : {&train, &ood}) {
      for (const auto& l : *list) {
        EXPECT_EQ(static_cast<int>(l.size()), M);
        EXPECT_TRUE(std::is_sorted(l.begin(), l.end()));
      }
      EXPECT_TRUE(std::is_sorted(list->begin(), list->end()));
      EXPECT_EQ(std::adjacent_find(list->begin(), list->end()), list->end());
    }
    std::set<std::vector<int>> in(train.begin(), train.end());
    for (const auto& l : ood) EXPECT_EQ(in.count(l), 0u) << "overlap M=" << M;
    std::set<std::vector<int>> all = in;
    all.insert(ood.begin(), ood.end());
    EXPECT_EQ(static_cast<int64_t>(all.size()), gen.num_latents_total());
    // latent_ids agree with latents and IsOod.
    for (Split s : kSplits) {
      const auto& ids = gen.latent_ids(s);
      ASSERT_EQ(ids.size(), gen.latents(s).size());
      for (size_t i = 0; i < ids.size(); ++i) {
        EXPECT_EQ(gen.all_latents()[ids[i]], gen.latents(s)[i]);
        EXPECT_EQ(gen.IsOod(ids[i]), s == Split::kOod);
      }
    }
  }
}

TEST(LatentTest, OodSplitDependsOnSeedOnly) {
  const Generator a = MustCreate(Config(4, 0));
  const Generator b = MustCreate(Config(4, 1));
  SravenConfig shared = Config(4, 0);
  shared.shared_stream = true;
  shared.permute_features = false;
  const Generator a2 = MustCreate(shared);
  EXPECT_EQ(a.latents(Split::kOod), a2.latents(Split::kOod));
  EXPECT_EQ(a.latents(Split::kOod),
            MustCreate(Config(4, 0)).latents(Split::kOod));
  EXPECT_NE(a.latents(Split::kOod), b.latents(Split::kOod));
}

TEST(LatentTest, EveryRuleAppearsInTraining) {
  // docs/sraven.md 1.2: 120 of 330 multisets contain a given rule, more than
  // the 82 held out, so every rule is in the training set for every seed.
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const Generator gen = MustCreate(Config(4, seed));
    std::set<int> seen;
    for (const auto& l : gen.latents(Split::kTrain)) {
      seen.insert(l.begin(), l.end());
    }
    EXPECT_EQ(seen.size(), 8u) << "seed " << seed;
  }
}

TEST(LatentTest, RulePoolSizeRestrictsRules) {
  for (int R = 1; R <= 8; ++R) {
    SravenConfig c = Config(3);
    c.num_rules = R;
    const Generator gen = MustCreate(c);
    EXPECT_EQ(gen.num_latents_total(), NumLatents(R, 3));
    for (const auto& l : gen.all_latents()) {
      for (int rule : l) EXPECT_LT(rule, R);
    }
    for (int i = 0; i < 50; ++i) {
      const Problem p = gen.Sample(Split::kTrain, 0, i);
      EXPECT_EQ(CheckProblem(gen, Split::kTrain, p), "") << "R=" << R;
    }
  }
}

TEST(LatentTest, ZeroHoldOutLeavesOodEmpty) {
  SravenConfig c = Config(4);
  c.frac_ood = 0.0;
  const Generator gen = MustCreate(c);
  EXPECT_TRUE(gen.latents(Split::kOod).empty());
  EXPECT_EQ(gen.latents(Split::kTrain).size(), 330u);
  SravenConfig one = Config(3);
  one.num_rules = 1;  // N = 1, floor(0.25) = 0 held out
  const Generator g1 = MustCreate(one);
  EXPECT_EQ(g1.latents(Split::kTrain).size(), 1u);
  EXPECT_TRUE(g1.latents(Split::kOod).empty());
}

TEST(LatentDeathTest, SamplingAnEmptySplitAborts) {
  SravenConfig c = Config(2);
  c.frac_ood = 0.0;
  const Generator gen = MustCreate(c);
  EXPECT_DEATH(gen.Sample(Split::kOod, 0, 0), "precondition");
}

// ---------------------------------------------------------------------------
// Config validation.

TEST(ConfigTest, InvalidConfigsNameTheField) {
  struct Case {
    void (*mutate)(SravenConfig&);
    const char* needle;
  };
  const Case cases[] = {
      {[](SravenConfig& c) { c.num_features = 0; }, "num_features=0"},
      {[](SravenConfig& c) { c.num_features = 9; }, "num_features=9"},
      {[](SravenConfig& c) { c.num_values = 2; }, "num_values=2"},
      {[](SravenConfig& c) { c.num_values = 257; }, "num_values=257"},
      {[](SravenConfig& c) { c.num_rules = 0; }, "num_rules=0"},
      {[](SravenConfig& c) { c.num_rules = 9; }, "num_rules=9"},
      {[](SravenConfig& c) { c.frac_ood = -0.1; }, "frac_ood=-0.1"},
      {[](SravenConfig& c) { c.frac_ood = 1.0; }, "frac_ood=1"},
      {[](SravenConfig& c) { c.frac_ood = std::nan(""); }, "frac_ood=nan"},
  };
  for (const Case& tc : cases) {
    SravenConfig c;
    tc.mutate(c);
    absl::StatusOr<Generator> gen = Generator::Create(c);
    ASSERT_FALSE(gen.ok()) << tc.needle;
    EXPECT_EQ(gen.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(gen.status().message()), HasSubstr(tc.needle));
  }
  SravenConfig ok;
  ok.num_features = 8;
  ok.num_values = 3;
  ok.frac_ood = 0.99;
  EXPECT_TRUE(Generator::Create(ok).ok());
}

// ---------------------------------------------------------------------------
// Problem invariants.

TEST(ProblemTest, InvariantsHoldForEveryDifficultyAndSplit) {
  for (int M = 1; M <= 8; ++M) {
    for (uint64_t seed : {0u, 3u}) {
      const Generator gen = MustCreate(Config(M, seed));
      EXPECT_EQ(gen.seq_len(), 9 * M);
      for (Split split : kSplits) {
        for (uint64_t b = 0; b < 4; ++b) {
          for (int i = 0; i < 64; ++i) {
            const Problem p = gen.Sample(split, b, i);
            ASSERT_EQ(CheckProblem(gen, split, p), "")
                << "M=" << M << " seed=" << seed
                << " split=" << SplitName(split) << " batch=" << b
                << " i=" << i;
          }
        }
      }
    }
  }
}

TEST(ProblemTest, EveryRuleObeyedIncludingWrapAround) {
  // Sample many M=8 problems; count rule instances and check that mod-F
  // wrap-around happens (e.g. progression-1 starting at 0 or 1).
  const Generator gen = MustCreate(Config(8));
  std::map<int, int> rule_count;
  int wraps = 0;
  for (int i = 0; i < 2000; ++i) {
    const Problem p = gen.Sample(Split::kTrain, 1, i);
    ASSERT_EQ(CheckProblem(gen, Split::kTrain, p), "");
    for (int j = 0; j < 8; ++j) {
      ++rule_count[p.rules[j]];
      if (p.rules[j] >= 1 && p.rules[j] <= 4 &&
          (p.GridAt(0, 2, j) < p.GridAt(0, 0, j)) != (p.rules[j] >= 3)) {
        ++wraps;
      }
    }
  }
  EXPECT_EQ(rule_count.size(), 8u);
  for (const auto& [rule, n] : rule_count) EXPECT_GT(n, 500) << rule;
  EXPECT_GT(wraps, 100);
}

TEST(ProblemTest, PerRowDrawsAndPerGridSymbolSet) {
  // Constant and progressions draw a start per row: across many grids, rows
  // must differ from each other often. Distribute-three: rows repeat
  // sometimes (not a Latin square) and the symbol set varies across grids.
  SravenConfig c = Config(1);
  c.frac_ood = 0.0;
  const Generator gen = MustCreate(c);
  std::map<int, int> rows_differ, rows_repeat, grids;
  std::set<std::set<int>> symbol_sets;
  for (int i = 0; i < 4000; ++i) {
    const Problem p = gen.Sample(Split::kTrain, 0, i);
    const int rule = p.rules[0];
    ++grids[rule];
    const bool differ = p.GridAt(0, 0, 0) != p.GridAt(1, 0, 0) ||
                        p.GridAt(1, 0, 0) != p.GridAt(2, 0, 0);
    if (differ) ++rows_differ[rule];
    bool repeat = false;
    for (int r = 0; r < 3; ++r) {
      for (int r2 = r + 1; r2 < 3; ++r2) {
        bool same = true;
        for (int col = 0; col < 3; ++col) {
          same = same && p.GridAt(r, col, 0) == p.GridAt(r2, col, 0);
        }
        repeat = repeat || same;
      }
    }
    if (repeat) ++rows_repeat[rule];
    if (rule == kDistributeThree) {
      symbol_sets.insert(
          {p.GridAt(0, 0, 0), p.GridAt(0, 1, 0), p.GridAt(0, 2, 0)});
    }
  }
  for (int rule = 0; rule < 8; ++rule) {
    ASSERT_GT(grids[rule], 300) << rule;
    // P(all three row starts equal) = 1/64; rows differ in ~98% of grids.
    EXPECT_GT(rows_differ[rule], grids[rule] * 9 / 10) << RuleName(rule);
  }
  // Distribute-three: P(some two of 3 independent row perms equal) =
  // 1 - (5/6)(4/6) = 4/9; a Latin-square generator would give 0.
  EXPECT_GT(rows_repeat[kDistributeThree], grids[kDistributeThree] / 3);
  EXPECT_LT(rows_repeat[kDistributeThree], grids[kDistributeThree] * 3 / 5);
  EXPECT_EQ(symbol_sets.size(), 56u);  // all C(8,3) sets occur
}

TEST(ProblemTest, UnpermutedPanelsEqualGrid) {
  SravenConfig c = Config(5);
  c.permute_features = false;
  const Generator gen = MustCreate(c);
  for (int i = 0; i < 100; ++i) {
    const Problem p = gen.Sample(Split::kTest, 2, i);
    EXPECT_EQ(CheckProblem(gen, Split::kTest, p), "");
    EXPECT_EQ(p.panels, p.grid);
  }
}

TEST(ProblemTest, ColumnPermutationsAreUniformAndIndependent) {
  const Generator gen = MustCreate(Config(4));
  // counts[c][s][f]: how often slot s of column c holds feature f.
  int counts[3][4][4] = {};
  int same01 = 0, same02 = 0;
  const int n = 9600;
  for (int i = 0; i < n; ++i) {
    const Problem p = gen.Sample(Split::kTrain, 5, i);
    for (int c = 0; c < 3; ++c) {
      for (int s = 0; s < 4; ++s) ++counts[c][s][p.PermAt(c, s)];
    }
    const auto col = [&p](int c) {
      return std::vector<int>(p.permutation.begin() + 4 * c,
                              p.permutation.begin() + 4 * c + 4);
    };
    if (col(0) == col(1)) ++same01;
    if (col(0) == col(2)) ++same02;
  }
  for (int c = 0; c < 3; ++c) {
    for (int s = 0; s < 4; ++s) {
      for (int f = 0; f < 4; ++f) {
        EXPECT_NEAR(counts[c][s][f], n / 4, n / 4 / 8);  // 2400 +- 300
      }
    }
  }
  // Independent columns agree with probability 1/24 (400 of 9600).
  EXPECT_NEAR(same01, n / 24, 120);
  EXPECT_NEAR(same02, n / 24, 120);
}

// ---------------------------------------------------------------------------
// Determinism and streams.

TEST(StreamTest, SamplingIsAPureFunction) {
  const Generator a = MustCreate(Config(4, 11));
  const Generator b = MustCreate(Config(4, 11));
  for (Split s : kSplits) {
    for (int i = 0; i < 32; ++i) {
      EXPECT_TRUE(SameProblem(a.Sample(s, 9, i), b.Sample(s, 9, i)));
      // Order of calls does not matter.
      EXPECT_TRUE(SameProblem(a.Sample(s, 9, i), a.Sample(s, 9, i)));
    }
  }
}

TEST(StreamTest, DifferentSeedsBatchesAndIndicesDiffer) {
  const Generator a = MustCreate(Config(4, 0));
  const Generator b = MustCreate(Config(4, 1));
  int same_seed = 0, same_batch = 0, same_index = 0;
  for (int i = 0; i < 64; ++i) {
    const Problem p = a.Sample(Split::kTrain, 0, i);
    same_seed += SameProblem(p, b.Sample(Split::kTrain, 0, i));
    same_batch += SameProblem(p, a.Sample(Split::kTrain, 1, i));
    same_index += SameProblem(p, a.Sample(Split::kTrain, 0, i + 64));
  }
  EXPECT_EQ(same_seed, 0);
  EXPECT_EQ(same_batch, 0);
  EXPECT_EQ(same_index, 0);
}

TEST(StreamTest, IndependentStreamsByDefault) {
  const Generator gen = MustCreate(Config(4));
  EXPECT_EQ(gen.StreamId(Split::kTrain), kTrainStream);
  EXPECT_EQ(gen.StreamId(Split::kTest), kTestStream);
  EXPECT_EQ(gen.StreamId(Split::kOod), kOodStream);
  int same = 0;
  for (uint64_t b = 0; b < 4; ++b) {
    for (int i = 0; i < 64; ++i) {
      same += SameProblem(gen.Sample(Split::kTrain, b, i),
                          gen.Sample(Split::kTest, b, i));
    }
  }
  EXPECT_EQ(same, 0);
}

TEST(StreamTest, SharedStreamReproducesTheOriginalQuirk) {
  SravenConfig c = Config(4);
  c.shared_stream = true;
  const Generator gen = MustCreate(c);
  const Generator independent = MustCreate(Config(4));
  for (Split s : kSplits) EXPECT_EQ(gen.StreamId(s), kTrainStream);
  for (uint64_t b = 0; b < 3; ++b) {
    for (int i = 0; i < 64; ++i) {
      const Problem train = gen.Sample(Split::kTrain, b, i);
      // Test batch b is bit-identical to train batch b.
      EXPECT_TRUE(SameProblem(train, gen.Sample(Split::kTest, b, i)));
      // The train stream itself does not depend on the flag.
      EXPECT_TRUE(SameProblem(train, independent.Sample(Split::kTrain, b, i)));
      // OOD draws from its own list, so it is a different problem.
      const Problem ood = gen.Sample(Split::kOod, b, i);
      EXPECT_TRUE(gen.IsOod(ood.latent_id));
      EXPECT_EQ(CheckProblem(gen, Split::kOod, ood), "");
    }
  }
}

// ---------------------------------------------------------------------------
// The validation split (issue 33): in-distribution rule combinations from a
// stream of its own. The tests above keep kSplits = {train, test, ood} so the
// existing splits are checked exactly as before val existed.

// A problem's full content as a comparable key.
std::vector<int> ContentKey(const Problem& p) {
  std::vector<int> k = {p.latent_id};
  k.insert(k.end(), p.grid.begin(), p.grid.end());
  k.insert(k.end(), p.permutation.begin(), p.permutation.end());
  return k;
}

TEST(ValSplitTest, ParsesAndNames) {
  absl::StatusOr<Split> val = ParseSplit("val");
  ASSERT_TRUE(val.ok()) << val.status();
  EXPECT_EQ(*val, Split::kVal);
  EXPECT_STREQ(SplitName(Split::kVal), "val");
  EXPECT_FALSE(ParseSplit("Val").ok());
}

TEST(ValSplitTest, DrawsFromTheTrainingRuleCombinations) {
  for (int M = 1; M <= 8; ++M) {
    const Generator gen = MustCreate(Config(M, 5));
    EXPECT_EQ(&gen.latents(Split::kVal), &gen.latents(Split::kTrain));
    EXPECT_EQ(gen.latent_ids(Split::kVal), gen.latent_ids(Split::kTrain));
    for (int id : gen.latent_ids(Split::kVal)) EXPECT_FALSE(gen.IsOod(id));
    for (uint64_t b = 0; b < 3; ++b) {
      for (int i = 0; i < 64; ++i) {
        const Problem p = gen.Sample(Split::kVal, b, i);
        ASSERT_EQ(CheckProblem(gen, Split::kVal, p), "")
            << "M=" << M << " batch=" << b << " i=" << i;
        EXPECT_FALSE(gen.IsOod(p.latent_id));
      }
    }
  }
}

TEST(ValSplitTest, OwnStreamDisjointFromTrainTestAndOod) {
  const Generator gen = MustCreate(Config(4, 3));
  EXPECT_EQ(gen.StreamId(Split::kVal), kValStream);
  std::set<uint64_t> ids;
  for (Split s : {Split::kTrain, Split::kTest, Split::kOod, Split::kVal}) {
    ids.insert(gen.StreamId(s));
  }
  EXPECT_EQ(ids.size(), 4u);
  // No validation problem equals any training or test problem of the first
  // batches, at any position (not only the same (batch, index)).
  std::set<std::vector<int>> train, test, val;
  for (uint64_t b = 0; b < 8; ++b) {
    for (int i = 0; i < 64; ++i) {
      train.insert(ContentKey(gen.Sample(Split::kTrain, b, i)));
      test.insert(ContentKey(gen.Sample(Split::kTest, b, i)));
      val.insert(ContentKey(gen.Sample(Split::kVal, b, i)));
    }
  }
  EXPECT_EQ(val.size(), 8u * 64u);
  int shared_train = 0, shared_test = 0;
  for (const auto& k : val) {
    shared_train += static_cast<int>(train.count(k));
    shared_test += static_cast<int>(test.count(k));
  }
  EXPECT_EQ(shared_train, 0);
  EXPECT_EQ(shared_test, 0);
}

TEST(ValSplitTest, NeverSharesTheTrainingStream) {
  SravenConfig c = Config(4, 2);
  c.shared_stream = true;
  const Generator shared = MustCreate(c);
  const Generator independent = MustCreate(Config(4, 2));
  EXPECT_EQ(shared.StreamId(Split::kVal), kValStream);
  int same_as_train = 0;
  for (uint64_t b = 0; b < 3; ++b) {
    for (int i = 0; i < 64; ++i) {
      const Problem v = shared.Sample(Split::kVal, b, i);
      EXPECT_TRUE(SameProblem(v, independent.Sample(Split::kVal, b, i)));
      same_as_train += SameProblem(v, shared.Sample(Split::kTrain, b, i));
    }
  }
  EXPECT_EQ(same_as_train, 0);
}

TEST(ValSplitTest, LatentSamplingIsUniform) {
  const Generator gen = MustCreate(Config(4, 2));
  const int k = static_cast<int>(gen.latents(Split::kVal).size());
  const int per = 100;
  std::map<int, int> counts;
  for (int i = 0; i < k * per; ++i) {
    ++counts[gen.Sample(Split::kVal, i / 256, i % 256).latent_id];
  }
  EXPECT_EQ(static_cast<int>(counts.size()), k);
  double chi2 = 0;
  for (int id : gen.latent_ids(Split::kVal)) {
    const double d = counts[id] - per;
    chi2 += d * d / per;
  }
  const double dof = k - 1;
  EXPECT_LT(chi2, dof + 5 * std::sqrt(2 * dof));
  EXPECT_GT(chi2, dof - 5 * std::sqrt(2 * dof));
}

// ---------------------------------------------------------------------------
// Batches (docs/sraven.md 1.4).

TEST(BatchTest, OneHotLayoutAndTargets) {
  for (int M : {1, 4, 8}) {
    const Generator gen = MustCreate(Config(M));
    const int B = 7, T = 9 * M, F = 8;
    std::vector<float> x(B * T * F, -1.0f);  // poison: must be overwritten
    std::vector<int64_t> y(B * M, -1);
    gen.SampleBatch(Split::kOod, 3, B, x.data(), y.data());
    for (int b = 0; b < B; ++b) {
      const Problem p = gen.Sample(Split::kOod, 3, b);
      for (int t = 0; t < T; ++t) {
        const float* tok = &x[(b * T + t) * F];
        int ones = 0, hot = -1;
        for (int f = 0; f < F; ++f) {
          ASSERT_TRUE(tok[f] == 0.0f || tok[f] == 1.0f);
          if (tok[f] == 1.0f) ++ones, hot = f;
        }
        if (t < 8 * M) {
          ASSERT_EQ(ones, 1) << "context token " << t;
          const int panel = t / M, slot = t % M;
          EXPECT_EQ(hot, p.PanelAt(panel / 3, panel % 3, slot));
        } else {
          ASSERT_EQ(ones, 0) << "query token " << t;
        }
      }
      for (int s = 0; s < M; ++s) EXPECT_EQ(y[b * M + s], p.answer[s]);
    }
  }
}

TEST(BatchTest, ProblemsDoNotDependOnBatchSize) {
  const Generator gen = MustCreate(Config(3));
  const int T = 27, F = 8, M = 3;
  std::vector<float> x4(4 * T * F), x9(9 * T * F);
  std::vector<int64_t> y4(4 * M), y9(9 * M);
  gen.SampleBatch(Split::kTrain, 17, 4, x4.data(), y4.data());
  gen.SampleBatch(Split::kTrain, 17, 9, x9.data(), y9.data());
  EXPECT_TRUE(std::equal(x4.begin(), x4.end(), x9.begin()));
  EXPECT_TRUE(std::equal(y4.begin(), y4.end(), y9.begin()));
  gen.SampleBatch(Split::kTrain, 17, 0, x4.data(), y4.data());  // no-op
}

// ---------------------------------------------------------------------------
// Uniformity of latent sampling (docs/sraven.md 1.2: uniform over the split's
// multisets, with replacement).

TEST(UniformityTest, LatentSamplingIsUniformOverTheSplit) {
  const Generator gen = MustCreate(Config(4, 2));
  for (Split split : {Split::kTrain, Split::kOod}) {
    const int k = static_cast<int>(gen.latents(split).size());
    const int per = 100;
    const int n = k * per;
    std::map<int, int> counts;
    for (int i = 0; i < n; ++i) {
      ++counts[gen.Sample(split, i / 256, i % 256).latent_id];
    }
    EXPECT_EQ(static_cast<int>(counts.size()), k);  // every latent drawn
    double chi2 = 0;
    for (int id : gen.latent_ids(split)) {
      const double d = counts[id] - per;
      chi2 += d * d / per;
    }
    // chi^2 with k-1 dof: mean k-1, sd sqrt(2(k-1)); allow 5 sd.
    const double dof = k - 1;
    EXPECT_LT(chi2, dof + 5 * std::sqrt(2 * dof)) << SplitName(split);
    EXPECT_GT(chi2, dof - 5 * std::sqrt(2 * dof)) << SplitName(split);
  }
}

TEST(UniformityTest, ValuesAreUniform) {
  // Every feature value of the visible panels is uniform over 0..F-1 (each
  // rule's marginal per cell is uniform).
  const Generator gen = MustCreate(Config(4));
  std::vector<int> counts(8, 0);
  const int n = 2000;
  for (int i = 0; i < n; ++i) {
    for (int v : gen.Sample(Split::kTrain, 0, i).panels) ++counts[v];
  }
  const int total = n * 36;
  for (int v = 0; v < 8; ++v) EXPECT_NEAR(counts[v], total / 8, total / 80);
}

// ---------------------------------------------------------------------------
// Golden samples (testdata/): freeze the exact bits of the generator.

std::string SourceDir() {
  const char* dir = std::getenv("SMOE_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

// Returns every integer in the JSON value that follows `"key":`, flattened
// in document order (nested arrays are row-major). A tiny reader so the
// generator's test needs no JSON library.
std::vector<int> IntsForKey(const std::string& line, const std::string& key) {
  const std::string tag = "\"" + key + "\":";
  size_t pos = line.find(tag);
  if (pos == std::string::npos) return {};
  pos += tag.size();
  std::vector<int> out;
  int depth = 0;
  do {
    const char ch = line[pos];
    if (ch == '[') {
      ++depth;
      ++pos;
    } else if (ch == ']') {
      --depth;
      ++pos;
    } else if (ch == '-' || std::isdigit(static_cast<unsigned char>(ch))) {
      size_t used = 0;
      out.push_back(std::stoi(line.substr(pos), &used));
      pos += used;
    } else {
      ++pos;
    }
  } while (depth > 0 && pos < line.size());
  return out;
}

std::string StringForKey(const std::string& line, const std::string& key) {
  const std::string tag = "\"" + key + "\":\"";
  const size_t pos = line.find(tag);
  if (pos == std::string::npos) return "";
  const size_t end = line.find('"', pos + tag.size());
  return line.substr(pos + tag.size(), end - pos - tag.size());
}

TEST(GoldenTest, SamplesMatchTestdata) {
  const std::string path =
      SourceDir() + "/worker/data/sraven/testdata/golden.jsonl";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "missing " << path;
  std::string line;
  int checked = 0;
  std::map<std::string, int> per_split;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    SravenConfig c;
    c.num_features = IntsForKey(line, "M").at(0);
    c.seed = static_cast<uint64_t>(IntsForKey(line, "seed").at(0));
    c.shared_stream = StringForKey(line, "stream") == "shared";
    const Generator gen = MustCreate(c);
    absl::StatusOr<Split> split = ParseSplit(StringForKey(line, "split"));
    ASSERT_TRUE(split.ok()) << line;
    const Problem p =
        gen.Sample(*split, static_cast<uint64_t>(IntsForKey(line, "batch")[0]),
                   IntsForKey(line, "index").at(0));
    SCOPED_TRACE(line);
    EXPECT_EQ(IntsForKey(line, "F").at(0), p.F);
    EXPECT_EQ(IntsForKey(line, "rules"), p.rules);
    EXPECT_EQ(IntsForKey(line, "grid"), p.grid);
    EXPECT_EQ(IntsForKey(line, "permutation"), p.permutation);
    EXPECT_EQ(IntsForKey(line, "panels"), p.panels);
    EXPECT_EQ(IntsForKey(line, "answer"), p.answer);
    EXPECT_EQ(CheckProblem(gen, *split, p), "");
    ++per_split[SplitName(*split)];
    ++checked;
  }
  EXPECT_GE(checked, 10);
  EXPECT_EQ(per_split.size(), 3u);
}

TEST(GoldenTest, OodSplitForSeed0M4IsFrozen) {
  // The held-out latents for seed 0, M = 4: "<id>\t<r0>,<r1>,<r2>,<r3>" per
  // line (see testdata/README.md).
  const std::string path =
      SourceDir() + "/worker/data/sraven/testdata/ood_seed0_m4.txt";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "missing " << path;
  const Generator gen = MustCreate(Config(4, 0));
  std::vector<int> ids;
  std::vector<std::vector<int>> rules;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    int id = -1;
    fields >> id;
    std::vector<int> r;
    for (int v; fields >> v;) {
      r.push_back(v);
      if (fields.peek() == ',') fields.get();
    }
    ids.push_back(id);
    rules.push_back(r);
  }
  EXPECT_EQ(ids, gen.latent_ids(Split::kOod));
  EXPECT_EQ(rules, gen.latents(Split::kOod));
  EXPECT_EQ(ids.size(), 82u);
}

}  // namespace
}  // namespace smoe::sraven
