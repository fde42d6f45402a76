// Copyright 2026 SMoE Lab authors.
//
// `smoe-trainer doctor` on the CPU (label unit): every check PASSes or SKIPs
// with a reason, the JSON report parses and names every check, injected
// faults make the comparing checks FAIL, and the command line's exit codes.
#include "worker/trainer/doctor.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kernels/all_to_all/nccl_communicator.h"
#include "kernels/common/device.h"
#include "nlohmann/json.hpp"
#include "worker/trainer/trainer.h"

namespace smoe::trainer {
namespace {

using json = nlohmann::json;

DoctorOptions Fast() {
  DoctorOptions o;
  o.quick = true;
  o.train_steps = 6;
  return o;
}

int Command(std::vector<std::string> args) {
  args.insert(args.begin(), "doctor");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return RunDoctorCommand(static_cast<int>(argv.size()), argv.data());
}

class DoctorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ConfigureTorchThreads(); }
};

TEST_F(DoctorTest, EveryCheckPassesOrSkipsWithAReasonAndTheReportHasThemAll) {
  DoctorOptions o = Fast();
  std::vector<std::string> progress;
  o.on_check = [&](const DoctorCheck& c) { progress.push_back(c.name); };
  const DoctorReport r = RunDoctor(o);
  EXPECT_EQ(progress, DoctorCheckNames());
  ASSERT_EQ(r.checks.size(), DoctorCheckNames().size());
  for (const DoctorCheck& c : r.checks) {
    EXPECT_NE(c.verdict, Verdict::kFail) << FormatCheckLine(c);
    EXPECT_FALSE(c.summary.empty()) << c.name;
  }
  EXPECT_TRUE(r.ok());
  // The checks with CPU content run on every machine.
  for (const DoctorCheck& c : r.checks) {
    if (c.name == "versions" || c.name == "ops.moe_cpu" ||
        c.name == "comm.local" || c.name == "train.cpu_fp32") {
      EXPECT_EQ(c.verdict, Verdict::kPass) << FormatCheckLine(c);
    }
    if (kernels::CudaDeviceCount() == 0 &&
        (absl::StartsWith(c.name, "kernel.") || c.name == "bench.device" ||
         c.name == "ops.moe_cuda" || c.name == "train.gpu_fp32")) {
      EXPECT_EQ(c.verdict, Verdict::kSkip) << c.name;
      EXPECT_TRUE(absl::StrContains(c.summary, "no CUDA device")) << c.summary;
    }
    if (kernels::CudaDeviceCount() == 0 && c.name == "comm.nccl") {
      EXPECT_EQ(c.verdict, Verdict::kSkip);
      EXPECT_TRUE(absl::StrContains(c.summary, kernels::BuiltWithNccl()
                                                   ? "NCCL skipped"
                                                   : "without NCCL"))
          << c.summary;
    }
  }

  const json j = json::parse(DoctorReportJson(r, o).dump());
  EXPECT_EQ(j["schema"], "smoe-doctor/1");
  EXPECT_EQ(j["verdict"], "PASS");
  EXPECT_FALSE(j["host"]["hostname"].get<std::string>().empty());
  EXPECT_FALSE(j["versions"]["torch"]["version"].get<std::string>().empty());
  EXPECT_EQ(j["versions"]["build"]["SMOE_WITH_CUDA"], kernels::BuiltWithCuda());
  ASSERT_TRUE(j["checks"].is_array());
  std::vector<std::string> names;
  int counted = 0;
  for (const json& c : j["checks"]) {
    names.push_back(c["name"]);
    EXPECT_TRUE(c["verdict"] == "PASS" || c["verdict"] == "SKIP") << c;
    EXPECT_TRUE(c["summary"].is_string());
    EXPECT_TRUE(c["figures"].is_object());
    EXPECT_TRUE(c["seconds"].is_number());
  }
  for (const char* v : {"PASS", "FAIL", "SKIP"}) {
    counted += j["counts"][v].get<int>();
  }
  EXPECT_EQ(names, DoctorCheckNames());
  EXPECT_EQ(counted, static_cast<int>(names.size()));
  // The CPU training curve is in the report (6 steps, finite).
  for (const json& c : j["checks"]) {
    if (c["name"] == "train.cpu_fp32") {
      EXPECT_EQ(c["figures"]["loss"].size(), 6u);
    }
  }

  const std::string table = FormatDoctorTable(r);
  std::vector<std::string> lines =
      absl::StrSplit(table, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), DoctorCheckNames().size() + 1);
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    EXPECT_TRUE(absl::StartsWith(lines[i], "PASS " + names[i] + ": ") ||
                absl::StartsWith(lines[i], "SKIP " + names[i] + ": "))
        << lines[i];
  }
  EXPECT_TRUE(absl::StartsWith(lines.back(), "summary: ")) << lines.back();
}

