// Copyright 2026 SMoE Lab authors.
//
// smoe-trainer: runs one trial (shared/specs/trainer-protocol.md).
//
//   smoe-trainer run --trial TRIAL.json --workdir DIR
//   smoe-trainer make-random-model --out DIR ...   (mixtral_tools.h)
//   smoe-trainer mixtral-logits --model DIR ...     (mixtral_tools.h)
//
// JSON Lines events on stdout, logs on stderr. Exit codes: 0 done (a result
// was emitted), 75 interrupted by SIGTERM/SIGINT with a checkpoint saved, 64
// bad trial spec or usage, 1 any other error.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "common/logging.h"
#include "worker/trainer/mixtral_tools.h"
#include "worker/trainer/train_config.h"
#include "worker/trainer/trainer.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 64;
constexpr int kExitInterrupted = 75;

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop.store(true); }

int Usage(const char* why) {
  std::fprintf(stderr,
               "smoe-trainer: %s\nusage: smoe-trainer run --trial TRIAL.json "
               "--workdir DIR\n",
               why);
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  // Mixtral runtime tools (worker/trainer/mixtral_tools.h).
  if (argc >= 2 && std::strcmp(argv[1], "make-random-model") == 0) {
    return smoe::trainer::RunMakeRandomModel(argc - 1, argv + 1);
  }
  if (argc >= 2 && std::strcmp(argv[1], "mixtral-logits") == 0) {
    return smoe::trainer::RunMixtralLogits(argc - 1, argv + 1);
  }
  if (argc < 2 || std::strcmp(argv[1], "run") != 0) {
    return Usage("expected the `run` command");
  }
  std::string trial_path, workdir;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--trial" || arg == "--workdir") && i + 1 < argc) {
      (arg == "--trial" ? trial_path : workdir) = argv[++i];
    } else if (arg.rfind("--trial=", 0) == 0) {
      trial_path = arg.substr(8);
    } else if (arg.rfind("--workdir=", 0) == 0) {
      workdir = arg.substr(10);
    } else {
      return Usage(("unknown argument " + arg).c_str());
    }
  }
  if (trial_path.empty() || workdir.empty()) {
    return Usage("--trial and --workdir are required");
  }
  std::ifstream in(trial_path);
  if (!in) {
    std::fprintf(stderr, "smoe-trainer: cannot read %s\n", trial_path.c_str());
    return kExitUsage;
  }
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<smoe::trainer::TrialSpec> spec =
      smoe::trainer::ParseTrialJson(text.str());
  if (!spec.ok()) {
    std::fprintf(stderr, "smoe-trainer: bad trial spec %s: %s\n",
                 trial_path.c_str(),
                 std::string(spec.status().message()).c_str());
    return kExitUsage;
  }

  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  smoe::trainer::ConfigureTorchThreads();
  smoe::trainer::StdoutEventSink sink;
  smoe::trainer::RunOptions options;
  options.workdir = workdir;
  options.events = &sink;
  options.stop = &g_stop;
  SMOE_LOG(INFO) << "trial " << spec->trial_id << " attempt " << spec->attempt
                 << " starting in " << workdir;
  absl::StatusOr<smoe::trainer::TrainResult> result =
      smoe::trainer::RunTraining(spec->config, options);
  if (result.ok()) return kExitOk;
  if (absl::IsCancelled(result.status())) {
    SMOE_LOG(INFO) << result.status().message();
    return kExitInterrupted;
  }
  SMOE_LOG(ERROR) << result.status().ToString();
  if (absl::IsInvalidArgument(result.status())) return kExitUsage;
  return kExitError;
}
