// Copyright 2026 SMoE Lab authors.
//
// File: trials/command_kind.h
//
// The constants of kind `command` (a user program as the trial; the sweep
// file's `command:` block, docs/trainer-protocol.md), stated once for the
// coordinator, which parses and checks the sweep file
// (sweeps/command_spec.h), and the worker, which substitutes the
// placeholders and runs the program (worker/daemon/command_launch.h).
#ifndef SMOE_TRIALS_COMMAND_KIND_H_
#define SMOE_TRIALS_COMMAND_KIND_H_

namespace smoe::trials {

// The sweep file's `kind` for a user program.
inline constexpr char kCommandKind[] = "command";

// The placeholders `command.args` may use; the worker substitutes them with
// the trial's TRIAL.json path, its directory and its params.json path.
inline constexpr char kTrialPlaceholder[] = "{trial}";
inline constexpr char kWorkdirPlaceholder[] = "{workdir}";
inline constexpr char kParamsPlaceholder[] = "{params}";
inline constexpr const char* kCommandPlaceholders[] = {
    kTrialPlaceholder, kWorkdirPlaceholder, kParamsPlaceholder};

// The file, in the trial directory, holding the resolved parameters.
inline constexpr char kCommandParamsFile[] = "params.json";

}  // namespace smoe::trials

#endif  // SMOE_TRIALS_COMMAND_KIND_H_
