// Copyright 2026 SMoE Lab authors.
#include "cli/worker_cmd.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/flags.h"
#include "trials/params.h"

namespace smoe::cli {
namespace {

std::string Quoted(absl::string_view v) { return absl::StrCat("'", v, "'"); }

// Seconds as a number ("30", "2.5") or an absl duration ("30s", "1m").
bool ParseSeconds(const std::string& value, absl::Duration* out) {
  double secs = 0;
  if (absl::SimpleAtod(value, &secs)) {
    *out = absl::Seconds(secs);
    return true;
  }
  return absl::ParseDuration(value, out);
}

CLI::Validator Seconds(bool positive) {
  return CLI::Validator(
      [positive](std::string& v) -> std::string {
        absl::Duration d;
        if (!ParseSeconds(v, &d)) {
          return Quoted(v) + " (expected seconds, e.g. 30 or 2.5 or 30s)";
        }
        if (positive && d <= absl::ZeroDuration()) {
          return Quoted(v) + " (must be > 0)";
        }
        if (d < absl::ZeroDuration()) return Quoted(v) + " (must be >= 0)";
        return "";
      },
      "");
}

// "4,5,7": distinct indices >= 0.
std::string GpuIdsError(const std::string& value, std::vector<int>* out) {
  std::vector<int> ids;
  for (absl::string_view id : absl::StrSplit(value, ',')) {
    int n = 0;
    if (!absl::SimpleAtoi(id, &n) || n < 0) {
      return Quoted(value) + " (expected indices like 0,2,3)";
    }
    if (std::find(ids.begin(), ids.end(), n) != ids.end()) {
      return absl::StrCat(Quoted(value), " (index ", n, " repeated)");
    }
    ids.push_back(n);
  }
  if (out != nullptr) *out = std::move(ids);
  return "";
}

// "zone=a,gpu=h100".
std::string LabelsError(const std::string& value,
                        std::map<std::string, std::string>* out) {
  std::map<std::string, std::string> labels;
  for (absl::string_view kv : absl::StrSplit(value, ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> p =
        absl::StrSplit(kv, absl::MaxSplits('=', 1));
    if (p.first.empty() || kv.find('=') == absl::string_view::npos) {
      return absl::StrCat(Quoted(value), " ('", kv, "' is not k=v)");
    }
    labels[p.first] = p.second;
  }
  if (out != nullptr) *out = std::move(labels);
  return "";
}

// "sraven,skillmix": known trial kinds, at least one.
std::string KindsError(const std::string& value,
                       std::vector<std::string>* out) {
  std::vector<std::string> known;
  for (const trials::TrialKind* k : trials::AllKinds()) {
    known.push_back(k->name);
  }
  std::vector<std::string> kinds;
  for (absl::string_view k : absl::StrSplit(value, ',', absl::SkipEmpty())) {
    // kind command: only with --allow-command DIR (checked once all flags
    // are parsed); `--kinds command` alone makes a worker that needs no
    // smoe-trainer.
    if (k != "command" &&
        std::find(known.begin(), known.end(), k) == known.end()) {
      return absl::StrCat(Quoted(value), " (unknown kind '", k,
                          "'; known: ", absl::StrJoin(known, ", "), ")");
    }
    kinds.emplace_back(k);
  }
  if (kinds.empty()) return Quoted(value) + " (no kind given)";
  if (out != nullptr) *out = std::move(kinds);
  return "";
}

}  // namespace

CLI::App* AddWorkerCommand(CLI::App* app, worker::WorkerFlags* flags) {
  CLI::App* cmd = app->add_subcommand(
      "worker",
      "Run a worker daemon: trials leased from a coordinator, one "
      "smoe-trainer process each");
  cmd->footer(
      "SIGTERM/SIGINT drain it: trainers get SIGTERM, checkpoint and are "
      "reported preempted (re-queued without using the error budget), then "
      "it exits 0. Exit 1: a runtime failure; 2: a configuration error (no "
      "token, trainer not found, work directory in use).");
  cmd->add_option("--coordinator", flags->coordinator,
                  "Coordinator address HOST:PORT")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            return v.empty() || v.find(':') == std::string::npos
                       ? Quoted(v) + " (expected HOST:PORT)"
                       : "";
          },
          ""))
      ->type_name("HOST:PORT");
  cmd->add_option("--token-file", flags->token_file,
                  "API token file (default: smoe-data/token here or in a "
                  "parent directory, else ~/.smoe/token); $SMOE_TOKEN wins")
      ->check(NonEmpty("path"))
      ->type_name("PATH");
  cmd->add_option("--tls-ca", flags->tls_ca,
                  "PEM root certificates: use TLS (default plaintext)")
      ->check(NonEmpty("path"))
      ->type_name("PATH");
  cmd->add_option("--slots", flags->slots,
                  "Concurrent trials (default: one per GPU, 1 on CPU)")
      ->check(IntAtLeast(1))
      ->type_name("N");
  cmd->add_option("--gpus", flags->gpus,
                  "GPUs to use, 0..N-1 (default: from nvidia-smi)")
      ->check(IntAtLeast(0))
      ->type_name("N");
  cmd->add_option_function<std::string>(
         "--gpu-ids",
         [flags](const std::string& v) { GpuIdsError(v, &flags->gpu_ids); },
         "Exactly these GPU indices, e.g. 4,5,6,7 (excludes --gpus)")
      ->check(CLI::Validator(
          [](std::string& v) { return GpuIdsError(v, nullptr); }, ""))
      ->type_name("I,J,...");
  cmd->add_option_function<std::string>(
         "--labels",
         [flags](const std::string& v) { LabelsError(v, &flags->labels); },
         "Labels matched against sweeps' requirements, k=v,k=v")
      ->check(CLI::Validator(
          [](std::string& v) { return LabelsError(v, nullptr); }, ""))
      ->type_name("K=V,...");
  cmd->add_option_function<std::string>(
         "--kinds",
         [flags](const std::string& v) { KindsError(v, &flags->kinds); },
         "Trial kinds to run: sraven, skillmix, command (default sraven; "
         "'command' alone: only the sweep's own programs, no smoe-trainer "
         "needed)")
      ->check(CLI::Validator(
          [](std::string& v) { return KindsError(v, nullptr); }, ""))
      ->type_name("KIND,...");
  cmd->add_option("--allow-command", flags->allow_command,
                  "Run kind-command trials (the sweep's own program) whose "
                  "program lies under DIR; repeatable (default: none)")
      ->check(NonEmpty("directory"))
      ->type_name("DIR")
      ->allow_extra_args(false);
  cmd->add_option("--trainer", flags->trainer,
                  "Trainer binary (default: smoe-trainer next to this binary, "
                  "else on $PATH)")
      ->check(NonEmpty("path"))
      ->type_name("PATH");
  cmd->add_option("--work-dir", flags->work_dir,
                  "Trial directories + report journal (default "
                  "./smoe-data/worker-<hostname>)")
      ->check(NonEmpty("path"))
      ->type_name("DIR");
  cmd->add_option_function<std::string>(
         "--grace",
         [flags](const std::string& v) { ParseSeconds(v, &flags->grace); },
         "SIGTERM -> SIGKILL grace on drain, seconds (default 30)")
      ->check(Seconds(/*positive=*/false))
      ->type_name("SECONDS");
  cmd->add_option("--checkpoint-dir", flags->checkpoint_dir,
                  "Keep trial checkpoints in this shared directory (every "
                  "worker mounts it, e.g. a ReadWriteMany PVC) instead of "
                  "uploading them to the coordinator")
      ->check(NonEmpty("path"))
      ->type_name("DIR");
  cmd->add_flag("--no-checkpoint-sync", flags->no_checkpoint_sync,
                "Keep checkpoints on this worker only (no upload/download)");
  cmd->add_option("--checkpoint-upload-mbps", flags->checkpoint_upload_mbps,
                  "Pace checkpoint uploads to at most this many megabits per "
                  "second, leaving the link to training traffic (default 0: "
                  "unlimited)")
      ->check(NonNegativeNumber())
      ->type_name("MBIT_S");
  cmd->add_option("--worker-id", flags->worker_id,
                  "Worker id (default: saved in the work dir, else assigned "
                  "by the coordinator)")
      ->check(NonEmpty("id"))
      ->type_name("ID");
  cmd->add_option_function<std::string>(
         "--rpc-timeout",
         [flags](const std::string& v) {
           ParseSeconds(v, &flags->rpc_timeout);
         },
         "Deadline of each coordinator call, seconds (default 10)")
      ->check(Seconds(/*positive=*/true))
      ->type_name("SECONDS");
  return cmd;
}

absl::Status CheckWorkerFlags(const worker::WorkerFlags& flags) {
  if (!flags.gpu_ids.empty() && flags.gpus >= 0) {
    return absl::InvalidArgumentError(
        "--gpus and --gpu-ids exclude each other: give a count or the indices");
  }
  if (std::find(flags.kinds.begin(), flags.kinds.end(), "command") !=
          flags.kinds.end() &&
      flags.allow_command.empty()) {
    return absl::InvalidArgumentError(
        "--kinds: 'command' needs --allow-command DIR, which names the "
        "directories of the programs it may run");
  }
  return absl::OkStatus();
}

}  // namespace smoe::cli
