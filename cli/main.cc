// Copyright 2026 SMoE Lab authors.
//
// The `smoe` command line (CLI11). Exit codes follow sysexits.h; see
// cli/client.h.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/analyze_cmd.h"
#include "cli/artifacts_cmd.h"
#include "cli/client.h"
#include "cli/deploy_cmd.h"
#include "cli/doctor_cmd.h"
#include "cli/local_trial.h"
#include "cli/logs_cmd.h"
#include "cli/model_cmd.h"
#include "cli/skillmix_cmd.h"
#include "cli/sraven_cmd.h"
#include "cli/sweep_cmds.h"
#include "cli/token_cmd.h"
#include "cli/train_cmd.h"
#include "cli/up.h"
#include "cli/worker_cmd.h"
#include "cli/workers_cmd.h"
#include "common/flags.h"
#include "coordinator/server.h"
#include "sweeps/sweep_spec.h"
#include "trials/command_kind.h"
#include "trials/params.h"
#include "worker/daemon/worker_daemon.h"
#include "worker/daemon/worker_main.h"

namespace smoe::cli {
namespace {

// Prints a newly created token once, and only to a terminal: when stdout is a
// file or a pipe (a log), it names the token file instead.
void PrintNewToken(const coordinator::CoordinatorServer& server,
                   const std::string& token_file) {
  if (!server.token_created()) return;
  if (::isatty(STDOUT_FILENO)) {
    std::cout << "API token (shown once; stored in " << token_file
              << ", mode 0600): " << server.token() << std::endl;
  } else {
    std::cout << "API token created in " << token_file
              << " (mode 0600; not printed: stdout is not a terminal)"
              << std::endl;
  }
}

int RunCoordinator(const coordinator::ServerOptions& options,
                   const std::string& port_file) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  auto server = coordinator::CoordinatorServer::Start(options);
  if (!server.ok()) return ReportError(server.status());
  std::cout << "smoe coordinator listening on " << (*server)->bind_description()
            << std::endl;
  if (!(*server)->http_url().empty()) {
    std::cout << "dashboard: " << (*server)->http_url() << " (listening on "
              << (*server)->http_bind_description() << ")" << std::endl;
  }
  if (!port_file.empty()) {
    // Written atomically so a watcher never reads a partial number.
    const std::string tmp = port_file + ".tmp";
    std::ofstream(tmp) << (*server)->port() << "\n";
    std::rename(tmp.c_str(), port_file.c_str());
  }
  PrintNewToken(**server, options.token_file.empty()
                              ? options.data_dir + "/token"
                              : options.token_file);
  int sig = 0;
  sigwait(&set, &sig);
  std::cout << "smoe coordinator: signal " << sig << ", shutting down"
            << std::endl;
  (*server)->Shutdown();
  return kExitOk;
}

std::unique_ptr<CoordinatorClient> MakeClient(const ClientOptions& options,
                                              int* rc) {
  auto client = CoordinatorClient::Create(options);
  if (!client.ok()) {
    *rc = ReportError(client.status());
    return nullptr;
  }
  return std::move(*client);
}

// `smoe params command --sweep FILE`: the table a kind-command sweep file
// declares, checked as `smoe sweep validate` checks it (exit 65 if not).
int PrintCommandParams(const std::string& path, bool markdown) {
  if (path.empty()) {
    std::cerr << "smoe params: kind command declares its params in the sweep "
                 "file: pass --sweep FILE\n";
    return kExitUsage;
  }
  std::ifstream in(path);
  if (!in) {
    std::cerr << "smoe params: cannot read '" << path << "'\n";
    return kExitNoInput;
  }
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<sweeps::SweepSpec> spec = sweeps::ParseSweepYaml(text.str());
  if (!spec.ok()) {
    std::cerr << "smoe params: " << path << ": " << spec.status().message()
              << "\n";
    return kExitDataErr;
  }
  if (spec->kind != trials::kCommandKind) {
    std::cerr << "smoe params: " << path << " is kind " << spec->kind
              << "; run `smoe params " << spec->kind << "`\n";
    return kExitUsage;
  }
  std::cout << (markdown ? trials::FormatMarkdown(spec->command_kind)
                         : trials::FormatText(spec->command_kind));
  return kExitOk;
}

// The flags every command that talks to the coordinator shares.
struct ClientFlags {
  ClientOptions options;
  double timeout_s = 30;
};

// Adds --coordinator, --token-file, --tls-ca and --timeout to `cmd`.
void AddClientFlags(CLI::App* cmd, ClientFlags* flags) {
  ClientOptions& client_opts = flags->options;
  double& timeout_s = flags->timeout_s;
  cmd->add_option("--coordinator", client_opts.address,
                  "Coordinator address host:port ($SMOE_COORDINATOR)")
      ->capture_default_str();
  cmd->add_option("--token-file", client_opts.token_file,
                  "API token file (default ./smoe-data/token, else "
                  "~/.smoe/token; $SMOE_TOKEN wins)");
  cmd->add_option("--tls-ca", client_opts.tls_ca,
                  "PEM root certificates: use TLS");
  cmd->add_option("--timeout", timeout_s, "RPC deadline in seconds")
      ->capture_default_str()
      ->check(PositiveNumber());
}

using ClientRun = std::function<int(CoordinatorClient&)>;

// `cmd` (its client flags added), run by connecting with `flags` and calling
// `run` with the client.
Command WithClient(CLI::App* cmd, const std::shared_ptr<ClientFlags>& flags,
                   ClientRun run) {
  AddClientFlags(cmd, flags.get());
  return {cmd, [flags, run = std::move(run)] {
            flags->options.timeout = absl::Seconds(flags->timeout_s);
            int rc = kExitOk;
            auto client = MakeClient(flags->options, &rc);
            if (!client) return rc;
            return run(*client);
          }};
}

// smoe coordinator
struct CoordinatorFlags {
  coordinator::ServerOptions server_opts;
  double lease_timeout_s = 30, heartbeat_s = 5, restart_grace_s = 45;
  double keep_failed_s = 86400;
  std::string port_file;
  CLI::Option* http_listen_opt = nullptr;
};

int RunCoordinatorCommand(CoordinatorFlags& f) {
  coordinator::ServerOptions& server_opts = f.server_opts;
  const double lease_timeout_s = f.lease_timeout_s;
  const double heartbeat_s = f.heartbeat_s;
  const double restart_grace_s = f.restart_grace_s;
  const double keep_failed_s = f.keep_failed_s;
  const std::string& port_file = f.port_file;
  const CLI::Option* http_listen_opt = f.http_listen_opt;
  // A worker retries a failed call after up to backoff_max: with a lease
  // timeout below it, a worker backing off while the coordinator restarts
  // loses its leases and its trials re-run (issue 36).
  if (const absl::Duration backoff = worker::WorkerDaemonOptions().backoff_max;
      absl::Seconds(lease_timeout_s) < backoff) {
    std::cerr << "smoe coordinator: warning: --lease-timeout "
              << lease_timeout_s
              << " s is below the workers' longest retry backoff ("
              << absl::ToDoubleSeconds(backoff)
              << " s): a worker backing off while the coordinator restarts "
                 "or stalls loses its leases and their trials re-run; use "
                 "at least "
              << absl::ToDoubleSeconds(backoff) << " s\n";
  }
  server_opts.scheduler.lease_timeout = absl::Seconds(lease_timeout_s);
  server_opts.checkpoints.keep_failed = absl::Seconds(keep_failed_s);
  server_opts.scheduler.heartbeat_interval = absl::Seconds(heartbeat_s);
  server_opts.scheduler.restart_grace = absl::Seconds(restart_grace_s);
  server_opts.http_required = http_listen_opt->count() > 0;
  return RunCoordinator(server_opts, port_file);
}

Command AddCoordinatorCommand(CLI::App* app_ptr) {
  CLI::App& app = *app_ptr;
  auto f = std::make_shared<CoordinatorFlags>();
  coordinator::ServerOptions& server_opts = f->server_opts;
  double& lease_timeout_s = f->lease_timeout_s;
  double& heartbeat_s = f->heartbeat_s;
  double& restart_grace_s = f->restart_grace_s;
  double& keep_failed_s = f->keep_failed_s;
  std::string& port_file = f->port_file;
  CLI::App* coord = app.add_subcommand("coordinator", "Run the coordinator");
  coord->add_option("--listen", server_opts.listen, "gRPC listen address")
      ->capture_default_str();
  coord
      ->add_option("--data-dir", server_opts.data_dir,
                   "Directory for smoe.db and the token")
      ->capture_default_str();
  coord->add_option("--token-file", server_opts.token_file,
                    "Admin API token file (default <data-dir>/token)");
  coord->add_option("--tokens-file", server_opts.tokens_file,
                    "Tokens of other roles (viewer, worker, admin): name, "
                    "role and hash per line; default <data-dir>/tokens "
                    "(`smoe token create`, docs/roles.md)");
  f->http_listen_opt =
      coord
          ->add_option("--http-listen", server_opts.http_listen,
                       "Dashboard (HTTP) listen address; '' turns it off")
          ->capture_default_str();
  coord->add_option("--port-file", port_file,
                    "Write the bound port here (useful with --listen :0)");
  coord->add_option("--tls-cert", server_opts.tls_cert,
                    "PEM certificate chain");
  coord->add_option("--tls-key", server_opts.tls_key, "PEM private key");
  coord
      ->add_option("--lease-timeout", lease_timeout_s,
                   "Seconds without heartbeat before a lease lapses")
      ->capture_default_str()
      ->check(PositiveNumber());
  coord
      ->add_option("--heartbeat-interval", heartbeat_s,
                   "Seconds between worker heartbeats")
      ->capture_default_str()
      ->check(PositiveNumber());
  coord
      ->add_option("--restart-grace", restart_grace_s,
                   "Seconds running leases survive a coordinator restart "
                   "without a heartbeat")
      ->capture_default_str()
      ->check(NonNegativeNumber());
  coord->add_flag("--init", server_opts.init,
                  "Create a new, empty store even where <data-dir>/smoe.db "
                  "exists as an empty file (otherwise refused: a lost store "
                  "must not silently restart empty)");
  coord
      ->add_option("--checkpoint-max-bytes",
                   server_opts.checkpoints.max_blob_bytes,
                   "Largest checkpoint a worker may upload (bytes); larger "
                   "ones are refused and stay on their worker")
      ->capture_default_str()
      ->check(PositiveNumber());
  coord->add_option("--checkpoint-shared-dir",
                    server_opts.checkpoints.shared_dir,
                    "The workers' --checkpoint-dir, when mounted here too: "
                    "ended trials' directories are deleted");
  coord
      ->add_option("--checkpoint-store-bytes",
                   server_opts.checkpoints.max_total_bytes,
                   "Bytes of checkpoints kept in <data-dir>/checkpoints in all")
      ->capture_default_str()
      ->check(IntAtLeast(1));
  coord
      ->add_option("--checkpoint-keep-failed", keep_failed_s,
                   "Seconds a failed trial keeps its stored checkpoints (a "
                   "retry resumes from them; 0 = delete when it fails)")
      ->capture_default_str()
      ->check(NonNegativeNumber());
  coord
      ->add_option("--max-points", server_opts.scheduler.parse.max_points,
                   "Refuse sweeps that expand to more points")
      ->capture_default_str()
      ->check(IntAtLeast(1));
  coord
      ->add_option("--max-sweep-bytes", server_opts.scheduler.parse.max_bytes,
                   "Refuse sweep files larger than this many bytes, before "
                   "parsing them")
      ->capture_default_str()
      ->check(IntAtLeast(1));
  coord
      ->add_option("--max-calls-per-address",
                   server_opts.connection_budget.per_address,
                   "Dashboard connections + gRPC calls one client address "
                   "may hold at once (raise it for many workers behind one "
                   "NAT address; 0 = no cap)")
      ->capture_default_str()
      ->check(IntAtLeast(0));
  return {coord, [f] { return RunCoordinatorCommand(*f); }};
}

// smoe admin backup
Command AddAdminCommand(CLI::App* app_ptr) {
  CLI::App& app = *app_ptr;
  auto dirs =
      std::make_shared<std::pair<std::string, std::string>>("smoe-data", "");
  std::string& backup_data_dir = dirs->first;
  std::string& backup_out = dirs->second;
  CLI::App* admin = app.add_subcommand("admin", "Coordinator administration");
  admin->require_subcommand(1);
  CLI::App* backup = admin->add_subcommand(
      "backup",
      "Copy the coordinator's database (online: the coordinator may be "
      "running) to one checked file; restore: docs/reliability.md");
  backup
      ->add_option("--data-dir", backup_data_dir,
                   "The coordinator's data directory (holds smoe.db)")
      ->capture_default_str();
  backup
      ->add_option("--out", backup_out,
                   "Backup file to create (never overwritten)")
      ->required();
  return {backup, [dirs] {
            const std::string& backup_data_dir = dirs->first;
            const std::string& backup_out = dirs->second;
            const absl::Status st =
                coordinator::BackupDataDir(backup_data_dir, backup_out);
            if (!st.ok()) {
              std::cerr << "smoe admin backup: " << st.message() << "\n";
              return st.code() == absl::StatusCode::kFailedPrecondition
                         ? kExitNoInput
                         : kExitSoftware;
            }
            std::cout << "backed up " << backup_data_dir << "/smoe.db to "
                      << backup_out << " (quick_check ok)" << std::endl;
            return kExitOk;
          }};
}

// smoe token create|list|revoke
Command AddTokenCommand(CLI::App* app) {
  auto cmds = std::make_shared<TokenCommands>();
  AddTokenCommands(app, cmds.get());
  return {app->get_subcommand("token"),
          [cmds] { return RunTokenCommand(*cmds, std::cout, std::cerr); }};
}

// smoe up
Command AddUpCommand(CLI::App* app_ptr) {
  CLI::App& app = *app_ptr;
  auto opts = std::make_shared<UpOptions>();
  UpOptions& up_opts = *opts;
  CLI::App* up = app.add_subcommand(
      "up",
      "Local lab: coordinator + workers + a sweep (default: the SRAVEN "
      "demo)");
  up->add_option("--sweep", up_opts.sweep_file, "Sweep file to run")
      ->capture_default_str();
  up->add_option("--workers", up_opts.workers, "Local worker processes")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  up->add_option("--slots", up_opts.slots_per_worker, "Trials per worker")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  up->add_option("--data-dir", up_opts.data_dir, "Data directory")
      ->capture_default_str();
  up->add_option("--listen", up_opts.listen, "gRPC listen address")
      ->capture_default_str();
  up->add_option("--trainer", up_opts.trainer,
                 "Trainer binary (default: smoe-trainer next to smoe)");
  up->add_option("--kinds", up_opts.kinds,
                 "Trial kinds the local workers run (default: the sweep "
                 "file's kind)")
      ->delimiter(',');
  up->add_option("--allow-command", up_opts.allow_command,
                 "Directory of programs kind command may run (the workers' "
                 "--allow-command)");
  up->add_option("--http-port", up_opts.http_port,
                 "Dashboard port on 127.0.0.1 (0: any free port; -1: off)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 65535));
  up->add_flag("--exit-when-done", up_opts.exit_when_done,
               "Exit when the sweep finishes instead of serving");
  return {up, [opts] { return RunUp(*opts); }};
}

// smoe sweep ... (the flags of every sweep subcommand)
struct SweepFlags {
  std::string file, sweep_id, axis;
  std::vector<std::string> values;
  int64_t extend_samples = 0;        // sweep extend --samples N
  int64_t extend_samples_total = 0;  // sweep extend --samples-total T
  bool watch = false, dry_run = false, trials = false,
       include_cancelled = false;
  bool delete_yes = false, ls_all = false;
  std::string note_text;
  std::vector<std::string> tag_list, tag_add, tag_remove;
  bool tag_clear = false, unarchive = false;
};

// smoe sweep tag: exactly one of TAGS, --add/--remove, --clear.
bool CheckTagFlags(const SweepFlags& f) {
  if ((f.tag_list.empty() ? 0 : 1) + (f.tag_clear ? 1 : 0) +
          (f.tag_add.empty() && f.tag_remove.empty() ? 0 : 1) !=
      1) {
    std::cerr << "smoe sweep tag: give either TAGS (replace), --add/--remove "
                 "(edit) or --clear\n";
    return false;
  }
  return true;
}

// The annotation `note`, `tag` or `archive` (whichever `cmd` is) sets.
SweepAnnotationFlags AnnotationFlags(const SweepFlags& f, const char* cmd) {
  SweepAnnotationFlags a;
  const std::string c = cmd;
  if (c == "note") a.notes = f.note_text;
  if (c == "archive") a.archived = !f.unarchive;
  if (c == "tag") {
    if (!f.tag_list.empty()) a.tags = f.tag_list;
    if (f.tag_clear) a.tags = std::vector<std::string>{};
    a.add_tags = f.tag_add;
    a.remove_tags = f.tag_remove;
  }
  return a;
}

std::vector<Command> AddSweepCommands(
    CLI::App* app_ptr, const std::shared_ptr<ClientFlags>& client) {
  CLI::App& app = *app_ptr;
  auto f = std::make_shared<SweepFlags>();
  std::string &file = f->file, &sweep_id = f->sweep_id, &axis = f->axis;
  std::vector<std::string>& values = f->values;
  bool &watch = f->watch, &dry_run = f->dry_run, &trials = f->trials,
       &include_cancelled = f->include_cancelled;
  bool &delete_yes = f->delete_yes, &ls_all = f->ls_all;
  std::string& note_text = f->note_text;
  std::vector<std::string>&tag_list = f->tag_list, &tag_add = f->tag_add,
  &tag_remove = f->tag_remove;
  bool &tag_clear = f->tag_clear, &unarchive = f->unarchive;
  CLI::App* sweep = app.add_subcommand("sweep", "Submit and manage sweeps");
  sweep->require_subcommand(1);
  CLI::App* submit = sweep->add_subcommand("submit", "Submit a sweep file");
  submit->add_option("FILE", file, "Sweep file (YAML)")->required();
  submit->add_flag("--watch", watch, "Show progress until it finishes");
  submit->add_flag("--dry-run", dry_run, "Validate and count points only");
  CLI::App* validate = sweep->add_subcommand(
      "validate",
      "Check a sweep file offline (no coordinator, no token): every problem, "
      "or the trial count");
  validate->add_option("FILE", file, "Sweep file (YAML)")->required();
  CLI::App* ls = sweep->add_subcommand("ls", "List sweeps");
  CLI::App* show = sweep->add_subcommand("show", "Show one sweep");
  show->add_option("SWEEP", sweep_id)->required();
  show->add_flag("--trials", trials, "List its trials");
  CLI::App* cancel = sweep->add_subcommand("cancel", "Cancel a sweep");
  cancel->add_option("SWEEP", sweep_id)->required();
  CLI::App* del = sweep->add_subcommand(
      "delete",
      "Delete a finished sweep with all its data (admin; cancel it first if "
      "trials are pending or running)");
  del->add_option("SWEEP", sweep_id)->required();
  del->add_flag("--yes,-y", delete_yes,
                "Do not ask for confirmation (never asked when stdin is not a "
                "terminal)");
  CLI::App* retry =
      sweep->add_subcommand("retry", "Re-queue failed (and cancelled) points");
  retry->add_option("SWEEP", sweep_id)->required();
  retry->add_flag("--include-cancelled", include_cancelled,
                  "Also re-queue cancelled points");
  CLI::App* extend = sweep->add_subcommand(
      "extend", "Add values to an axis, or draw more sampled configurations");
  extend->add_option("SWEEP", sweep_id)->required();
  CLI::Option* extend_axis =
      extend->add_option("--axis", axis, "Axis name, or 'seeds'");
  CLI::Option* extend_values =
      extend->add_option("--values", values, "Values to add (comma separated)")
          ->delimiter(',');
  extend
      ->add_option("--samples", f->extend_samples,
                   "Draw N more configurations of the sweep's sampled axes "
                   "(draws samples .. samples+N-1; docs/sampled-axes.md)")
      ->check(IntAtLeast(1))
      ->excludes(extend_axis)
      ->excludes(extend_values);
  extend
      ->add_option("--samples-total", f->extend_samples_total,
                   "Draw up to T configurations in all (draws samples .. "
                   "T-1; none when the sweep has T already): a retried call "
                   "adds nothing")
      ->check(IntAtLeast(1))
      ->excludes(extend_axis)
      ->excludes(extend_values)
      ->excludes("--samples");
  CLI::App* watch_cmd = sweep->add_subcommand("watch", "Show progress");
  watch_cmd->add_option("SWEEP", sweep_id)->required();
  ls->add_flag("--all", ls_all, "Also list archived sweeps");
  // Annotations (admin): notes, tags, archive.
  CLI::App* note =
      sweep->add_subcommand("note", "Set a sweep's notes (admin; '' clears)");
  note->add_option("SWEEP", sweep_id)->required();
  note->add_option("TEXT", note_text, "The notes")->required();
  CLI::App* tag = sweep->add_subcommand(
      "tag", "Set (TAG...), add or remove a sweep's tags (admin)");
  tag->add_option("SWEEP", sweep_id)->required();
  tag->add_option("TAGS", tag_list, "Replace the tags with these");
  tag->add_option("--add", tag_add, "Add these tags")->delimiter(',');
  tag->add_option("--remove", tag_remove, "Remove these tags")->delimiter(',');
  tag->add_flag("--clear", tag_clear, "Remove every tag");
  CLI::App* archive = sweep->add_subcommand(
      "archive",
      "Archive a sweep: hidden from `sweep ls` and the dashboard's list "
      "(admin)");
  archive->add_option("SWEEP", sweep_id)->required();
  archive->add_flag("--undo", unarchive, "Unarchive it");
  std::vector<Command> commands = {
      {validate, [f] { return ValidateSweepCmd(f->file, std::cout); }}};
  auto add = [&](CLI::App* cmd, ClientRun run) {
    commands.push_back(WithClient(cmd, client, std::move(run)));
  };
  add(submit, [f](CoordinatorClient& c) {
    return SubmitSweepCmd(c, f->file, f->watch, f->dry_run, std::cout);
  });
  add(ls, [f](CoordinatorClient& c) {
    return ListSweepsCmd(c, std::cout, f->ls_all);
  });
  add(show, [f](CoordinatorClient& c) {
    return ShowSweepCmd(c, f->sweep_id, f->trials, std::cout);
  });
  add(cancel, [f](CoordinatorClient& c) {
    return CancelSweepCmd(c, f->sweep_id, std::cout);
  });
  add(del, [f](CoordinatorClient& c) {
    return DeleteSweepCmd(c, f->sweep_id, f->delete_yes,
                          ::isatty(STDIN_FILENO) != 0, std::cin, std::cout);
  });
  add(retry, [f](CoordinatorClient& c) {
    return RetrySweepCmd(c, f->sweep_id, f->include_cancelled, std::cout);
  });
  add(extend, [f](CoordinatorClient& c) {
    if (f->extend_samples > 0) {
      return ExtendSweepCmd(c, f->sweep_id, "samples",
                            {std::to_string(f->extend_samples)}, std::cout);
    }
    if (f->extend_samples_total > 0) {
      return ExtendSweepCmd(c, f->sweep_id, "samples_total",
                            {std::to_string(f->extend_samples_total)},
                            std::cout);
    }
    if (f->axis.empty() || f->values.empty()) {
      std::cerr << "smoe: sweep extend: give --axis and --values, --samples "
                   "N or --samples-total T\n";
      return kExitUsage;
    }
    return ExtendSweepCmd(c, f->sweep_id, f->axis, f->values, std::cout);
  });
  add(watch_cmd, [f](CoordinatorClient& c) {
    return WatchSweepCmd(c, f->sweep_id, std::cout);
  });
  for (CLI::App* cmd : {note, tag, archive}) {
    const char* name = cmd == note ? "note" : cmd == tag ? "tag" : "archive";
    Command c = WithClient(cmd, client, [f, name](CoordinatorClient& c) {
      return AnnotateSweepCmd(c, f->sweep_id, AnnotationFlags(*f, name),
                              std::cout);
    });
    if (cmd == tag) {  // checked before connecting
      c.run = [f, run = std::move(c.run)] {
        return CheckTagFlags(*f) ? run() : kExitUsage;
      };
    }
    commands.push_back(std::move(c));
  }
  return commands;
}

// smoe results
Command AddResultsCommand(CLI::App* app_ptr,
                          const std::shared_ptr<ClientFlags>& client) {
  CLI::App& app = *app_ptr;
  auto ids = std::make_shared<std::pair<std::string, std::string>>("", "table");
  std::string& sweep_id = ids->first;
  std::string& format = ids->second;
  CLI::App* results = app.add_subcommand("results", "Print a sweep's results");
  results->add_option("SWEEP", sweep_id)->required();
  results->add_option("--format", format, "table | csv | json")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "csv", "json"}));
  return WithClient(results, client, [ids](CoordinatorClient& c) {
    return ResultsCmd(c, ids->first, ids->second, std::cout);
  });
}

