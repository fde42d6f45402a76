// Copyright 2026 SMoE Lab authors.
//
// smoe-trainer: runs one trial (docs/trainer-protocol.md).
//
//   smoe-trainer run --trial TRIAL.json --workdir DIR
//   smoe-trainer make-random-model --out DIR ...   (mixtral_tools.h)
//   smoe-trainer mixtral-logits --model DIR ...     (mixtral_tools.h)
//   smoe-trainer doctor [--quick] [--json] [--report FILE] ...  (doctor.h)
//   smoe-trainer cpu-info       CPU features, the OpenBLAS kernels in use,
//                               the tuning decision, a GEMM self-test
//
// Every command first runs common/cpu_tuning.h: when OpenBLAS picked weaker
// kernels than the CPU supports (or a multi-thread run lacks
// OMP_WAIT_POLICY), the process re-execs itself once with the corrected
// environment; one log line says what was detected and decided.
//
// Kinds: "sraven" (training, worker/trainer/trainer.h) and "skillmix"
// (Skill-Mix evaluation, worker/trainer/skillmix_trial.h).
//
// Flags and subcommands are one CLI11 app (common/flags.h): a bad value or
// a missing flag is reported as "--flag: 'value' (reason)" with exit 64.
// JSON Lines events on stdout, logs on stderr. Exit codes: 0 done (a result
// was emitted), 75 interrupted by SIGTERM/SIGINT with a checkpoint saved, 64
// bad trial spec or usage, 1 any other error.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/cpu_tuning.h"
#include "common/flags.h"
#include "common/logging.h"
#include "worker/trainer/doctor.h"
#include "worker/trainer/mixtral_tools.h"
#include "worker/trainer/skillmix_config.h"
#include "worker/trainer/skillmix_models.h"
#include "worker/trainer/skillmix_trial.h"
#include "worker/trainer/train_config.h"
#include "worker/trainer/trainer.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 64;
constexpr int kExitInterrupted = 75;

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop.store(true); }

// Maps a trial's final status to the exit code of the contract.
int ExitCodeFor(const absl::Status& status) {
  if (status.ok()) return kExitOk;
  if (absl::IsCancelled(status) || absl::IsAborted(status)) {
    SMOE_LOG(INFO) << status.message();
    return kExitInterrupted;
  }
  SMOE_LOG(ERROR) << status.ToString();
  if (absl::IsInvalidArgument(status)) return kExitUsage;
  return kExitError;
}

// kind "skillmix": one Skill-Mix evaluation (worker/trainer/skillmix_trial.h).
// With SMOE_WORLD_SIZE > 1 (resources.ep_size) the model's experts are split
// over the ranks: rank 0 runs the trial and leads, the others follow
// (worker/trainer/skillmix_models.h).
int RunSkillMix(const std::string& trial_path, const std::string& text,
                const std::string& workdir) {
  absl::StatusOr<smoe::trainer::SkillMixTrialConfig> config =
      smoe::trainer::ParseSkillMixTrialJson(text);
  if (!config.ok()) {
    std::fprintf(stderr, "smoe-trainer: bad trial spec %s: %s\n",
                 trial_path.c_str(),
                 std::string(config.status().message()).c_str());
    return kExitUsage;
  }
  absl::StatusOr<smoe::model::RendezvousInfo> rdv =
      smoe::model::RendezvousFromEnv();
  if (!rdv.ok()) return ExitCodeFor(rdv.status());
  smoe::trainer::ConfigureTorchThreads();
  try {
    std::unique_ptr<smoe::kernels::Communicator> comm;
    if (rdv->world_size > 1) {
      auto joined = smoe::trainer::JoinSkillMixGroup(*rdv, config->device);
      if (!joined.ok()) return ExitCodeFor(joined.status());
      comm = *std::move(joined);
    }
    smoe::trainer::SkillMixModels models(*config, comm.get());
    if (rdv->rank > 0) {
      // A follower: no events, no files; SIGTERM only sets g_stop, so it
      // keeps serving until rank 0 (signalled too) stops it gracefully.
      int64_t served = 0;
      const absl::Status s = models.Follow(&served);
      SMOE_LOG(INFO) << "skillmix: rank " << rdv->rank << " served " << served
                     << " generation calls";
      return ExitCodeFor(s);
    }
    smoe::trainer::StdoutEventSink sink;
    smoe::trainer::SkillMixRunOptions options;
    options.workdir = workdir;
    options.emit = [&sink](const std::string& line) { sink.Emit(line); };
    options.stop = &g_stop;
    options.model_factory = models.Factory();
    SMOE_LOG(INFO) << "trial " << config->trial_id << " attempt "
                   << config->attempt << " (skillmix"
                   << (comm != nullptr
                           ? absl::StrCat(", ", comm->world_size(), " ranks")
                           : "")
                   << ") starting in " << workdir;
    const absl::Status s =
        smoe::trainer::RunSkillMixTrial(*config, options).status();
    // Also after a failure, so the followers exit now, not at the deadline.
    const absl::Status stopped = models.StopFollowers();
    if (!stopped.ok()) {
      SMOE_LOG(WARNING) << "skillmix: stopping the other ranks: " << stopped;
    }
    return ExitCodeFor(s);
  } catch (const std::exception& e) {  // LibTorch (c10::Error) and std
    SMOE_LOG(ERROR) << "skillmix: " << e.what();
    return kExitError;
  }
}

