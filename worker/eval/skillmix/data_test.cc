// Copyright 2026 SMoE Lab authors.
#include "worker/eval/skillmix/data.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/eval/skillmix/testdata_util.h"

namespace smoe::skillmix {
namespace {

using ::smoe::skillmix::testing::TestdataPath;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SkillsTest, JsonKeepsStringsVerbatim) {
  auto cat = LoadSkills(TestdataPath("skills.json"));
  ASSERT_TRUE(cat.ok()) << cat.status();
  ASSERT_EQ(cat->skills().size(), 10u);
  EXPECT_EQ(cat->skills()[0].name, "self serving bias");
  EXPECT_EQ(cat->skills()[2].name,
            "complex question (loaded question with implicit assumption )");
  // The trailing space of this definition reaches the prompts.
  const Skill* accident = cat->Find("accident (fallacy)");
  ASSERT_NE(accident, nullptr);
  EXPECT_EQ(accident->definition.back(), ' ');
  EXPECT_THAT(cat->skills()[6].definition, HasSubstr("\u201cIf P then Q."));
  EXPECT_EQ(cat->Find("no such skill"), nullptr);
  EXPECT_EQ(cat->Get("no such skill").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(SkillsTest, BuiltInReleaseEqualsTestdata) {
  auto file = LoadSkills(TestdataPath("skills.json"));
  auto built_in = ParseSkillsJson(ReleasedSkillsJson());
  ASSERT_TRUE(file.ok() && built_in.ok());
  ASSERT_EQ(built_in->skills().size(), file->skills().size());
  for (size_t i = 0; i < file->skills().size(); ++i) {
    EXPECT_EQ(built_in->skills()[i].definition, file->skills()[i].definition);
    EXPECT_EQ(built_in->skills()[i].example, file->skills()[i].example);
  }
  auto topics = ParseTopicsJson(ReleasedTopicsJson());
  ASSERT_TRUE(topics.ok());
  EXPECT_EQ(*topics, *LoadTopics(TestdataPath("topics.json")));
}

TEST(SkillsTest, ReleaseCsvEqualsJsonAndDropsRemovedRows) {
  auto json = LoadSkills(TestdataPath("skills.json"));
  auto csv = LoadSkills(TestdataPath("skills_release_format.csv"));
  ASSERT_TRUE(json.ok()) << json.status();
  ASSERT_TRUE(csv.ok()) << csv.status();
  ASSERT_EQ(csv->skills().size(), json->skills().size());
  for (size_t i = 0; i < json->skills().size(); ++i) {
    EXPECT_EQ(csv->skills()[i].name, json->skills()[i].name);
    EXPECT_EQ(csv->skills()[i].category, json->skills()[i].category);
    EXPECT_EQ(csv->skills()[i].definition, json->skills()[i].definition);
    EXPECT_EQ(csv->skills()[i].example, json->skills()[i].example);
  }
  EXPECT_EQ(csv->Find("dropped skill"), nullptr);
}

TEST(SkillsTest, CsvErrorsNameTheProblem) {
  auto missing = ParseSkillsCsv("skill,definition\nx,y\n");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("example"));
  auto unterminated = ParseSkillsCsv("skill,definition,example\nx,\"y,z\n");
  EXPECT_THAT(unterminated.status().message(), HasSubstr("unterminated"));
  auto dup = ParseSkillsCsv("skill,definition,example\nx,a,b\n x ,c,d\n");
  EXPECT_THAT(dup.status().message(), HasSubstr("duplicate name 'x'"));
  auto ok = ParseSkillsCsv(
      "skill,definition,example,status\r\n"
      " a ,\"d, with \"\"quotes\"\"\",\"line1\nline2\",\r\n"
      "b,d,e,maybe\r\n");
  ASSERT_TRUE(ok.ok()) << ok.status();
  ASSERT_EQ(ok->skills().size(), 1u);
  EXPECT_EQ(ok->skills()[0].name, "a");
  EXPECT_EQ(ok->skills()[0].definition, "d, with \"quotes\"");
  EXPECT_EQ(ok->skills()[0].example, "line1\nline2");
}

TEST(TopicsTest, TxtAndJsonAgree) {
  auto json = LoadTopics(TestdataPath("topics.json"));
  auto txt = LoadTopics(TestdataPath("topics_release_format.txt"));
  ASSERT_TRUE(json.ok()) << json.status();
  ASSERT_TRUE(txt.ok()) << txt.status();
  EXPECT_EQ(*json, *txt);
  ASSERT_EQ(json->size(), 10u);
  EXPECT_EQ(json->front(), "Sewing");
  EXPECT_EQ(json->back(), "Knots");
  EXPECT_EQ(LoadTopics("/nonexistent/topics.txt").status().code(),
            absl::StatusCode::kNotFound);
}

// The reference sampler, bit for bit: every list of combos_seed10.json.
TEST(CombinationsTest, ReproducesCombosSeed10) {
  auto cat = LoadSkills(TestdataPath("skills.json"));
  auto topics = LoadTopics(TestdataPath("topics.json"));
  auto text = ReadFileToString(TestdataPath("combos_seed10.json"));
  ASSERT_TRUE(cat.ok() && topics.ok() && text.ok());
  int lists = 0;
  for (int n : {5, 30, 100}) {
    for (int k = 1; k <= 5; ++k) {
      auto want = ParseCombosJson(*text, n, k);
      ASSERT_TRUE(want.ok()) << want.status();
      auto got = DrawCombinations(cat->Names(), *topics, k, n, /*seed=*/10);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(got->size(), static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) {
        EXPECT_EQ((*got)[i], (*want)[i])
            << "n=" << n << " k=" << k << " i=" << i;
      }
      ++lists;
    }
  }
  EXPECT_EQ(lists, 15);
}

TEST(CombinationsTest, RecordedRunOrderAndExpPath) {
  auto cat = LoadSkills(TestdataPath("skills.json"));
  auto topics = LoadTopics(TestdataPath("topics.json"));
  ASSERT_TRUE(cat.ok() && topics.ok());
  // The reference's recorded k=3 run (test/k3_s10_*): first item.
  auto got = DrawCombinations(cat->Names(), *topics, 3, 5, 10);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].topic, "Sewing");
  EXPECT_THAT((*got)[0].skills,
              ElementsAre("spatial reasoning",
                          "complex question (loaded question with implicit "
                          "assumption )",
                          "statistical syllogism"));
  // exp_path only reorders the skills inside each combination.
  auto other = DrawCombinations(cat->Names(), *topics, 3, 5, 10, "other");
  ASSERT_TRUE(other.ok());
  bool any_order_differs = false;
  for (size_t i = 0; i < got->size(); ++i) {
    EXPECT_EQ((*other)[i].topic, (*got)[i].topic);
    auto a = (*other)[i].skills, b = (*got)[i].skills;
    any_order_differs |= a != b;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    EXPECT_EQ(a, b);
  }
  EXPECT_TRUE(any_order_differs);
}

TEST(CombinationsTest, RejectsBadArguments) {
  const std::vector<std::string> skills = {"a", "b"};
  const std::vector<std::string> topics = {"t"};
  EXPECT_THAT(DrawCombinations(skills, topics, 3, 5, 0).status().message(),
              HasSubstr("k_skills: 3"));
  EXPECT_THAT(DrawCombinations(skills, topics, 1, 0, 0).status().message(),
              HasSubstr("num_combinations: 0"));
  EXPECT_FALSE(DrawCombinations(skills, {}, 1, 1, 0).ok());
}

}  // namespace
}  // namespace smoe::skillmix
