// Copyright 2026 SMoE Lab authors.
//
// File: common/suggest.h
//
// "did you mean ...?" for a near-miss name (a parameter, an axis, a metric):
// `topk`, `top-k`, `TopK` and `top_kk` all suggest `top_k`.
#ifndef SMOE_COMMON_SUGGEST_H_
#define SMOE_COMMON_SUGGEST_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace smoe {

// The candidate closest to `name`, or "" when none is close: equal once case
// and the separators '-', '_', '.', ' ' are ignored, else within an edit
// distance (insertions, deletions, substitutions, adjacent swaps) of
// max(1, length / 4) on that normalised form. Ties go to the first candidate.
std::string ClosestName(absl::string_view name,
                        const std::vector<std::string>& candidates);

// " (did you mean 'top_k'?)" for the closest candidate, or "".
std::string DidYouMean(absl::string_view name,
                       const std::vector<std::string>& candidates);

}  // namespace smoe

#endif  // SMOE_COMMON_SUGGEST_H_
