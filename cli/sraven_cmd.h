// Copyright 2026 SMoE Lab authors.
//
// File: cli/sraven_cmd.h
//
// `smoe sraven sample ...`: prints SRAVEN problems as grids or JSON lines.
#ifndef SMOE_CLI_SRAVEN_CMD_H_
#define SMOE_CLI_SRAVEN_CMD_H_

#include <ostream>
#include <string>
#include <vector>

namespace smoe::cli {

// Runs `smoe sraven <args...>` (args exclude "smoe sraven"). Writes output to
// `out`, errors to `err`. Returns a process exit code (0 ok, 64 usage error).
int RunSravenCommand(const std::vector<std::string>& args, std::ostream& out,
                     std::ostream& err);

}  // namespace smoe::cli

#endif  // SMOE_CLI_SRAVEN_CMD_H_
