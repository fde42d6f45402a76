// Copyright 2026 SMoE Lab authors.
#include "worker/model/model_config.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace smoe::model {
namespace {

struct AttentionName {
  AttentionKind kind;
  const char* name;
};
constexpr AttentionName kAttentionNames[] = {
    {AttentionKind::kSoftmax, "softmax"},
    {AttentionKind::kLinear, "linear"},
    {AttentionKind::kHyla, "hyla"},
    {AttentionKind::kLinearRmsHead, "linear_rms_head"},
    {AttentionKind::kHylaNoRmsHead, "hyla_no_rms_head"},
    {AttentionKind::kHylaMlpLinear, "hyla_mlp_linear"},
    {AttentionKind::kHylaMlpLinearNoRmsHead, "hyla_mlp_linear_no_rms_head"},
    {AttentionKind::kSoftmaxHyla, "softmax_hyla"},
};

}  // namespace

ScoreNorm ScoreNormOf(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::kSoftmax:
    case AttentionKind::kSoftmaxHyla:
      return ScoreNorm::kSoftmaxOverKeys;
    case AttentionKind::kLinear:
    case AttentionKind::kHylaNoRmsHead:
    case AttentionKind::kHylaMlpLinearNoRmsHead:
      return ScoreNorm::kNone;
    case AttentionKind::kHyla:
    case AttentionKind::kLinearRmsHead:
    case AttentionKind::kHylaMlpLinear:
      return ScoreNorm::kRmsOverHeads;
  }
  return ScoreNorm::kNone;
}

ValueNet ValueNetOf(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::kSoftmax:
    case AttentionKind::kLinear:
    case AttentionKind::kLinearRmsHead:
      return ValueNet::kLinear;
    case AttentionKind::kHyla:
    case AttentionKind::kHylaNoRmsHead:
    case AttentionKind::kSoftmaxHyla:
      return ValueNet::kTwoLayerRelu;
    case AttentionKind::kHylaMlpLinear:
    case AttentionKind::kHylaMlpLinearNoRmsHead:
      return ValueNet::kTwoLayerIdentity;
  }
  return ValueNet::kLinear;
}

absl::StatusOr<AttentionKind> ParseAttentionKind(absl::string_view name) {
  for (const auto& entry : kAttentionNames) {
    if (name == entry.name) return entry.kind;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "attention=\"", name,
      "\": must be one of softmax, linear, hyla, linear_rms_head, "
      "hyla_no_rms_head, hyla_mlp_linear, hyla_mlp_linear_no_rms_head, "
      "softmax_hyla"));
}

const char* AttentionKindName(AttentionKind kind) {
  for (const auto& entry : kAttentionNames) {
    if (entry.kind == kind) return entry.name;
  }
  return "unknown";
}

absl::StatusOr<RouterKind> ParseRouterKind(absl::string_view name) {
  if (name == "topk") return RouterKind::kTopK;
  if (name == "soft") return RouterKind::kSoft;
  return absl::InvalidArgumentError(
      absl::StrCat("router=\"", name, "\": must be topk or soft"));
}

const char* RouterKindName(RouterKind kind) {
  return kind == RouterKind::kTopK ? "topk" : "soft";
}

absl::StatusOr<RouterGating> ParseRouterGating(absl::string_view name) {
  if (name == "topk_then_softmax") return RouterGating::kRenormalized;
  if (name == "softmax_then_topk") return RouterGating::kNoRenorm;
  return absl::InvalidArgumentError(absl::StrCat(
      "gating=\"", name, "\": must be topk_then_softmax or softmax_then_topk"));
}

const char* RouterGatingName(RouterGating gating) {
  return gating == RouterGating::kRenormalized ? "topk_then_softmax"
                                               : "softmax_then_topk";
}

absl::StatusOr<Dispatch> ParseDispatch(absl::string_view name) {
  if (name == "gather") return Dispatch::kGather;
  if (name == "dense") return Dispatch::kDense;
  if (name == "ops") return Dispatch::kOps;
  return absl::InvalidArgumentError(
      absl::StrCat("dispatch=\"", name, "\": must be gather, dense or ops"));
}

const char* DispatchName(Dispatch dispatch) {
  switch (dispatch) {
    case Dispatch::kGather:
      return "gather";
    case Dispatch::kDense:
      return "dense";
    case Dispatch::kOps:
      return "ops";
  }
  return "?";
}

absl::Status ValidateModelConfig(const ModelConfig& c) {
  if (c.num_features < 1 || c.num_features > 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("M=", c.num_features, ": must be in 1..8"));
  }
  if (c.num_values < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_values=", c.num_values, ": must be >= 2"));
  }
  const double w16 = 16.0 * c.width;
  if (!(c.width > 0) || !std::isfinite(c.width) || w16 > 4096 ||
      std::fabs(w16 - std::round(w16)) > 1e-9) {
    return absl::InvalidArgumentError(absl::StrCat(
        "width=", c.width,
        ": must be positive with 16*width an integer (e.g. 0.25, 0.5, 1, 2)"));
  }
  if (c.depth < 1 || c.depth > 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("depth=", c.depth, ": must be in 1..256"));
  }
  if (!(c.attention_dropout >= 0 && c.attention_dropout < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attention_dropout=", c.attention_dropout, ": must be in [0, 1)"));
  }
  if (c.num_experts < 1 || c.num_experts > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_experts=", c.num_experts, ": must be in 1..1024"));
  }
  if (c.top_k < 1 || c.top_k > c.num_experts) {
    return absl::InvalidArgumentError(
        absl::StrCat("top_k=", c.top_k, ": must be in 1..num_experts (",
                     c.num_experts, ")"));
  }
  if (c.soft_slots_per_expert < 1 || c.soft_slots_per_expert > 1024) {
    return absl::InvalidArgumentError(absl::StrCat(
        "soft_slots=", c.soft_slots_per_expert, ": must be in 1..1024"));
  }
  if (!(c.load_balance_alpha >= 0) || !std::isfinite(c.load_balance_alpha)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "load_balance_alpha=", c.load_balance_alpha, ": must be >= 0"));
  }
  return absl::OkStatus();
}

int RelativePositionBucket(int query_pos, int key_pos, int num_buckets,
                           int max_distance) {
  const int n = query_pos > key_pos ? query_pos - key_pos : 0;
  const int max_exact = num_buckets / 2;
  if (n < max_exact) return n;
  const float eps = std::numeric_limits<float>::epsilon();
  const float ratio = static_cast<float>(n) / static_cast<float>(max_exact);
  const float scale = std::log(static_cast<float>(max_distance) /
                               static_cast<float>(max_exact));
  const float v = std::log(ratio + eps) / scale *
                  static_cast<float>(num_buckets - max_exact);
  const int bucket = max_exact + static_cast<int>(v);  // v >= 0: truncation
  return bucket < num_buckets - 1 ? bucket : num_buckets - 1;
}

}  // namespace smoe::model
