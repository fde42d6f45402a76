// Copyright 2026 SMoE Lab authors.
//
// File: trials/params.h
//
// The parameters of each trial kind, declared once: one line per parameter
// {name, type, range or choices, default, doc} in sraven_params.cc and
// skillmix_params.cc. Everything that knows a trial's parameters reads them
// from there:
//   - the coordinator validates sweep files with CheckSweepValue
//     (sweeps/sweep_spec.cc);
//   - smoe-trainer checks each TRIAL.json param with CheckTrialValue, then
//     binds the name to its config field (worker/trainer/train_config.cc,
//     skillmix_config.cc);
//   - analysis fills missing params with Defaults (analysis/stats.cc);
//   - `smoe params KIND` prints FormatText, and the tables in
//     docs/trainer-protocol.md are FormatMarkdown's output.
// tests/trials/trial_params_test.cc pins the tables against both parsers and
// the docs: every default and bound is accepted, one past a bound is refused
// naming the field and value, by the coordinator and by the trainer.
//
// Rules between parameters (top_k <= num_experts, ep_size divides
// num_experts and batch_size) are not in the tables: the coordinator
// (ValidateTrialParams) and the trainer (ValidateTrainConfig) check them.
//
// Thread-safety: the tables are built once, on first use, and never change;
// every function is thread-safe.
#ifndef SMOE_TRIALS_PARAMS_H_
#define SMOE_TRIALS_PARAMS_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace smoe::trials {

enum class ParamType { kInt, kNumber, kString, kBool };

// An interval of allowed values; an infinite end is unbounded.
struct Range {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false;  // (lo, ... instead of [lo, ...
  bool hi_open = false;  // ..., hi) instead of ..., hi]
};
Range Closed(double lo, double hi);      // [lo, hi]
Range OpenClosed(double lo, double hi);  // (lo, hi]
Range ClosedOpen(double lo, double hi);  // [lo, hi)
Range AnyNumber();                       // every number, the infinities too

struct Param {
  std::string name;
  ParamType type = ParamType::kString;
  nlohmann::json default_value;  // null: required (no default)
  int64_t int_lo = std::numeric_limits<int64_t>::min();  // kInt: [lo, hi]
  int64_t int_hi = std::numeric_limits<int64_t>::max();
  Range range;                       // kNumber
  double multiple_of = 0;            // kNumber: > 0 = a multiple of this
  std::vector<std::string> choices;  // kString: the allowed values; {} = any
  bool non_empty = false;            // kString: "" is refused
  // kString: a further rule; its error names the field and value.
  absl::Status (*check)(absl::string_view value) = nullptr;
  // kNumber: a further rule (after the range); its error names the field
  // and value.
  absl::Status (*number_check)(double value) = nullptr;
  std::string doc;

  Param MultipleOf(double step) &&;
  Param NonEmpty() &&;
  Param Checked(absl::Status (*fn)(absl::string_view)) &&;
  Param CheckedNumber(absl::Status (*fn)(double)) &&;
};

// One line per parameter. REQUIRES: the default is allowed.
Param Int(std::string name, int64_t def, int64_t lo, int64_t hi,
          std::string doc);
Param Number(std::string name, double def, Range range, std::string doc);
Param Bool(std::string name, bool def, std::string doc);
Param Choice(std::string name, std::string def,
             std::vector<std::string> choices, std::string doc);
Param String(std::string name, std::string def, std::string doc);
Param RequiredString(std::string name, std::string doc);  // no default

// How a sweep of a kind is first shown (the dashboard's sweep page, `smoe
// analyze`): its metric against the parameter on x, a line per `series`, a
// panel per `facet`, and the metrics the dashboard charts first. A kind
// without one (empty x: `kind: command`, skillmix) is shown by its sweep's
// own axes and results (DefaultViewOf).
struct KindView {
  std::string x;
  std::string series;
  std::string facet;
  std::string metric;
  // Charted beside `metric` when the view shows it (the first is `metric`).
  std::vector<std::string> headline_metrics;
  // "curves": metric against x, the optimal-x table and the chart controls;
  // "tables": the kind's own tables of `metric`s over x (rows) and series
  // (columns) and no curves (skillmix's EPT x k_skills tables). JSON
  // "layout".
  std::string layout = "curves";
  // The paper's E(k, N) theory (analysis/theory_fit.h) applies when x is
  // theory_x and a line is drawn per theory_series; empty: the kind has no
  // theory. JSON "theory": {"x", "series"} or null.
  std::string theory_x;
  std::string theory_series;
  // The validation metric a tuned view selects configurations by (issue
  // 33): the dashboard offers "tune" for a kind that reports one. JSON
  // "select_by"; empty: none.
  std::string select_by;
  // One line `smoe up` prints under the kind's result summary (what a first
  // reader should know); empty: none.
  std::string reading_note;
};

