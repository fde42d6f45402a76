// Copyright 2026 SMoE Lab authors.
//
// File: trials/sraven_rules.h
//
// The rules between SRAVEN parameters, stated once (issue 34 item 4): the
// parameter table (sraven_params.cc) bounds each parameter alone; these
// bound them together (warmup < steps, top_k <= num_experts, the model size,
// expert parallelism's divisibility and router). Called where sweeps are
// validated (through SravenKind().rules: sweeps/sweep_spec.cc,
// ValidateTrialParams, every grid point before a trial exists) and where
// smoe-trainer reads TRIAL.json (worker/trainer/train_config.cc,
// ValidateTrainConfig), so a point the coordinator accepts is one the trainer
// runs, with the same message.
//
// Thread-safety: pure functions.
#ifndef SMOE_TRIALS_SRAVEN_RULES_H_
#define SMOE_TRIALS_SRAVEN_RULES_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace smoe::trials {

// The largest SRAVEN model a trial may ask for, in parameters (the paper's
// is ~2 * 10^6).
inline constexpr double kMaxSravenModelParams = 1e10;

// The approximate parameter count of a SRAVEN model (worker/model/
// model_config.h: D = 128w, attention q/k/v/o 64w wide in all, each expert's
// MLP 256w): per layer about 4 * D * 64w attention weights and
// num_experts * 2 * D * 256w expert weights, i.e.
// depth * w^2 * (32768 + 65536 * num_experts). Keep it in step with the
// model if its layer sizes change.
double ApproxSravenModelParams(int64_t depth, double width,
                               int64_t num_experts);

// InvalidArgument "depth=D, width=W, num_experts=E make a model of about N
// parameters, more than 1e+10 (...)" when ApproxSravenModelParams exceeds
// kMaxSravenModelParams (or is NaN); OK otherwise. Allocates nothing.
absl::Status CheckSravenModelSize(int64_t depth, double width,
                                  int64_t num_experts);

// The parameters the rules read, with the kind's defaults filled in where a
// point leaves one out (warmup stays unset: the trainer then takes
// min(1000, steps / 10), which is always < steps).
struct SravenShape {
  int64_t steps = 0;
  std::optional<int64_t> warmup;
  int64_t num_experts = 0;
  int64_t top_k = 0;
  int64_t depth = 0;
  double width = 0;
  int64_t ep_size = 1;
  int64_t batch_size = 0;
  std::string router;  // "topk", "soft", ...
};

// The first rule `shape` breaks as InvalidArgument naming the values
// ("top_k=16 is larger than num_experts=8", "ep_size=2 does not divide
// batch_size=63", "ep_size=2 needs router: topk (got router: soft)", "warmup=
// 1000 must be smaller than steps=500 (...)", CheckSravenModelSize's); OK
// when it breaks none. Callers add where the values came from.
absl::Status CheckSravenRules(const SravenShape& shape);

// CheckSravenRules on a sweep point (its parameters already checked one by
// one against SravenKind()'s table), the left-out ones at their defaults:
// SravenKind().rules.
absl::Status CheckSravenPointRules(const nlohmann::json& point);

}  // namespace smoe::trials

#endif  // SMOE_TRIALS_SRAVEN_RULES_H_