// smoe workers [--all] | smoe workers drain WORKER
std::vector<Command> AddWorkersCommands(
    CLI::App* app_ptr, const std::shared_ptr<ClientFlags>& client) {
  CLI::App& app = *app_ptr;
  auto f = std::make_shared<std::pair<bool, std::string>>(false, "");
  bool& workers_all = f->first;
  std::string& drain_worker = f->second;
  CLI::App* workers = app.add_subcommand(
      "workers",
      "List the workers: state (ready, draining, stopped, lost), slots, "
      "GPUs, kinds, labels, last heartbeat, trials");
  workers->add_flag("--all", workers_all,
                    "Also workers silent for more than a day");
  CLI::App* workers_drain = workers->add_subcommand(
      "drain",
      "Drain a worker (admin): it leases nothing more, its trials checkpoint "
      "and resume elsewhere, then it exits");
  workers_drain->add_option("WORKER", drain_worker, "Worker id (as listed)")
      ->required();
  // drain first: `smoe workers drain` parses both.
  return {WithClient(workers_drain, client,
                     [f](CoordinatorClient& c) {
                       return DrainWorkerCmd(c, f->second, std::cout);
                     }),
          WithClient(workers, client, [f](CoordinatorClient& c) {
            return WorkersCmd(c, f->first, std::cout);
          })};
}

