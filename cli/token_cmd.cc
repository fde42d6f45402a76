// Copyright 2026 SMoE Lab authors.
#include "cli/token_cmd.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "cli/client.h"
#include "coordinator/tokens.h"

namespace smoe::cli {
namespace {

absl::Status CheckDataDir(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::NotFoundError(absl::StrCat(
        "--data-dir: '", dir,
        "' is not a directory (the coordinator's data directory, which holds "
        "smoe.db and the admin token file)"));
  }
  return absl::OkStatus();
}

}  // namespace

void AddTokenCommands(CLI::App* app, TokenCommands* cmd) {
  CLI::App* token = app->add_subcommand(
      "token", "API tokens with roles: admin, viewer, worker (docs/roles.md)");
  token->require_subcommand(1);
  cmd->create = token->add_subcommand(
      "create", "Create a token; prints it once (only its hash is stored)");
  cmd->create->add_option("--role", cmd->role, "viewer | worker | admin")
      ->required();
  cmd->create->add_option("--name", cmd->name,
                          "Name (default: <role>-<8 hex digits>)");
  cmd->list = token->add_subcommand("list", "List tokens (never the secrets)");
  cmd->revoke = token->add_subcommand("revoke", "Revoke a token by name");
  cmd->revoke->add_option("name", cmd->name, "Token name")->required();
  for (CLI::App* sub : {cmd->create, cmd->list, cmd->revoke}) {
    sub->add_option("--data-dir", cmd->data_dir,
                    "The coordinator's data directory")
        ->capture_default_str();
  }
}

int RunTokenCommand(const TokenCommands& cmd, std::ostream& out,
                    std::ostream& err) {
  if (!cmd.create->parsed() && !cmd.list->parsed() && !cmd.revoke->parsed()) {
    return -1;
  }
  if (absl::Status st = CheckDataDir(cmd.data_dir); !st.ok()) {
    return ReportError(st, "smoe token");
  }
  const std::string file = coordinator::TokensFile(cmd.data_dir);
  if (cmd.create->parsed()) {
    auto role = coordinator::ParseRole(cmd.role);
    if (!role.ok()) return ReportError(role.status(), "smoe token create");
    auto created = coordinator::CreateToken(file, cmd.name, *role, absl::Now());
    if (!created.ok())
      return ReportError(created.status(), "smoe token create");
    err << "created " << coordinator::RoleName(*role) << " token '"
        << created->name << "' in " << file
        << " (only its hash is stored; this is the one time it is shown)\n";
    out << created->token << std::endl;
    return kExitOk;
  }
  if (cmd.revoke->parsed()) {
    if (absl::Status st = coordinator::RevokeToken(file, cmd.name); !st.ok()) {
      return ReportError(st, "smoe token revoke");
    }
    err << "revoked token '" << cmd.name
        << "' (a running coordinator refuses it from its next call)\n";
    return kExitOk;
  }
  auto entries = coordinator::ReadTokensFile(file);
  if (!entries.ok()) return ReportError(entries.status(), "smoe token list");
  out << absl::StrFormat("%-24s %-7s %-20s %s\n", "NAME", "ROLE", "CREATED",
                         "SHA256 (prefix)");
  out << absl::StrFormat("%-24s %-7s %-20s %s\n", "admin", "admin", "-",
                         "(the token file " + cmd.data_dir + "/token)");
  for (const coordinator::TokenEntry& e : *entries) {
    out << absl::StrFormat(
        "%-24s %-7s %-20s %s\n", e.name, coordinator::RoleName(e.role),
        absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", e.created, absl::UTCTimeZone()),
        e.sha256_hex.substr(0, 12));
  }
  return kExitOk;
}

}  // namespace smoe::cli
