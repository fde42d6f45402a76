// Copyright 2026 SMoE Lab authors.
//
// File: worker/eval/skillmix/metrics.h
//
// Skill-Mix aggregation (docs/skillmix.md 1.6, the reference's
// aggregate_metrics.py): majority vote per point over grading rounds, one
// score per generation round, max (or mean) over generation rounds, then
// mean ± standard error (std with ddof = 1, / sqrt(n)) over combinations.
//
// Thread-safety: free functions; thread-compatible.
#ifndef SMOE_WORKER_EVAL_SKILLMIX_METRICS_H_
#define SMOE_WORKER_EVAL_SKILLMIX_METRICS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace smoe::skillmix {

// The reference's --pts_agg_method values. S = sum of the k skill points,
// R = sum of the 3 others (topic, sense, sentence limit), after the vote.
enum class ScoreMethod {
  kAllPointsEarnedBinary,      // [S + R == k + 3]   "Ratio of Full Marks"
  kAllSkillsAndGoodRest,       // [S == k and R >= 2] "Ratio of All Skills"
  kAverageOverSkillsFiltered,  // S / k if R == 3 else 0  "Skill Fraction"
  kSum,                        // S + R              total score
  kSumOverSkills,              // S                  total skill score
  kRescaledSum,                // ((S + R) / (k + 3))^(k + 3)
  kAverage,                    // (S + R) / (k + 3)
  kAverageOverSkills,          // S / k
  kSumOverSkillsFiltered,      // S if R == 3 else 0
  kSplitSkillsVsRestBinary,    // [S == k] + [R >= 2]
};

// All methods, in the order above.
const std::vector<ScoreMethod>& AllScoreMethods();
// The reference's name ("all_points_earned_binary", ...).
absl::string_view ScoreMethodName(ScoreMethod m);
// Our metric name ("ratio_full_marks", "ratio_all_skills", "skill_fraction",
// "total_score", "total_skill_score", "rescaled_score", "average_score",
// "average_skill_score", "filtered_skill_score", "split_binary").
absl::string_view ScoreMethodMetricName(ScoreMethod m);

// How generation rounds combine (--gen_pts_agg_method).
enum class GenerationAggregation { kMax, kMean };
absl::StatusOr<GenerationAggregation> ParseGenerationAggregation(
    absl::string_view name);  // "max" | "mean"

// Majority vote per point: rint(mean over rounds) (round half to even, as
// numpy). gradings[r][j]. REQUIRES: non-empty, equal lengths.
std::vector<double> MajorityVote(
    const std::vector<std::vector<double>>& gradings);

// The score of one voted point list q (k + 3 entries) under `m`.
double ScorePoints(const std::vector<double>& q, int k, ScoreMethod m);

struct MeanSe {
  double mean = 0.0;
  double se = 0.0;  // NaN when n < 2 (numpy std with ddof=1)
  int n = 0;
};
// mean and std(ddof=1)/sqrt(n) of `xs`. n = 0 gives NaN mean.
MeanSe MeanAndStandardError(const std::vector<double>& xs);

// points[c][g][r][j]: combination c, generation round g, grading round r,
// point j (the final k + 3 points, see FinalPoints).
using PointsTensor = std::vector<std::vector<std::vector<std::vector<double>>>>;

// Per-combination score m[c] under `m`: vote, score each generation, then
// max/mean over generations.
// Errors: InvalidArgument if a point list does not have k + 3 entries or a
// combination has no generation or grading rounds.
absl::StatusOr<std::vector<double>> PerCombinationScores(
    const PointsTensor& points, int k, ScoreMethod m,
    GenerationAggregation agg = GenerationAggregation::kMax);

// mean ± s.e. over combinations for every method.
absl::StatusOr<std::map<ScoreMethod, MeanSe>> AggregateMetrics(
    const PointsTensor& points, int k,
    GenerationAggregation agg = GenerationAggregation::kMax);

}  // namespace smoe::skillmix

#endif  // SMOE_WORKER_EVAL_SKILLMIX_METRICS_H_
