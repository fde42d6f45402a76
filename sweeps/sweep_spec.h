// Copyright 2026 SMoE Lab authors.
//
// File: sweeps/sweep_spec.h
//
// The sweep file: parsing, validation, grid expansion and trial identity.
//
// clang-format off
//   name: sraven-demo            # sweep id, [a-z0-9][a-z0-9._-]{0,63}
//   kind: sraven                 # sraven | skillmix | command
//   command: {program: /p, args: []}  # kind command only (command_spec.h)
//   params: {lr: {type: number}}      # kind command only: the schema
//   grid:                        # axes -> value lists; cartesian product,
//     M: [1, 2]                  #   first axis outermost
//     top_k: [1, 2, 4, 8]
//   sample:                      # sampled axes (docs/sampled-axes.md):
//     lr: {loguniform: [1e-4, 1e-2]}     #   log-uniform in [lo, hi], lo > 0
//     weight_decay: {uniform: [0, 0.2]}  #   uniform in [lo, hi]
//     warmup: {int: [50, 500]}           #   an integer in [lo, hi]
//     width: {choice: [0.25, 0.5]}       #   one of the list
//   samples: 8                   # configurations drawn (required with sample)
//   sample_seed: 12345           # default: derived from the name
//   fixed: {steps: 300}          # params shared by every trial
//   seeds: [0, 1]                # default [0]; innermost
//   resources: {gpus_per_trial: 0, ep_size: 1, slots: 1, labels: {gpu: h100},
//               progress_timeout_s: 1800}
//   retries: 2                   # error budget per trial (preemptions
//                                #   are free)
//   priority: 0                  # higher runs first
//   keep_final_checkpoint: false # true: a succeeded trial keeps its last
//                                #   checkpoint, as an artifact
//   search:                      # optional; default {strategy: grid}
//     strategy: asha             # grid | asha | median | refine
//     metric: ood_acc            # asha, median, refine: the metric judged
//     mode: max                  # max | min (default: min when the metric
//                                #   name contains loss/error, else max)
//     min_steps: 100             # asha: first rung; median: grace steps
//     reduction: 3               # asha: eta >= 2 (default 3)
//     max_steps: 300             # asha: = the trials' steps (default)
//     smooth_evals: 3            # asha: a rung's value = mean of the last 3
//                                #   evaluations up to it (default 1)
//     aggregate_seeds: true      # asha: judge a configuration's seeds
//                                #   together, by their mean (default false;
//                                #   true with `sample`)
//     keep_neighbors: top_k      # asha: promote the best's neighbours on
//                                #   this integer axis too (default none)
//     group_by: [M, attention]   # grid axes; compare only within a group
//                                #   (asha, median with `sample`: default
//                                #   every grid axis)
//     axis: top_k                # refine: the integer axis refined
//     bounds: [1, 8]             # refine: default [min, max] of the axis
//     budget: 120                # refine: most trials in all (0: none)
//     budget_gpu_hours: 40       # asha, median, refine: device-hours (GPU-
//                                #   hours; slot-hours on CPU) after which
//                                #   nothing is added, promoted or started
//     add_seeds: 1               # refine: most extra seeds per group
//     tolerance: 0.005           # refine: means this close to x*'s count
//                                #   as equivalent when resolving (0: none)
// clang-format on
//
// The scheduler drives asha, median and refine through
// coordinator/search_driver.h (docs/adaptive-sweeps.md).
//
// Every error names the field and the offending value.
#ifndef SMOE_SWEEPS_SWEEP_SPEC_H_
#define SMOE_SWEEPS_SWEEP_SPEC_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "sweeps/command_spec.h"
#include "trials/params.h"

