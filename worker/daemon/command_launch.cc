// Copyright 2026 SMoE Lab authors.
#include "worker/daemon/command_launch.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "trials/json_limits.h"

namespace smoe::worker {
namespace {

using json = nlohmann::json;

// realpath(3) as a string; empty (errno set) when it fails.
std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) == nullptr) return "";
  return buf;
}

std::string ParamEnvValue(const json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

std::string ParamEnvName(absl::string_view name) {
  return absl::StrCat("SMOE_PARAM_", absl::AsciiStrToUpper(name));
}

absl::StatusOr<CommandLaunch> ResolveCommand(
    const v1::TrialLease& lease, const json& params, const std::string& dir,
    const std::vector<std::string>& allowed_dirs) {
  if (!lease.has_command() || lease.command().program().empty()) {
    return absl::InvalidArgumentError(
        "kind command: the lease carries no command.program (a coordinator "
        "older than this worker?)");
  }
  const std::string& program = lease.command().program();
  const std::string allowed_list =
      allowed_dirs.empty() ? "none" : absl::StrJoin(allowed_dirs, ", ");
  if (allowed_dirs.empty()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "command.program '", program,
        "': this worker runs no user programs (allowed: none); start it with "
        "`smoe worker --allow-command DIR`"));
  }
  const std::string real = RealPath(program);
  if (real.empty()) {
    return absl::NotFoundError(absl::StrCat("command.program '", program,
                                            "': not found on this worker (",
                                            strerror(errno), ")"));
  }
  bool inside = false;
  for (const std::string& d : allowed_dirs) {
    std::string rd = RealPath(d);
    if (rd.empty()) continue;
    if (rd != "/") rd += "/";
    inside |= absl::StartsWith(real, rd);
  }
  if (!inside) {
    return absl::PermissionDeniedError(absl::StrCat(
        "command.program '", program, "'",
        real != program ? absl::StrCat(" (really '", real, "')") : "",
        " is not under a directory this worker allows (--allow-command: ",
        allowed_list, ")"));
  }
  struct stat st;
  if (stat(real.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      access(real.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "command.program '", program,
        "' is not an executable file on this worker (chmod +x it; a script "
        "needs a #! line)"));
  }

  CommandLaunch c;
  c.program = real;
  c.params = json::object();
  const std::string& defaults_text = lease.command().defaults_json();
  if (!defaults_text.empty()) {
    json defaults =
        trials::CheckJsonDepth(defaults_text, "defaults_json").ok()
            ? json::parse(defaults_text, nullptr, /*allow_exceptions=*/false)
            : json(json::value_t::discarded);
    if (defaults.is_discarded() || !defaults.is_object()) {
      return absl::InvalidArgumentError(
          "command.defaults_json is not a JSON object");
    }
    c.params = std::move(defaults);
  }
  for (const auto& [k, v] : params.items()) c.params[k] = v;

  const std::string trial_json = dir + "/TRIAL.json";
  c.params_path = absl::StrCat(dir, "/", kCommandParamsFile);
  c.argv.push_back(real);
  for (const std::string& a : lease.command().args()) {
    c.argv.push_back(
        absl::StrReplaceAll(a, {{trials::kTrialPlaceholder, trial_json},
                                {trials::kWorkdirPlaceholder, dir},
                                {trials::kParamsPlaceholder, c.params_path}}));
  }
  c.env["SMOE_TRIAL"] = trial_json;
  c.env["SMOE_WORKDIR"] = dir;
  c.env["SMOE_PARAMS"] = c.params_path;
  // Python buffers a piped stdout: events would reach the daemon late.
  c.env["PYTHONUNBUFFERED"] = "1";
  for (const auto& [k, v] : c.params.items()) {
    c.env[ParamEnvName(k)] = ParamEnvValue(v);
  }
  return c;
}

}  // namespace smoe::worker