// smoe artifacts
struct ArtifactsFlags {
  std::string artifact_trial, artifact_download, artifact_out;
};

Command AddArtifactsCommand(CLI::App* app_ptr,
                            const std::shared_ptr<ClientFlags>& client) {
  CLI::App& app = *app_ptr;
  auto f = std::make_shared<ArtifactsFlags>();
  std::string &artifact_trial = f->artifact_trial,
              &artifact_download = f->artifact_download,
              &artifact_out = f->artifact_out;
  CLI::App* artifacts = app.add_subcommand(
      "artifacts", "List or download a trial's checkpoints and result file");
  artifacts->add_option("TRIAL", artifact_trial, "Trial id (SWEEP/HASH)")
      ->required();
  artifacts->add_option("--download", artifact_download,
                        "Download the artifact of this name");
  artifacts->add_option("-o,--output", artifact_out,
                        "Where to write it (default: its name; '-': stdout)");
  return WithClient(artifacts, client, [f](CoordinatorClient& c) {
    return ArtifactsCmd(c, f->artifact_trial, f->artifact_download,
                        f->artifact_out, std::cout);
  });
}

// smoe logs
Command AddLogsCommand(CLI::App* app_ptr,
                       const std::shared_ptr<ClientFlags>& client) {
  CLI::App& app = *app_ptr;
  auto f = std::make_shared<std::pair<std::string, LogsFlags>>();
  std::string& logs_trial = f->first;
  LogsFlags& logs_flags = f->second;
  CLI::App* logs = app.add_subcommand(
      "logs",
      "Print a trial attempt's log (trainer stderr and non-event "
      "stdout)");
  logs->add_option("TRIAL", logs_trial, "Trial id (SWEEP/HASH)")->required();
  logs->add_option("--attempt", logs_flags.attempt,
                   "Attempt number (default: the latest)");
  logs->add_flag("-f,--follow", logs_flags.follow,
                 "Keep printing what the attempt adds until it ends");
  return WithClient(logs, client, [f](CoordinatorClient& c) {
    return LogsCmd(c, f->first, f->second, std::cout);
  });
}