namespace smoe::sweeps {

struct Axis {
  std::string name;
  std::vector<nlohmann::json> values;  // scalars: numbers, strings, bools
};

// resources.progress_timeout_s when the sweep file leaves it out: longer than
// any gap between a healthy trainer's events (model loading, one evaluation
// 20th, log_every steps at the paper's size).
inline constexpr int kDefaultProgressTimeoutS = 1800;

struct Resources {
  int gpus_per_trial = 0;
  int ep_size = 1;
  int slots = 1;
  // Worker labels a trial requires: every key must be present on the worker
  // with the same value (e.g. {gpu: h100, zone: eu}).
  std::map<std::string, std::string> labels;
  // Progress deadline (docs/reliability.md): a trial whose trainer prints no
  // event for this many seconds is killed by its worker and reported hung
  // (an error: retried within `retries`). 1..604800 (a week).
  int progress_timeout_s = kDefaultProgressTimeoutS;
};

// The sweep file's `search:` block. Fields a strategy does not use are
// refused at parse time, so a spec only carries the ones that apply.
struct SearchSpec {
  std::string strategy = "grid";  // grid | asha | median | refine
  std::string metric;             // asha, median, refine
  std::string mode;               // max | min (filled in when metric is set)
  int64_t min_steps = 0;          // asha (required), median (default 0)
  int64_t reduction = 3;          // asha
  int64_t max_steps = 0;          // asha: the trials' steps
  // asha (and refine + asha): a trial's value at a rung is the mean of its
  // last `smooth_evals` evaluations up to the rung (1: that one alone).
  int64_t smooth_evals = 1;
  // asha: rung decisions per configuration, ranked by the mean over its
  // seeds; its seeds are promoted and pruned together.
  bool aggregate_seeds = false;
  // asha: an integer grid axis (not in group_by); the integer neighbours on
  // it of a rung's best configuration are promoted with it. "" = none.
  std::string keep_neighbors;
  std::vector<std::string> group_by;  // grid axes
  std::string axis;                   // refine
  int64_t bounds_lo = 0;              // refine
  int64_t bounds_hi = 0;              // refine
  int64_t budget = 0;                 // refine: most trials in all; 0: none
  // asha, median, refine: device-hours (attempts' wall time x
  // max(1, gpus_per_trial): GPU-hours, slot-hours on CPU) after which the
  // search adds, promotes and starts nothing; 0: none.
  double budget_gpu_hours = 0;
  int64_t add_seeds = 0;  // refine
  // refine: indifference zone in the metric's units; a group also resolves
  // when the bootstrap puts >= 0.9 on x* and the values within `tolerance`
  // of its mean. 0: none.
  double tolerance = 0;
  // refine: "asha" stops losing points early (min_steps, reduction and
  // max_steps then apply as for strategy asha); "" = none.
  std::string early_stop;
  bool operator==(const SearchSpec& o) const;
  bool operator!=(const SearchSpec& o) const { return !(*this == o); }
};

// One sampled axis (`sample:`): draw i of the axis is a pure function of
// (sample_seed, i, name), rounded to a stable text form (%.6g for numbers
// drawn from a range), so a configuration's trial id is reproducible on any
// machine.
struct SampledAxis {
  std::string name;
  std::string distribution;  // loguniform | uniform | int | choice
  nlohmann::json lo;         // loguniform, uniform, int: the range's ends
  nlohmann::json hi;
  std::vector<nlohmann::json> choices;  // choice
  bool log() const { return distribution == "loguniform"; }
  bool operator==(const SampledAxis& o) const;
  bool operator!=(const SampledAxis& o) const { return !(*this == o); }
};

struct SweepSpec {
  std::string name;
  std::string kind;
  std::vector<Axis> grid;
  // Sampled axes: every grid point x seed is trained at `samples` drawn
  // configurations (draws 0 .. samples-1 of sample_seed, the same draws at
  // every grid point). Empty: none.
  std::vector<SampledAxis> sample;
  int64_t samples = 0;
  int64_t sample_seed = 0;
  nlohmann::json fixed = nlohmann::json::object();
  std::vector<int64_t> seeds = {0};
  Resources resources;
  int retries = 2;
  int priority = 0;
  // A succeeded trial keeps its final checkpoint (the trainer writes one at
  // its last step) as an artifact, `checkpoint-<step>-<file>`, instead of
  // its checkpoints being collected (issue 31 item 8).
  bool keep_final_checkpoint = false;
  SearchSpec search;
  // kind command only: the program, and the parameter table declared in the
  // file (`params:`); see command_spec.h.
  CommandSpec command;
  trials::TrialKind command_kind;
};

// The parameter table a sweep's trials are checked against: the declared
// one for kind command, else trials::FindKind(spec.kind) (nullptr for an
// unknown kind). Every reader of a sweep's parameters goes through this.
const trials::TrialKind* SweepKind(const SweepSpec& spec);

// One grid point.
struct ExpandedTrial {
  std::string trial_id;   // TrialId(spec.name, spec.kind, params, seed)
  nlohmann::json params;  // fixed + this point's axis values (object)
  int64_t seed = 0;
};

struct ParseOptions {
  int64_t max_points = 100000;  // refuse grids that expand to more points
  // Refuse files larger than this before parsing them (a list of 100,000
  // seeds is ~700 KB).
  int64_t max_bytes = int64_t{1} << 20;
  // At most this many problems are listed in the error; the rest are
  // counted ("... and N more problems").
  int64_t max_problems = 50;
  // `seeds: 3` as the one seed 3. New sweeps are refused it (seeds is a list;
  // the message suggests [0, 1, 2]); sweeps stored before that still load.
  bool allow_scalar_seeds = false;
  // Keys given twice and extra YAML documents (refused in new files since
  // issue 36; ignored, as before, in sweeps stored before that).
  bool allow_lax_yaml = false;
  // Check every configuration (grid point x sampled configuration) against
  // the rules between parameters, the resources (ep_size, device) and, for
  // search: refine, the bounds. Off for stored specs: their points were
  // checked when they were submitted or extended, under the rules of that
  // version; the trainer checks the rules again when it starts a trial (exit
  // 64), so a point that a later rule refuses fails as that trial instead of
  // the coordinator's restart (LoadLocked returns DataLoss for a stored spec
  // that does not parse) or a reader of the stored YAML. The per-value
  // checks against the kind's table (unknown parameter, type, range) stay.
  bool check_points = true;
  // No size or list-length limits and no per-point checks: for specs
  // already stored.
  static ParseOptions Stored() {
    ParseOptions o;
    o.max_points = INT64_MAX;
    o.max_bytes = INT64_MAX;
    o.allow_scalar_seeds = true;
    o.allow_lax_yaml = true;
    o.check_points = false;
    return o;
  }
};

// Parses and validates a sweep file. InvalidArgument names the field and value
// (unknown key, wrong type, empty axis, too many points, unknown parameter or
// a parameter out of range for the kind, a key given twice, a second YAML
// document). It reports every problem in the file: one problem is the
// message; several are "N problems:" followed by one per line ("\n  "), in
// file order, at most options.max_problems of them, then "... and M more
// problems". Rules between parameters are checked only when every value is
// valid, and name at most 5 failing grid points. They are checked once per
// configuration (ForEachConfiguration: the params do not depend on the
// seed), and no trial id is computed; a failing configuration counts, and
// is listed, once per seed, as if every point were checked.
// Cost is bounded before the grid is read: a file over max_bytes is refused
// unparsed, a list longer than max_points unread, and the point count is
// computed from the axes' sizes before anything is expanded.
absl::StatusOr<SweepSpec> ParseSweepYaml(absl::string_view text,
                                         const ParseOptions& options = {});

// Validates one resolved parameter set against the kind's table
// (trials/params.h) and the rules between parameters.
absl::Status ValidateTrialParams(absl::string_view kind,
                                 const nlohmann::json& params);
// The same against a sweep's own table (SweepKind); for kind command also
// every declared parameter without a default must be set.
absl::Status ValidateTrialParams(const SweepSpec& spec,
                                 const nlohmann::json& params);

// Returns the number of points the spec expands to (saturates at INT64_MAX):
// grid points x distinct sampled configurations x seeds.
int64_t CountPoints(const SweepSpec& spec);

// Expands the grid: axes in file order, first outermost, then the sampled
// configurations in draw order, seeds innermost.
std::vector<ExpandedTrial> ExpandGrid(const SweepSpec& spec);

// Calls fn(params) for each configuration: the params of ExpandGrid's points
// without their seeds (fixed + grid point + sampled configuration), in
// ExpandGrid's order; each is the params of spec.seeds.size() consecutive
// points there. Stops when fn returns false. No trial id is computed.
void ForEachConfiguration(
    const SweepSpec& spec,
    const std::function<bool(const nlohmann::json& params)>& fn);

namespace internal {
// Test hook: the configurations ParseSweepYaml has checked against the rules
// (CheckParams), in this process.
int64_t ConfigurationsCheckedForTesting();
}  // namespace internal

// The sample seed of a sweep file without `sample_seed`: from the SHA-256 of
// the sweep name, in [0, 2^48).
int64_t DefaultSampleSeed(absl::string_view sweep_name);

// Draw `index` of one sampled axis under `seed`: u = the first 53 bits of
// SHA-256("smoe-sample:<seed>:<index>:<name>") / 2^53 in [0, 1), then
// loguniform: exp(log lo + u (log hi - log lo)), uniform: lo + u (hi - lo),
// both rounded to %.6g (and clamped to [lo, hi]); int: lo + floor(u (hi - lo
// + 1)); choice: choices[floor(u n)]. No std:: distribution is involved, so
// the value does not depend on the standard library.
nlohmann::json DrawSample(const SampledAxis& axis, int64_t seed, int64_t index);

// The sampled configurations ({axis: value} per draw) of draws
// 0 .. spec.samples-1, a draw equal to an earlier one left out; [{}] when
// the spec samples nothing.
std::vector<nlohmann::json> SampleConfigs(const SweepSpec& spec);

// The distinct drawn values of sampled axis `name`, ascending (what the
// CLI, the API and the dashboard show as the axis's values).
std::vector<nlohmann::json> SampledValues(const SweepSpec& spec,
                                          absl::string_view name);

// Every axis name: grid axes, then sampled axes (file order).
std::vector<std::string> AxisNames(const SweepSpec& spec);

// The cost of strategy asha before it runs: the trial-steps synchronous
// successive halving spends (every group's units — configurations with all
// their seeds under aggregate_seeds, else trials — reach rung 0; floor(n /
// reduction), at least 1, go on from each rung; the survivors of the last
// rung train to max_steps). Asynchronous promotion and keep_neighbors can
// spend more. full_grid = every point at max_steps; untuned_grid = one
// configuration per grid point x seed at max_steps (= full_grid without
// sampled axes).
struct AshaCostEstimate {
  std::vector<int64_t> rungs;
  int64_t groups = 0;
  double trial_steps = 0;
  double full_grid_trial_steps = 0;
  double untuned_grid_trial_steps = 0;
};
// InvalidArgument unless spec.search.strategy is asha.
absl::StatusOr<AshaCostEstimate> EstimateAshaCost(const SweepSpec& spec);

// Returns "<sweep>/<16 hex>": SHA-256 of the canonical JSON of
// {kind, params, seed}, truncated. Stable across machines and versions.
std::string TrialId(absl::string_view sweep, absl::string_view kind,
                    const nlohmann::json& params, int64_t seed);

// Writes `spec` as a sweep file that ParseSweepYaml reads back to an equal
// spec.
std::string SweepSpecToYaml(const SweepSpec& spec);

// Adds `values` to axis `axis` ("seeds" extends the seed list), ignoring ones
// already present. "samples" (a sweep with sampled axes, unless a grid axis
// has that name) takes one positive integer N and draws N more
// configurations: draws [samples, samples + N); "samples_total" takes one
// positive integer T and draws [samples, T), nothing when samples >= T
// (idempotent). NotFound for an unknown
// axis; InvalidArgument for a bad value or when the result exceeds
// max_points.
absl::Status ExtendAxis(SweepSpec* spec, absl::string_view axis,
                        const std::vector<nlohmann::json>& values,
                        const ParseOptions& options = {});

}  // namespace smoe::sweeps

#endif  // SMOE_SWEEPS_SWEEP_SPEC_H_
