// Copyright 2026 SMoE Lab authors.
//
// File: worker/trainer/doctor.h
//
// `smoe-trainer doctor` (run by `smoe doctor`, cli/doctor_cmd.h): the
// first-contact self-check of a machine, in the spirit of nccl-tests and
// torch.utils.collect_env. Each check ends PASS, FAIL or SKIP (with a reason)
// and prints one line `VERDICT name: figures / reason`:
//
//   versions            driver, CUDA runtime, cuBLAS, NCCL, LibTorch, build
//                       flags, CPU, OpenBLAS core, devices. FAIL when a driver
//                       is installed but no device is usable, or when the
//                       kernels see GPUs and LibTorch does not.
//   kernel.router_topk  each dispatch kernel on fresh random inputs vs its CPU
//   kernel.permute      reference, with its GPU test's tolerances, on every
//   kernel.grouped_gemm visible GPU (kernels/selfcheck/selfcheck.h). SKIP
//                       without a device.
//   ops.moe_cpu         worker/model/ops' MoE forward/backward in float32 on
//                       the CPU (the kernels' CPU references) vs a plain dense
//                       float64 torch formulation: outputs 2e-5 + 1e-4 |ref|,
//                       gradients 1e-4 + 1e-4 |ref|, routing exact.
//   ops.moe_cuda        the same ops on CUDA tensors vs the CPU: 1e-4 absolute
//                       (worker/model/ops/ops_gpu_test.cc). SKIP without
//                       CUDA LibTorch and a device.
//   comm.local          all-to-all-v payloads and all-reduce, LocalCommunicator
//                       world 2 (threads).
//   comm.nccl           the same over NCCL, one thread per visible GPU. SKIP
//                       without NCCL or a device.
//   train.cpu_fp32      a tiny SRAVEN training (kTrainSteps steps; quick:
//                       kQuickTrainSteps) on the CPU, run twice: the per-step
//                       losses must be finite and bitwise equal.
//   train.gpu_fp32      the same run on GPU 0: per-step loss within 1e-3
//                       relative of the CPU run (on the CPU, two summation
//                       orders of this run agree to 2e-7 at every step; see
//                       DoctorTrainConfig in doctor.cc). SKIP without CUDA
//                       LibTorch.
//   train.bf16          the run with bf16 autocast on the GPU (else on the
//                       CPU, once the trainer accepts bf16 there): per-step
//                       loss within 5e-2 relative of the fp32 run on the same
//                       device. SKIP while ValidateTrainConfig refuses it.
//   bench.device        D2D copy bandwidth, dense bf16 GEMM rate, and the
//                       grouped GEMM / permute / combine rates as fractions of
//                       them (kernels/README.md targets: 60 %, 80 %), on GPU 0
//                       (every GPU without --quick). Figures only: FAIL only
//                       on a CUDA error. SKIP without a device.
//
// A check that throws (LibTorch's c10::Error) or returns an error status
// FAILs with the message. The report (DoctorReportJson) has every check with
// its figures, the versions and the host: the file to attach to a bug report.
//
// Thread-safety: RunDoctor uses the process's torch RNG and GPUs; one at a
// time.
#ifndef SMOE_WORKER_TRAINER_DOCTOR_H_
#define SMOE_WORKER_TRAINER_DOCTOR_H_

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/flags.h"
#include "kernels/selfcheck/selfcheck.h"
#include "nlohmann/json.hpp"

