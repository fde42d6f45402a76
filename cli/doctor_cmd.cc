// Copyright 2026 SMoE Lab authors.
#include "cli/doctor_cmd.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "cli/client.h"

namespace smoe::cli {
namespace {

constexpr char kHelp[] =
    "smoe doctor: self-check this machine before running trials on it\n"
    "\n"
    "usage: smoe doctor [--trainer PATH] [--quick] [--json] [--report FILE]\n"
    "                   [--only CHECK]... [--inject-fault CHECK]...\n"
    "\n"
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
    "Options:\n"
    "  --trainer PATH        trainer binary (default: smoe-trainer next to "
    "smoe)\n"
    "  --quick               shorter run: 16 training steps, smaller shapes,\n"
    "                        benchmarks on GPU 0 only\n"
    "  --json                print the JSON report on stdout (check lines go "
    "to stderr)\n"
    "  --report FILE         write the JSON report (checks, figures, "
    "versions,\n"
    "                        host) to FILE: attach it to a bug report "
    "(without\n"
    "                        --report or --json no report is made)\n"
    "  --only CHECK          run only CHECK (repeatable); the others SKIP\n"
    "  --inject-fault CHECK  perturb CHECK's results so it must FAIL (tests\n"
    "                        the doctor itself)\n"
    "  -h, --help            this text\n"
    "\n"
    "Exit status: 0 no check failed, 1 a check failed, 64 usage.\n"
    "Example: smoe doctor --report smoe-doctor-$(hostname).json\n";

}  // namespace

int RunDoctorCommand(const std::vector<std::string>& args, std::ostream& out,
                     std::ostream& err) {
  std::string trainer = SelfDir() + "/smoe-trainer";
  std::vector<std::string> forward;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const std::string name = a.substr(0, a.find('='));
    const bool inline_value = name.size() < a.size();
    if (a == "-h" || a == "--help") {
      out << kHelp;
      return kExitOk;
    }
    if (a == "--quick" || a == "--json") {
      forward.push_back(a);
    } else if (name == "--trainer" || name == "--report" || name == "--only" ||
               name == "--inject-fault") {
      std::string value;
      if (inline_value) {
        value = a.substr(name.size() + 1);
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        err << "smoe doctor: " << name << " needs a value\n"
            << "run 'smoe doctor --help' for the flags\n";
        return kExitUsage;
      }
      if (name == "--trainer") {
        trainer = value;
      } else {
        forward.push_back(name);
        forward.push_back(value);
      }
    } else {
      err << "smoe doctor: unknown argument '" << a << "'\n"
          << "run 'smoe doctor --help' for the flags\n";
      return kExitUsage;
    }
  }
  if (!std::filesystem::exists(trainer)) {
    err << "FAIL trainer: '" << trainer
        << "' not found: the checks run in smoe-trainer (build it: cmake "
           "--build build --target smoe-trainer; or pass --trainer PATH)\n";
    return kExitFailure;
  }
  std::vector<char*> argv;
  std::string sub = "doctor";
  argv.push_back(trainer.data());
  argv.push_back(sub.data());
  for (std::string& a : forward) argv.push_back(a.data());
  argv.push_back(nullptr);
  out.flush();
  err.flush();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execv(trainer.c_str(), argv.data());
    std::fprintf(stderr, "smoe doctor: exec %s: %s\n", trainer.c_str(),
                 std::strerror(errno));
    ::_exit(kExitFailure);
  }
  if (pid < 0) {
    err << "smoe doctor: fork: " << std::strerror(errno) << "\n";
    return kExitFailure;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  err << "smoe doctor: smoe-trainer killed by signal " << WTERMSIG(status)
      << "\n";
  return 128 + WTERMSIG(status);
}

}  // namespace smoe::cli
