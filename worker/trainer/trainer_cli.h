// Copyright 2026 SMoE Lab authors.
//
// File: worker/trainer/trainer_cli.h
//
// What the two trainer programs share (docs/trainer-protocol.md):
//
//   smoe-trainer       kind "sraven" and `cpu-info`; hands every other kind
//                      and tool to smoe-trainer-full (it exec()s it with the
//                      same arguments, so the daemon's process, pipes and
//                      signals carry over unchanged).
//   smoe-trainer-full  every kind and tool: also kind "skillmix" and the
//                      Mixtral runtime, `make-random-model`,
//                      `mixtral-logits` and `doctor`.
//
// The split keeps the Mixtral runtime, the Skill-Mix pipeline and the doctor
// (about a quarter of the trainer's compile time) off the build path of
// `scripts/up`'s SRAVEN demo; `scripts/test` builds both.
#ifndef SMOE_WORKER_TRAINER_TRAINER_CLI_H_
#define SMOE_WORKER_TRAINER_TRAINER_CLI_H_

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/flags.h"

namespace smoe::trainer {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 64;
// EX_NOINPUT: a model or file the trial names does not exist (NOT_FOUND);
// like 64, the daemon reports it as a bad spec, never retried.
inline constexpr int kExitNoInput = 66;
inline constexpr int kExitInterrupted = 75;

// The program with every kind and tool, next to smoe-trainer.
inline constexpr char kFullTrainerName[] = "smoe-trainer-full";

// The subcommands only smoe-trainer-full has (smoe-trainer forwards them).
const std::vector<std::string>& FullOnlyCommands();

// Maps a trial's final status to the exit code of the contract (logs it).
int ExitCodeFor(const absl::Status& status);

// Set by SIGTERM/SIGINT once InstallStopHandlers ran.
std::atomic<bool>* StopFlag();
void InstallStopHandlers();

// Runs a trial of a kind other than "sraven": (trial path, TRIAL.json text,
// workdir) -> exit code.
using KindRunner =
    std::function<int(const std::string& trial_path, const std::string& text,
                      const std::string& workdir)>;

// `run --trial TRIAL.json --workdir DIR`: reads the trial, installs the stop
// handlers, runs kind "sraven" (or no kind) here and kind "skillmix" through
// `skillmix`; any other kind is a bad trial spec (64).
Command AddRunCommand(CLI::App* app, KindRunner skillmix);

// `cpu-info`: CPU features, OpenBLAS kernels in use, the tuning decision
// (`tuning`, TuneCpuRuntime's line) and a GEMM self-test.
Command AddCpuInfoCommand(CLI::App* app, const std::string* tuning);

// `dir_of_self/name`, where dir_of_self is the directory of this process's
// executable (/proc/self/exe); "" when it cannot be read.
std::string SiblingProgram(const std::string& name);

// Replaces this process by smoe-trainer-full next to it (argv[0] = its path,
// then `args`); environment, pid, pipes and signal targets carry over.
// Returns only on failure: 1 after one stderr line that names the program,
// the reason and how to build it.
int ExecFullTrainer(const std::vector<std::string>& args);

}  // namespace smoe::trainer

#endif  // SMOE_WORKER_TRAINER_TRAINER_CLI_H_
