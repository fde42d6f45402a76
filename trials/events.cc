// Copyright 2026 SMoE Lab authors.
#include "trials/events.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "trials/json_limits.h"

namespace smoe::trials {
namespace {

using json = nlohmann::json;

std::string Line(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// The integer in `j[key]` when it is a number that fits an int64 (a float is
// truncated; 1e300, NaN and the infinities do not fit).
std::optional<int64_t> IntField(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  if (it->is_number_float()) {
    const double x = it->get<double>();
    if (!(x > -9.2e18 && x < 9.2e18)) return std::nullopt;
    return static_cast<int64_t>(x);
  }
  if (it->is_number_unsigned() &&
      it->get<uint64_t>() >
          static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return std::nullopt;
  }
  return it->get<int64_t>();
}

}  // namespace

std::string ProgressEvent(int64_t step, int64_t total) {
  return Line({{"event", "progress"}, {"step", step}, {"total", total}});
}

std::string PhaseProgressEvent(absl::string_view phase, int64_t done,
                               int64_t total) {
  return Line({{"event", "progress"},
               {"phase", std::string(phase)},
               {"step", done},
               {"total", total}});
}

std::string MetricEvent(int64_t step, absl::string_view name, double value) {
  return Line({{"event", "metric"},
               {"step", step},
               {"name", std::string(name)},
               {"value", value}});
}

std::string CheckpointEvent(int64_t step) {
  return Line({{"event", "checkpoint"}, {"step", step}});
}

std::string CheckpointEvent(int64_t step, absl::string_view file) {
  return Line(
      {{"event", "checkpoint"}, {"step", step}, {"file", std::string(file)}});
}

std::string CheckpointRestoredEvent(int64_t step, absl::string_view restored,
                                    absl::string_view detail) {
  return Line({{"event", "checkpoint"},
               {"step", step},
               {"restored", std::string(restored)},
               {"detail", std::string(detail)}});
}

std::string ResultEvent(const json& metrics) {
  return Line({{"event", "result"}, {"metrics", metrics}});
}

absl::StatusOr<TrialEvent> EventFromJson(const json& j) {
  if (!j.is_object() || !j.contains("event") || !j["event"].is_string()) {
    return absl::NotFoundError("not an event");
  }
  const std::string& type = j["event"].get_ref<const std::string&>();
  TrialEvent e;
  e.step = IntField(j, "step");
  if (type == "progress") {
    e.type = TrialEvent::Type::kProgress;
    e.total = IntField(j, "total");
    if (j.contains("phase") && j["phase"].is_string()) {
      e.phase = j["phase"].get<std::string>();
    }
  } else if (type == "checkpoint") {
    e.type = TrialEvent::Type::kCheckpoint;
    if (j.contains("file") && j["file"].is_string()) {
      e.file = j["file"].get<std::string>();
    }
    if (j.contains("restored") && j["restored"].is_string()) {
      e.restored = j["restored"].get<std::string>();
      if (j.contains("detail") && j["detail"].is_string()) {
        e.detail = j["detail"].get<std::string>();
      }
    }
  } else if (type == "result") {
    e.type = TrialEvent::Type::kResult;
    if (j.contains("metrics") && j["metrics"].is_object()) {
      e.metrics = j["metrics"];
    }
  } else if (type == "metric") {
    e.type = TrialEvent::Type::kMetric;
    if (!e.step.has_value() || *e.step < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metric event: step must be a number >= 0 (", Line(j), ")"));
    }
    if (!j.contains("name") || !j["name"].is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat("metric event: name must be a string (",
                       Line(j).substr(0, 200), ")"));
    }
    if (absl::Status st =
            ValidateMetricName(j["name"].get_ref<const std::string&>());
        !st.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("metric event: ", st.message()));
    }
    e.name = j["name"].get<std::string>();
    if (!j.contains("value") ||
        !(j["value"].is_number() || j["value"].is_null())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metric event: value must be a number or null (", Line(j), ")"));
    }
    e.value = j["value"].is_null() ? std::numeric_limits<double>::quiet_NaN()
                                   : j["value"].get<double>();
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown event \"", type, "\""));
  }
  return e;
}

absl::StatusOr<TrialEvent> ParseEvent(absl::string_view line) {
  if (absl::Status deep = CheckJsonDepth(line, "event line"); !deep.ok()) {
    return deep;
  }
  const json j = ParseJsonLine(line);
  if (j.is_discarded()) return absl::NotFoundError("not JSON");
  return EventFromJson(j);
}

absl::Status ValidateMetricName(absl::string_view name) {
  auto quoted = [&] {
    return name.size() > 64 ? absl::StrCat("'", name.substr(0, 64), "...' (",
                                           name.size(), " bytes)")
                            : absl::StrCat("'", name, "'");
  };
  if (name.empty() || name.size() > kMaxMetricNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("metric name: must be 1..", kMaxMetricNameBytes,
                     " characters, got ", quoted()));
  }
  constexpr absl::string_view kExtra = "._:/-@#%+=,[]()";
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') ||
                    kExtra.find(c) != absl::string_view::npos;
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("metric name: only letters, digits and '", kExtra,
                       "' are allowed, got ", quoted()));
    }
  }
  return absl::OkStatus();
}

}  // namespace smoe::trials