// smoe train sraven
struct TrainSravenFlags {
  TrainOptions train_opts;
  int64_t t_m = 4, t_top_k = 2, t_experts = 8, t_steps = 2000, t_batch = 128,
          t_depth = 4, t_log_every = 20, t_num_eval = 4096;
  double t_width = 1, t_lr = 0.001;
  std::string t_attention = "softmax", t_router = "topk", t_device = "cpu";
  std::vector<std::string> t_extra;
};

int RunTrainSraven(TrainSravenFlags& f) {
  TrainOptions& train_opts = f.train_opts;
  const std::vector<std::string>& t_extra = f.t_extra;
  nlohmann::json& p = train_opts.params;
  p = {{"M", f.t_m},
       {"top_k", f.t_top_k},
       {"num_experts", f.t_experts},
       {"attention", f.t_attention},
       {"router", f.t_router},
       {"steps", f.t_steps},
       {"batch_size", f.t_batch},
       {"width", f.t_width},
       {"depth", f.t_depth},
       {"lr", f.t_lr},
       {"log_every", f.t_log_every},
       {"num_eval", f.t_num_eval},
       {"device", f.t_device}};
  if (train_opts.ep_size > 1) p["ep_size"] = train_opts.ep_size;
  for (const std::string& kv : t_extra) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "smoe train: --param '" << kv << "' is not key=value\n";
      return kExitUsage;
    }
    const std::string key = kv.substr(0, eq), val = kv.substr(eq + 1);
    auto parsed = nlohmann::json::parse(val, nullptr, false);
    p[key] = parsed.is_discarded() ? nlohmann::json(val) : parsed;
  }
  if (p.contains("ep_size") && p["ep_size"] != train_opts.ep_size) {
    std::cerr << "smoe train: --param ep_size=" << p["ep_size"].dump()
              << " disagrees with --ep-size " << train_opts.ep_size
              << " (use --ep-size " << p["ep_size"].dump()
              << ": it also starts the ranks)\n";
    return kExitUsage;
  }
  return RunTrainCommand(train_opts, std::cout);
}

