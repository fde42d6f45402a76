// Copyright 2026 SMoE Lab authors.
//
// smoe-trainer: runs one trial (docs/trainer-protocol.md).
//
//   smoe-trainer run --trial TRIAL.json --workdir DIR
//   smoe-trainer cpu-info       CPU features, the OpenBLAS kernels in use,
//                               the tuning decision, a GEMM self-test
//   smoe-trainer make-random-model | mixtral-logits | doctor ...
//                               (run by smoe-trainer-full, see below)
//
// This program trains kind "sraven" itself. Kind "skillmix" and the
// Mixtral/doctor tools live in smoe-trainer-full next to it
// (worker/trainer/trainer_cli.h): for those it exec()s that program with the
// same arguments, so the caller sees one process either way. The split keeps
// the Mixtral runtime and the doctor off the SRAVEN demo's build path.
//
// Every command first runs common/cpu_tuning.h: when OpenBLAS picked weaker
// kernels than the CPU supports (or a multi-thread run lacks
// OMP_WAIT_POLICY), the process re-execs itself once with the corrected
// environment; one log line says what was detected and decided.
//
// Flags and subcommands are one CLI11 app (common/flags.h): a bad value or
// a missing flag is reported as "--flag: 'value' (reason)" with exit 64.
// JSON Lines events on stdout, logs on stderr. Exit codes: 0 done (a result
// was emitted), 75 interrupted by SIGTERM/SIGINT with a checkpoint saved, 64
// bad trial spec or usage, 1 any other error (also: smoe-trainer-full is
// needed but missing).
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "common/cpu_tuning.h"
#include "common/flags.h"
#include "worker/trainer/trainer_cli.h"

int main(int argc, char** argv) {
  // The tools smoe-trainer-full runs: handed over before the CPU tuning,
  // which that program does itself.
  const std::vector<std::string>& forwarded = smoe::trainer::FullOnlyCommands();
  if (argc > 1 && std::find(forwarded.begin(), forwarded.end(), argv[1]) !=
                      forwarded.end()) {
    return smoe::trainer::ExecFullTrainer(
        std::vector<std::string>(argv + 1, argv + argc));
  }
  // May re-exec this process once (common/cpu_tuning.h): before anything else.
  const std::string tuning = smoe::cpu::TuneCpuRuntime(argv);
  CLI::App app{
      "smoe-trainer: runs one trial (docs/trainer-protocol.md) and "
      "the worker-side tools",
      "smoe-trainer"};
  app.require_subcommand(1);
  app.footer(
      "also, run by smoe-trainer-full next to this program: "
      "make-random-model, mixtral-logits, doctor\n"
      "exit: 0 done, 75 interrupted with a checkpoint saved, 64 bad trial "
      "spec or usage, 1 any other error");
  const std::vector<smoe::Command> commands = {
      smoe::trainer::AddRunCommand(
          &app,
          [](const std::string& trial_path, const std::string&,
             const std::string& workdir) {
            // Kind "skillmix": the same command line, in smoe-trainer-full.
            return smoe::trainer::ExecFullTrainer(
                {"run", "--trial", trial_path, "--workdir", workdir});
          }),
      smoe::trainer::AddCpuInfoCommand(&app, &tuning),
  };
  return smoe::ParseAndRun(&app, commands, argc, argv, std::cout, std::cerr);
}
