// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/trainer_cli.h"

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/cpu_tuning.h"
#include "common/logging.h"
#include "worker/trainer/train_config.h"
#include "worker/trainer/trainer.h"
#include "worker/trainer/trial_envelope.h"

namespace smoe::trainer {
namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop.store(true); }

// `smoe-trainer run`: kind "sraven" here, "skillmix" through `skillmix`.
int RunTrialFile(const std::string& trial_path, const std::string& workdir,
                 const KindRunner& skillmix) {
  std::ifstream in(trial_path);
  if (!in) {
    std::fprintf(stderr, "smoe-trainer: cannot read %s\n", trial_path.c_str());
    return kExitUsage;
  }
  // Read with a bound: a trial spec is a few KiB; TRIAL.json pointing at
  // /dev/zero or a huge file ran out of memory (SIGABRT; issue 36).
  constexpr size_t kMaxTrialJson = size_t{16} << 20;
  std::string body;
  {
    char buf[65536];
    while (body.size() <= kMaxTrialJson && in) {
      in.read(buf, sizeof(buf));
      body.append(buf, static_cast<size_t>(in.gcount()));
    }
  }
  if (body.size() > kMaxTrialJson) {
    std::fprintf(stderr,
                 "smoe-trainer: bad trial spec %s: more than %zu bytes (a "
                 "trial spec is a few KiB)\n",
                 trial_path.c_str(), kMaxTrialJson);
    return kExitUsage;
  }
  std::stringstream text(std::move(body));
  InstallStopHandlers();

  absl::StatusOr<std::string> kind = TrialKind(text.str());
  if (kind.ok() && *kind == "skillmix") {
    return skillmix(trial_path, text.str(), workdir);
  }
  absl::StatusOr<TrialSpec> spec = ParseTrialJson(text.str());
  if (!spec.ok()) {
    // An invalid value is quoted, not echoed whole (a 100 MB string made a
    // 100 MB error line).
    std::string message(spec.status().message());
    if (message.size() > 2048) {
      const size_t total = message.size();
      size_t n = 2048;
      while (n > 0 && (static_cast<unsigned char>(message[n]) & 0xC0) == 0x80) {
        --n;
      }
      message.resize(n);
      absl::StrAppend(&message, "... (", total, " bytes)");
    }
    std::fprintf(stderr, "smoe-trainer: bad trial spec %s: %s\n",
                 trial_path.c_str(), message.c_str());
    return kExitUsage;
  }

  ConfigureTorchThreads();
  StdoutEventSink sink;
  RunOptions options;
  options.workdir = workdir;
  options.events = &sink;
  options.stop = &g_stop;
  SMOE_LOG(INFO) << "trial " << spec->trial_id << " attempt " << spec->attempt
                 << " starting in " << workdir;
  absl::StatusOr<TrainResult> result = RunTraining(spec->config, options);
  return ExitCodeFor(result.status());
}

int CpuInfo(const std::string& tuning) {
  const cpu::CpuEnvInputs in = cpu::CollectCpuEnvInputs();
  const cpu::SimdLevel best = cpu::BestSimdLevel(in.cpu);
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v != nullptr ? v : "(unset)");
  };
  const std::string self_test = cpu::RunBlasSelfTest();
  std::printf(
      "cpu: %s\nbest level: %s (OpenBLAS core for it: %s)\n"
      "openblas core: %s\nopenblas config: %s\n"
      "OPENBLAS_CORETYPE=%s\nOMP_WAIT_POLICY=%s\nOMP_NUM_THREADS=%s\n"
      "SMOE_CPU_TUNED=%s\ngemm self-test: %s\ntuning: %s\n",
      in.cpu.Summary().c_str(), std::string(cpu::SimdLevelName(best)).c_str(),
      cpu::OpenBlasCoreFor(best).c_str(),
      in.openblas_corename.empty() ? "(not OpenBLAS)"
                                   : in.openblas_corename.c_str(),
      in.openblas_config.c_str(), env("OPENBLAS_CORETYPE").c_str(),
      env("OMP_WAIT_POLICY").c_str(), env("OMP_NUM_THREADS").c_str(),
      env("SMOE_CPU_TUNED").c_str(),
      self_test.empty() ? "passed" : self_test.c_str(), tuning.c_str());
  return self_test.empty() ? kExitOk : kExitError;
}

}  // namespace

const std::vector<std::string>& FullOnlyCommands() {
  static const auto* const kCommands = new std::vector<std::string>{
      "make-random-model", "mixtral-logits", "doctor"};
  return *kCommands;
}

int ExitCodeFor(const absl::Status& status) {
  if (status.ok()) return kExitOk;
  if (absl::IsCancelled(status) || absl::IsAborted(status)) {
    SMOE_LOG(INFO) << status.message();
    return kExitInterrupted;
  }
  SMOE_LOG(ERROR) << status.ToString();
  if (absl::IsInvalidArgument(status)) return kExitUsage;
  if (absl::IsNotFound(status)) return kExitNoInput;
  return kExitError;
}

std::atomic<bool>* StopFlag() { return &g_stop; }

void InstallStopHandlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

Command AddRunCommand(CLI::App* app, KindRunner skillmix) {
  auto paths = std::make_shared<std::pair<std::string, std::string>>();
  CLI::App* cmd = app->add_subcommand(
      "run", "run one trial: JSON Lines events on stdout, logs on stderr");
  cmd->add_option("--trial", paths->first, "the trial spec (TRIAL.json)")
      ->required()
      ->check(NonEmpty("file name"));
  cmd->add_option("--workdir", paths->second,
                  "the attempt's directory (checkpoints, outputs)")
      ->required()
      ->check(NonEmpty("directory"));
  return {cmd, [paths, skillmix = std::move(skillmix)] {
            return RunTrialFile(paths->first, paths->second, skillmix);
          }};
}

Command AddCpuInfoCommand(CLI::App* app, const std::string* tuning) {
  CLI::App* cmd = app->add_subcommand(
      "cpu-info",
      "CPU features, the OpenBLAS kernels in use, the tuning decision, a "
      "GEMM self-test");
  return {cmd, [tuning] { return CpuInfo(*tuning); }};
}

std::string SiblingProgram(const std::string& name) {
  std::vector<char> buf(4096);
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return "";
  std::string self(buf.data(), static_cast<size_t>(n));
  const size_t slash = self.rfind('/');
  if (slash == std::string::npos) return "";
  return self.substr(0, slash + 1) + name;
}

int ExecFullTrainer(const std::vector<std::string>& args) {
  const std::string program = SiblingProgram(kFullTrainerName);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const std::string& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  if (!program.empty()) execv(program.c_str(), argv.data());
  const int err = program.empty() ? ENOENT : errno;
  const std::string shown = program.empty() ? kFullTrainerName : program;
  std::fprintf(stderr,
               "smoe-trainer: cannot run %s: %s (it runs kind \"skillmix\", "
               "make-random-model, mixtral-logits and doctor; build it with "
               "`scripts/build default %s` or `scripts/test`)\n",
               shown.c_str(), std::strerror(err), kFullTrainerName);
  return kExitError;
}

}  // namespace smoe::trainer
