// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/train_config.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "trials/params.h"
#include "trials/sraven_rules.h"
#include "worker/trainer/trial_envelope.h"

namespace smoe::trainer {
namespace {

using json = nlohmann::json;
using trials::Set;
using trials::SetEnum;

// Binds one checked param (trials/sraven_params.cc) to its field. Every
// table entry has a line here (tests/trials/trial_params_test.cc).
absl::Status Bind(const std::string& key, const json& v, TrainConfig* c) {
  model::ModelConfig& m = c->model;
  if (key == "M") return Set(v, &m.num_features);
  if (key == "num_rules") return Set(v, &c->num_rules);
  if (key == "frac_ood") return Set(v, &c->frac_ood);
  if (key == "shared_stream") return Set(v, &c->shared_stream);
  if (key == "num_experts") return Set(v, &m.num_experts);
  if (key == "top_k") return Set(v, &m.top_k);
  if (key == "router") return SetEnum(v, &model::ParseRouterKind, &m.router);
  if (key == "gating") return SetEnum(v, &model::ParseRouterGating, &m.gating);
  if (key == "dispatch") {
    return SetEnum(v, &model::ParseDispatch, &m.dispatch);
  }
  if (key == "soft_slots") return Set(v, &m.soft_slots_per_expert);
  if (key == "load_balance_alpha") return Set(v, &m.load_balance_alpha);
  if (key == "attention") {
    return SetEnum(v, &model::ParseAttentionKind, &m.attention);
  }
  if (key == "attention_dropout") return Set(v, &m.attention_dropout);
  if (key == "width") return Set(v, &m.width);
  if (key == "depth") return Set(v, &m.depth);
  if (key == "steps") return Set(v, &c->steps);
  if (key == "batch_size") return Set(v, &c->batch_size);
  if (key == "lr") return Set(v, &c->lr);
  if (key == "weight_decay") return Set(v, &c->weight_decay);
  if (key == "warmup") return Set(v, &c->warmup);
  if (key == "eval_every") return Set(v, &c->eval_every);
  if (key == "eval_rungs_from") return Set(v, &c->eval_rungs_from);
  if (key == "eval_rungs_eta") return Set(v, &c->eval_rungs_eta);
  if (key == "num_eval") return Set(v, &c->num_eval);
  if (key == "log_every") return Set(v, &c->log_every);
  if (key == "checkpoint_every") return Set(v, &c->checkpoint_every);
  if (key == "device") return Set(v, &c->device);
  if (key == "bf16") return Set(v, &c->bf16);
  if (key == "ep_size") return Set(v, &c->ep_size);
  return absl::InternalError(absl::StrCat(
      "parameter \"", key,
      "\" is in trials/sraven_params.cc but the trainer does not read it"));
}

absl::Status ApplyParam(const std::string& key, const json& v, TrainConfig* c) {
  SMOE_RETURN_IF_ERROR(trials::CheckTrialParam(trials::SravenKind(), key, v));
  return Bind(key, v, c);
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
  bool warmup_given = false;
  if (params != nullptr) {
    for (auto it = params->begin(); it != params->end(); ++it) {
      SMOE_RETURN_IF_ERROR(ApplyParam(it.key(), it.value(), &spec.config));
      warmup_given = warmup_given || it.key() == "warmup";
    }
  }
  if (!warmup_given) spec.config.warmup = DefaultWarmup(spec.config.steps);
  SMOE_RETURN_IF_ERROR(ValidateTrainConfig(spec.config));
  return spec;
}

absl::Status ValidateTrainConfig(const TrainConfig& c) {
  SMOE_RETURN_IF_ERROR(model::ValidateModelConfig(c.model));
  if (c.ep_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("ep_size=", c.ep_size, ": must be >= 1"));
  }
  if (c.steps < 1 || c.batch_size < 1 || c.eval_every < 1 || c.num_eval < 1 ||
      c.checkpoint_every < 1 || c.log_every < 1 || c.warmup < 0) {
    return absl::InvalidArgumentError(
        "steps, batch_size, eval_every, num_eval, checkpoint_every, log_every "
        "must be >= 1 and warmup >= 0");
  }
  // The rules between parameters that sweeps are held to
  // (sweeps/sweep_spec.cc), stated once in trials/sraven_rules.h and
  // checked before anything is allocated: a TRIAL.json given to smoe-trainer
  // by hand would otherwise try to build a ~10^14-parameter model (issue 36).
  trials::SravenShape shape;
  shape.steps = c.steps;
  shape.warmup = c.warmup;
  shape.num_experts = c.model.num_experts;
  shape.top_k = c.model.top_k;
  shape.depth = c.model.depth;
  shape.width = c.model.width;
  shape.ep_size = c.ep_size;
  shape.batch_size = c.batch_size;
  shape.router = model::RouterKindName(c.model.router);
  SMOE_RETURN_IF_ERROR(trials::CheckSravenRules(shape));
  if (c.eval_rungs_from < 0 || c.eval_rungs_eta < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("eval_rungs_from=", c.eval_rungs_from,
                     ", eval_rungs_eta=", c.eval_rungs_eta,
                     ": need eval_rungs_from >= 0 and eval_rungs_eta >= 2"));
  }
  return absl::OkStatus();
}

bool EvalDue(const TrainConfig& c, int64_t step) {
  if (step <= 0) return false;
  if (step == 1 || step % c.eval_every == 0 || step == c.steps) return true;
  if (c.eval_rungs_from <= 0 || c.eval_rungs_eta < 2) return false;
  for (int64_t r = c.eval_rungs_from; r <= step;) {
    if (r == step) return true;
    if (r > step / c.eval_rungs_eta) break;
    r *= c.eval_rungs_eta;
  }
  return false;
}

int64_t DefaultWarmup(int64_t steps) {
  return std::min<int64_t>(1000, std::max<int64_t>(steps, 0) / 10);
}

double LearningRate(const TrainConfig& c, int64_t step) {
  const int64_t w = c.warmup;
  if (step < w) {
    return c.lr * static_cast<double>(step) / static_cast<double>(w);
  }
  // The reference's constant 0.1 lr tail of W steps; a run too short for it
  // decays to the end instead.
  int64_t decay = c.steps - 2 * w;
  if (decay <= 0) decay = c.steps - w;
  if (decay <= 0) return 0.1 * c.lr;  // W >= S: refused by validation
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
            {"gating", model::RouterGatingName(m.gating)},
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
