// Copyright 2026 SMoE Lab authors.
//
// File: cli/sweep_cmds.h
//
// `smoe sweep submit|ls|show|cancel|retry|extend|watch` and `smoe results`.
// Each returns a process exit code (see cli/client.h) and writes human output
// to `out`; errors go to stderr.
#ifndef SMOE_CLI_SWEEP_CMDS_H_
#define SMOE_CLI_SWEEP_CMDS_H_

#include <ostream>
#include <string>
#include <vector>

#include "cli/client.h"
#include "proto/smoe.pb.h"

namespace smoe::cli {

// Renders "[#####-----] 12/32  pending 18  running 2  done 12  failed 0".
std::string ProgressLine(const smoe::v1::StateCounts& c, int width);

int SubmitSweepCmd(CoordinatorClient& client, const std::string& file,
                   bool watch, bool dry_run, std::ostream& out);
int ListSweepsCmd(CoordinatorClient& client, std::ostream& out);
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