TEST_F(DoctorTest, InjectedFaultsMakeTheComparisonsFail) {
  DoctorOptions o = Fast();
  o.only = {"ops.moe_cpu", "comm.local", "train.cpu_fp32"};
  o.inject_fault = o.only;
  const DoctorReport r = RunDoctor(o);
  EXPECT_FALSE(r.ok());
  for (const DoctorCheck& c : r.checks) {
    if (o.only.count(c.name) != 0) {
      EXPECT_EQ(c.verdict, Verdict::kFail) << FormatCheckLine(c);
    } else {
      EXPECT_EQ(c.verdict, Verdict::kSkip) << c.name;
      EXPECT_EQ(c.summary, "not selected (--only)");
    }
  }
  EXPECT_EQ(DoctorReportJson(r, o)["verdict"], "FAIL");
  // Every comparing check names its fault-injection target.
  for (const std::string& name : DoctorFaultableChecks()) {
    EXPECT_NE(
        std::find(DoctorCheckNames().begin(), DoctorCheckNames().end(), name),
        DoctorCheckNames().end());
  }
}

TEST_F(DoctorTest, CommandLineExitCodesAndReportFile) {
  EXPECT_EQ(Command({"--bogus"}), 64);
  EXPECT_EQ(Command({"--report"}), 64);
  EXPECT_EQ(Command({"--only", "nosuch"}), 64);
  EXPECT_EQ(Command({"--inject-fault", "versions"}), 64);
  EXPECT_EQ(Command({"--help"}), 0);

  const std::string path =
      absl::StrCat(::testing::TempDir(), "doctor-", ::getpid(), ".json");
  EXPECT_EQ(Command({"--quick", "--only", "comm.local", "--report", path}), 0);
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  const json j = json::parse(text.str());
  EXPECT_EQ(j["verdict"], "PASS");
  EXPECT_EQ(j["checks"].size(), DoctorCheckNames().size());
  EXPECT_EQ(j["options"]["only"], json::array({"comm.local"}));

  EXPECT_EQ(Command({"--only=comm.local", "--inject-fault=comm.local",
                     "--report=" + path}),
            1);
  std::ifstream in2(path);
  std::stringstream text2;
  text2 << in2.rdbuf();
  EXPECT_EQ(json::parse(text2.str())["verdict"], "FAIL");
  std::remove(path.c_str());
  // An unwritable report is an error, not a silent success.
  EXPECT_EQ(Command({"--only", "comm.local", "--report",
                     "/nonexistent-dir/doctor.json"}),
            1);
}

// ---- Made-up devices (DoctorDevices): the per-device loops, verdicts and
// figures of the GPU checks, without a GPU. ----------------------------------

kernels::CudaStackInfo MadeUpStack(int devices) {
  kernels::CudaStackInfo s;
  s.built_with_cuda = true;
  s.built_with_nccl = true;
  s.compiled_cuda_version = 12040;
  s.driver_version = 12040;
  s.runtime_version = 12040;
  s.device_count = devices;
  for (int i = 0; i < devices; ++i) {
    s.devices.push_back(absl::StrCat("0: Made-up GPU ", i));
  }
  if (devices == 0) s.device_error = "cudaErrorNoDevice: no device";
  return s;
}

kernels::KernelCheckResult MadeUpKernelResult(int device, bool ok) {
  kernels::KernelCheckResult r;
  r.seed = 7 + device;
  kernels::KernelComparison a;
  a.what = absl::StrCat("made-up gpu", device, ": exact");
  a.exact = true;
  a.elements = 10;
  kernels::KernelComparison b;
  b.what = absl::StrCat("made-up gpu", device, ": close");
  b.atol = 1e-5;
  b.eps = 1e-4;
  b.elements = 20;
  b.max_abs_err = 1e-6 * (device + 1);
  if (!ok) {
    b.num_bad = 3;
    b.message = "3 of 20 elements outside";
  }
  r.comparisons = {a, b};
  r.notes = {"a note"};
  return r;
}

