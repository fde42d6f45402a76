// Copyright 2026 SMoE Lab authors.
//
// File: worker/trainer/json_params.h
//
// Typed reads of one TRIAL.json value, shared by the trial-kind parsers
// (train_config.cc: sraven; skillmix_config.cc: skillmix) and the envelope
// (trial_envelope.cc). Every error is InvalidArgument and names the key and
// the value as JSON: `<key>=<value.dump()>: <why>`, e.g.
// `steps="ten": must be an integer`.
//
// The two parsers read integers by different documented rules, kept as they
// were when the helpers were merged (changing them would change which
// TRIAL.json files are accepted): JsonIntRules says which one a parser uses.
//
// Thread-safety: stateless functions.
#ifndef SMOE_WORKER_TRAINER_JSON_PARAMS_H_
#define SMOE_WORKER_TRAINER_JSON_PARAMS_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace smoe::trainer {

// Returns InvalidArgument "<key>=<value.dump()>: <why>".
absl::Status JsonParamError(absl::string_view key, const nlohmann::json& value,
                            absl::string_view why);

// How an integer parameter is read.
struct JsonIntRules {
  // Also accept a float with an integral value below 9e15 in magnitude
  // (2.0, 1e3) as an integer; otherwise only JSON integers (2) are.
  bool integral_floats = false;
  // Out-of-range message: "must be in lo..hi" (true) or "must be in [lo, hi]".
  bool dotted_range = false;
};
// sraven (train_config.cc): 1e3 is 1000; "must be in 1..8".
inline constexpr JsonIntRules kSravenIntRules{/*integral_floats=*/true,
                                              /*dotted_range=*/true};
// skillmix (skillmix_config.cc): integers only; "must be in [1, 10]".
inline constexpr JsonIntRules kSkillMixIntRules{/*integral_floats=*/false,
                                                /*dotted_range=*/false};

// Reads an integer in [lo, hi] into *out. Errors: "must be an integer" (not
// a number, or a float the rules do not accept), or the range message of
// `rules` (an unsigned value above INT64_MAX counts as out of range). *out is
// unchanged on error.
// REQUIRES: lo <= hi.
absl::Status GetJsonInt(absl::string_view key, const nlohmann::json& v,
                        int64_t lo, int64_t hi, JsonIntRules rules,
                        int64_t* out);

// Same, into a narrower integer type.
// REQUIRES: [lo, hi] fits in T.
template <typename T>
absl::Status GetJsonInt(absl::string_view key, const nlohmann::json& v,
                        int64_t lo, int64_t hi, JsonIntRules rules, T* out) {
  int64_t x = 0;
  absl::Status s = GetJsonInt(key, v, lo, hi, rules, &x);
  if (s.ok()) *out = static_cast<T>(x);
  return s;
}

// Reads a finite number (integer or float): "must be a finite number".
absl::Status GetJsonFiniteDouble(absl::string_view key, const nlohmann::json& v,
                                 double* out);

// Reads a number in [lo, hi]: "must be a number", "must be in [lo, hi]".
// Infinite bounds admit the infinities a JSON parser yields for 1e999.
absl::Status GetJsonDouble(absl::string_view key, const nlohmann::json& v,
                           double lo, double hi, double* out);

// Reads a boolean: "must be true or false".
absl::Status GetJsonBool(absl::string_view key, const nlohmann::json& v,
                         bool* out);

// Reads a string: "must be a string".
absl::Status GetJsonString(absl::string_view key, const nlohmann::json& v,
                           std::string* out);

// Reads a string that is one of `allowed`: "must be one of {a, b}". *out is
// unchanged on error.
absl::Status GetJsonOneOf(absl::string_view key, const nlohmann::json& v,
                          std::initializer_list<const char*> allowed,
                          std::string* out);

// Reads a string and converts it with `parse` (e.g. model::ParseGating);
// returns parse's error as it is (those name the field and value already).
template <typename T>
absl::Status GetJsonEnum(absl::string_view key, const nlohmann::json& v,
                         absl::StatusOr<T> (*parse)(absl::string_view),
                         T* out) {
  std::string s;
  if (absl::Status st = GetJsonString(key, v, &s); !st.ok()) return st;
  absl::StatusOr<T> parsed = parse(s);
  if (!parsed.ok()) return parsed.status();
  *out = *parsed;
  return absl::OkStatus();
}

}  // namespace smoe::trainer

#endif  // SMOE_WORKER_TRAINER_JSON_PARAMS_H_
