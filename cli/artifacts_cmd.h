// Copyright 2026 SMoE Lab authors.
//
// File: cli/artifacts_cmd.h
//
// `smoe artifacts TRIAL [--download NAME] [-o FILE]`: lists a trial's
// artifacts (stored checkpoints, result.json; coordinator/artifacts.h) or
// downloads one, verifying its SHA-256 (written to FILE.part, renamed into
// place only when it matches; `-o -` writes to stdout unverified-first).
#ifndef SMOE_CLI_ARTIFACTS_CMD_H_
#define SMOE_CLI_ARTIFACTS_CMD_H_

#include <ostream>
#include <string>

#include "cli/client.h"

namespace smoe::cli {

// Lists (download empty) or downloads artifact `download` of `trial_id` to
// `out_path` (default: the artifact's name in the current directory; "-":
// stdout). Returns an exit code; errors go to stderr.
int ArtifactsCmd(CoordinatorClient& client, const std::string& trial_id,
                 const std::string& download, const std::string& out_path,
                 std::ostream& out);

}  // namespace smoe::cli

#endif  // SMOE_CLI_ARTIFACTS_CMD_H_