namespace smoe::trainer {

enum class Verdict { kPass, kFail, kSkip };

// "PASS", "FAIL", "SKIP".
const char* VerdictName(Verdict verdict);

inline constexpr int kTrainSteps = 40;
inline constexpr int kQuickTrainSteps = 16;

struct DoctorCheck {
  std::string name;
  Verdict verdict = Verdict::kSkip;
  std::string summary;  // one line: figures (PASS), what failed, or why skipped
  nlohmann::json figures = nlohmann::json::object();
  double seconds = 0;
};

// Where RunDoctor's machine probe and device checks come from:
// RealDoctorDevices() (kernels/selfcheck and LibTorch's CUDA queries) unless
// a test substitutes made-up devices (counts, results, errors), so the
// per-device loops, verdicts and report figures run without a GPU
// (doctor_test). What needs CUDA tensors (train.gpu_fp32, train.bf16 on
// cuda) does not go through here; ops.moe_cuda takes its device from here.
struct DoctorDevices {
  using KernelCheck = std::function<absl::StatusOr<kernels::KernelCheckResult>(
      const kernels::KernelCheckOptions&)>;
  std::function<kernels::CudaStackInfo()> stack_info;
  std::function<bool()> torch_cuda_available;  // may throw (c10::Error)
  std::function<int()> torch_device_count;     // may throw
  KernelCheck router_topk;                     // kernel.router_topk
  KernelCheck permute;                         // kernel.permute
  KernelCheck grouped_gemm;                    // kernel.grouped_gemm
  // comm.nccl (comm.local calls kernels::CheckCommunicators itself).
  std::function<absl::StatusOr<kernels::CommCheckResult>(
      const kernels::CommCheckOptions&)>
      communicators;
  std::function<absl::StatusOr<kernels::DeviceRates>(int device, bool quick)>
      device_rates;  // bench.device
  // Where ops.moe_cuda runs the candidate (LibTorch device string; tests use
  // "cpu" so the comparison runs without a GPU).
  std::string ops_device = "cuda:0";
};

// kernels::GetCudaStackInfo, torch::cuda::is_available / device_count,
// kernels::Check*Kernels, kernels::CheckCommunicators,
// kernels::MeasureDeviceRates.
DoctorDevices RealDoctorDevices();

struct DoctorOptions {
  bool quick = false;
  // SRAVEN steps per training run; 0: kTrainSteps (quick: kQuickTrainSteps).
  int train_steps = 0;
  // Checks to run; empty: all. The others are reported as SKIP.
  std::set<std::string> only;
  // Checks whose candidate results are perturbed before the comparison, so
  // they must FAIL (tests the checker). Names from DoctorFaultableChecks().
  std::set<std::string> inject_fault;
  // Called after each check (progress output).
  std::function<void(const DoctorCheck&)> on_check;
  // The probe and device checks (tests replace members).
  DoctorDevices devices = RealDoctorDevices();
};

struct DoctorReport {
  nlohmann::json host;      // hostname, OS, CPU, memory, time, environment
  nlohmann::json versions;  // the `versions` check's figures
  std::vector<DoctorCheck> checks;
  double seconds = 0;
  // True when no check FAILed.
  bool ok() const;
};

// Every check, in run order.
const std::vector<std::string>& DoctorCheckNames();
// The checks that compare results (valid --inject-fault names).
const std::vector<std::string>& DoctorFaultableChecks();

// Runs the checks. Never throws.
DoctorReport RunDoctor(const DoctorOptions& options);

// "PASS name: summary (1.2 s)".
std::string FormatCheckLine(const DoctorCheck& check);
// Every line and a summary line.
std::string FormatDoctorTable(const DoctorReport& report);

// The JSON report: schema "smoe-doctor/1", tool, created, options, verdict,
// counts, host, versions, checks [{name, verdict, summary, seconds,
// figures}].
nlohmann::json DoctorReportJson(const DoctorReport& report,
                                const DoctorOptions& options);

// `smoe-trainer doctor [--quick] [--json] [--report FILE] [--only CHECK]...
// [--inject-fault CHECK]...`, a CLI11 subcommand (common/flags.h). Human
// lines go to stdout as the checks finish (to stderr with --json, which
// prints the report on stdout). Exit code 0 when no check FAILed, 1
// otherwise (or when the report cannot be written), 64 on a usage error.
Command AddDoctorCommand(CLI::App* app);

// Parses and runs the doctor subcommand; argv[0] is "doctor".
int RunDoctorCommand(int argc, char** argv);

}  // namespace smoe::trainer

#endif  // SMOE_WORKER_TRAINER_DOCTOR_H_
