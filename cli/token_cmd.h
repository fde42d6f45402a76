// Copyright 2026 SMoE Lab authors.
//
// File: cli/token_cmd.h
//
// `smoe token create --role viewer|worker|admin [--name N]`, `smoe token
// list`, `smoe token revoke NAME` (docs/roles.md).
//
// The commands edit `<data_dir>/tokens` directly (offline), not through an
// RPC: whoever can write the data directory can already read the admin token
// file in it, so the file system is the authority either way, and creating
// tokens works with the coordinator stopped and needs no admin token on the
// command line or a new RPC that could leak one. A running coordinator picks
// the change up at its next call. On Kubernetes, run them in the
// coordinator's pod (`kubectl exec`), where the data volume is mounted.
#ifndef SMOE_CLI_TOKEN_CMD_H_
#define SMOE_CLI_TOKEN_CMD_H_

#include <ostream>
#include <string>

#include "CLI/CLI.hpp"

namespace smoe::cli {

struct TokenCommands {
  CLI::App* create = nullptr;
  CLI::App* list = nullptr;
  CLI::App* revoke = nullptr;
  std::string data_dir = "smoe-data";
  std::string role;
  std::string name;
};

// Adds `token create|list|revoke` to `app`; the options land in `*cmd`.
void AddTokenCommands(CLI::App* app, TokenCommands* cmd);

// Runs the parsed token subcommand; -1 when none was parsed. `create` prints
// the new token alone on `out` (so `T=$(smoe token create ...)` works) and
// what it did on `err`.
int RunTokenCommand(const TokenCommands& cmd, std::ostream& out,
                    std::ostream& err);

}  // namespace smoe::cli

#endif  // SMOE_CLI_TOKEN_CMD_H_
