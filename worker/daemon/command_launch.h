// Copyright 2026 SMoE Lab authors.
//
// File: worker/daemon/command_launch.h
//
// How the worker daemon starts a `kind: command` attempt: the user's program
// from the lease (TrialLease.command) instead of `smoe-trainer run`, under
// the same trainer contract (docs/trainer-protocol.md, "Your own program").
// Everything after the start (events, exit codes, SIGTERM and grace, the
// progress deadline, retries) is the daemon's one code path for every kind.
//
// Security: a worker runs user programs only when started with
// `--allow-command DIR` (repeatable), and only a program whose real path
// (symlinks resolved) lies under one of those directories; it runs that real
// path. Anything else fails the attempt as a bad spec (exit 64, no retry)
// with a message naming the program and the allowed directories.
//
// What the program gets:
//   argv     program, then command.args with {trial}, {workdir} and {params}
//            replaced by the TRIAL.json path, the trial directory and the
//            params.json path;
//   env      SMOE_TRIAL, SMOE_WORKDIR, SMOE_PARAMS (those three paths),
//            SMOE_PARAM_<NAME upper-cased> per parameter (strings as they
//            are, other values as JSON: 20, 0.1, true), PYTHONUNBUFFERED=1,
//            plus the rank variables every trial gets;
//   params   the declared defaults with the trial's values on top, in
//            params.json and in TRIAL.json's "params".
#ifndef SMOE_WORKER_DAEMON_COMMAND_LAUNCH_H_
#define SMOE_WORKER_DAEMON_COMMAND_LAUNCH_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "proto/smoe.pb.h"
#include "trials/command_kind.h"

namespace smoe::worker {

// The trial kind of user programs and the file, in the trial directory,
// holding the resolved parameters (trials/command_kind.h, shared with the
// coordinator).
using trials::kCommandKind;
using trials::kCommandParamsFile;

struct CommandLaunch {
  std::string program;                     // the real path that runs
  std::vector<std::string> argv;           // program, then the args
  std::map<std::string, std::string> env;  // on top of the daemon's
  nlohmann::json params;                   // defaults + the trial's values
  std::string params_path;                 // <dir>/params.json
};

// "SMOE_PARAM_" + `name` upper-cased.
std::string ParamEnvName(absl::string_view name);

// Resolves a kind-command lease whose trial directory is `dir`. `params` is
// the trial's own params (an object). `allowed_dirs`: the worker's
// --allow-command directories. Errors (the daemon reports them as a bad
// spec): InvalidArgument when the lease has no command or bad defaults,
// PermissionDenied when the worker allows no programs or the program lies
// outside every allowed directory, NotFound / FailedPrecondition for a
// missing or non-executable program. Each message names the program and,
// for the permission errors, the allowed directories.
absl::StatusOr<CommandLaunch> ResolveCommand(
    const v1::TrialLease& lease, const nlohmann::json& params,
    const std::string& dir, const std::vector<std::string>& allowed_dirs);

}  // namespace smoe::worker

#endif  // SMOE_WORKER_DAEMON_COMMAND_LAUNCH_H_