// Devices 0..n-1, all passing unless `bad_device` (a failing comparison) or
// `error_device` (an error status).
DoctorOptions MadeUpGpus(int n, int bad_device = -1, int error_device = -1,
                         std::vector<int>* kernel_devices = nullptr) {
  DoctorOptions o = Fast();
  o.only = {"versions",       "kernel.router_topk",
            "kernel.permute", "kernel.grouped_gemm",
            "comm.nccl",      "bench.device"};
  o.devices.stack_info = [n] { return MadeUpStack(n); };
  o.devices.torch_cuda_available = [] { return false; };
  o.devices.torch_device_count = [] { return 0; };
  DoctorDevices::KernelCheck k = [=](const kernels::KernelCheckOptions& ko)
      -> absl::StatusOr<kernels::KernelCheckResult> {
    if (kernel_devices != nullptr) kernel_devices->push_back(ko.device);
    EXPECT_TRUE(ko.quick);
    if (ko.device == error_device) {
      return absl::InternalError("cudaMalloc: cudaErrorMemoryAllocation");
    }
    kernels::KernelCheckResult r =
        MadeUpKernelResult(ko.device, ko.device != bad_device);
    if (ko.inject_fault) r.comparisons[0].num_bad = 1;
    return r;
  };
  o.devices.router_topk = k;
  o.devices.permute = k;
  o.devices.grouped_gemm = k;
  o.devices.communicators = [](const kernels::CommCheckOptions& co)
      -> absl::StatusOr<kernels::CommCheckResult> {
    EXPECT_EQ(co.backend, kernels::CommBackend::kNccl);
    kernels::CommCheckResult r;
    r.backend = "nccl";
    r.world_size = co.world_size;
    r.alltoall_elements = 100 * co.world_size;
    r.allreduce_elements = 8198 * co.world_size;
    r.alltoall_wrong = co.inject_fault ? 3 : 0;
    r.seconds = 0.002;
    return r;
  };
  o.devices.device_rates =
      [=](int device, bool quick) -> absl::StatusOr<kernels::DeviceRates> {
    (void)quick;
    if (device == error_device) {
      return absl::InternalError("cudaEventRecord: cudaErrorLaunchFailure");
    }
    kernels::DeviceRates r;
    r.device = device;
    r.copy_gbps = 3000;
    r.dense_bf16_tflops = 700;
    r.grouped_gemm_tflops = 420;
    r.grouped_gemm_fraction = 0.6;
    r.grouped_gemm_shape = "made-up";
    r.permute_gbps = 2400;
    r.permute_fraction = 0.8;
    r.combine_gbps = 1500;
    r.combine_fraction = 0.5;
    r.permute_shape = "made-up";
    return r;
  };
  return o;
}

// name as const char*: GCC 13 -Wdangling-reference warns for a reference
// returned from a call taking a temporary std::string.
const DoctorCheck& Find(const DoctorReport& r, const char* name) {
  for (const DoctorCheck& c : r.checks) {
    if (c.name == name) return c;
  }
  static const DoctorCheck* none = new DoctorCheck;
  ADD_FAILURE() << "no check " << name;
  return *none;
}

