// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/train_config.h"

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "worker/trainer/json_params.h"
#include "worker/trainer/trial_envelope.h"

namespace smoe::trainer {
namespace {

using json = nlohmann::json;

absl::Status ApplyParam(const std::string& key, const json& v, TrainConfig* c) {
  model::ModelConfig& m = c->model;
  constexpr int64_t kMaxI = std::numeric_limits<int64_t>::max() / 4;
  if (key == "M") {
    return GetJsonInt(key, v, 1, 8, kSravenIntRules, &m.num_features);
  }
  if (key == "top_k") {
    return GetJsonInt(key, v, 1, 1024, kSravenIntRules, &m.top_k);
  }
  if (key == "num_experts") {
    return GetJsonInt(key, v, 1, 1024, kSravenIntRules, &m.num_experts);
  }
  if (key == "attention") {
    return GetJsonEnum(key, v, &model::ParseAttentionKind, &m.attention);
  }
  if (key == "router") {
    return GetJsonEnum(key, v, &model::ParseRouterKind, &m.router);
  }
  if (key == "gating") {
    return GetJsonEnum(key, v, &model::ParseGating, &m.gating);
  }
  if (key == "dispatch") {
    return GetJsonEnum(key, v, &model::ParseDispatch, &m.dispatch);
  }
  if (key == "steps") {
    return GetJsonInt(key, v, 1, kMaxI, kSravenIntRules, &c->steps);
  }
  if (key == "batch_size") {
    return GetJsonInt(key, v, 1, 65536, kSravenIntRules, &c->batch_size);
  }
  if (key == "lr") {
    SMOE_RETURN_IF_ERROR(GetJsonFiniteDouble(key, v, &c->lr));
    return c->lr > 0 ? absl::OkStatus() : JsonParamError(key, v, "must be > 0");
  }
  if (key == "weight_decay") {
    SMOE_RETURN_IF_ERROR(GetJsonFiniteDouble(key, v, &c->weight_decay));
    return c->weight_decay >= 0 ? absl::OkStatus()
                                : JsonParamError(key, v, "must be >= 0");
  }
  if (key == "warmup") {
    return GetJsonInt(key, v, 0, kMaxI, kSravenIntRules, &c->warmup);
  }
  if (key == "width") {
    SMOE_RETURN_IF_ERROR(GetJsonFiniteDouble(key, v, &m.width));
    const double w16 = 16 * m.width;
    if (!(m.width > 0) || w16 > 4096 ||
        std::fabs(w16 - std::round(w16)) > 1e-9) {
      return JsonParamError(key, v,
                            "must be positive with 16*width an integer");
    }
    return absl::OkStatus();
  }
  if (key == "depth") {
    return GetJsonInt(key, v, 1, 256, kSravenIntRules, &m.depth);
  }
  if (key == "eval_every") {
    return GetJsonInt(key, v, 1, kMaxI, kSravenIntRules, &c->eval_every);
  }
  if (key == "num_eval") {
    return GetJsonInt(key, v, 1, kMaxI, kSravenIntRules, &c->num_eval);
  }
  if (key == "checkpoint_every") {
    return GetJsonInt(key, v, 1, kMaxI, kSravenIntRules, &c->checkpoint_every);
  }
  if (key == "log_every") {
    return GetJsonInt(key, v, 1, kMaxI, kSravenIntRules, &c->log_every);
  }
  if (key == "device") {
    SMOE_RETURN_IF_ERROR(GetJsonString(key, v, &c->device));
    return c->device == "cpu" || c->device == "cuda"
               ? absl::OkStatus()
               : JsonParamError(key, v, "must be cpu or cuda");
  }
  if (key == "bf16") return GetJsonBool(key, v, &c->bf16);
  if (key == "load_balance_alpha") {
    SMOE_RETURN_IF_ERROR(GetJsonFiniteDouble(key, v, &m.load_balance_alpha));
    return m.load_balance_alpha >= 0 ? absl::OkStatus()
                                     : JsonParamError(key, v, "must be >= 0");
  }
  if (key == "num_rules") {
    return GetJsonInt(key, v, 1, 8, kSravenIntRules, &c->num_rules);
  }
  if (key == "frac_ood") {
    SMOE_RETURN_IF_ERROR(GetJsonFiniteDouble(key, v, &c->frac_ood));
    return c->frac_ood >= 0 && c->frac_ood < 1
               ? absl::OkStatus()
               : JsonParamError(key, v, "must be in [0, 1)");
  }
  if (key == "shared_stream") return GetJsonBool(key, v, &c->shared_stream);
  if (key == "soft_slots") {
    return GetJsonInt(key, v, 1, 1024, kSravenIntRules,
                      &m.soft_slots_per_expert);
  }
  if (key == "ep_size") {
    return GetJsonInt(key, v, 1, 64, kSravenIntRules, &c->ep_size);
  }
  if (key == "attention_dropout") {
    SMOE_RETURN_IF_ERROR(GetJsonFiniteDouble(key, v, &m.attention_dropout));
    return m.attention_dropout >= 0 && m.attention_dropout < 1
               ? absl::OkStatus()
               : JsonParamError(key, v, "must be in [0, 1)");
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown parameter \"", key, "\" (value ", v.dump(), ")"));
}

}  // namespace

