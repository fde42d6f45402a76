// Copyright 2026 SMoE Lab authors.
//
// File: trials/sraven_model_size.h
//
// The SRAVEN model-size bound (issue 36): the parameter table
// (sraven_params.cc) bounds each parameter alone (width <= 256, depth <= 256,
// num_experts <= 256), which admits models of ~10^14 parameters. One check,
// called where sweeps are validated (coordinator/sweep_spec.cc,
// ValidateTrialParams) and where smoe-trainer reads TRIAL.json
// (worker/trainer/train_config.cc, ValidateTrainConfig).
//
// Thread-safety: pure functions.
#ifndef SMOE_TRIALS_SRAVEN_MODEL_SIZE_H_
#define SMOE_TRIALS_SRAVEN_MODEL_SIZE_H_

#include <cstdint>

#include "absl/status/status.h"

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

}  // namespace smoe::trials

#endif  // SMOE_TRIALS_SRAVEN_MODEL_SIZE_H_
