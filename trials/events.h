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
//   {"event":"checkpoint","step":500,"restored":"previous","detail":"..."}
//   {"event":"result","metrics":{"test_acc":0.93,"ood_acc":0.58}}
// Writers: smoe-trainer (both trial kinds) and tests/fake_trainer. Readers:
// the worker daemon and `smoe train` / `smoe skillmix run`.
//
// Thread-safety: stateless functions.
#ifndef SMOE_TRIALS_EVENTS_H_
#define SMOE_TRIALS_EVENTS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace smoe::trials {

// The longest metric name an event may carry; longer ones are refused as
// malformed (the coordinator stores names as keys).
inline constexpr size_t kMaxMetricNameBytes = 256;

// The one metric-name rule, applied by the worker when it parses a trainer's
// events and by the coordinator when it stores them (so a name the worker
// accepts is never refused later with the rest of its batch):
// 1..kMaxMetricNameBytes characters of [A-Za-z0-9._:/-] and "@#%+=,[]()".
// InvalidArgument names the field and (a prefix of) the value.
absl::Status ValidateMetricName(absl::string_view name);

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
  // checkpoint: set when the trainer could not resume from its latest
  // checkpoint: "previous" (resumed from the one before) or "scratch"; step
  // is where it resumes (0 for scratch) and `detail` says what was set aside
  // and why.
  std::string restored;
  std::string detail;
  // checkpoint: the checkpoint's file name in WORKDIR when the trainer names
  // one ("file"); empty = checkpoint.smoeckpt. The worker daemon uploads that
  // file (docs/reliability-checkpoints.md).
  std::string file;
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
// {"event":"checkpoint","step":S,"file":F}: the checkpoint is WORKDIR/F.
std::string CheckpointEvent(int64_t step, absl::string_view file);
// At start, when the latest checkpoint failed verification and was set
// aside: {"event":"checkpoint","step":S,"restored":"previous"|"scratch",
// "detail":"..."}.
std::string CheckpointRestoredEvent(int64_t step, absl::string_view restored,
                                    absl::string_view detail);
std::string ResultEvent(const nlohmann::json& metrics);

// Reads one parsed stdout line. NotFound: not an event (not an object, or no
// string "event"): trainers may print other lines. InvalidArgument, naming
// what is wrong: an unknown event, or a metric the coordinator would refuse
// (no numeric step in 0..int64, an empty, missing or longer than
// kMaxMetricNameBytes name, a value that is neither a number nor null).
// Numbers in step/total are truncated to integers; a progress or checkpoint
// event without them (or with a step beyond int64) leaves them unset; a
// result without an object "metrics" has {}.
absl::StatusOr<TrialEvent> EventFromJson(const nlohmann::json& line);

// The same for a line of text (blank or not JSON: NotFound; nested deeper
// than trials/json_limits.h allows: InvalidArgument). A number beyond the
// double range (1e999) reads as +/-infinity (ParseJsonLine), so a result
// that overflows is recorded as inf, not lost with its whole line.
absl::StatusOr<TrialEvent> ParseEvent(absl::string_view line);

}  // namespace smoe::trials

#endif  // SMOE_TRIALS_EVENTS_H_
