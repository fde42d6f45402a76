// Copyright 2026 SMoE Lab authors.
#include "worker/eval/skillmix/prompts.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace smoe::skillmix {
namespace {

// Verbatim from github.com/LeoYu/skill-mix prompts/ (commit 1cd6880), as
// copied into testdata/prompts.json; prompts_test checks equality.
constexpr char kGenerationDefaultTurn1[] =
    "Greetings! I am interested in natural language processing and I was "
    "wondering if you could help me generate an example of text that "
    "illustrates multiple skills in semantics or syntax. The example should be "
    "a minimal natural piece of text with up to a few lines in the context of "
    "{topic} that illustrates all of the following skills: {skills_str}. "
    "Please keep the text as short as possible, and make sure the concepts can "
    "be found fully from the text. \n"
    "\n"
    "For reference, here are the definitions and examples for the concepts:\n"
    "{skills_defs_and_examples_simple}\n"
    "\n"
    "Please start the minimal natural piece of text with 'Answer:' and start "
    "the explanation with 'Explanation:'.\n"
    "\n"
    "Thanks very much!";

constexpr char kGenerationDefaultTurn2[] =
    "Thanks very much. Could you please look over your answer and improve it? "
    "Please make sure that the new answer better illustrates all skills and "
    "remains on topic. On top of that, please also make sure the new answer "
    "only contains up to {num_sentences_str}. \n"
    "Again, please start the improved minimal natural piece of text with "
    "'Answer:' and start the explanation with 'Explanation:'.\n"
    "\n"
    "Thanks very much!";

constexpr char kGenerationLlamaKGreater2Turn2[] =
    "Thanks very much. Could you please look over the minimal natural piece of "
    "text and possibly improve and shorten it (up to {num_sentences_str})? If "
    "you make changes, please make sure that the text still illustrates all "
    "skills and remains on topic. \n"
    "Again, please start the improved minimal natural piece of text with "
    "'Answer:' and start the explanation with 'Explanation:'.\n"
    "\n"
    "Thanks very much!";

constexpr char kGradingGpt[] =
    "Greetings! I was wondering if you could help me grade the following "
    "answer given by a student.\n"
    "\n"
    "I’ll first describe the question that was given to the student, and then "
    "give you the student’s answer, and the grading rubric.\n"
    "\n"
    "The question given to the student was as follows: \"Give a single piece "
    "of text with up to {num_sentences_str} in the context of {topic}. This "
    "single piece of text should illustrate all of the following skills: "
    "{skills_str}.\"\n"
    "\n"
    "The student's answer was: \"{student_answer}\"\n"
    "\n"
    "For reference, here are the definitions for the skills:\n"
    "{skills_defs_and_examples_simple}\n"
    "\n"
    "Using a rubric table format, please grade the student's answer with "
    "positive scoring. Each criterion is worth 1 point. The criteria are: "
    "{rubric_items}. The table should only have the following columns: "
    "'Criteria', 'Points Earned'. In the 'Points Earned' column, please "
    "provide only numerical values with no additional formatting. Please "
    "introduce the table with 'Here's the grading table:' and please include a "
    "row for 'Total Points Earned' at the end of the table. Finally, please "
    "start your grading explanation with 'Explanation':";

constexpr char kGradingLlama[] =
    "Greetings! I was wondering if you could help me grade the following "
    "answer given by a student.\n"
    "\n"
    "I’ll first describe the question that was given to the student, and then "
    "give you the student’s answer, and the grading rubric.\n"
    "\n"
    "The question given to the student was as follows: \"Give a single piece "
    "of text with up to {num_sentences_str} in the context of {topic}. This "
    "single piece of text should illustrate all of the following skills: "
    "{skills_str}.\"\n"
    "\n"
    "The student's answer was: \"{student_answer}\"\n"
    "\n"
    "For reference, here are the definitions for the skills:\n"
    "{skills_defs}\n"
    "\n"
    "Please grade the student's answer using the following criteria: "
    "{rubric_items}. For each item in the rubric, please include in your "
    "evaluation 'Point earned: 1' if the requirement is met and 'Point earned: "
    "0' otherwise. Please finish your grading with 'Grade:' followed by a "
    "number indicating the total points earned by the student. Thanks so much.";

// Length in bytes of the UTF-8 sequence starting with lead byte `c` (1 for
// invalid bytes, so scanning always advances).
size_t Utf8Len(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c >> 5) == 0x6) return 2;
  if ((c >> 4) == 0xE) return 3;
  if ((c >> 3) == 0x1E) return 4;
  return 1;
}

