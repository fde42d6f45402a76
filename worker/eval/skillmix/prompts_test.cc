// Copyright 2026 SMoE Lab authors.
#include "worker/eval/skillmix/prompts.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "worker/eval/skillmix/testdata_util.h"

namespace smoe::skillmix {
namespace {

using ::smoe::skillmix::testing::TestdataPath;
using ::testing::HasSubstr;
using Json = nlohmann::json;

Json LoadJson(const std::string& name) {
  auto text = ReadFileToString(TestdataPath(name));
  EXPECT_TRUE(text.ok()) << text.status();
  return Json::parse(text.value_or("{}"));
}

// The record's "skills" column: ", \n"-joined (or ",  \n") names.
Combination ComboOf(const Json& rec) {
  Combination c;
  c.topic = rec["topic"].get<std::string>();
  for (absl::string_view s :
       absl::StrSplit(rec["skills_field"].get<std::string>(), ',')) {
    c.skills.emplace_back(PyStrip(s));
  }
  return c;
}

SkillCatalog Catalog() {
  auto cat = LoadSkills(TestdataPath("skills.json"));
  EXPECT_TRUE(cat.ok()) << cat.status();
  return *cat;
}

TEST(PromptsTest, TemplatesEqualTheReleasedFiles) {
  const Json p = LoadJson("prompts.json");
  EXPECT_EQ(
      GenerationTemplates(GenerationPrompt::kDefault),
      p["generation"]["default"]["turns"].get<std::vector<std::string>>());
  EXPECT_EQ(GenerationTemplates(GenerationPrompt::kLlamaKGreater2),
            p["generation"]["llama_k_greater_2"]["turns"]
                .get<std::vector<std::string>>());
  EXPECT_EQ(GradingTemplate(GradingPrompt::kGpt),
            p["grading"]["gpt"]["turns"][0].get<std::string>());
  EXPECT_EQ(GradingTemplate(GradingPrompt::kLlama),
            p["grading"]["llama"]["turns"][0].get<std::string>());
}

// All 30 recorded student conversations: both user turns byte for byte, and
// the extracted answer of both replies.
TEST(PromptsTest, GenerationRecordsByteForByte) {
  const Json fx = LoadJson("reference_fixtures.json");
  const SkillCatalog cat = Catalog();
  int n = 0;
  for (const Json& rec : fx["generation_records"]) {
    const Combination combo = ComboOf(rec);
    ASSERT_EQ(combo.skills.size(), rec["k"].get<size_t>());
    auto turns = RenderGenerationTurns(cat, combo);
    ASSERT_TRUE(turns.ok()) << turns.status();
    ASSERT_EQ(turns->size(), 2u);
    EXPECT_EQ((*turns)[0], rec["turn0_user"].get<std::string>()) << n;
    EXPECT_EQ((*turns)[1], rec["turn1_user"].get<std::string>()) << n;
    EXPECT_EQ(ExtractAnswer(rec["turn0_output"].get<std::string>()),
              rec["turn0_extracted_text"].get<std::string>())
        << n;
    EXPECT_EQ(ExtractAnswer(rec["turn1_output"].get<std::string>()),
              rec["turn1_extracted_text"].get<std::string>())
        << n;
    ++n;
  }
  EXPECT_EQ(n, 30);
}

// All 69 recorded grading prompts. The 30 gpt-4-student records use the
// released 'gpt' prompt; the 39 older llama2/mistral-student records were
// graded with an earlier prompt version: the 'llama' wording with an empty
// criteria list (36) or with "Correctly illustrates" criteria (3).
TEST(PromptsTest, GradingRecordsByteForByte) {
  const Json fx = LoadJson("reference_fixtures.json");
  const SkillCatalog cat = Catalog();
  int gpt = 0, legacy_empty = 0, legacy_rubric = 0, n = 0;
  for (const Json& rec : fx["grading_records"]) {
    const Combination combo = ComboOf(rec);
    const std::string answer = rec["student_answer"].get<std::string>();
    const std::string want = rec["grading_prompt"].get<std::string>();
    EXPECT_EQ(rec["grader_system_prompt"].get<std::string>(),
              "You are a helpful assistant.");
    if (rec["student_model"] == "gpt-4") {
      auto got = RenderGradingPrompt(cat, combo, answer, GradingPrompt::kGpt);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(*got, want) << n;
      gpt += *got == want;
    } else {
      const std::string& tmpl = GradingTemplate(GradingPrompt::kLlama);
      auto empty = RenderGradingPromptWith(tmpl, "", false, cat, combo, answer);
      auto rubric = RenderGradingPromptWith(tmpl, "Correctly illustrates", true,
                                            cat, combo, answer);
      ASSERT_TRUE(empty.ok() && rubric.ok());
      EXPECT_TRUE(*empty == want || *rubric == want) << n;
      legacy_empty += *empty == want;
      legacy_rubric += *rubric == want;
    }
    ++n;
  }
  EXPECT_EQ(n, 69);
  EXPECT_EQ(gpt, 30);
  EXPECT_EQ(legacy_empty, 36);
  EXPECT_EQ(legacy_rubric, 3);
}

TEST(PromptsTest, LlamaGradingPromptUsesContainsAndDefinitionsOnly) {
  const SkillCatalog cat = Catalog();
  Combination combo{"Knots", {"metaphor", "red herring"}};
  auto p =
      RenderGradingPrompt(cat, combo, "\"A knot.\"", GradingPrompt::kLlama);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(*p, HasSubstr("criteria: Contains metaphor, Contains red "
                            "herring, Pertains to Knots, Text makes sense, "
                            "At most one sentence. For each item"));
  EXPECT_THAT(*p, HasSubstr("The student's answer was: \"\"A knot.\"\"\n"));
  EXPECT_THAT(*p, ::testing::Not(HasSubstr("For example,")));
}

TEST(PromptsTest, SentenceLimitWords) {
  EXPECT_EQ(NumSentencesStr(1), "one sentence");
  EXPECT_EQ(NumSentencesStr(2), "one sentence");
  EXPECT_EQ(NumSentencesStr(3), "two sentences");
  EXPECT_EQ(NumSentencesStr(5), "four sentences");
  EXPECT_EQ(NumberToWords(21), "twenty-one");
  EXPECT_EQ(NumberToWords(40), "forty");
  EXPECT_EQ(NumberToWords(105), "one hundred and five");
}

TEST(PromptsTest, FormatIsSinglePass) {
  auto r = FormatTemplate("a {x} {{b}} {y}", {{"x", "{y}"}, {"y", "Y"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "a {y} {b} Y");
  EXPECT_THAT(FormatTemplate("{nope}", {}).status().message(),
              HasSubstr("unknown field 'nope'"));
  EXPECT_FALSE(FormatTemplate("{open", {}).ok());
  EXPECT_FALSE(FormatTemplate("close}", {}).ok());
}

TEST(PromptsTest, AnswerExtraction) {
  EXPECT_EQ(ExtractAnswer("Answer: \"Hi.\"\nExplanation: x"), "\"Hi.\"");
  EXPECT_EQ(ExtractAnswer("Answer: one Answer: two Explanation"), "two");
  EXPECT_EQ(ExtractAnswer("no markers at all  "), "no markers at all");
  // Python's strip() also removes non-ASCII whitespace (NBSP, ideographic).
  EXPECT_EQ(ExtractAnswer("Answer:\u00a0text\u3000"), "text");
  EXPECT_EQ(PyStrip("\u2003x\u2028"), "x");
  EXPECT_EQ(PyStrip("\u201cq\u201d"), "\u201cq\u201d");  // quotes stay
}

}  // namespace
}  // namespace smoe::skillmix