TEST_F(DoctorTest, MadeUpGpusAreEachCheckedAndReported) {
  std::vector<int> kernel_devices;
  DoctorOptions o = MadeUpGpus(2, -1, -1, &kernel_devices);
  const DoctorReport r = RunDoctor(o);
  // Three kernel checks x two devices, in order.
  EXPECT_EQ(kernel_devices, (std::vector<int>{0, 1, 0, 1, 0, 1}));
  for (const char* name :
       {"kernel.router_topk", "kernel.permute", "kernel.grouped_gemm"}) {
    const DoctorCheck& c = Find(r, name);
    EXPECT_EQ(c.verdict, Verdict::kPass) << FormatCheckLine(c);
    EXPECT_TRUE(absl::StartsWith(
        c.summary,
        "2 GPU(s) x 2 comparisons vs the CPU reference, max |err| "
        "2e-06"))
        << c.summary;
    const json& per = c.figures["devices"];
    ASSERT_EQ(per.size(), 2u) << per;
    EXPECT_EQ(per[1]["device"], 1);
    EXPECT_EQ(per[1]["seed"], 8);
    EXPECT_EQ(per[1]["ok"], true);
    EXPECT_DOUBLE_EQ(per[1]["max_abs_err"].get<double>(), 2e-6);
    EXPECT_EQ(per[1]["notes"], json::array({"a note"}));
    ASSERT_EQ(per[1]["comparisons"].size(), 2u);
    EXPECT_EQ(per[1]["comparisons"][1]["what"], "made-up gpu1: close");
    EXPECT_EQ(per[1]["comparisons"][1]["elements"], 20);
    EXPECT_EQ(per[1]["comparisons"][0]["exact"], true);
  }
  const DoctorCheck& nccl = Find(r, "comm.nccl");
  EXPECT_EQ(nccl.verdict, Verdict::kPass) << FormatCheckLine(nccl);
  EXPECT_TRUE(absl::StartsWith(nccl.summary,
                               "NCCL over 2 GPU(s), one thread each: "
                               "all-to-all-v payloads 200 elements"))
      << nccl.summary;
  EXPECT_EQ(nccl.figures["world_size"], 2);
  const DoctorCheck& bench = Find(r, "bench.device");
  EXPECT_EQ(bench.verdict, Verdict::kPass) << FormatCheckLine(bench);
  EXPECT_EQ(bench.summary,
            "gpu0: copy 3000 GB/s, dense bf16 700 TFLOP/s; grouped GEMM 420 "
            "TFLOP/s = 60% of dense (target 60%); permute 80%, combine 50% of "
            "copy (target 80%) (--quick: gpu0 only)");
  EXPECT_EQ(bench.figures["devices"].size(), 1u);
  // LibTorch without CUDA beside GPUs the kernels see: versions FAILs.
  const DoctorCheck& versions = Find(r, "versions");
  EXPECT_EQ(versions.verdict, Verdict::kFail);
  EXPECT_TRUE(absl::StartsWith(versions.summary, "the kernels see 2 GPU(s)"))
      << versions.summary;
  EXPECT_EQ(r.versions["cuda"]["driver"], "12.4");
  EXPECT_EQ(r.versions["cuda"]["devices"].size(), 2u);

  // Without --quick every device is measured.
  o.quick = false;
  o.only = {"bench.device"};
  const DoctorReport full = RunDoctor(o);
  const DoctorCheck& b2 = Find(full, "bench.device");
  EXPECT_EQ(b2.verdict, Verdict::kPass) << FormatCheckLine(b2);
  ASSERT_EQ(b2.figures["devices"].size(), 2u);
  EXPECT_EQ(b2.figures["devices"][1]["device"], 1);
  EXPECT_EQ(b2.figures["devices"][1]["permute_fraction_of_copy"], 0.8);
  EXPECT_EQ(b2.figures["targets"]["grouped_gemm_fraction_of_dense"], 0.6);
  EXPECT_FALSE(absl::StrContains(b2.summary, "--quick"));
}

TEST_F(DoctorTest, AFailingMadeUpGpuFailsItsCheckAndIsNamed) {
  // gpu1's comparison fails: FAIL naming gpu1, its seed and the comparison;
  // both devices' figures are in the report.
  DoctorOptions o = MadeUpGpus(2, /*bad_device=*/1);
  o.only = {"kernel.permute"};
  DoctorReport r = RunDoctor(o);
  const DoctorCheck& k = Find(r, "kernel.permute");
  EXPECT_EQ(k.verdict, Verdict::kFail);
  EXPECT_EQ(k.summary,
            "gpu1 (seed 8): made-up gpu1: close: 3 of 20 elements "
            "outside");
  ASSERT_EQ(k.figures["devices"].size(), 2u);
  EXPECT_EQ(k.figures["devices"][1]["ok"], false);
  EXPECT_FALSE(r.ok());

  // An error on gpu0: FAIL with the status, no device figures.
  o = MadeUpGpus(2, -1, /*error_device=*/0);
  o.only = {"kernel.router_topk", "bench.device"};
  r = RunDoctor(o);
  const DoctorCheck& e = Find(r, "kernel.router_topk");
  EXPECT_EQ(e.verdict, Verdict::kFail);
  EXPECT_EQ(e.summary, "gpu0: INTERNAL: cudaMalloc: cudaErrorMemoryAllocation");
  EXPECT_EQ(e.figures["devices"], json::array());
  const DoctorCheck& b = Find(r, "bench.device");
  EXPECT_EQ(b.verdict, Verdict::kFail);
  EXPECT_EQ(b.summary,
            "gpu0: INTERNAL: cudaEventRecord: cudaErrorLaunchFailure");

  // --inject-fault reaches the device checks (the made-up kernel honours it).
  o = MadeUpGpus(2);
  o.only = {"kernel.grouped_gemm", "comm.nccl"};
  o.inject_fault = o.only;
  r = RunDoctor(o);
  EXPECT_EQ(Find(r, "kernel.grouped_gemm").verdict, Verdict::kFail);
  const DoctorCheck& n = Find(r, "comm.nccl");
  EXPECT_EQ(n.verdict, Verdict::kFail);
  EXPECT_TRUE(absl::StrContains(n.summary, "3 of 200 all-to-all-v elements"))
      << n.summary;
}

