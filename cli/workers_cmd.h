// Copyright 2026 SMoE Lab authors.
//
// File: cli/workers_cmd.h
//
// `smoe workers [--all]`: every worker the coordinator knows (gRPC
// ListWorkers; views/workers_view.h): id, host, state (ready, draining,
// stopped, lost), slots and GPUs used/total, kinds, labels, last heartbeat,
// and the trials it runs. Workers silent for more than a day are counted,
// not listed, without --all.
// `smoe workers drain WORKER` (admin): the worker leases nothing more, its
// trainers get SIGTERM (they checkpoint; the trials resume elsewhere) and
// its daemon exits.
// Exit codes: 0; 66 unknown worker; 69 coordinator unreachable; 77 token
// refused or not admin.
#ifndef SMOE_CLI_WORKERS_CMD_H_
#define SMOE_CLI_WORKERS_CMD_H_

#include <ostream>
#include <string>

#include "cli/client.h"
#include "proto/smoe.pb.h"

namespace smoe::cli {

// "12s ago", "3m05s ago"; "never" for a zero time.
std::string FormatHeartbeatAge(int64_t last_ms, int64_t as_of_ms);

// The table and its summary line ("3 workers: 2 ready, 0 draining, 0
// stopped, 1 lost; 5/12 slots in use"), as `smoe workers` prints them. At most
// `max_trials` trial ids per row, then "+N more".
void PrintWorkers(const smoe::v1::ListWorkersResponse& resp, std::ostream& out,
                  int max_trials = 3);

int WorkersCmd(CoordinatorClient& client, bool all, std::ostream& out);
int DrainWorkerCmd(CoordinatorClient& client, const std::string& worker_id,
                   std::ostream& out);

}  // namespace smoe::cli

#endif  // SMOE_CLI_WORKERS_CMD_H_