// Decodes the code point at s[i] (len bytes); invalid sequences yield the
// lead byte's value, which is never a Python whitespace code point >= 0x80
// except by coincidence of U+0085/U+00A0 (handled as 2-byte sequences only).
uint32_t DecodeAt(absl::string_view s, size_t i, size_t len) {
  const auto b = [&](size_t j) { return static_cast<unsigned char>(s[i + j]); };
  if (len == 1 || i + len > s.size()) return b(0);
  if (len == 2) return ((b(0) & 0x1Fu) << 6) | (b(1) & 0x3Fu);
  if (len == 3) {
    return ((b(0) & 0x0Fu) << 12) | ((b(1) & 0x3Fu) << 6) | (b(2) & 0x3Fu);
  }
  return ((b(0) & 0x07u) << 18) | ((b(1) & 0x3Fu) << 12) |
         ((b(2) & 0x3Fu) << 6) | (b(3) & 0x3Fu);
}

bool IsPySpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) ||
         cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Everything after the last occurrence of `sep` (the whole text if absent).
absl::string_view AfterLast(absl::string_view s, absl::string_view sep) {
  const size_t pos = s.rfind(sep);
  return pos == absl::string_view::npos ? s : s.substr(pos + sep.size());
}

// Everything before the first occurrence of `sep` (the whole text if absent).
absl::string_view BeforeFirst(absl::string_view s, absl::string_view sep) {
  const size_t pos = s.find(sep);
  return pos == absl::string_view::npos ? s : s.substr(0, pos);
}

}  // namespace

absl::StatusOr<GenerationPrompt> ParseGenerationPrompt(absl::string_view name) {
  if (name == "default") return GenerationPrompt::kDefault;
  if (name == "llama_k_greater_2") return GenerationPrompt::kLlamaKGreater2;
  return absl::InvalidArgumentError(
      absl::StrCat("generation_prompt: '", name,
                   "' is not one of {default, llama_k_greater_2}"));
}

absl::StatusOr<GradingPrompt> ParseGradingPrompt(absl::string_view name) {
  if (name == "gpt") return GradingPrompt::kGpt;
  if (name == "llama") return GradingPrompt::kLlama;
  return absl::InvalidArgumentError(absl::StrCat(
      "grader_prompt_kind: '", name, "' is not one of {gpt, llama}"));
}

absl::string_view GenerationPromptName(GenerationPrompt p) {
  return p == GenerationPrompt::kDefault ? "default" : "llama_k_greater_2";
}

absl::string_view GradingPromptName(GradingPrompt p) {
  return p == GradingPrompt::kGpt ? "gpt" : "llama";
}

const std::vector<std::string>& GenerationTemplates(GenerationPrompt p) {
  static const auto* kDefault = new std::vector<std::string>{
      kGenerationDefaultTurn1, kGenerationDefaultTurn2};
  static const auto* kLlama = new std::vector<std::string>{
      kGenerationDefaultTurn1, kGenerationLlamaKGreater2Turn2};
  return p == GenerationPrompt::kDefault ? *kDefault : *kLlama;
}

const std::string& GradingTemplate(GradingPrompt p) {
  static const auto* kGpt = new std::string(kGradingGpt);
  static const auto* kLlama = new std::string(kGradingLlama);
  return p == GradingPrompt::kGpt ? *kGpt : *kLlama;
}

