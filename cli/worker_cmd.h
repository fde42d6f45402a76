// Copyright 2026 SMoE Lab authors.
//
// File: cli/worker_cmd.h
//
// `smoe worker`: its flags (CLI11, common/flags.h) filled into a
// worker::WorkerFlags, which worker::RunWorker (worker/daemon/worker_main.h)
// runs.
//
//   worker::WorkerFlags flags;
//   CLI::App* cmd = AddWorkerCommand(&app, &flags);
//   ... parse ...
//   if (cmd->parsed()) {
//     if (absl::Status s = CheckWorkerFlags(flags); !s.ok()) ... exit 64
//     return worker::RunWorker(flags);
//   }
#ifndef SMOE_CLI_WORKER_CMD_H_
#define SMOE_CLI_WORKER_CMD_H_

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "worker/daemon/worker_main.h"

namespace smoe::cli {

// Adds the `worker` subcommand to `app`; its flags write into `*flags`, which
// must outlive the parse. A bad value is a usage error naming the flag and the
// value ("--slots: '0' (must be >= 1)"); both `--flag value` and
// `--flag=value` work.
CLI::App* AddWorkerCommand(CLI::App* app, worker::WorkerFlags* flags);

// The checks between flags, after parsing: InvalidArgument when --gpus and
// --gpu-ids are both given.
absl::Status CheckWorkerFlags(const worker::WorkerFlags& flags);

}  // namespace smoe::cli

#endif  // SMOE_CLI_WORKER_CMD_H_
