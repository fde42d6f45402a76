// Copyright 2026 SMoE Lab authors.
//
// File: trials/events.h
//
// The events a trial process prints on stdout, one JSON object per line
// (docs/trainer-protocol.md, "Output"), written and read in this one place:
//   {"event":"progress","step":1000,"total":20000}
//   {"event":"progress","phase":"eval/test","step":2560,"total":51200}
//   {"event":"metric","step":1000,"name":"train/loss","value":0.83}
//   {"event":"checkpoint","step":1000}
//   {"event":"result","metrics":{"test_acc":0.93,"ood_acc":0.58}}
// Writers: smoe-trainer (both trial kinds) and tests/fake_trainer. Readers:
// the worker daemon and `smoe train` / `smoe skillmix run`.
//
// Thread-safety: stateless functions.
#ifndef SMOE_TRIALS_EVENTS_H_
#define SMOE_TRIALS_EVENTS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace smoe::trials {

struct TrialEvent {
  enum class Type { kProgress, kMetric, kCheckpoint, kResult };
  Type type = Type::kProgress;
  std::optional<int64_t> step;   // progress, checkpoint; metric: always set
  std::optional<int64_t> total;  // progress
  // progress: empty for training steps; else the work being counted, e.g.
  // "eval/test" (step = problems evaluated of total).
  std::string phase;
  std::string name;  // metric: not empty
  double value = 0;  // metric; NaN when written as null
  nlohmann::json metrics = nlohmann::json::object();  // result, as written
};

// One event line, without the newline. A non-finite metric value is written
// as null (JSON has no NaN); invalid UTF-8 in names is replaced, never
// thrown on.
std::string ProgressEvent(int64_t step, int64_t total);
// Progress within a phase of a step ("eval/test", "eval/ood"): `done` of
// `total` units. Readers that only follow training ignore events with a
// phase.
std::string PhaseProgressEvent(absl::string_view phase, int64_t done,
                               int64_t total);
std::string MetricEvent(int64_t step, absl::string_view name, double value);
std::string CheckpointEvent(int64_t step);
std::string ResultEvent(const nlohmann::json& metrics);

// Reads one parsed stdout line. NotFound: not an event (not an object, or no
// string "event"): trainers may print other lines. InvalidArgument, naming
// what is wrong: an unknown event, or a metric the coordinator would refuse
// (no numeric step >= 0, an empty or missing name, a value that is neither
// a number nor null). Numbers in step/total are truncated to integers; a
// progress or checkpoint event without them leaves them unset; a result
// without an object "metrics" has {}.
absl::StatusOr<TrialEvent> EventFromJson(const nlohmann::json& line);

// The same for a line of text (blank or not JSON: NotFound).
absl::StatusOr<TrialEvent> ParseEvent(absl::string_view line);

}  // namespace smoe::trials

#endif  // SMOE_TRIALS_EVENTS_H_
