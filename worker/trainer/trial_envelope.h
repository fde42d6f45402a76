// Copyright 2026 SMoE Lab authors.
//
// File: worker/trainer/trial_envelope.h
//
// The kind-independent top level of TRIAL.json (docs/trainer-protocol.md):
// {"sweep_id", "trial_id", "attempt", "kind", "seed", "params"}. Each trial
// kind's parser (train_config.h: sraven; skillmix_config.h: skillmix) reads
// this envelope, then its own params.
#ifndef SMOE_WORKER_TRAINER_TRIAL_ENVELOPE_H_
#define SMOE_WORKER_TRAINER_TRIAL_ENVELOPE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace smoe::trainer {

struct TrialEnvelope {
  std::string sweep_id;
  std::string trial_id;
  int64_t attempt = 0;  // 0..2^30
  std::string kind;     // "" when absent
  uint64_t seed = 0;    // >= 0
  nlohmann::json params = nlohmann::json::object();
};

// Parses TRIAL.json text. InvalidArgument naming the key and value for bad
// JSON, a non-object, an unknown top-level key, or a wrong type or range;
// also for text nested deeper than trials::kMaxJsonDepth.
absl::StatusOr<TrialEnvelope> ParseTrialEnvelope(absl::string_view text);

// The "kind" of a TRIAL.json ("" if absent); InvalidArgument for bad JSON or
// text nested deeper than trials::kMaxJsonDepth. smoe-trainer reads it first
// to pick the program that runs the trial (main.cc).
absl::StatusOr<std::string> TrialKind(absl::string_view text);

}  // namespace smoe::trainer

#endif  // SMOE_WORKER_TRAINER_TRIAL_ENVELOPE_H_