// `smoe-trainer cpu-info`: what the CPU supports, what OpenBLAS runs, what
// the tuning decided (`tuning`, TuneCpuRuntime's line) and a GEMM self-test.
int CpuInfo(const std::string& tuning) {
  const smoe::cpu::CpuEnvInputs in = smoe::cpu::CollectCpuEnvInputs();
  const smoe::cpu::SimdLevel best = smoe::cpu::BestSimdLevel(in.cpu);
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v != nullptr ? v : "(unset)");
  };
  const std::string self_test = smoe::cpu::RunBlasSelfTest();
  std::printf(
      "cpu: %s\nbest level: %s (OpenBLAS core for it: %s)\n"
      "openblas core: %s\nopenblas config: %s\n"
      "OPENBLAS_CORETYPE=%s\nOMP_WAIT_POLICY=%s\nOMP_NUM_THREADS=%s\n"
      "SMOE_CPU_TUNED=%s\ngemm self-test: %s\ntuning: %s\n",
      in.cpu.Summary().c_str(),
      std::string(smoe::cpu::SimdLevelName(best)).c_str(),
      smoe::cpu::OpenBlasCoreFor(best).c_str(),
      in.openblas_corename.empty() ? "(not OpenBLAS)"
                                   : in.openblas_corename.c_str(),
      in.openblas_config.c_str(), env("OPENBLAS_CORETYPE").c_str(),
      env("OMP_WAIT_POLICY").c_str(), env("OMP_NUM_THREADS").c_str(),
      env("SMOE_CPU_TUNED").c_str(),
      self_test.empty() ? "passed" : self_test.c_str(), tuning.c_str());
  return self_test.empty() ? kExitOk : kExitError;
}

// `smoe-trainer run --trial TRIAL.json --workdir DIR` (the daemon's command
// line; docs/trainer-protocol.md).
int RunTrial(const std::string& trial_path, const std::string& workdir) {
  std::ifstream in(trial_path);
  if (!in) {
    std::fprintf(stderr, "smoe-trainer: cannot read %s\n", trial_path.c_str());
    return kExitUsage;
  }
  std::stringstream text;
  text << in.rdbuf();

  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  absl::StatusOr<std::string> kind = smoe::trainer::TrialKind(text.str());
  if (kind.ok() && *kind == "skillmix") {
    return RunSkillMix(trial_path, text.str(), workdir);
  }
  absl::StatusOr<smoe::trainer::TrialSpec> spec =
      smoe::trainer::ParseTrialJson(text.str());
  if (!spec.ok()) {
    std::fprintf(stderr, "smoe-trainer: bad trial spec %s: %s\n",
                 trial_path.c_str(),
                 std::string(spec.status().message()).c_str());
    return kExitUsage;
  }

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
  return ExitCodeFor(result.status());
}

smoe::Command AddRunCommand(CLI::App* app) {
  auto paths = std::make_shared<std::pair<std::string, std::string>>();
  CLI::App* cmd = app->add_subcommand(
      "run", "run one trial: JSON Lines events on stdout, logs on stderr");
  cmd->add_option("--trial", paths->first, "the trial spec (TRIAL.json)")
      ->required()
      ->check(smoe::NonEmpty("file name"));
  cmd->add_option("--workdir", paths->second,
                  "the attempt's directory (checkpoints, outputs)")
      ->required()
      ->check(smoe::NonEmpty("directory"));
  return {cmd, [paths] { return RunTrial(paths->first, paths->second); }};
}

}  // namespace

int main(int argc, char** argv) {
  // May re-exec this process once (common/cpu_tuning.h): before anything else.
  const std::string tuning = smoe::cpu::TuneCpuRuntime(argv);
  CLI::App app{
      "smoe-trainer: runs one trial (docs/trainer-protocol.md) and "
      "the worker-side tools",
      "smoe-trainer"};
  app.require_subcommand(1);
  app.footer(
      "exit: 0 done, 75 interrupted with a checkpoint saved, 64 bad trial "
      "spec or usage, 1 any other error");
  CLI::App* cpu_info = app.add_subcommand(
      "cpu-info",
      "CPU features, the OpenBLAS kernels in use, the tuning decision, a "
      "GEMM self-test");
  const std::vector<smoe::Command> commands = {
      AddRunCommand(&app),
      {cpu_info, [&tuning] { return CpuInfo(tuning); }},
      smoe::trainer::AddMakeRandomModelCommand(&app),
      smoe::trainer::AddMixtralLogitsCommand(&app),
      // The machine self-check (worker/trainer/doctor.h; `smoe doctor`).
      smoe::trainer::AddDoctorCommand(&app),
  };
  return smoe::ParseAndRun(&app, commands, argc, argv, std::cout, std::cerr);
}