absl::StatusOr<TrialSpec> ParseTrialJson(absl::string_view text) {
  SMOE_ASSIGN_OR_RETURN(TrialEnvelope e, ParseTrialEnvelope(text));
  if (e.kind != "sraven") {
    return absl::InvalidArgumentError(absl::StrCat(
        "kind=\"", e.kind,
        "\": not a sraven trial (skillmix trials: skillmix_config.h)"));
  }
  TrialSpec spec;
  spec.sweep_id = e.sweep_id;
  spec.trial_id = e.trial_id;
  spec.attempt = e.attempt;
  spec.kind = e.kind;
  spec.config.seed = e.seed;
  const json* params = &e.params;
  if (params != nullptr) {
    for (auto it = params->begin(); it != params->end(); ++it) {
      SMOE_RETURN_IF_ERROR(ApplyParam(it.key(), it.value(), &spec.config));
    }
  }
  SMOE_RETURN_IF_ERROR(ValidateTrainConfig(spec.config));
  return spec;
}

absl::Status ValidateTrainConfig(const TrainConfig& c) {
  SMOE_RETURN_IF_ERROR(model::ValidateModelConfig(c.model));
  if (c.ep_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("ep_size=", c.ep_size, ": must be >= 1"));
  }
  if (c.ep_size > 1) {
    if (c.model.num_experts % c.ep_size != 0 || c.model.num_experts < 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("ep_size=", c.ep_size, ": must divide num_experts=",
                       c.model.num_experts, " (and num_experts >= 2)"));
    }
    if (c.batch_size % c.ep_size != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ep_size=", c.ep_size, ": must divide batch_size=", c.batch_size));
    }
    if (c.model.router != model::RouterKind::kTopK) {
      return absl::InvalidArgumentError(
          absl::StrCat("ep_size=", c.ep_size, ": needs router=\"topk\""));
    }
  }
  if (c.steps < 1 || c.batch_size < 1 || c.eval_every < 1 || c.num_eval < 1 ||
      c.checkpoint_every < 1 || c.log_every < 1 || c.warmup < 0) {
    return absl::InvalidArgumentError(
        "steps, batch_size, eval_every, num_eval, checkpoint_every, log_every "
        "must be >= 1 and warmup >= 0");
  }
  return absl::OkStatus();
}

double LearningRate(const TrainConfig& c, int64_t step) {
  const int64_t w = c.warmup;
  if (step < w) {
    return c.lr * static_cast<double>(step) / static_cast<double>(w);
  }
  const int64_t decay = c.steps - 2 * w;
  if (decay <= 0) return 0.1 * c.lr;
  const double t = static_cast<double>(std::min(step - w, decay)) /
                   static_cast<double>(decay);
  return c.lr * (0.1 + 0.9 * 0.5 * (1.0 + std::cos(M_PI * t)));
}

std::string TrajectoryFingerprint(const TrainConfig& c) {
  const model::ModelConfig& m = c.model;
  json j = {{"M", m.num_features},
            {"F", m.num_values},
            {"width", m.width},
            {"depth", m.depth},
            {"attention", model::AttentionKindName(m.attention)},
            {"attention_dropout", m.attention_dropout},
            {"num_experts", m.num_experts},
            {"top_k", m.top_k},
            {"router", model::RouterKindName(m.router)},
            {"gating", model::GatingName(m.gating)},
            {"soft_slots", m.soft_slots_per_expert},
            {"load_balance_alpha", m.load_balance_alpha},
            {"seed", c.seed},
            {"steps", c.steps},
            {"batch_size", c.batch_size},
            {"lr", c.lr},
            {"weight_decay", c.weight_decay},
            {"warmup", c.warmup},
            {"bf16", c.bf16},
            {"num_rules", c.num_rules},
            {"frac_ood", c.frac_ood},
            {"shared_stream", c.shared_stream}};
  return j.dump();
}

}  // namespace smoe::trainer
