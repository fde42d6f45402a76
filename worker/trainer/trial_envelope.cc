// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/trial_envelope.h"

#include "absl/strings/str_cat.h"
#include "trials/json_limits.h"
#include "trials/params.h"

namespace smoe::trainer {

using json = nlohmann::json;
using trials::JsonParamError;

namespace {

absl::Status GetString(const std::string& key, const json& v,
                       std::string* out) {
  if (!v.is_string()) return JsonParamError(key, v, "must be a string");
  *out = v.get<std::string>();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TrialEnvelope> ParseTrialEnvelope(absl::string_view text) {
  // Before parsing: copying or printing a value nested 100k deep overflows
  // the stack (SIGSEGV instead of exit 64).
  if (absl::Status deep = trials::CheckJsonDepth(text, "TRIAL.json");
      !deep.ok()) {
    return deep;
  }
  const json j = json::parse(text.begin(), text.end(), nullptr,
                             /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError("TRIAL.json is not valid JSON");
  }
  if (!j.is_object()) {
    return absl::InvalidArgumentError("TRIAL.json must be a JSON object");
  }
  TrialEnvelope e;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const json& v = it.value();
    absl::Status s;
    if (key == "sweep_id") {
      s = GetString(key, v, &e.sweep_id);
    } else if (key == "trial_id") {
      s = GetString(key, v, &e.trial_id);
    } else if (key == "kind") {
      s = GetString(key, v, &e.kind);
    } else if (key == "attempt") {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
          v.get<int64_t>() > (int64_t{1} << 30)) {
        s = JsonParamError(key, v, "must be an integer in 0..1073741824");
      } else {
        e.attempt = v.get<int64_t>();
      }
    } else if (key == "seed") {
      if (v.is_number_unsigned()) {
        e.seed = v.get<uint64_t>();
      } else if (v.is_number_integer() && v.get<int64_t>() >= 0) {
        e.seed = static_cast<uint64_t>(v.get<int64_t>());
      } else {
        s = JsonParamError(key, v, "must be a non-negative integer");
      }
    } else if (key == "params") {
      if (!v.is_object()) {
        s = JsonParamError(key, v, "must be an object");
      } else {
        e.params = v;
      }
    } else {
      s = absl::InvalidArgumentError(absl::StrCat(
          "unknown key \"", key, "\" in TRIAL.json (value ", v.dump(), ")"));
    }
    if (!s.ok()) return s;
  }
  return e;
}

absl::StatusOr<std::string> TrialKind(absl::string_view text) {
  if (absl::Status deep = trials::CheckJsonDepth(text, "TRIAL.json");
      !deep.ok()) {
    return deep;
  }
  json j = json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("TRIAL.json is not a JSON object");
  }
  if (!j.contains("kind") || !j["kind"].is_string()) return std::string();
  return j["kind"].get<std::string>();
}

}  // namespace smoe::trainer
