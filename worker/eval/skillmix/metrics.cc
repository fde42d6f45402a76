// Copyright 2026 SMoE Lab authors.
#include "worker/eval/skillmix/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace smoe::skillmix {

const std::vector<ScoreMethod>& AllScoreMethods() {
  static const auto* kAll = new std::vector<ScoreMethod>{
      ScoreMethod::kAllPointsEarnedBinary,
      ScoreMethod::kAllSkillsAndGoodRest,
      ScoreMethod::kAverageOverSkillsFiltered,
      ScoreMethod::kSum,
      ScoreMethod::kSumOverSkills,
      ScoreMethod::kRescaledSum,
      ScoreMethod::kAverage,
      ScoreMethod::kAverageOverSkills,
      ScoreMethod::kSumOverSkillsFiltered,
      ScoreMethod::kSplitSkillsVsRestBinary,
  };
  return *kAll;
}

absl::string_view ScoreMethodName(ScoreMethod m) {
  switch (m) {
    case ScoreMethod::kAllPointsEarnedBinary:
      return "all_points_earned_binary";
    case ScoreMethod::kAllSkillsAndGoodRest:
      return "all_skills_and_good_rest";
    case ScoreMethod::kAverageOverSkillsFiltered:
      return "average_over_skills_filtered";
    case ScoreMethod::kSum:
      return "sum";
    case ScoreMethod::kSumOverSkills:
      return "sum_over_skills";
    case ScoreMethod::kRescaledSum:
      return "rescaled_sum";
    case ScoreMethod::kAverage:
      return "average";
    case ScoreMethod::kAverageOverSkills:
      return "average_over_skills";
    case ScoreMethod::kSumOverSkillsFiltered:
      return "sum_over_skills_filtered";
    case ScoreMethod::kSplitSkillsVsRestBinary:
      return "split_skills_vs_rest_binary";
  }
  return "";
}

absl::string_view ScoreMethodMetricName(ScoreMethod m) {
  switch (m) {
    case ScoreMethod::kAllPointsEarnedBinary:
      return "ratio_full_marks";
    case ScoreMethod::kAllSkillsAndGoodRest:
      return "ratio_all_skills";
    case ScoreMethod::kAverageOverSkillsFiltered:
      return "skill_fraction";
    case ScoreMethod::kSum:
      return "total_score";
    case ScoreMethod::kSumOverSkills:
      return "total_skill_score";
    case ScoreMethod::kRescaledSum:
      return "rescaled_score";
    case ScoreMethod::kAverage:
      return "average_score";
    case ScoreMethod::kAverageOverSkills:
      return "average_skill_score";
    case ScoreMethod::kSumOverSkillsFiltered:
      return "filtered_skill_score";
    case ScoreMethod::kSplitSkillsVsRestBinary:
      return "split_binary";
  }
  return "";
}

absl::StatusOr<GenerationAggregation> ParseGenerationAggregation(
    absl::string_view name) {
  if (name == "max") return GenerationAggregation::kMax;
  if (name == "mean" || name == "average") return GenerationAggregation::kMean;
  return absl::InvalidArgumentError(absl::StrCat(
      "generation_aggregation: '", name, "' is not one of {max, mean}"));
}

std::vector<double> MajorityVote(
    const std::vector<std::vector<double>>& gradings) {
  std::vector<double> q;
  if (gradings.empty()) return q;
  q.assign(gradings.front().size(), 0.0);
  for (const auto& r : gradings) {
    for (size_t j = 0; j < q.size() && j < r.size(); ++j) q[j] += r[j];
  }
  for (double& v : q) {
    v = std::nearbyint(v / static_cast<double>(gradings.size()));
  }
  return q;
}

double ScorePoints(const std::vector<double>& q, int k, ScoreMethod m) {
  const int total = k + 3;
  double s = 0.0;
  double r = 0.0;
  for (int j = 0; j < static_cast<int>(q.size()); ++j) {
    (j < k ? s : r) += q[j];
  }
  const double c = 3.0;  // max_possible_points - k
  switch (m) {
    case ScoreMethod::kAllPointsEarnedBinary:
      return s + r == total ? 1.0 : 0.0;
    case ScoreMethod::kAllSkillsAndGoodRest:
      return (s == k && r >= c - 1) ? 1.0 : 0.0;
    case ScoreMethod::kAverageOverSkillsFiltered:
      return r == c ? s / k : 0.0;
    case ScoreMethod::kSum:
      return s + r;
    case ScoreMethod::kSumOverSkills:
      return s;
    case ScoreMethod::kRescaledSum:
      return std::pow((s + r) / total, total);
    case ScoreMethod::kAverage:
      return (s + r) / total;
    case ScoreMethod::kAverageOverSkills:
      return s / k;
    case ScoreMethod::kSumOverSkillsFiltered:
      return r == c ? s : 0.0;
    case ScoreMethod::kSplitSkillsVsRestBinary:
      return (s == k ? 1.0 : 0.0) + (r >= c - 1 ? 1.0 : 0.0);
  }
  return 0.0;
}

MeanSe MeanAndStandardError(const std::vector<double>& xs) {
  MeanSe out;
  out.n = static_cast<int>(xs.size());
  if (xs.empty()) {
    out.mean = out.se = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
  double sum = 0.0;
  for (double x : xs) sum += x;
  out.mean = sum / out.n;
  if (out.n < 2) {
    out.se = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
  double ss = 0.0;
  for (double x : xs) ss += (x - out.mean) * (x - out.mean);
  out.se = std::sqrt(ss / (out.n - 1)) / std::sqrt(static_cast<double>(out.n));
  return out;
}

absl::StatusOr<std::vector<double>> PerCombinationScores(
    const PointsTensor& points, int k, ScoreMethod m,
    GenerationAggregation agg) {
  std::vector<double> out;
  out.reserve(points.size());
  for (size_t c = 0; c < points.size(); ++c) {
    if (points[c].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("combination ", c, ": no generation rounds"));
    }
    double best = -std::numeric_limits<double>::infinity();
    double sum = 0.0;
    for (size_t g = 0; g < points[c].size(); ++g) {
      const auto& gradings = points[c][g];
      if (gradings.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "combination ", c, " generation ", g, ": no grading rounds"));
      }
      for (const auto& p : gradings) {
        if (static_cast<int>(p.size()) != k + 3) {
          return absl::InvalidArgumentError(
              absl::StrCat("combination ", c, " generation ", g, ": ", p.size(),
                           " points, expected k+3 = ", k + 3));
        }
      }
      const double score = ScorePoints(MajorityVote(gradings), k, m);
      best = std::max(best, score);
      sum += score;
    }
    out.push_back(agg == GenerationAggregation::kMax
                      ? best
                      : sum / static_cast<double>(points[c].size()));
  }
  return out;
}

absl::StatusOr<std::map<ScoreMethod, MeanSe>> AggregateMetrics(
    const PointsTensor& points, int k, GenerationAggregation agg) {
  std::map<ScoreMethod, MeanSe> out;
  for (ScoreMethod m : AllScoreMethods()) {
    auto scores = PerCombinationScores(points, k, m, agg);
    if (!scores.ok()) return scores.status();
    out[m] = MeanAndStandardError(*scores);
  }
  return out;
}

}  // namespace smoe::skillmix
