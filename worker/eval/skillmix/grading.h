// Copyright 2026 SMoE Lab authors.
//
// File: worker/eval/skillmix/grading.h
//
// Turning a grader's reply into points (docs/skillmix.md 1.5, 1.6), as the
// reference implementation does (task.py get_score/get_score_alt,
// utils.create_output_dict/manually_extract_points/count_num_sentences,
// aggregate_metrics.py):
//   * ParseGradeTable: the 'gpt' prompt's markdown rubric table;
//   * ParseGradeMarkers: the 'llama' prompt's "Point earned: x" markers and
//     the final "Grade: x";
//   * CountSentences: the programmatic sentence counter whose verdict replaces
//     the grader's sentence-limit point;
//   * FinalPoints: fix the list to k+3 entries and overwrite the last.
//
// Deviations (the reference raises an exception and stops in these cases):
// a table row with a single cell, or a cell whose digits do not form a
// number (e.g. "1.2.3"), is skipped; an unparsable "Grade:" number reads as
// 0. Lower-casing is ASCII-only (the rubric keys and markers are ASCII).
//
// Thread-safety: free functions; thread-compatible.
#ifndef SMOE_WORKER_EVAL_SKILLMIX_GRADING_H_
#define SMOE_WORKER_EVAL_SKILLMIX_GRADING_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "worker/eval/skillmix/prompts.h"

namespace smoe::skillmix {

// What a parser extracts from one grading reply.
struct ParsedGrade {
  // Points in row/marker order (the reference's points_0 column).
  std::vector<double> points;
  // The grader's own total (table: the "total" row; markers: "Grade:"), 0.0
  // when absent.
  double score = 0.0;
  // The reference's score_extracted: the sum the parser computed.
  double extracted_score = 0.0;
};

// The 'gpt' table parser (docs/skillmix.md 1.5).
ParsedGrade ParseGradeTable(absl::string_view output);
// The 'llama' marker parser (docs/skillmix.md 1.5).
ParsedGrade ParseGradeMarkers(absl::string_view output);
// Dispatch on the grading prompt kind (kGpt: table, kLlama: markers).
ParsedGrade ParseGrade(GradingPrompt prompt, absl::string_view output);

// Python float() on `s` (ASCII digits; sign, '_' separators, exponent,
// inf/nan, surrounding whitespace); nullopt where Python raises ValueError.
std::optional<double> PyFloat(absl::string_view s);

// utils.count_num_sentences (docs/skillmix.md 1.6): 1 + the number of
// non-overlapping matches of [.!?]['"]* ['"]*[A-Z] after the "Mr. "/"Mrs. "/
// "Ms. "/"Dr. "/"Prof. " regex substitutions (in which '.' matches any
// character except a newline). An empty text counts as 1.
int CountSentences(absl::string_view text);

// The k+3 points that enter the metrics (aggregate_metrics.py): an empty list
// becomes k+3 zeros, a longer one is truncated, a shorter one zero-padded;
// then the last point is overwritten with [CountSentences(answer) <=
// NumSentences(k)]. With filter_explicit_name, skill point i is zeroed when
// skill i's name (lower-cased, cut at the first '(' and stripped) occurs in
// the lower-cased answer (docs/skillmix.md 1.6; off by default, as in the
// reference).
// REQUIRES: k >= 1 and skills.size() == k when filter_explicit_name.
std::vector<double> FinalPoints(const std::vector<double>& parsed, int k,
                                absl::string_view answer,
                                const std::vector<std::string>& skills = {},
                                bool filter_explicit_name = false);

}  // namespace smoe::skillmix

#endif  // SMOE_WORKER_EVAL_SKILLMIX_GRADING_H_