Command AddTrainCommand(CLI::App* app_ptr) {
  CLI::App& app = *app_ptr;
  auto f = std::make_shared<TrainSravenFlags>();
  TrainOptions& train_opts = f->train_opts;
  int64_t &t_m = f->t_m, &t_top_k = f->t_top_k, &t_experts = f->t_experts,
          &t_steps = f->t_steps, &t_batch = f->t_batch, &t_depth = f->t_depth,
          &t_log_every = f->t_log_every, &t_num_eval = f->t_num_eval;
  double &t_width = f->t_width, &t_lr = f->t_lr;
  std::string &t_attention = f->t_attention, &t_router = f->t_router,
              &t_device = f->t_device;
  std::vector<std::string>& t_extra = f->t_extra;
  CLI::App* train = app.add_subcommand("train", "One local training run");
  train->require_subcommand(1);
  CLI::App* train_sraven =
      train->add_subcommand("sraven", "Train an SMoE transformer on SRAVEN");
  train_sraven->add_option("--M", t_m, "Difficulty: rules per problem (1..8)")
      ->capture_default_str();
  train_sraven->add_option("--top-k", t_top_k, "Active experts per token")
      ->capture_default_str();
  train_sraven->add_option("--num-experts", t_experts, "Experts per layer")
      ->capture_default_str();
  train_sraven
      ->add_option("--attention", t_attention,
                   "softmax | linear | hyla | (ablations)")
      ->capture_default_str();
  train_sraven->add_option("--router", t_router, "topk | soft")
      ->capture_default_str();
  train_sraven->add_option("--steps", t_steps, "Training steps")
      ->capture_default_str();
  train_sraven->add_option("--batch-size", t_batch, "Problems per step")
      ->capture_default_str();
  train_sraven->add_option("--width", t_width, "Width multiplier (0.25 = tiny)")
      ->capture_default_str();
  train_sraven->add_option("--depth", t_depth, "Layers")->capture_default_str();
  train_sraven->add_option("--lr", t_lr, "Peak learning rate")
      ->capture_default_str();
  train_sraven
      ->add_option("--log-every", t_log_every,
                   "Progress and train/loss every this many steps")
      ->capture_default_str()
      ->check(IntAtLeast(1));
  train_sraven
      ->add_option("--num-eval", t_num_eval,
                   "Problems per evaluation split (a sweep's default is "
                   "51200)")
      ->capture_default_str()
      ->check(IntAtLeast(1));
  train_sraven->add_option("--device", t_device, "cpu | cuda")
      ->capture_default_str();
  train_sraven->add_option("--seed", train_opts.seed, "Run seed")
      ->capture_default_str();
  train_sraven->add_option("--param", t_extra,
                           "Any other trainer param as key=value (repeatable)");
  train_sraven->add_option("--workdir", train_opts.workdir,
                           "Work dir (checkpoints; resume by re-using it)");
  train_sraven->add_option("--trainer", train_opts.trainer,
                           "Trainer binary (default: next to smoe)");
  train_sraven
      ->add_option("--ep-size", train_opts.ep_size,
                   "Expert-parallel ranks (trainer processes; sets param "
                   "ep_size, which divides --num-experts and --batch-size)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  train_sraven
      ->add_option("--gpu-ids", train_opts.gpu_ids,
                   "GPUs for CUDA_VISIBLE_DEVICES, e.g. 0,1 (one per rank)")
      ->delimiter(',')
      ->check(IntAtLeast(0));
  train_sraven->footer(kLocalEpHelp);
  return {train_sraven, [f] { return RunTrainSraven(*f); }};
}

// smoe skillmix run (cli/skillmix_cmd.h)
Command AddSkillMixRunCommand(CLI::App* app) {
  auto f = std::make_shared<SkillMixRunFlags>();
  return {AddSkillMixCommand(app, f.get()), [f] {
            if (!SkillMixParamsFromFlags(f.get(), std::cerr)) return kExitUsage;
            return RunSkillMixCommand(f->run, std::cout);
          }};
}

// smoe analyze
Command AddAnalyzeCommand(CLI::App* app_ptr,
                          const std::shared_ptr<ClientFlags>& client) {
  CLI::App& app = *app_ptr;
  auto f = std::make_shared<std::pair<std::string, AnalyzeFlags>>();
  std::string& sweep_id = f->first;
  AnalyzeFlags& analyze_flags = f->second;
  CLI::App* analyze = app.add_subcommand(
      "analyze",
      "Optimal k per difficulty (bootstrap CI) and the E(k,N) fit, or with "
      "--tune at each k's own tuned hyperparameters; for a skillmix sweep "
      "the EPT x k_skills tables and the best EPT per k");
  analyze->add_option("SWEEP", sweep_id)->required();
  analyze->add_option("--metric", analyze_flags.metric,
                      "Result metric (default: ood_acc; skillmix: all)");
  analyze->add_option("--x", analyze_flags.x,
                      "Parameter on the x axis (default: top_k; skillmix: "
                      "table rows, ept)");
  analyze->add_option("--series", analyze_flags.series,
                      "One line per value (default: M; skillmix: table "
                      "columns, k_skills)");
  analyze->add_option("--facet", analyze_flags.facet,
                      "One panel per value (default: attention for sraven, "
                      "none otherwise)");
  analyze->add_option("--bootstrap", analyze_flags.bootstrap, "Resamples")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  analyze->add_option("--format", analyze_flags.format, "table | json")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json"}));
  analyze->add_option(
      "--tune", analyze_flags.tune,
      "Tuned analysis: parameters the sweep varies (e.g. lr,weight_decay); "
      "every x at its own best values of them by --select-by, beside each "
      "fixed value");
  analyze->add_option("--select-by", analyze_flags.select_by,
                      "Metric that selects the tuned values (default: "
                      "val_acc, the validation split)");
  analyze
      ->add_option("--select-per", analyze_flags.select_per,
                   "seed: each seed selects its own values; point: one "
                   "selection per point on the mean over seeds")
      ->capture_default_str();
  return WithClient(analyze, client, [f](CoordinatorClient& c) {
    return AnalyzeCmd(c, f->first, f->second, std::cout);
  });
}

// smoe params KIND (trials/params.h)
struct ParamsFlags {
  std::string params_kind;
  bool params_markdown = false;
  std::string params_sweep;
};

int RunParams(const ParamsFlags& f) {
  if (f.params_kind == trials::kCommandKind) {
    return PrintCommandParams(f.params_sweep, f.params_markdown);
  }
  const trials::TrialKind& k = *trials::FindKind(f.params_kind);
  std::cout << (f.params_markdown ? trials::FormatMarkdown(k)
                                  : trials::FormatText(k));
  return kExitOk;
}

Command AddParamsCommand(CLI::App* app_ptr) {
  CLI::App& app = *app_ptr;
  auto f = std::make_shared<ParamsFlags>();
  std::string& params_kind = f->params_kind;
  bool& params_markdown = f->params_markdown;
  std::string& params_sweep = f->params_sweep;
  CLI::App* params =
      app.add_subcommand("params",
                         "Print a trial kind's parameters: type, allowed "
                         "values, default, meaning");
  std::vector<std::string> kind_names;
  for (const trials::TrialKind* k : trials::AllKinds()) {
    kind_names.push_back(k->name);
  }
  kind_names.push_back(trials::kCommandKind);
  params->add_option("KIND", params_kind, "sraven | skillmix | command")
      ->required()
      ->check(CLI::IsMember(kind_names));
  params->add_flag("--markdown", params_markdown,
                   "A Markdown table (as in docs/trainer-protocol.md)");
  params
      ->add_option("--sweep", params_sweep,
                   "kind command: the sweep file declaring the params")
      ->type_name("FILE");
  return {params, [f] { return RunParams(*f); }};
}

// smoe deploy render (cli/deploy_cmd.h)
Command AddDeployRenderCommand(CLI::App* app) {
  auto opts = std::make_shared<DeployRenderOptions>();
  return {AddDeployCommand(app, opts.get()),
          [opts] { return RunDeployRender(*opts, std::cout, std::cerr); }};
}

// smoe worker (cli/worker_cmd.h)
Command AddWorkerDaemonCommand(CLI::App* app) {
  auto flags = std::make_shared<worker::WorkerFlags>();
  return {AddWorkerCommand(app, flags.get()), [flags] {
            if (absl::Status s = CheckWorkerFlags(*flags); !s.ok()) {
              std::cerr << "smoe worker: " << s.message() << "\n";
              return kExitUsage;
            }
            return worker::RunWorker(*flags);
          }};
}

// smoe sraven (cli/sraven_cmd.h), doctor (cli/doctor_cmd.h), model
// make-random (cli/model_cmd.h)
Command AddSravenDataCommand(CLI::App* app) {
  auto opts = std::make_shared<SravenOptions>();
  return {AddSravenCommand(app, opts.get()),
          [opts] { return RunSraven(*opts, std::cout, std::cerr); }};
}

Command AddDoctorCheckCommand(CLI::App* app) {
  auto opts = std::make_shared<DoctorOptions>();
  return {AddDoctorCommand(app, opts.get()),
          [opts] { return RunDoctor(*opts, std::cout, std::cerr); }};
}

Command AddModelToolCommand(CLI::App* app) {
  auto opts = std::make_shared<ModelOptions>();
  return {AddModelCommand(app, opts.get()),
          [opts] { return RunModel(*opts, std::cerr); }};
}

// Every `smoe` subcommand, in the order of the help.
std::vector<Command> AddCommands(CLI::App* app) {
  auto client = std::make_shared<ClientFlags>();
  if (const char* env = std::getenv("SMOE_COORDINATOR")) {
    client->options.address = env;
  }
  std::vector<Command> commands;
  auto append = [&commands](std::vector<Command> more) {
    for (Command& c : more) commands.push_back(std::move(c));
  };
  commands.push_back(AddCoordinatorCommand(app));
  commands.push_back(AddAdminCommand(app));
  commands.push_back(AddTokenCommand(app));
  commands.push_back(AddUpCommand(app));
  append(AddSweepCommands(app, client));
  commands.push_back(AddResultsCommand(app, client));
  append(AddWorkersCommands(app, client));
  commands.push_back(AddArtifactsCommand(app, client));
  commands.push_back(AddLogsCommand(app, client));
  commands.push_back(AddTrainCommand(app));
  commands.push_back(AddSkillMixRunCommand(app));
  commands.push_back(AddAnalyzeCommand(app, client));
  commands.push_back(AddParamsCommand(app));
  commands.push_back(AddDeployRenderCommand(app));
  commands.push_back(AddWorkerDaemonCommand(app));
  commands.push_back(AddSravenDataCommand(app));
  commands.push_back(AddDoctorCheckCommand(app));
  commands.push_back(AddModelToolCommand(app));
  return commands;
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{"SMoE Lab: sparse Mixture-of-Experts sparsity studies at scale",
               "smoe"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for all subcommands");
  app.set_version_flag("--version", "smoe " SMOE_VERSION);
  const std::vector<Command> commands = AddCommands(&app);
  return ParseAndRun(&app, commands, argc, argv, std::cout, std::cerr);
}

}  // namespace smoe::cli

int main(int argc, char** argv) { return smoe::cli::Main(argc, argv); }
