// Copyright 2026 SMoE Lab authors.
//
// smoe-trainer-full: every trial kind and worker-side tool
// (docs/trainer-protocol.md; worker/trainer/trainer_cli.h). smoe-trainer
// (main.cc) runs kind "sraven" itself and exec()s this program for the rest.
//
//   smoe-trainer-full run --trial TRIAL.json --workdir DIR   (any kind)
//   smoe-trainer-full make-random-model --out DIR ...   (mixtral_tools.h)
//   smoe-trainer-full mixtral-logits --model DIR ...     (mixtral_tools.h)
//   smoe-trainer-full doctor [--quick] [--json] ...      (doctor.h)
//   smoe-trainer-full cpu-info
//
// Kinds: "sraven" (training, worker/trainer/trainer.h) and "skillmix"
// (Skill-Mix evaluation, worker/trainer/skillmix_trial.h). Flags, exit
// codes and the CPU tuning re-exec are smoe-trainer's (main.cc).
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
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
#include "worker/trainer/trainer.h"
#include "worker/trainer/trainer_cli.h"

namespace {

using smoe::trainer::ExitCodeFor;
using smoe::trainer::kExitError;
using smoe::trainer::kExitUsage;

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
    options.stop = smoe::trainer::StopFlag();
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

}  // namespace

int main(int argc, char** argv) {
  // May re-exec this process once (common/cpu_tuning.h): before anything else.
  const std::string tuning = smoe::cpu::TuneCpuRuntime(argv);
  CLI::App app{
      "smoe-trainer-full: runs one trial of any kind "
      "(docs/trainer-protocol.md) "
      "and the worker-side tools",
      "smoe-trainer-full"};
  app.require_subcommand(1);
  app.footer(
      "exit: 0 done, 75 interrupted with a checkpoint saved, 64 bad trial "
      "spec or usage, 1 any other error");
  const std::vector<smoe::Command> commands = {
      smoe::trainer::AddRunCommand(&app, &RunSkillMix),
      smoe::trainer::AddCpuInfoCommand(&app, &tuning),
      smoe::trainer::AddMakeRandomModelCommand(&app),
      smoe::trainer::AddMixtralLogitsCommand(&app),
      // The machine self-check (worker/trainer/doctor.h; `smoe doctor`).
      smoe::trainer::AddDoctorCommand(&app),
  };
  return smoe::ParseAndRun(&app, commands, argc, argv, std::cout, std::cerr);
}
