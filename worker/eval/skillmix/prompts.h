// Copyright 2026 SMoE Lab authors.
//
// File: worker/eval/skillmix/prompts.h
//
// The Skill-Mix prompts and answer extraction (docs/skillmix.md sections 1.3
// and 1.4), byte for byte as in the reference implementation
// (github.com/LeoYu/skill-mix, prompts/ at commit 1cd6880): the two-turn
// student conversation, the grading prompt ('gpt' table or 'llama' markers),
// and the text that gets graded.
//
// Templates use Python str.format placeholders and are rendered in a single
// pass, so braces inside substituted values are left alone.
//
// Thread-safety: free functions on values; thread-compatible.
#ifndef SMOE_WORKER_EVAL_SKILLMIX_PROMPTS_H_
#define SMOE_WORKER_EVAL_SKILLMIX_PROMPTS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "worker/eval/skillmix/data.h"

namespace smoe::skillmix {

// Which turn-2 wording the student gets (prompts/generation/*.json).
enum class GenerationPrompt {
  kDefault,         // "default": improve it, at most n sentences
  kLlamaKGreater2,  // "llama_k_greater_2": possibly improve and shorten it
};
// Which grading prompt and parser (prompts/grade/*.json, docs/skillmix.md
// 1.4 and 1.5).
enum class GradingPrompt {
  kGpt,    // rubric table, "Correctly illustrates", markdown-table parser
  kLlama,  // "Point earned:" markers, "Contains", marker parser
};

// "default" | "llama_k_greater_2"; InvalidArgument otherwise.
absl::StatusOr<GenerationPrompt> ParseGenerationPrompt(absl::string_view name);
// "gpt" | "llama"; InvalidArgument otherwise.
absl::StatusOr<GradingPrompt> ParseGradingPrompt(absl::string_view name);
absl::string_view GenerationPromptName(GenerationPrompt p);
absl::string_view GradingPromptName(GradingPrompt p);

// The verbatim templates.
const std::vector<std::string>& GenerationTemplates(GenerationPrompt p);
const std::string& GradingTemplate(GradingPrompt p);

// Python str.format with named fields only: every "{name}" is replaced by
// values.at(name) in one pass; "{{" and "}}" are literal braces.
// Errors: InvalidArgument naming an unknown field or an unbalanced brace.
absl::StatusOr<std::string> FormatTemplate(
    absl::string_view tmpl, const std::map<std::string, std::string>& values);

// max(1, k - 1): the sentence limit for k skills.
int NumSentences(int k);
// English number words as inflect's number_to_words writes them for
// 0 <= n < 1000 ("one", "twenty-one", "one hundred and five").
std::string NumberToWords(int n);
// "one sentence", "two sentences", ... for NumSentences(k).
std::string NumSentencesStr(int k);

// "**{skill}**: {definition} For example, {example}" lines joined by "\n"
// (skills_defs_and_examples_simple) resp. "**{skill}**: {definition}"
// (skills_defs). NotFound for a skill missing from the catalog.
absl::StatusOr<std::string> SkillsDefsAndExamplesSimple(
    const SkillCatalog& catalog, const std::vector<std::string>& skills);
absl::StatusOr<std::string> SkillsDefs(const SkillCatalog& catalog,
                                       const std::vector<std::string>& skills);

// The two user turns of the student conversation for `combo`.
absl::StatusOr<std::vector<std::string>> RenderGenerationTurns(
    const SkillCatalog& catalog, const Combination& combo,
    GenerationPrompt prompt = GenerationPrompt::kDefault);

// The grading prompt for `answer` (the extracted turn-2 text).
// rubric_prefix: the criterion prefix ("Correctly illustrates" for kGpt,
// "Contains" for kLlama when empty); with_rubric = false renders an empty
// criteria list (only legacy reference records were graded that way).
absl::StatusOr<std::string> RenderGradingPrompt(
    const SkillCatalog& catalog, const Combination& combo,
    absl::string_view answer, GradingPrompt prompt = GradingPrompt::kGpt);
absl::StatusOr<std::string> RenderGradingPromptWith(
    absl::string_view tmpl, absl::string_view rubric_prefix, bool with_rubric,
    const SkillCatalog& catalog, const Combination& combo,
    absl::string_view answer);

// Python str.strip(): removes leading/trailing characters for which Python's
// str.isspace() is true (ASCII whitespace, \x1c-\x1f, U+0085, U+00A0, U+1680,
// U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000), on UTF-8 text.
absl::string_view PyStrip(absl::string_view s);

// The graded text of a reply (task.py get_text):
//   reply.split('Answer:')[-1].split('Explanation')[0].strip()
std::string ExtractAnswer(absl::string_view reply);

}  // namespace smoe::skillmix

#endif  // SMOE_WORKER_EVAL_SKILLMIX_PROMPTS_H_
