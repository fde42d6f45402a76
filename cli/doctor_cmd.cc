// Copyright 2026 SMoE Lab authors.
#include "cli/doctor_cmd.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "cli/child_process.h"
#include "cli/client.h"

namespace smoe::cli {
namespace {

constexpr char kFooter[] =
    "Runs `smoe-trainer doctor` and prints one line per check:\n"
    "  PASS|FAIL|SKIP <check>: <figures, or why it failed / was skipped>\n"
    "Checks: versions (driver, CUDA runtime, cuBLAS, NCCL, LibTorch, build\n"
    "flags, CPU, OpenBLAS); kernel.router_topk, kernel.permute,\n"
    "kernel.grouped_gemm (each CUDA kernel vs its CPU reference on every "
    "GPU);\n"
    "ops.moe_cpu, ops.moe_cuda (the MoE autograd ops vs a plain torch\n"
    "formulation / vs the CPU); comm.local, comm.nccl (verified all-to-all-v\n"
    "and all-reduce: threads, then NCCL over every visible GPU);\n"
    "train.cpu_fp32 (a short SRAVEN training, rerun bitwise equal),\n"
    "train.gpu_fp32 (same losses on the GPU within 1e-3 relative per step),\n"
    "train.bf16 (bf16 autocast within 5e-2 of fp32); bench.device (copy\n"
    "bandwidth, bf16 GEMM rate, grouped GEMM and permute fractions of them).\n"
    "Without a GPU the GPU checks SKIP and the CPU ones still run.\n"
    "\n"
    "Exit status: 0 no check failed, 1 a check failed, 64 usage.\n"
    "Example: smoe doctor --report smoe-doctor-$(hostname).json\n";

}  // namespace

CLI::App* AddDoctorCommand(CLI::App* app, DoctorOptions* o) {
  CLI::App* cmd = app->add_subcommand(
      "doctor",
      "Self-check this machine before running trials on it: versions, "
      "kernels, NCCL, a short training");
  cmd->footer(kFooter);
  cmd->add_option("--trainer", o->trainer,
                  "Trainer binary (default: smoe-trainer next to smoe)")
      ->type_name("PATH");
  cmd->add_flag("--quick", o->quick,
                "Shorter run: 16 training steps, smaller shapes, benchmarks "
                "on GPU 0 only");
  cmd->add_flag("--json", o->json,
                "Print the JSON report on stdout (check lines go to stderr)");
  cmd->add_option("--report", o->report,
                  "Write the JSON report (checks, figures, versions, host) to "
                  "FILE: attach it to a bug report (without --report or "
                  "--json no report is made)")
      ->type_name("FILE");
  cmd->add_option("--only", o->only,
                  "Run only CHECK (repeatable); the others SKIP")
      ->type_name("CHECK");
  cmd->add_option("--inject-fault", o->inject_fault,
                  "Perturb CHECK's results so it must FAIL (tests the doctor "
                  "itself)")
      ->type_name("CHECK");
  return cmd;
}

int RunDoctor(const DoctorOptions& o, std::ostream& out, std::ostream& err) {
  std::string trainer =
      o.trainer.empty() ? SelfDir() + "/smoe-trainer" : o.trainer;
  std::vector<std::string> forward;
  if (o.quick) forward.push_back("--quick");
  if (o.json) forward.push_back("--json");
  if (!o.report.empty()) {
    forward.push_back("--report");
    forward.push_back(o.report);
  }
  for (const std::string& c : o.only) {
    forward.push_back("--only");
    forward.push_back(c);
  }
  for (const std::string& c : o.inject_fault) {
    forward.push_back("--inject-fault");
    forward.push_back(c);
  }
  if (!std::filesystem::exists(trainer)) {
    err << "FAIL trainer: '" << trainer
        << "' not found: the checks run in smoe-trainer (build it: cmake "
           "--build build --target smoe-trainer; or pass --trainer PATH)\n";
    return kExitFailure;
  }
  ChildSpec spec;
  spec.argv = {trainer, "doctor"};
  spec.argv.insert(spec.argv.end(), forward.begin(), forward.end());
  spec.exec_error_before = "smoe doctor: exec ";
  spec.exec_failure_code = kExitFailure;
  out.flush();
  err.flush();
  const pid_t pid = StartChild(spec);
  if (pid < 0) {
    err << "smoe doctor: fork: " << std::strerror(errno) << "\n";
    return kExitFailure;
  }
  const int status = WaitChild(pid);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  err << "smoe doctor: smoe-trainer killed by signal " << WTERMSIG(status)
      << "\n";
  return 128 + WTERMSIG(status);
}

}  // namespace smoe::cli