absl::StatusOr<std::string> FormatTemplate(
    absl::string_view tmpl, const std::map<std::string, std::string>& values) {
  std::string out;
  out.reserve(tmpl.size() * 2);
  for (size_t i = 0; i < tmpl.size(); ++i) {
    const char c = tmpl[i];
    if (c == '{') {
      if (i + 1 < tmpl.size() && tmpl[i + 1] == '{') {
        out.push_back('{');
        ++i;
        continue;
      }
      const size_t close = tmpl.find('}', i + 1);
      if (close == absl::string_view::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("template: unbalanced '{' at offset ", i));
      }
      const std::string name(tmpl.substr(i + 1, close - i - 1));
      auto it = values.find(name);
      if (it == values.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("template: unknown field '", name, "'"));
      }
      out += it->second;
      i = close;
    } else if (c == '}') {
      if (i + 1 < tmpl.size() && tmpl[i + 1] == '}') {
        out.push_back('}');
        ++i;
        continue;
      }
      return absl::InvalidArgumentError(
          absl::StrCat("template: single '}' at offset ", i));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

int NumSentences(int k) { return k - 1 > 1 ? k - 1 : 1; }

std::string NumberToWords(int n) {
  static const char* const kSmall[] = {
      "zero",    "one",     "two",       "three",    "four",
      "five",    "six",     "seven",     "eight",    "nine",
      "ten",     "eleven",  "twelve",    "thirteen", "fourteen",
      "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
  static const char* const kTens[] = {"",       "",      "twenty", "thirty",
                                      "forty",  "fifty", "sixty",  "seventy",
                                      "eighty", "ninety"};
  if (n < 0) return absl::StrCat("minus ", NumberToWords(-n));
  if (n < 20) return kSmall[n];
  if (n < 100) {
    return n % 10 == 0 ? kTens[n / 10]
                       : absl::StrCat(kTens[n / 10], "-", kSmall[n % 10]);
  }
  if (n < 1000) {
    const std::string head = absl::StrCat(kSmall[n / 100], " hundred");
    return n % 100 == 0 ? head
                        : absl::StrCat(head, " and ", NumberToWords(n % 100));
  }
  return absl::StrCat(n);
}

std::string NumSentencesStr(int k) {
  const int n = NumSentences(k);
  return absl::StrCat(NumberToWords(n), n > 1 ? " sentences" : " sentence");
}

absl::StatusOr<std::string> SkillsDefsAndExamplesSimple(
    const SkillCatalog& catalog, const std::vector<std::string>& skills) {
  std::vector<std::string> lines;
  for (const std::string& name : skills) {
    auto s = catalog.Get(name);
    if (!s.ok()) return s.status();
    lines.push_back(absl::StrCat("**", (*s)->name, "**: ", (*s)->definition,
                                 " For example, ", (*s)->example));
  }
  return absl::StrJoin(lines, "\n");
}

absl::StatusOr<std::string> SkillsDefs(const SkillCatalog& catalog,
                                       const std::vector<std::string>& skills) {
  std::vector<std::string> lines;
  for (const std::string& name : skills) {
    auto s = catalog.Get(name);
    if (!s.ok()) return s.status();
    lines.push_back(absl::StrCat("**", (*s)->name, "**: ", (*s)->definition));
  }
  return absl::StrJoin(lines, "\n");
}

absl::StatusOr<std::vector<std::string>> RenderGenerationTurns(
    const SkillCatalog& catalog, const Combination& combo,
    GenerationPrompt prompt) {
  auto simple = SkillsDefsAndExamplesSimple(catalog, combo.skills);
  if (!simple.ok()) return simple.status();
  const int k = static_cast<int>(combo.skills.size());
  const std::map<std::string, std::string> values = {
      {"topic", combo.topic},
      {"skills_str", absl::StrJoin(combo.skills, ", ")},
      {"skills_defs_and_examples_simple", *simple},
      {"num_sentences_str", NumSentencesStr(k)},
  };
  std::vector<std::string> turns;
  for (const std::string& t : GenerationTemplates(prompt)) {
    auto r = FormatTemplate(t, values);
    if (!r.ok()) return r.status();
    turns.push_back(std::move(*r));
  }
  return turns;
}

absl::StatusOr<std::string> RenderGradingPromptWith(
    absl::string_view tmpl, absl::string_view rubric_prefix, bool with_rubric,
    const SkillCatalog& catalog, const Combination& combo,
    absl::string_view answer) {
  auto simple = SkillsDefsAndExamplesSimple(catalog, combo.skills);
  if (!simple.ok()) return simple.status();
  auto defs = SkillsDefs(catalog, combo.skills);
  if (!defs.ok()) return defs.status();
  const int k = static_cast<int>(combo.skills.size());
  const std::string num_sentences_str = NumSentencesStr(k);
  std::string rubric;
  if (with_rubric) {
    std::vector<std::string> items;
    for (const std::string& s : combo.skills) {
      items.push_back(absl::StrCat(
          rubric_prefix, " ", absl::AsciiStrToLower(std::string(PyStrip(s)))));
    }
    items.push_back(absl::StrCat("Pertains to ", combo.topic));
    items.push_back("Text makes sense");
    items.push_back(absl::StrCat("At most ", num_sentences_str));
    rubric = absl::StrJoin(items, ", ");
  }
  const std::map<std::string, std::string> values = {
      {"topic", combo.topic},
      {"skills_str", absl::StrJoin(combo.skills, ", ")},
      {"skills_defs_and_examples_simple", *simple},
      {"skills_defs", *defs},
      {"student_answer", std::string(answer)},
      {"num_sentences_str", num_sentences_str},
      {"rubric_items", rubric},
  };
  return FormatTemplate(tmpl, values);
}

absl::StatusOr<std::string> RenderGradingPrompt(const SkillCatalog& catalog,
                                                const Combination& combo,
                                                absl::string_view answer,
                                                GradingPrompt prompt) {
  return RenderGradingPromptWith(
      GradingTemplate(prompt),
      prompt == GradingPrompt::kGpt ? "Correctly illustrates" : "Contains",
      /*with_rubric=*/true, catalog, combo, answer);
}

absl::string_view PyStrip(absl::string_view s) {
  size_t begin = 0;
  while (begin < s.size()) {
    const size_t len = Utf8Len(static_cast<unsigned char>(s[begin]));
    if (begin + len > s.size() || !IsPySpace(DecodeAt(s, begin, len))) break;
    begin += len;
  }
  size_t end = s.size();
  while (end > begin) {
    // Find the start of the last code point in [begin, end).
    size_t start = end - 1;
    while (start > begin &&
           (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) {
      --start;
    }
    const size_t len = Utf8Len(static_cast<unsigned char>(s[start]));
    if (start + len != end || !IsPySpace(DecodeAt(s, start, len))) break;
    end = start;
  }
  return s.substr(begin, end - begin);
}

std::string ExtractAnswer(absl::string_view reply) {
  return std::string(
      PyStrip(BeforeFirst(AfterLast(reply, "Answer:"), "Explanation")));
}

}  // namespace smoe::skillmix
