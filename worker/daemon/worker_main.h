// Copyright 2026 SMoE Lab authors.
//
// File: worker/daemon/worker_main.h
//
// The `smoe worker` entry point: the real wiring (gRPC gateway client, POSIX
// launcher, real clock, signal handling). The flags are parsed by the CLI
// (cli/worker_cmd.h).
//
//   WorkerFlags flags;  // filled from the command line
//   return RunWorker(flags);
#ifndef SMOE_WORKER_DAEMON_WORKER_MAIN_H_
#define SMOE_WORKER_DAEMON_WORKER_MAIN_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace smoe::worker {

// `smoe worker` flags; an empty string means the default described.
struct WorkerFlags {
  std::string coordinator = "127.0.0.1:50051";  // --coordinator host:port
  // --token-file; default DefaultTokenFile() (common/api_token.h: the
  // smoe-data/token of this directory or a parent, else ~/.smoe/token).
  // $SMOE_TOKEN, when set, wins over any file.
  std::string token_file;
  int slots = 0;  // --slots N (>= 1); 0 = one per GPU, 1 on a CPU-only host
  int gpus = -1;  // --gpus N (>= 0) overrides nvidia-smi; -1 = detect
  // --gpu-ids 1,3: exactly these device indices (distinct, >= 0); excludes
  // --gpus. Trials see them through CUDA_VISIBLE_DEVICES.
  std::vector<int> gpu_ids;
  std::map<std::string, std::string> labels;    // --labels k=v,k=v
  std::vector<std::string> kinds = {"sraven"};  // --kinds sraven,skillmix
  // --allow-command DIR (repeatable): run kind-command trials whose program
  // lies under one of these directories (worker/daemon/command_launch.h);
  // adds kind "command" to `kinds`. Empty: no user programs.
  std::vector<std::string> allow_command;
  // --trainer PATH; empty = smoe-trainer next to the running binary (or in
  // ../worker/trainer/ of a build tree), else the first on $PATH.
  std::string trainer;
  std::string work_dir;  // --work-dir; default ./smoe-data/worker-<hostname>
  absl::Duration grace = absl::Seconds(30);  // --grace SECONDS (or "30s")
  // --checkpoint-dir: shared-filesystem checkpoints (checkpoint_sync.h);
  // empty = through the coordinator.
  std::string checkpoint_dir;
  bool no_checkpoint_sync = false;  // --no-checkpoint-sync
  // --checkpoint-upload-mbps: megabits per second a checkpoint upload may
  // use; 0 = unlimited.
  double checkpoint_upload_mbps = 0;
  std::string tls_ca;     // --tls-ca PATH: PEM roots; empty = plaintext
  std::string worker_id;  // --worker-id ID; empty = saved or assigned
  absl::Duration rpc_timeout = absl::Seconds(10);  // --rpc-timeout SECONDS
};

// Returns the GPU indices nvidia-smi reports (`--query-gpu=index
// --format=csv,noheader`), or an empty list when it is absent or fails (waits
// at most 10 s).
std::vector<int> DetectGpus();

// Runs the daemon until it is drained (SIGTERM/SIGINT, or the coordinator's
// drain). Returns the process exit code: 0 after a clean drain, 1 for a
// runtime failure, 2 for a configuration error (no token, trainer not found,
// work directory in use by another daemon); the reason goes to stderr.
// Blocks SIGTERM/SIGINT in the calling thread while it runs (a dedicated
// thread takes them): call it from the main thread before other threads exist.
int RunWorker(const WorkerFlags& flags);

}  // namespace smoe::worker

#endif  // SMOE_WORKER_DAEMON_WORKER_MAIN_H_