TEST_F(DoctorTest, NoMadeUpGpuSkipsWithTheReason) {
  // A driver, no device: the device checks SKIP naming the CUDA error, and
  // versions FAILs (a driver is installed but no GPU is usable).
  DoctorOptions o = MadeUpGpus(0);
  DoctorReport r = RunDoctor(o);
  for (const char* name : {"kernel.router_topk", "bench.device"}) {
    const DoctorCheck& c = Find(r, name);
    EXPECT_EQ(c.verdict, Verdict::kSkip);
    EXPECT_EQ(c.summary, "no CUDA device (cudaErrorNoDevice: no device)");
  }
  EXPECT_EQ(Find(r, "comm.nccl").summary,
            "no CUDA device (cudaErrorNoDevice: no device); NCCL skipped, "
            "comm.local ran the same checks over LocalCommunicator");
  EXPECT_TRUE(absl::StartsWith(Find(r, "versions").summary,
                               "an NVIDIA driver (CUDA 12.4) is installed but "
                               "no GPU is usable: cudaErrorNoDevice"))
      << Find(r, "versions").summary;

  // No driver; and a build without NCCL.
  o.devices.stack_info = [] {
    kernels::CudaStackInfo s = MadeUpStack(0);
    s.driver_version = 0;
    s.built_with_nccl = false;
    return s;
  };
  r = RunDoctor(o);
  EXPECT_EQ(Find(r, "kernel.permute").summary,
            "no CUDA device (no NVIDIA driver)");
  EXPECT_EQ(Find(r, "comm.nccl").summary,
            "built without NCCL (comm.local ran the same checks)");
}

// LibTorch claims CUDA but cannot use it (here: a CPU-only LibTorch told
// otherwise): ops.moe_cuda FAILs with LibTorch's message instead of crashing.
TEST_F(DoctorTest, AnUnusableTorchCudaDeviceFailsTheOpsCheck) {
  DoctorOptions o = MadeUpGpus(1);
  o.only = {"ops.moe_cuda"};
  o.devices.torch_cuda_available = [] { return true; };
  o.devices.torch_device_count = [] { return 1; };
  const DoctorReport r = RunDoctor(o);
  const DoctorCheck& c = Find(r, "ops.moe_cuda");
  if (torch::cuda::is_available()) GTEST_SKIP() << "a CUDA LibTorch";
  EXPECT_EQ(c.verdict, Verdict::kFail) << FormatCheckLine(c);
  // LibTorch's exception comes back as a status naming the device.
  EXPECT_TRUE(absl::StrContains(c.summary, "on cuda:0: "))
      << FormatCheckLine(c);
  EXPECT_TRUE(c.figures.contains("seed")) << c.figures;
}

// ops.moe_cuda's comparison (candidate against the CPU run, case by case,
// the fault injection) runs here with the candidate on the CPU.
TEST_F(DoctorTest, TheOpsComparisonRunsOnAnInjectedDevice) {
  DoctorOptions o = MadeUpGpus(1);
  o.quick = true;
  o.only = {"ops.moe_cuda"};
  o.devices.torch_cuda_available = [] { return true; };
  o.devices.torch_device_count = [] { return 1; };
  o.devices.ops_device = "cpu";
  DoctorReport r = RunDoctor(o);
  const DoctorCheck& pass = Find(r, "ops.moe_cuda");
  EXPECT_EQ(pass.verdict, Verdict::kPass) << FormatCheckLine(pass);
  EXPECT_TRUE(pass.figures.contains("seed")) << pass.figures;
  o.inject_fault = {"ops.moe_cuda"};
  r = RunDoctor(o);
  const DoctorCheck& fail = Find(r, "ops.moe_cuda");
  EXPECT_EQ(fail.verdict, Verdict::kFail) << FormatCheckLine(fail);
  EXPECT_TRUE(absl::StrContains(fail.summary, "seed")) << FormatCheckLine(fail);
}

TEST_F(DoctorTest, AThrowingTorchCudaProbeStillReports) {
  DoctorOptions o = MadeUpGpus(1);
  o.only = {"kernel.router_topk"};
  o.devices.torch_cuda_available = []() -> bool {
    throw std::runtime_error("CUDA driver initialization failed\nmore");
  };
  const DoctorReport r = RunDoctor(o);
  // The kernels' own probe is kept: the device is still checked.
  EXPECT_EQ(Find(r, "kernel.router_topk").verdict, Verdict::kPass);
  EXPECT_EQ(r.versions["cuda"]["device_count"], 1);
  EXPECT_EQ(r.versions["torch"]["cuda_available"], false);
}

}  // namespace
}  // namespace smoe::trainer
