// Copyright 2026 SMoE Lab authors.
#include "coordinator/artifacts.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/blob_file.h"
#include "common/status_macros.h"

namespace smoe::coordinator {
namespace {

constexpr char kResultName[] = "result.json";

// result.json of a succeeded trial; empty when it has no result yet.
absl::StatusOr<std::string> ResultJson(store::ExperimentStore* store,
                                       const store::TrialRecord& t) {
  if (t.state != store::TrialState::kSucceeded) return std::string();
  SMOE_ASSIGN_OR_RETURN(std::vector<store::TrialSummary> rows,
                        store->ListSummariesOf(t.sweep_id, {t.trial_id}));
  if (rows.empty()) return std::string();
  const store::TrialSummary& s = rows.front();
  nlohmann::json results = nlohmann::json::object();
  for (const auto& [k, v] : s.results) results[k] = v;
  nlohmann::json params =
      nlohmann::json::parse(t.params_json, nullptr, /*allow_exceptions=*/false);
  if (params.is_discarded()) params = t.params_json;
  nlohmann::json out = {{"trial_id", t.trial_id},
                        {"sweep_id", t.sweep_id},
                        {"seed", t.seed},
                        {"params", params},
                        {"state", store::TrialStateName(t.state)},
                        {"attempt", t.attempt},
                        {"duration_s", s.duration_s},
                        {"results", results}};
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n";
}

}  // namespace

std::string CheckpointArtifactName(const store::CheckpointRecord& c) {
  return absl::StrCat("checkpoint-", c.step, "-", c.file_name);
}

absl::StatusOr<std::vector<ArtifactInfo>> ListArtifacts(
    store::ExperimentStore* store, CheckpointStore* checkpoints,
    const std::string& trial_id) {
  SMOE_ASSIGN_OR_RETURN(store::TrialRecord t, store->GetTrial(trial_id));
  std::vector<ArtifactInfo> out;
  if (checkpoints != nullptr) {
    for (const store::CheckpointRecord& c : checkpoints->List(trial_id)) {
      ArtifactInfo a;
      a.name = CheckpointArtifactName(c);
      a.kind = "checkpoint";
      a.bytes = c.bytes;
      a.sha256 = c.sha256;
      a.step = c.step;
      a.created_at = c.created_at;
      out.push_back(std::move(a));
    }
  }
  SMOE_ASSIGN_OR_RETURN(std::string result, ResultJson(store, t));
  if (!result.empty()) {
    ArtifactInfo a;
    a.name = kResultName;
    a.kind = "result";
    a.bytes = static_cast<int64_t>(result.size());
    a.sha256 = Sha256Hex(result);
    a.created_at = t.updated_at;
    out.push_back(std::move(a));
  }
  return out;
}

absl::Status ReadArtifact(
    store::ExperimentStore* store, CheckpointStore* checkpoints,
    const std::string& trial_id, const std::string& name,
    const std::function<bool(const ArtifactInfo&)>& on_info,
    const std::function<bool(absl::string_view)>& sink) {
  SMOE_ASSIGN_OR_RETURN(store::TrialRecord t, store->GetTrial(trial_id));
  if (name == kResultName) {
    SMOE_ASSIGN_OR_RETURN(std::string result, ResultJson(store, t));
    if (result.empty()) {
      return absl::NotFoundError(
          absl::StrCat("trial ", trial_id, " has no result.json (it is ",
                       store::TrialStateName(t.state), ", not succeeded)"));
    }
    ArtifactInfo a;
    a.name = kResultName;
    a.kind = "result";
    a.bytes = static_cast<int64_t>(result.size());
    a.sha256 = Sha256Hex(result);
    a.created_at = t.updated_at;
    if (!on_info(a)) return absl::CancelledError("download cancelled");
    if (!sink(result)) return absl::CancelledError("download cancelled");
    return absl::OkStatus();
  }
  if (checkpoints != nullptr) {
    for (const store::CheckpointRecord& c : checkpoints->List(trial_id)) {
      if (CheckpointArtifactName(c) != name) continue;
      ArtifactInfo a;
      a.name = name;
      a.kind = "checkpoint";
      a.bytes = c.bytes;
      a.sha256 = c.sha256;
      a.step = c.step;
      a.created_at = c.created_at;
      if (!on_info(a)) return absl::CancelledError("download cancelled");
      return checkpoints->Read(c, sink);
    }
  }
  return absl::NotFoundError(absl::StrCat(
      "trial ", trial_id, " has no artifact '", name.substr(0, 200),
      "' (list them with `smoe artifacts ", trial_id, "`)"));
}

}  // namespace smoe::coordinator
