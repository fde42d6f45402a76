// Copyright 2026 SMoE Lab authors.
#include "worker/eval/skillmix/grading.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "worker/eval/skillmix/data.h"
#include "worker/eval/skillmix/testdata_util.h"

namespace smoe::skillmix {
namespace {

using ::smoe::skillmix::testing::TestdataPath;
using ::testing::ElementsAre;
using Json = nlohmann::json;

std::vector<double> ParseList(const std::string& s) {
  std::vector<double> out;
  if (s.empty()) return out;
  for (absl::string_view v : absl::StrSplit(s, ',')) {
    out.push_back(PyFloat(v).value());
  }
  return out;
}

// All 69 recorded grading rows: points, score and extracted score of the
// reference parser named in the record, the sentence count and the
// programmatic sentence-limit point.
TEST(GradingTest, ReferenceRecords) {
  auto text = ReadFileToString(TestdataPath("reference_fixtures.json"));
  ASSERT_TRUE(text.ok());
  const Json fx = Json::parse(*text);
  int rows = 0, table = 0, markers = 0;
  for (const Json& rec : fx["grading_records"]) {
    const std::string out = rec["grader_output"].get<std::string>();
    const std::string answer = rec["student_answer"].get<std::string>();
    const std::vector<double> want_points =
        ParseList(rec["ref_points_0"].get<std::string>());
    const double want_score =
        PyFloat(rec["ref_score_0"].get<std::string>()).value();
    const double want_extracted =
        PyFloat(rec["ref_score_extracted_0"].get<std::string>()).value();
    for (const Json& parser : rec["reference_parser"]) {
      const ParsedGrade g = parser == "markdown_table" ? ParseGradeTable(out)
                                                       : ParseGradeMarkers(out);
      EXPECT_EQ(g.points, want_points) << rows << " " << parser;
      EXPECT_DOUBLE_EQ(g.score, want_score) << rows << " " << parser;
      EXPECT_DOUBLE_EQ(g.extracted_score, want_extracted) << rows;
      (parser == "markdown_table" ? table : markers)++;
    }
    EXPECT_EQ(CountSentences(answer),
              std::stoi(rec["ref_num_sentences_manual"].get<std::string>()))
        << rows << ": " << answer;
    const int k = rec["k"].get<int>();
    const std::vector<double> final_points = FinalPoints({}, k, answer);
    EXPECT_EQ(
        final_points.back(),
        PyFloat(rec["ref_true_sentence_lim_pt"].get<std::string>()).value())
        << rows;
    ++rows;
  }
  EXPECT_EQ(rows, 69);
  EXPECT_GE(table, 30);
  EXPECT_GE(markers, 30);
}

TEST(GradingTest, TableParserRules) {
  const std::string out =
      "Intro text | not a table row? no digits\n"
      "Here's the grading table:\n"
      "| Criteria | Points Earned |\n"
      "|---|---|\n"
      "| Correctly illustrates metaphor | 1 |\n"
      "| Pertains to Knots | 5/6 |\n"
      "| Text makes sense | n/a |\n"
      "| Correctly illustrates metaphor | 0.5 |\n"
      "| Lonely cell |\n"
      "| Total Points Earned | 1.5 |\n"
      "| Total (again) | 2 |\n"
      "Explanation: | Not parsed | 1 |";
  const ParsedGrade g = ParseGradeTable(out);
  // metaphor keeps its first position with the later value; "n/a" -> "/"
  // is not a number (skipped); both totals become 'score', the last wins.
  EXPECT_THAT(g.points, ElementsAre(0.5, 5.0));
  EXPECT_DOUBLE_EQ(g.score, 2.0);
  EXPECT_DOUBLE_EQ(g.extracted_score, 5.5);
  // A curly apostrophe is not the marker: the whole text is parsed.
  const ParsedGrade curly =
      ParseGradeTable("Here\u2019s the grading table:\n| a | 1 |\n| b | 0 |\n");
  EXPECT_THAT(curly.points, ElementsAre(1.0, 0.0));
  EXPECT_TRUE(ParseGradeTable("no table").points.empty());
  EXPECT_DOUBLE_EQ(ParseGradeTable("no table").score, 0.0);
}

TEST(GradingTest, MarkerParserRules) {
  const ParsedGrade g = ParseGradeMarkers(
      "Point Earned: 1\npoint earned:   0/1 because\nPoint earned: **1**\n"
      "Point earned:\n\nPoint earned: 1.\nGrade: 3.5/6.");
  // "**1**" -> "**1" -> not a float -> 0; the empty marker is dropped after
  // strip() and the next line's "point" also cannot parse -> 0.
  EXPECT_THAT(g.points, ElementsAre(1.0, 0.0, 0.0, 0.0, 1.0));
  EXPECT_DOUBLE_EQ(g.extracted_score, 2.0);
  EXPECT_DOUBLE_EQ(g.score, 3.5);
  EXPECT_DOUBLE_EQ(ParseGradeMarkers("Grade: ...").score, 0.0);
  EXPECT_DOUBLE_EQ(ParseGradeMarkers("grade: 4. Grade: 5.").score, 5.0);
}

TEST(GradingTest, PyFloatGrammar) {
  EXPECT_EQ(PyFloat("1"), 1.0);
  EXPECT_EQ(PyFloat(" 1. "), 1.0);
  EXPECT_EQ(PyFloat(".5"), 0.5);
  EXPECT_EQ(PyFloat("-2e1"), -20.0);
  EXPECT_EQ(PyFloat("1_000"), 1000.0);
  EXPECT_FALSE(PyFloat("1__0").has_value());
  EXPECT_FALSE(PyFloat(".").has_value());
  EXPECT_FALSE(PyFloat("1.2.3").has_value());
  EXPECT_FALSE(PyFloat("0x1").has_value());
  EXPECT_FALSE(PyFloat("").has_value());
}

TEST(GradingTest, SentenceCounter) {
  EXPECT_EQ(CountSentences(""), 1);
  EXPECT_EQ(CountSentences("One. Two! Three? four."), 3);
  EXPECT_EQ(CountSentences("\"Quoted.\" \"Next one.\""), 2);
  EXPECT_EQ(CountSentences("Dr. Who met Mr. Smith. Then left."), 2);
  // '.' in the abbreviation patterns matches any character, so "Mr! " is
  // rewritten to "Mr." and no longer ends a sentence.
  EXPECT_EQ(CountSentences("Hi Mr! Smith"), 1);
  EXPECT_EQ(CountSentences("Hi Sr! Smith"), 2);
  EXPECT_EQ(CountSentences("A.  B."), 1);  // two spaces: no split
  EXPECT_EQ(CountSentences("A.\nB."), 1);  // newline is not the space
}

TEST(GradingTest, FinalPointsFixLengthAndSentencePoint) {
  // Empty -> k+3 zeros, last = sentence verdict (1 sentence <= 2).
  EXPECT_THAT(FinalPoints({}, 3, "One."), ElementsAre(0, 0, 0, 0, 0, 1));
  EXPECT_THAT(FinalPoints({1, 1}, 3, "A. B. C."),
              ElementsAre(1, 1, 0, 0, 0, 0));
  EXPECT_THAT(FinalPoints({1, 1, 1, 1, 1, 1, 1, 1}, 2, "A. B."),
              ElementsAre(1, 1, 1, 1, 0));
  // Explicit-name filter: name cut at '(' and lower-cased.
  EXPECT_THAT(FinalPoints({1, 1, 1, 1, 1}, 2, "A Red Herring about accidents.",
                          {"red herring", "accident (fallacy)"}, true),
              ElementsAre(0, 0, 1, 1, 1));
  EXPECT_THAT(FinalPoints({1, 1, 1, 1, 1}, 2, "Nothing named.",
                          {"red herring", "metaphor"}, true),
              ElementsAre(1, 1, 1, 1, 1));
}

}  // namespace
}  // namespace smoe::skillmix
