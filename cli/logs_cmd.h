// Copyright 2026 SMoE Lab authors.
//
// File: cli/logs_cmd.h
//
// `smoe logs TRIAL [--attempt N] [--follow]`: prints an attempt's log (the
// trainer's stderr and non-event stdout lines; docs/logs-and-system-metrics.md)
// to stdout; notes (which attempt, live or stored, bytes left out) go to
// stderr. A running attempt's live tail comes from its worker at its next
// heartbeats: the command waits for a fresh one (up to `fresh_wait`).
// --follow keeps printing what the attempt adds until it ends.
// Exit codes: 0; 66 unknown trial or attempt; 64 a negative --attempt; 69
// coordinator unreachable; 77 token refused.
#ifndef SMOE_CLI_LOGS_CMD_H_
#define SMOE_CLI_LOGS_CMD_H_

#include <ostream>
#include <string>

#include "absl/time/time.h"
#include "cli/client.h"

namespace smoe::cli {

struct LogsFlags {
  int attempt = 0;  // 0 = the latest
  bool follow = false;
  absl::Duration poll = absl::Seconds(1);         // --follow's period
  absl::Duration fresh_wait = absl::Seconds(15);  // for a running attempt
};

int LogsCmd(CoordinatorClient& client, const std::string& trial_id,
            const LogsFlags& flags, std::ostream& out);

}  // namespace smoe::cli

#endif  // SMOE_CLI_LOGS_CMD_H_