struct TrialKind {
  std::string name;  // "sraven", "skillmix": the sweep file's `kind`
  std::string summary;
  // TRIAL.json integers may also be written as integral floats below 9e15
  // (2.0, 1e3); sweep files always need integers.
  bool integral_floats = false;
  // The trainer's range message: "must be in 1..8" (true) or "must be in
  // [1, 8]" (false).
  bool dotted_ranges = false;
  std::vector<Param> params;
  KindView view;  // empty x: none (the sweep's own axes)
  // The rules between parameters (the table above bounds each one alone),
  // given a point whose left-out parameters take their defaults: the first
  // rule broken as InvalidArgument naming the values; nullptr: none. The
  // sweep validator calls it for every point (trials/sraven_rules.h).
  absl::Status (*rules)(const nlohmann::json& point) = nullptr;

  // nullptr when `name` is not a parameter of this kind.
  const Param* Find(absl::string_view name) const;
  // " (did you mean 'top_k'?)" for a near-miss parameter name, or ""
  // (common/suggest.h).
  std::string Suggest(absl::string_view name) const;
};

const TrialKind& SravenKind();    // sraven_params.cc
const TrialKind& SkillMixKind();  // skillmix_params.cc
// Every kind, in the order above.
const std::vector<const TrialKind*>& AllKinds();
// nullptr for an unknown kind.
const TrialKind* FindKind(absl::string_view name);

// The view a sweep of `kind` opens with: the kind's own when it declares one;
// otherwise its first metric against its first swept axis, a line per the
// second and a panel per the third (empty where the sweep has fewer).
// `axes`: the sweep's grid axes in order; `metrics`: its result names in
// order. web/src/data.js defaultView does the same with the sweep JSON's
// "view" (coordinator/http/http_server.cc, SweepJson).
KindView DefaultViewOf(const TrialKind& kind,
                       const std::vector<std::string>& axes,
                       const std::vector<std::string>& metrics);

// {name: default} for every parameter with a default.
nlohmann::json Defaults(const TrialKind& kind);

// A sweep file's value (the coordinator): InvalidArgument
// "<where>.<name>: expected <what>, got <value as JSON>", e.g.
// "grid.M: expected a value in [1, 8], got 9". Integers must be JSON
// integers.
absl::Status CheckSweepValue(const Param& p, const nlohmann::json& v,
                             absl::string_view where);

// A TRIAL.json value (the trainer): InvalidArgument
// "<name>=<value as JSON>: must be <what>", e.g. "M=9: must be in 1..8".
// Integers follow kind.integral_floats. A value that passes converts to the
// field's C++ type with v.get<T>().
absl::Status CheckTrialValue(const TrialKind& kind, const Param& p,
                             const nlohmann::json& v);

// A TRIAL.json param: InvalidArgument `unknown parameter "<key>" (value
// <value as JSON>)` when `key` is not in the table, else CheckTrialValue.
absl::Status CheckTrialParam(const TrialKind& kind, absl::string_view key,
                             const nlohmann::json& v);

// Binding a value that passed CheckTrialValue to a config field: Set stores
// it as T (integral floats become integers); SetEnum converts a choice with
// `parse` (e.g. model::ParseRouterGating) and returns parse's error, which
// names the field and value, for a choice it does not know.
template <typename T>
absl::Status Set(const nlohmann::json& v, T* out) {
  *out = v.get<T>();
  return absl::OkStatus();
}
template <typename T>
absl::Status SetEnum(const nlohmann::json& v,
                     absl::StatusOr<T> (*parse)(absl::string_view), T* out) {
  absl::StatusOr<T> parsed = parse(v.get<std::string>());
  if (!parsed.ok()) return parsed.status();
  *out = *parsed;
  return absl::OkStatus();
}

// InvalidArgument "<key>=<value.dump()>: <why>".
absl::Status JsonParamError(absl::string_view key, const nlohmann::json& value,
                            absl::string_view why);

// What a parameter allows, as the tables show it: "1..8", "[0, 1)",
// "softmax, linear", "true, false", "non-empty string", "any number".
std::string Allowed(const Param& p);

// The table for `smoe params KIND`: a title line, then one aligned row per
// parameter (name, type, allowed values, default, doc).
std::string FormatText(const TrialKind& kind);

// The same as a Markdown table (docs/trainer-protocol.md).
std::string FormatMarkdown(const TrialKind& kind);

}  // namespace smoe::trials

#endif  // SMOE_TRIALS_PARAMS_H_
