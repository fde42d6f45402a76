// Copyright 2026 SMoE Lab authors.
//
// File: cli/sweep_cmds.h
//
// `smoe sweep submit|ls|show|cancel|retry|extend|watch` and `smoe results`.
// Each returns a process exit code (see cli/client.h) and writes human output
// to `out`; errors go to stderr.
#ifndef SMOE_CLI_SWEEP_CMDS_H_
#define SMOE_CLI_SWEEP_CMDS_H_

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cli/client.h"
#include "proto/smoe.pb.h"

namespace smoe::cli {

// Renders "[#####-----] 12/32  pending 18  running 2  succeeded 12  failed 0
// cancelled 0"; a sweep without trials is "[----------] no trials yet", never
// 0/0.
std::string ProgressLine(const smoe::v1::StateCounts& c, int width);

// "45s", "3m05s", "1h02m".
std::string FormatEta(absl::Duration d);

// Prints rows as an aligned text table (two spaces between columns).
void PrintTable(const std::vector<std::string>& header,
                const std::vector<std::vector<std::string>>& rows,
                std::ostream& out);

// A sweep's progress line with an ETA: the rate is the trials finished since
// the first line this object made (so trials done before a `watch` started
// do not count), over the time since then; "ETA --" until one finishes, no
// ETA once all have.
class SweepProgress {
 public:
  explicit SweepProgress(int width = 30) : width_(width) {}
  // `waiting`: why no worker can run the pending trials (Sweep.unschedulable);
  // shown after the bar while trials are pending, "" when one can.
  std::string Line(const smoe::v1::StateCounts& c, absl::Time now,
                   absl::string_view waiting = "");

 private:
  std::string LineWithoutWaiting(const smoe::v1::StateCounts& c,
                                 absl::Time now);
  int width_;
  absl::Time start_;
  int start_finished_ = -1;
};

// The `sweep show --trials` table of a GetSweep reply with trials: one row per
// trial with its ordinal, id, state, one column per grid axis (in file
// order), seed, attempt, worker ("-" when none) and the first line of its
// last error.
void PrintTrialsTable(const smoe::v1::GetSweepResponse& resp,
                      std::ostream& out);

// `smoe sweep validate FILE`: checks the file offline (no coordinator, no
// token) with the checks the coordinator makes on submit (the parameter
// tables of trials/), reporting every problem. Prints
// "FILE: valid: sweep NAME (KIND), M[2] x top_k[4] x seeds[2] = 16 trials";
// with sampled axes also each axis (distribution, range, the drawn values)
// and the draw count; with strategy asha the cost estimate (trial-steps, x
// the full grid, and with sampled axes x one untuned grid). Returns 0, 65
// (invalid; every problem on stderr) or 66 (unreadable).
int ValidateSweepCmd(const std::string& file, std::ostream& out);

int SubmitSweepCmd(CoordinatorClient& client, const std::string& file,
                   bool watch, bool dry_run, std::ostream& out);
// Archived sweeps are left out (a last line counts them) unless `all`.
int ListSweepsCmd(CoordinatorClient& client, std::ostream& out,
                  bool all = false);
int ShowSweepCmd(CoordinatorClient& client, const std::string& sweep_id,
                 bool trials, std::ostream& out);
int CancelSweepCmd(CoordinatorClient& client, const std::string& sweep_id,
                   std::ostream& out);
int RetrySweepCmd(CoordinatorClient& client, const std::string& sweep_id,
                  bool include_cancelled, std::ostream& out);
// `values` are parsed as integers, numbers or booleans where they look like
// one, else strings ("3", "0.5", "hyla").
int ExtendSweepCmd(CoordinatorClient& client, const std::string& sweep_id,
                   const std::string& axis,
                   const std::vector<std::string>& values, std::ostream& out);
// `smoe sweep note SWEEP TEXT` ("" clears), `smoe sweep tag SWEEP TAG...`
// (replaces the tags) or `--add T --remove T` (edits them) or `--clear`,
// `smoe sweep archive SWEEP [--undo]`: admin actions over the AnnotateSweep
// RPC. Fields left unset are not changed. Prints the sweep's annotations
// after the change; a bad tag or over-long notes exit 65 naming the field
// and value, an unknown sweep 66, a viewer token 77.
struct SweepAnnotationFlags {
  std::optional<std::string> notes;
  std::optional<std::vector<std::string>> tags;  // replace
  std::vector<std::string> add_tags;
  std::vector<std::string> remove_tags;
  std::optional<bool> archived;
};
int AnnotateSweepCmd(CoordinatorClient& client, const std::string& sweep_id,
                     const SweepAnnotationFlags& flags, std::ostream& out);
// `smoe sweep delete SWEEP [--yes]` (admin): deletes a finished sweep with
// all its data over the DeleteSweep RPC. Unless `yes`, and when `interactive`
// (stdin is a terminal), first prints what will go (the sweep and its trial
// count) and reads a line from `in`: anything but "y" or "yes" keeps the
// sweep (exit 1, "not deleted"). Scripts (stdin not a terminal) are not
// asked. Exit codes: an unknown sweep 66, a sweep with pending or running
// trials 65 (FailedPrecondition, like the CLI's other refusals; the message
// says to cancel it first), a viewer token 77.
int DeleteSweepCmd(CoordinatorClient& client, const std::string& sweep_id,
                   bool yes, bool interactive, std::istream& in,
                   std::ostream& out);
// Streams progress until the sweep is no longer active. Returns 0 when every
// trial succeeded, kExitFailure when some failed or were cancelled.
int WatchSweepCmd(CoordinatorClient& client, const std::string& sweep_id,
                  std::ostream& out);
// Prints one row per trial: state, grid params, seed, attempts, results.
// `format` is table, csv or json.
int ResultsCmd(CoordinatorClient& client, const std::string& sweep_id,
               const std::string& format, std::ostream& out);

}  // namespace smoe::cli

#endif  // SMOE_CLI_SWEEP_CMDS_H_
