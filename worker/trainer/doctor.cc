// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/doctor.h"

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <dlfcn.h>
#include <sched.h>
#include <sys/utsname.h>
#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "kernels/all_to_all/nccl_communicator.h"
#include "kernels/common/compare.h"
#include "kernels/common/device.h"
#include "kernels/router_topk/router_topk.h"
#include "kernels/selfcheck/selfcheck.h"
#include "worker/model/model_config.h"
#include "worker/model/ops/moe_ops.h"
#include "worker/trainer/train_config.h"
#include "worker/trainer/trainer.h"

extern char** environ;

#ifndef SMOE_VERSION
#define SMOE_VERSION "unknown"
#endif

namespace smoe::trainer {
namespace {

using json = nlohmann::json;
using kernels::RouterGating;

constexpr int kExitOk = 0;
constexpr int kExitFail = 1;

// Tolerances (doctor.h states why each is what it is).
constexpr double kGpuFp32LossRel = 1e-3;
constexpr double kBf16LossRel = 5e-2;

// ---- Small helpers ----------------------------------------------------------

std::string Num(double v, int digits = 4) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*g", digits, v);
  return buf;
}

std::string Pct(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f%%", 100 * fraction);
  return buf;
}

// "2.21.5" for NCCL 22105 and cuBLAS 120405-style codes (major*10000 +
// minor*100 + patch); "" for 0.
std::string TripleVersion(int v) {
  if (v <= 0) return "";
  return absl::StrCat(v / 10000, ".", (v % 10000) / 100, ".", v % 100);
}

std::string FirstLine(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

std::string ReadFileOr(const std::string& path, const std::string& fallback) {
  std::ifstream in(path);
  if (!in) return fallback;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The value of the first "key<sep>value" line of a /proc- or os-release-style
// file, trimmed of spaces, tabs and quotes.
std::string KeyValue(const std::string& text, const std::string& key,
                     char sep) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!absl::StartsWith(line, key)) continue;
    const size_t p = line.find(sep);
    if (p == std::string::npos) continue;
    std::string k = line.substr(0, p);
    while (!k.empty() && (k.back() == ' ' || k.back() == '\t')) k.pop_back();
    if (k != key) continue;
    std::string v = line.substr(p + 1);
    const size_t b = v.find_first_not_of(" \t\"");
    const size_t e = v.find_last_not_of(" \t\"");
    return b == std::string::npos ? "" : v.substr(b, e - b + 1);
  }
  return "";
}

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

// OpenBLAS's core type and build config when the process loaded OpenBLAS
// (Debian's LibTorch uses the system BLAS); "" otherwise.
std::string OpenBlasString(const char* symbol) {
  using Fn = char* (*)();
  void* p = ::dlsym(RTLD_DEFAULT, symbol);
  if (p == nullptr) return "";
  const char* s = reinterpret_cast<Fn>(p)();
  return s == nullptr ? "" : s;
}

json HostInfo() {
  json h;
  h["hostname"] = Hostname();
  struct utsname u;
  if (::uname(&u) == 0) {
    h["kernel"] = absl::StrCat(u.sysname, " ", u.release, " ", u.machine);
  }
  h["os"] = KeyValue(ReadFileOr("/etc/os-release", ""), "PRETTY_NAME", '=');
  const std::string cpuinfo = ReadFileOr("/proc/cpuinfo", "");
  h["cpu_model"] = KeyValue(cpuinfo, "model name", ':');
  h["logical_cpus"] = std::thread::hardware_concurrency();
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
    h["usable_cpus"] = CPU_COUNT(&set);
  }
  const std::string mem =
      KeyValue(ReadFileOr("/proc/meminfo", ""), "MemTotal", ':');
  h["mem_total_mib"] = std::strtoll(mem.c_str(), nullptr, 10) / 1024;
  h["time_utc"] = UtcNow();
  // Settings that change what the checks do; never tokens or keys.
  json env = json::object();
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string name = kv.substr(0, kv.find('='));
    if (absl::StartsWith(name, "CUDA_") || absl::StartsWith(name, "NCCL_") ||
        absl::StartsWith(name, "NVIDIA_") || name == "OMP_NUM_THREADS" ||
        name == "OPENBLAS_NUM_THREADS" || name == "LD_LIBRARY_PATH" ||
        name == "SMOE_LOG_LEVEL") {
      if (absl::StrContains(name, "KEY") || absl::StrContains(name, "TOKEN")) {
        continue;
      }
      env[name] = kv.substr(name.size() + 1);
    }
  }
  h["env"] = env;
  return h;
}

// What the GPU branches need to know, probed once.
struct Machine {
  kernels::CudaStackInfo cuda;
  bool torch_cuda = false;  // LibTorch was built with CUDA and sees a device
  int torch_devices = 0;
};

Machine Probe(const DoctorDevices& d) {
  Machine m;
  m.cuda = d.stack_info();
  m.torch_cuda = d.torch_cuda_available();
  m.torch_devices = d.torch_device_count();
  return m;
}

std::string NoDeviceReason(const Machine& m) {
  if (!m.cuda.built_with_cuda) return "no CUDA device (built without CUDA)";
  if (m.cuda.driver_version == 0) return "no CUDA device (no NVIDIA driver)";
  return absl::StrCat("no CUDA device (", m.cuda.device_error, ")");
}

// ---- Check runner -----------------------------------------------------------

void Pass(DoctorCheck* c, std::string summary) {
  c->verdict = Verdict::kPass;
  c->summary = std::move(summary);
}
void Fail(DoctorCheck* c, std::string summary) {
  c->verdict = Verdict::kFail;
  c->summary = std::move(summary);
}
void Skip(DoctorCheck* c, std::string reason) {
  c->verdict = Verdict::kSkip;
  c->summary = std::move(reason);
}

class Runner {
 public:
  Runner(const DoctorOptions& options, DoctorReport* report)
      : options_(options), report_(report) {}

  bool fault(const std::string& name) const {
    return options_.inject_fault.count(name) > 0;
  }

  // Runs `body` as check `name` (SKIP when --only leaves it out). Exceptions
  // (LibTorch's c10::Error) become FAIL.
  void Run(const std::string& name,
           const std::function<void(DoctorCheck*)>& body) {
    DoctorCheck c;
    c.name = name;
    if (!options_.only.empty() && options_.only.count(name) == 0) {
      Skip(&c, "not selected (--only)");
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      try {
        body(&c);
      } catch (const std::exception& e) {
        Fail(&c, absl::StrCat("exception: ", FirstLine(e.what())));
        c.figures["exception"] = e.what();
      } catch (...) {
        Fail(&c, "unknown exception");
      }
      c.seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count();
    }
    report_->checks.push_back(c);
    if (options_.on_check) options_.on_check(c);
  }

 private:
  const DoctorOptions& options_;
  DoctorReport* report_;
};

// ---- versions ---------------------------------------------------------------

void CheckVersions(const Machine& m, DoctorCheck* c) {
  const kernels::CudaStackInfo& s = m.cuda;
  json& f = c->figures;
  f["smoe"] = SMOE_VERSION;
  f["build"] = {
      {"SMOE_WITH_CUDA", s.built_with_cuda},
      {"SMOE_WITH_NCCL", s.built_with_nccl},
      {"SMOE_WITH_TORCH_CUDA", model::ops::KernelsOnCuda()},
      {"compiled_cuda", kernels::FormatCudaVersion(s.compiled_cuda_version)}};
  f["cuda"] = {{"driver", kernels::FormatCudaVersion(s.driver_version)},
               {"runtime", kernels::FormatCudaVersion(s.runtime_version)},
               {"cublas", TripleVersion(s.cublas_version)},
               {"nccl", TripleVersion(s.nccl_version)},
               {"device_count", s.device_count},
               {"devices", s.devices},
               {"device_error", s.device_error}};
  const bool cudnn = torch::cuda::cudnn_is_available();
  f["torch"] = {{"version", TORCH_VERSION},
                {"cuda_available", m.torch_cuda},
                {"cuda_device_count", m.torch_devices},
                {"cudnn_available", cudnn},
                {"config", at::show_config()}};
  const char* omp = std::getenv("OMP_NUM_THREADS");
  f["cpu"] = {
      {"model", KeyValue(ReadFileOr("/proc/cpuinfo", ""), "model name", ':')},
      {"logical_cpus", std::thread::hardware_concurrency()},
      {"torch_threads", at::get_num_threads()},
      {"OMP_NUM_THREADS", omp == nullptr ? "" : omp},
      {"openblas_core", OpenBlasString("openblas_get_corename")},
      {"openblas_config", OpenBlasString("openblas_get_config")}};

  auto v = [](const std::string& x) { return x.empty() ? "-" : x; };
  const std::string cuda =
      s.built_with_cuda
          ? absl::StrCat("driver ",
                         s.driver_version > 0
                             ? kernels::FormatCudaVersion(s.driver_version)
                             : "none",
                         ", runtime ",
                         v(kernels::FormatCudaVersion(s.runtime_version)),
                         ", cuBLAS ", v(TripleVersion(s.cublas_version)),
                         ", NCCL ", v(TripleVersion(s.nccl_version)))
          : "CUDA off in this build";
  const std::string gpus =
      s.device_count > 0
          ? absl::StrCat(s.device_count,
                         " GPU(s): ", s.devices.empty() ? "" : s.devices[0],
                         s.device_count > 1 ? ", ..." : "")
          : "no GPU";
  const std::string core = OpenBlasString("openblas_get_corename");
  const std::string summary = absl::StrCat(
      cuda, "; LibTorch ", TORCH_VERSION, m.torch_cuda ? " (CUDA)" : " (CPU)",
      "; build CUDA=", s.built_with_cuda ? "on" : "off",
      " NCCL=", s.built_with_nccl ? "on" : "off",
      " torch-CUDA=", model::ops::KernelsOnCuda() ? "on" : "off", "; ", gpus,
      "; CPU ", v(f["cpu"]["model"].get<std::string>()), " x",
      std::thread::hardware_concurrency(), " (torch threads ",
      at::get_num_threads(), core.empty() ? "" : ", OpenBLAS " + core, ")");
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (s.built_with_cuda && s.driver_version > 0 && s.device_count == 0) {
    Fail(c,
         absl::StrCat("an NVIDIA driver (CUDA ",
                      kernels::FormatCudaVersion(s.driver_version),
                      ") is installed but no GPU is usable: ", s.device_error,
                      "; CUDA_VISIBLE_DEVICES=",
                      visible == nullptr ? "(unset)" : visible, "; ", summary));
    return;
  }
  if (s.device_count > 0 && !m.torch_cuda) {
    Fail(c, absl::StrCat("the kernels see ", s.device_count,
                         " GPU(s) but LibTorch ", TORCH_VERSION,
                         " has no CUDA (a CPU-only LibTorch?): training with "
                         "device=cuda will fail; ",
                         summary));
    return;
  }
  Pass(c, summary);
}

// ---- kernel.* ---------------------------------------------------------------

void CheckKernel(const Machine& m, const DoctorDevices::KernelCheck& fn,
                 bool quick, bool fault, DoctorCheck* c) {
  if (m.cuda.device_count == 0) {
    Skip(c, NoDeviceReason(m));
    return;
  }
  json per = json::array();
  double max_err = 0;
  size_t comparisons = 0;
  for (int d = 0; d < m.cuda.device_count; ++d) {
    kernels::KernelCheckOptions o;
    o.device = d;
    o.quick = quick;
    o.inject_fault = fault;
    absl::StatusOr<kernels::KernelCheckResult> r = fn(o);
    if (!r.ok()) {
      c->figures["devices"] = per;
      Fail(c, absl::StrCat("gpu", d, ": ", r.status().ToString()));
      return;
    }
    json cmp = json::array();
    for (const kernels::KernelComparison& k : r->comparisons) {
      cmp.push_back({{"what", k.what},
                     {"exact", k.exact},
                     {"atol", k.atol},
                     {"eps", k.eps},
                     {"elements", k.elements},
                     {"num_bad", k.num_bad},
                     {"max_abs_err", k.max_abs_err},
                     {"message", k.message}});
    }
    per.push_back({{"device", d},
                   {"seed", r->seed},
                   {"ok", r->ok()},
                   {"max_abs_err", r->max_abs_err()},
                   {"comparisons", cmp},
                   {"notes", r->notes}});
    if (!r->ok()) {
      c->figures["devices"] = per;
      Fail(c, absl::StrCat("gpu", d, " (seed ", r->seed,
                           "): ", r->first_failure()));
      return;
    }
    max_err = std::max(max_err, r->max_abs_err());
    comparisons = r->comparisons.size();
  }
  c->figures["devices"] = per;
  Pass(c, absl::StrCat(m.cuda.device_count, " GPU(s) x ", comparisons,
                       " comparisons vs the CPU reference, max |err| ",
                       Num(max_err, 3), " (tolerances of the GPU tests)"));
}

// ---- ops.* ------------------------------------------------------------------

struct OpsInputs {
  torch::Tensor x, logits, w1, b1, w2, b2, probe;
};

struct OpsOutputs {
  torch::Tensor out;                // [N, D]
  torch::Tensor idx;                // [N, k] int64
  std::vector<torch::Tensor> grad;  // x, logits, w1, b1, w2, b2
};

constexpr const char* kOpsGradNames[] = {"x", "logits", "w1", "b1", "w2", "b2"};

OpsInputs MakeOpsInputs(uint64_t seed, int64_t n, int64_t d, int64_t e,
                        int64_t mlp) {
  torch::manual_seed(seed);
  OpsInputs in;
  in.x = torch::randn({n, d});
  in.logits = torch::randn({n, e});
  in.w1 = torch::randn({e, d, mlp}) / std::sqrt(static_cast<double>(d));
  in.b1 = 0.1 * torch::randn({e, mlp});
  in.w2 = torch::randn({e, mlp, d}) / std::sqrt(static_cast<double>(mlp));
  in.b2 = 0.1 * torch::randn({e, d});
  in.probe = torch::randn({n, d});
  return in;
}

std::vector<torch::Tensor> Leaves(const OpsInputs& in, torch::Device dev,
                                  torch::ScalarType dtype) {
  std::vector<torch::Tensor> v;
  for (const torch::Tensor& t : {in.x, in.logits, in.w1, in.b1, in.w2, in.b2}) {
    v.push_back(t.to(dev, dtype).detach().requires_grad_(true));
  }
  return v;
}

OpsOutputs Collect(const torch::Tensor& out, const torch::Tensor& idx,
                   const std::vector<torch::Tensor>& leaves) {
  OpsOutputs o;
  o.out = out.detach().cpu();
  o.idx = idx.cpu().to(torch::kInt64);
  for (const torch::Tensor& l : leaves) o.grad.push_back(l.grad().cpu());
  return o;
}

// worker/model/ops (float32; the kernels' CPU references on the CPU, the
// CUDA kernels on CUDA tensors).
// LibTorch's exceptions (e.g. a device it cannot use) come back as a status
// naming the device.
absl::StatusOr<OpsOutputs> RunOps(const OpsInputs& in, int k, RouterGating g,
                                  torch::Device dev) {
  try {
    std::vector<torch::Tensor> l = Leaves(in, dev, torch::kFloat32);
    model::RouterOutput routing;
    absl::StatusOr<torch::Tensor> out = model::ops::MoeForward(
        l[0], l[1], k, g, l[2], l[3], l[4], l[5], &routing);
    if (!out.ok()) return out.status();
    (*out * in.probe.to(dev)).sum().backward();
    return Collect(*out, routing.topk_idx, l);
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("on ", dev.str(), ": ", FirstLine(e.what())));
  }
}

// The same layer written densely in float64 with plain torch ops: every
// expert on every token, then the chosen k gathered and gate-weighted.
OpsOutputs RunPlain(const OpsInputs& in, int k, RouterGating g) {
  std::vector<torch::Tensor> l = Leaves(in, torch::kCPU, torch::kFloat64);
  const torch::Tensor& x = l[0];
  const torch::Tensor& logits = l[1];
  torch::Tensor gates, idx;
  if (g == RouterGating::kRenormalized) {
    auto [vals, i] = logits.topk(k, -1);
    gates = torch::softmax(vals, -1);
    idx = i;
  } else {
    auto [vals, i] = torch::softmax(logits, -1).topk(k, -1);
    gates = vals;
    idx = i;
  }
  torch::Tensor h = torch::gelu(
      torch::einsum("nd,edm->enm", {x, l[2]}) + l[3].unsqueeze(1), "tanh");
  torch::Tensor y =
      torch::einsum("enm,emd->end", {h, l[4]}) + l[5].unsqueeze(1);
  const int64_t n = x.size(0), d = x.size(1);
  torch::Tensor chosen = y.permute({1, 0, 2}).gather(
      1, idx.unsqueeze(-1).expand({n, k, d}));  // [N, k, D]
  torch::Tensor out = (gates.unsqueeze(-1) * chosen).sum(1);
  (out * in.probe.to(torch::kFloat64)).sum().backward();
  return Collect(out, idx, l);
}

kernels::CompareResult CompareTensors(const torch::Tensor& ref,
                                      const torch::Tensor& got, double atol,
                                      double eps) {
  const torch::Tensor r = ref.to(torch::kFloat64).contiguous();
  const torch::Tensor g = got.to(torch::kFloat64).contiguous();
  if (r.sizes() != g.sizes()) {
    kernels::CompareResult bad;
    bad.ok = false;
    bad.message = "shapes differ";
    return bad;
  }
  return kernels::CompareClose(r.data_ptr<double>(), g.data_ptr<double>(),
                               static_cast<size_t>(r.numel()), atol, eps);
}

struct OpsCase {
  int k;
  RouterGating gating;
};

// Compares `got` with `ref` for every case; returns "" or the first failure.
std::string CompareOps(const OpsOutputs& ref, OpsOutputs got, double out_atol,
                       double out_eps, double grad_atol, double grad_eps,
                       bool fault, const std::string& label, json* figures,
                       double* max_err) {
  if (fault) got.out.view({-1})[0] += 1e-2;
  if (!torch::equal(ref.idx, got.idx)) {
    return absl::StrCat(label, ": routing (topk_idx) differs");
  }
  kernels::CompareResult r =
      CompareTensors(ref.out, got.out, out_atol, out_eps);
  *max_err = std::max(*max_err, r.max_abs_err);
  json f = {{"out_max_abs_err", r.max_abs_err}};
  if (!r.ok) return absl::StrCat(label, ": output: ", r.message);
  for (size_t i = 0; i < ref.grad.size(); ++i) {
    r = CompareTensors(ref.grad[i], got.grad[i], grad_atol, grad_eps);
    *max_err = std::max(*max_err, r.max_abs_err);
    f[absl::StrCat("grad_", kOpsGradNames[i], "_max_abs_err")] = r.max_abs_err;
    if (!r.ok) {
      return absl::StrCat(label, ": grad ", kOpsGradNames[i], ": ", r.message);
    }
  }
  (*figures)[label] = f;
  return "";
}

std::vector<OpsCase> OpsCases(bool quick) {
  if (quick) return {{2, RouterGating::kRenormalized}};
  return {{1, RouterGating::kNoRenorm},
          {2, RouterGating::kRenormalized},
          {8, RouterGating::kRenormalized}};
}

std::string CaseLabel(const OpsCase& oc) {
  return absl::StrCat(
      "k=", oc.k,
      oc.gating == RouterGating::kRenormalized ? " renorm" : " norenorm");
}

constexpr int64_t kOpsTokens = 64, kOpsDim = 32, kOpsExperts = 8, kOpsMlp = 64;

void CheckOpsCpu(bool quick, bool fault, DoctorCheck* c) {
  std::random_device rd;
  const uint64_t seed = rd();
  const OpsInputs in =
      MakeOpsInputs(seed, kOpsTokens, kOpsDim, kOpsExperts, kOpsMlp);
  c->figures["seed"] = seed;
  c->figures["shape"] = absl::StrCat("N=", kOpsTokens, " D=", kOpsDim,
                                     " E=", kOpsExperts, " mlp=", kOpsMlp);
  double max_err = 0;
  for (const OpsCase& oc : OpsCases(quick)) {
    absl::StatusOr<OpsOutputs> got = RunOps(in, oc.k, oc.gating, torch::kCPU);
    if (!got.ok()) {
      Fail(c, absl::StrCat(CaseLabel(oc), ": ", got.status().ToString()));
      return;
    }
    // float32 vs float64 over D- and mlp-term sums of O(1) values: ~1e-6;
    // gradients add sums over N tokens.
    const std::string err =
        CompareOps(RunPlain(in, oc.k, oc.gating), *std::move(got), 2e-5, 1e-4,
                   1e-4, 1e-4, fault, CaseLabel(oc), &c->figures, &max_err);
    if (!err.empty()) {
      Fail(c, absl::StrCat(err, " (seed ", seed, ")"));
      return;
    }
  }
  Pass(c, absl::StrCat("MoE forward+backward (router, permute, expert GEMMs, "
                       "combine; CPU references) vs a dense float64 torch "
                       "formulation, ",
                       OpsCases(quick).size(), " case(s): max |err| ",
                       Num(max_err, 3), ", routing exact"));
}

void CheckOpsCuda(const Machine& m, const std::string& device, bool quick,
                  bool fault, DoctorCheck* c) {
  if (!m.torch_cuda) {
    Skip(c, m.cuda.device_count == 0
                ? NoDeviceReason(m)
                : absl::StrCat("LibTorch ", TORCH_VERSION, " has no CUDA"));
    return;
  }
  std::random_device rd;
  const uint64_t seed = rd();
  const OpsInputs in =
      MakeOpsInputs(seed, kOpsTokens, kOpsDim, kOpsExperts, kOpsMlp);
  const std::string backend =
      model::ops::KernelsOnCuda()
          ? "kernels/ CUDA kernels"
          : "generic torch ops (no SMOE_WITH_TORCH_CUDA)";
  c->figures["seed"] = seed;
  c->figures["backend"] = backend;
  double max_err = 0;
  for (const OpsCase& oc : OpsCases(quick)) {
    absl::StatusOr<OpsOutputs> cpu = RunOps(in, oc.k, oc.gating, torch::kCPU);
    absl::StatusOr<OpsOutputs> gpu =
        RunOps(in, oc.k, oc.gating, torch::Device(device));
    if (!cpu.ok() || !gpu.ok()) {
      Fail(c, absl::StrCat(CaseLabel(oc), ": ",
                           (!gpu.ok() ? gpu : cpu).status().ToString()));
      return;
    }
    // ops_gpu_test.cc: cuBLAS vs CPU summation order, then the backward's
    // sums over tokens: 1e-4 absolute.
    const std::string err =
        CompareOps(*cpu, *std::move(gpu), 1e-4, 0, 1e-4, 0, fault,
                   CaseLabel(oc), &c->figures, &max_err);
    if (!err.empty()) {
      Fail(c, absl::StrCat(err, " (seed ", seed, ", ", backend, ")"));
      return;
    }
  }
  Pass(c, absl::StrCat("MoE forward+backward on ", device, " (", backend,
                       ") vs the CPU, ", OpsCases(quick).size(),
                       " case(s): max |err| ", Num(max_err, 3)));
}

// ---- comm.* -----------------------------------------------------------------

void CommSummary(const absl::StatusOr<kernels::CommCheckResult>& r,
                 const std::string& what, DoctorCheck* c) {
  if (!r.ok()) {
    Fail(c, absl::StrCat(what, ": ", r.status().ToString()));
    return;
  }
  c->figures = {{"backend", r->backend},
                {"world_size", r->world_size},
                {"alltoall_elements", r->alltoall_elements},
                {"alltoall_wrong", r->alltoall_wrong},
                {"allreduce_elements", r->allreduce_elements},
                {"allreduce_wrong", r->allreduce_wrong},
                {"seconds", r->seconds}};
  if (!r->ok()) {
    Fail(c, absl::StrCat(what, ": ", r->alltoall_wrong, " of ",
                         r->alltoall_elements, " all-to-all-v elements and ",
                         r->allreduce_wrong, " of ", r->allreduce_elements,
                         " all-reduce elements wrong"));
    return;
  }
  Pass(c, absl::StrCat(what, ": all-to-all-v payloads ", r->alltoall_elements,
                       " elements and all-reduce (f64, f32) ",
                       r->allreduce_elements, " elements, all exact, ",
                       Num(r->seconds * 1e3, 3), " ms"));
}

void CheckCommLocal(bool fault, DoctorCheck* c) {
  kernels::CommCheckOptions o;
  o.backend = kernels::CommBackend::kLocal;
  o.world_size = 2;
  o.op_timeout_ms = 10000;
  o.inject_fault = fault;
  CommSummary(kernels::CheckCommunicators(o),
              "LocalCommunicator world 2 (threads)", c);
}

void CheckCommNccl(const Machine& m, const DoctorDevices& devices, bool fault,
                   DoctorCheck* c) {
  if (!m.cuda.built_with_nccl) {
    Skip(c, "built without NCCL (comm.local ran the same checks)");
    return;
  }
  if (m.cuda.device_count == 0) {
    Skip(c, absl::StrCat(NoDeviceReason(m),
                         "; NCCL skipped, comm.local ran the same checks over "
                         "LocalCommunicator"));
    return;
  }
  kernels::CommCheckOptions o;
  o.backend = kernels::CommBackend::kNccl;
  o.world_size = m.cuda.device_count;
  o.op_timeout_ms = 60000;
  o.inject_fault = fault;
  CommSummary(
      devices.communicators(o),
      absl::StrCat("NCCL over ", o.world_size, " GPU(s), one thread each"), c);
}

// ---- train.* ----------------------------------------------------------------

// The run every train.* check makes: 2 layers of 4 experts, top-2, width 1/8
// (D = 16), M = 2, batch 16, lr 1e-3, no attention dropout (CPU and CUDA draw
// different masks), ops dispatch (the kernels on CUDA). Softmax attention:
// with HYLA, rounding differences grow through training (on the CPU, the
// gather and ops dispatch paths, same math in another summation order, drift
// apart by 1e-4 at step 16 and 4e-3 by step 40), with softmax they stay at
// float rounding (<= 2e-7 relative over 40 steps; also with 2 threads).
TrainConfig DoctorTrainConfig(int steps, const std::string& device, bool bf16) {
  TrainConfig c;
  c.model.num_features = 2;
  c.model.width = 0.125;
  c.model.depth = 2;
  c.model.num_experts = 4;
  c.model.top_k = 2;
  c.model.attention = model::AttentionKind::kSoftmax;
  c.model.attention_dropout = 0.0;
  c.model.dispatch = model::Dispatch::kOps;
  c.seed = 3;
  c.steps = steps;
  c.batch_size = 16;
  c.lr = 1e-3;
  c.warmup = std::min(3, std::max(0, steps - 1));  // < steps (validated)
  c.eval_every = steps;
  c.num_eval = 32;
  c.checkpoint_every = steps;
  c.log_every = steps;
  c.device = device;
  c.bf16 = bf16;
  return c;
}

// Trains in a fresh temporary work dir (removed after) and returns the loss
// of every update.
absl::StatusOr<std::vector<double>> LossCurve(const TrainConfig& config) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp",
                                 "/smoe-doctor-XXXXXX");
  if (::mkdtemp(dir.data()) == nullptr) {
    return absl::InternalError(
        absl::StrCat("mkdtemp ", dir, ": ", std::strerror(errno)));
  }
  std::vector<double> losses;
  RunOptions o;
  o.workdir = dir;
  o.on_step = [&losses](int64_t, double loss) { losses.push_back(loss); };
  absl::StatusOr<TrainResult> r = RunTraining(config, o);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (!r.ok()) return r.status();
  return losses;
}

// The step (1-based) where |got - ref| / |ref| is largest, and that ratio.
std::pair<size_t, double> WorstRelative(const std::vector<double>& ref,
                                        const std::vector<double>& got) {
  std::pair<size_t, double> w = {0, 0.0};
  for (size_t i = 0; i < ref.size() && i < got.size(); ++i) {
    const double rel =
        std::fabs(got[i] - ref[i]) / std::max(std::fabs(ref[i]), 1e-12);
    if (!(rel <= w.second)) w = {i + 1, rel};  // NaN wins
  }
  return w;
}

bool AllFinite(const std::vector<double>& v) {
  for (double x : v) {
    if (!std::isfinite(x)) return false;
  }
  return !v.empty();
}

std::string CurveText(const std::vector<double>& v) {
  return v.empty()
             ? "no steps"
             : absl::StrCat("loss ", Num(v.front()), " -> ", Num(v.back()));
}

// Per-step losses of `got` vs `ref` within `rel` relative.
void CompareCurves(const std::vector<double>& ref,
                   const std::vector<double>& got, double rel,
                   const std::string& what, DoctorCheck* c) {
  c->figures["tolerance_rel_per_step"] = rel;
  if (got.empty() || got.size() != ref.size()) {
    Fail(c, absl::StrCat(what, ": ", got.size(), " steps vs ", ref.size()));
    return;
  }
  const auto [step, worst] = WorstRelative(ref, got);
  c->figures["worst_step"] = step;
  c->figures["worst_rel_diff"] = worst;
  if (!AllFinite(got) || !(worst <= rel)) {
    Fail(c, absl::StrCat(what, ": step ", step, " loss ", Num(got[step - 1], 7),
                         " vs ", Num(ref[step - 1], 7), " (rel ", Num(worst, 3),
                         " > ", Num(rel, 2), ")"));
    return;
  }
  Pass(c, absl::StrCat(what, ": ", got.size(), " steps, ", CurveText(got),
                       ", max rel diff ", Num(worst, 2), " (<= ", Num(rel, 2),
                       " per step)"));
}

struct Curves {
  std::vector<double> cpu_fp32;
  std::vector<double> gpu_fp32;
};

void CheckTrainCpu(int steps, bool fault, Curves* curves, DoctorCheck* c) {
  const TrainConfig cfg = DoctorTrainConfig(steps, "cpu", false);
  absl::StatusOr<std::vector<double>> a = LossCurve(cfg);
  if (!a.ok()) {
    Fail(c, absl::StrCat("CPU fp32 run: ", a.status().ToString()));
    return;
  }
  absl::StatusOr<std::vector<double>> b = LossCurve(cfg);
  if (!b.ok()) {
    Fail(c, absl::StrCat("CPU fp32 rerun: ", b.status().ToString()));
    return;
  }
  if (fault && !b->empty()) {
    uint64_t bits;
    std::memcpy(&bits, &(*b)[0], sizeof(bits));
    bits ^= 1;
    std::memcpy(&(*b)[0], &bits, sizeof(bits));
  }
  curves->cpu_fp32 = *a;
  c->figures["steps"] = steps;
  c->figures["loss"] = *a;
  if (!AllFinite(*a)) {
    Fail(c, absl::StrCat("non-finite loss: ", CurveText(*a)));
    return;
  }
  for (size_t i = 0; i < a->size(); ++i) {
    if (i >= b->size() ||
        std::memcmp(&(*a)[i], &(*b)[i], sizeof(double)) != 0) {
      Fail(c,
           absl::StrCat("rerun differs at step ", i + 1, ": ", Num((*a)[i], 17),
                        " vs ", i < b->size() ? Num((*b)[i], 17) : "missing",
                        " (same seed, same process: must be bitwise)"));
      return;
    }
  }
  Pass(c, absl::StrCat(steps, " SRAVEN steps on the CPU, ", CurveText(*a),
                       "; a rerun is bitwise equal"));
}

void CheckTrainGpu(const Machine& m, int steps, bool fault, Curves* curves,
                   DoctorCheck* c) {
  if (!m.torch_cuda) {
    Skip(c, m.cuda.device_count == 0
                ? NoDeviceReason(m)
                : absl::StrCat("LibTorch ", TORCH_VERSION, " has no CUDA"));
    return;
  }
  if (curves->cpu_fp32.empty()) {
    Skip(c,
         "no CPU curve to compare with (train.cpu_fp32 failed or was "
         "not selected)");
    return;
  }
  absl::StatusOr<std::vector<double>> g =
      LossCurve(DoctorTrainConfig(steps, "cuda", false));
  if (!g.ok()) {
    Fail(c, absl::StrCat("GPU fp32 run: ", g.status().ToString()));
    return;
  }
  curves->gpu_fp32 = *g;
  if (fault && !g->empty()) (*g)[0] *= 1.01;
  c->figures["loss"] = *g;
  CompareCurves(curves->cpu_fp32, *g, kGpuFp32LossRel,
                "cuda:0 fp32 vs CPU fp32", c);
}

void CheckTrainBf16(const Machine& m, int steps, bool fault,
                    const Curves& curves, DoctorCheck* c) {
  const std::string device = m.torch_cuda ? "cuda" : "cpu";
  const TrainConfig cfg = DoctorTrainConfig(steps, device, true);
  // The trainer decides where bf16 is legal (device=cuda today; the CPU once
  // it accepts CPU autocast): this check follows it.
  const absl::Status valid = ValidateTrainConfig(cfg);
  if (!valid.ok()) {
    Skip(c, absl::StrCat("bf16 on device ", device,
                         " is refused by this trainer (",
                         std::string(valid.message()), ")",
                         m.torch_cuda ? "" : "; no CUDA LibTorch/device"));
    return;
  }
  const std::vector<double>& ref = device == "cuda" && !curves.gpu_fp32.empty()
                                       ? curves.gpu_fp32
                                       : curves.cpu_fp32;
  if (ref.empty()) {
    Skip(c,
         "no fp32 curve to compare with (train.cpu_fp32 failed or was "
         "not selected)");
    return;
  }
  absl::StatusOr<std::vector<double>> b = LossCurve(cfg);
  if (!b.ok()) {
    Fail(c, absl::StrCat(device, " bf16 run: ", b.status().ToString()));
    return;
  }
  if (fault && !b->empty()) (*b)[0] *= 1.2;
  c->figures["device"] = device;
  c->figures["loss"] = *b;
  c->figures["fp32_reference"] =
      &ref == &curves.gpu_fp32 ? "gpu_fp32" : "cpu_fp32";
  CompareCurves(
      ref, *b, kBf16LossRel,
      absl::StrCat(device, " bf16 autocast vs ",
                   &ref == &curves.gpu_fp32 ? "cuda" : "CPU", " fp32"),
      c);
}

// ---- bench.device -----------------------------------------------------------

void CheckBench(const Machine& m, const DoctorDevices& devices, bool quick,
                DoctorCheck* c) {
  if (m.cuda.device_count == 0) {
    Skip(c, NoDeviceReason(m));
    return;
  }
  const int n = quick ? 1 : m.cuda.device_count;
  json per = json::array();
  std::string first;
  for (int d = 0; d < n; ++d) {
    absl::StatusOr<kernels::DeviceRates> r = devices.device_rates(d, quick);
    if (!r.ok()) {
      c->figures["devices"] = per;
      Fail(c, absl::StrCat("gpu", d, ": ", r.status().ToString()));
      return;
    }
    per.push_back({{"device", d},
                   {"copy_gbps", r->copy_gbps},
                   {"dense_bf16_tflops", r->dense_bf16_tflops},
                   {"grouped_gemm_tflops", r->grouped_gemm_tflops},
                   {"grouped_gemm_fraction_of_dense", r->grouped_gemm_fraction},
                   {"grouped_gemm_shape", r->grouped_gemm_shape},
                   {"permute_gbps", r->permute_gbps},
                   {"permute_fraction_of_copy", r->permute_fraction},
                   {"combine_gbps", r->combine_gbps},
                   {"combine_fraction_of_copy", r->combine_fraction},
                   {"permute_shape", r->permute_shape}});
    if (d == 0) {
      first = absl::StrCat(
          "gpu0: copy ", Num(r->copy_gbps, 4), " GB/s, dense bf16 ",
          Num(r->dense_bf16_tflops, 4), " TFLOP/s; grouped GEMM ",
          Num(r->grouped_gemm_tflops, 4),
          " TFLOP/s = ", Pct(r->grouped_gemm_fraction),
          " of dense (target 60%); permute ", Pct(r->permute_fraction),
          ", combine ", Pct(r->combine_fraction), " of copy (target 80%)");
    }
  }
  c->figures["devices"] = per;
  c->figures["targets"] = {{"grouped_gemm_fraction_of_dense", 0.6},
                           {"permute_fraction_of_copy", 0.8}};
  Pass(c, absl::StrCat(first,
                       n < m.cuda.device_count ? " (--quick: gpu0 only)" : ""));
}

}  // namespace

DoctorDevices RealDoctorDevices() {
  DoctorDevices d;
  d.stack_info = &kernels::GetCudaStackInfo;
  d.torch_cuda_available = [] { return torch::cuda::is_available(); };
  d.torch_device_count = [] {
    return static_cast<int>(torch::cuda::device_count());
  };
  d.router_topk = &kernels::CheckRouterTopKKernels;
  d.permute = &kernels::CheckPermuteKernels;
  d.grouped_gemm = &kernels::CheckGroupedGemmKernels;
  d.communicators = &kernels::CheckCommunicators;
  d.device_rates = [](int device, bool quick) {
    return kernels::MeasureDeviceRates(device, quick);
  };
  return d;
}

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPass:
      return "PASS";
    case Verdict::kFail:
      return "FAIL";
    case Verdict::kSkip:
      return "SKIP";
  }
  return "?";
}

bool DoctorReport::ok() const {
  for (const DoctorCheck& c : checks) {
    if (c.verdict == Verdict::kFail) return false;
  }
  return true;
}

const std::vector<std::string>& DoctorCheckNames() {
  static const auto* names =
      new std::vector<std::string>{"versions",       "kernel.router_topk",
                                   "kernel.permute", "kernel.grouped_gemm",
                                   "ops.moe_cpu",    "ops.moe_cuda",
                                   "comm.local",     "comm.nccl",
                                   "train.cpu_fp32", "train.gpu_fp32",
                                   "train.bf16",     "bench.device"};
  return *names;
}

const std::vector<std::string>& DoctorFaultableChecks() {
  static const auto* names = new std::vector<std::string>{
      "kernel.router_topk", "kernel.permute", "kernel.grouped_gemm",
      "ops.moe_cpu",        "ops.moe_cuda",   "comm.local",
      "comm.nccl",          "train.cpu_fp32", "train.gpu_fp32",
      "train.bf16"};
  return *names;
}

DoctorReport RunDoctor(const DoctorOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  DoctorReport report;
  report.host = HostInfo();
  Runner run(options, &report);
  const int steps = options.train_steps > 0 ? options.train_steps
                    : options.quick         ? kQuickTrainSteps
                                            : kTrainSteps;
  const bool quick = options.quick;
  const DoctorDevices& devices = options.devices;
  Machine m;
  try {
    m = Probe(devices);
  } catch (const std::exception& e) {  // LibTorch's CUDA probe
    m.cuda = devices.stack_info();
    SMOE_LOG(WARNING) << "doctor: LibTorch CUDA probe: " << FirstLine(e.what());
  }
  Curves curves;

  // The versions go into the report even when --only leaves the check out.
  DoctorCheck versions;
  CheckVersions(m, &versions);
  report.versions = versions.figures;
  run.Run("versions", [&](DoctorCheck* c) {
    c->verdict = versions.verdict;
    c->summary = versions.summary;
    c->figures = versions.figures;
  });
  run.Run("kernel.router_topk", [&](DoctorCheck* c) {
    CheckKernel(m, devices.router_topk, quick, run.fault("kernel.router_topk"),
                c);
  });
  run.Run("kernel.permute", [&](DoctorCheck* c) {
    CheckKernel(m, devices.permute, quick, run.fault("kernel.permute"), c);
  });
  run.Run("kernel.grouped_gemm", [&](DoctorCheck* c) {
    CheckKernel(m, devices.grouped_gemm, quick,
                run.fault("kernel.grouped_gemm"), c);
  });
  run.Run("ops.moe_cpu", [&](DoctorCheck* c) {
    CheckOpsCpu(quick, run.fault("ops.moe_cpu"), c);
  });
  run.Run("ops.moe_cuda", [&](DoctorCheck* c) {
    CheckOpsCuda(m, devices.ops_device, quick, run.fault("ops.moe_cuda"), c);
  });
  run.Run("comm.local",
          [&](DoctorCheck* c) { CheckCommLocal(run.fault("comm.local"), c); });
  run.Run("comm.nccl", [&](DoctorCheck* c) {
    CheckCommNccl(m, devices, run.fault("comm.nccl"), c);
  });
  run.Run("train.cpu_fp32", [&](DoctorCheck* c) {
    CheckTrainCpu(steps, run.fault("train.cpu_fp32"), &curves, c);
  });
  run.Run("train.gpu_fp32", [&](DoctorCheck* c) {
    CheckTrainGpu(m, steps, run.fault("train.gpu_fp32"), &curves, c);
  });
  run.Run("train.bf16", [&](DoctorCheck* c) {
    CheckTrainBf16(m, steps, run.fault("train.bf16"), curves, c);
  });
  run.Run("bench.device",
          [&](DoctorCheck* c) { CheckBench(m, devices, quick, c); });
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  return report;
}

std::string FormatCheckLine(const DoctorCheck& check) {
  std::string line = absl::StrCat(VerdictName(check.verdict), " ", check.name,
                                  ": ", check.summary);
  if (check.seconds >= 0.05)
    absl::StrAppend(&line, " (", Num(check.seconds, 2), " s)");
  return line;
}

std::string FormatDoctorTable(const DoctorReport& report) {
  std::string out;
  int counts[3] = {0, 0, 0};
  for (const DoctorCheck& c : report.checks) {
    absl::StrAppend(&out, FormatCheckLine(c), "\n");
    ++counts[static_cast<int>(c.verdict)];
  }
  absl::StrAppend(&out, "summary: ", counts[0], " PASS, ", counts[1], " FAIL, ",
                  counts[2], " SKIP in ", Num(report.seconds, 3), " s\n");
  return out;
}

json DoctorReportJson(const DoctorReport& report,
                      const DoctorOptions& options) {
  json checks = json::array();
  json counts = {{"PASS", 0}, {"FAIL", 0}, {"SKIP", 0}};
  for (const DoctorCheck& c : report.checks) {
    checks.push_back({{"name", c.name},
                      {"verdict", VerdictName(c.verdict)},
                      {"summary", c.summary},
                      {"seconds", c.seconds},
                      {"figures", c.figures}});
    counts[VerdictName(c.verdict)] =
        counts[VerdictName(c.verdict)].get<int>() + 1;
  }
  return {{"schema", "smoe-doctor/1"},
          {"tool", "smoe-trainer doctor"},
          {"smoe_version", SMOE_VERSION},
          {"created", report.host.value("time_utc", "")},
          {"options",
           {{"quick", options.quick},
            {"train_steps", options.train_steps},
            {"only", options.only},
            {"inject_fault", options.inject_fault}}},
          {"verdict", report.ok() ? "PASS" : "FAIL"},
          {"counts", counts},
          {"seconds", report.seconds},
          {"host", report.host},
          {"versions", report.versions},
          {"checks", checks}};
}

namespace {

struct DoctorFlags {
  DoctorOptions options;
  bool as_json = false;
  std::string report_path;
  std::vector<std::string> only, inject_fault;
};

int RunDoctorFlags(DoctorFlags flags) {
  DoctorOptions& options = flags.options;
  options.only.insert(flags.only.begin(), flags.only.end());
  options.inject_fault.insert(flags.inject_fault.begin(),
                              flags.inject_fault.end());
  const bool as_json = flags.as_json;
  const std::string& report_path = flags.report_path;
  if (std::getenv("SMOE_LOG_LEVEL") == nullptr) {
    SetMinLogLevel(LogLevel::kWarning);  // the trainer's step logs
  }
  ConfigureTorchThreads();
  FILE* lines = as_json ? stderr : stdout;
  std::fprintf(lines, "smoe doctor %s on %s (%s%s)\n", SMOE_VERSION,
               Hostname().c_str(), options.quick ? "--quick" : "full run",
               options.inject_fault.empty() ? "" : ", faults injected");
  std::fflush(lines);
  options.on_check = [lines](const DoctorCheck& c) {
    std::fprintf(lines, "%s\n", FormatCheckLine(c).c_str());
    std::fflush(lines);
  };
  const DoctorReport report = RunDoctor(options);
  int counts[3] = {0, 0, 0};
  for (const DoctorCheck& c : report.checks) {
    ++counts[static_cast<int>(c.verdict)];
  }
  std::fprintf(lines, "summary: %d PASS, %d FAIL, %d SKIP in %s s\n", counts[0],
               counts[1], counts[2], Num(report.seconds, 3).c_str());
  const json j = DoctorReportJson(report, options);
  int rc = report.ok() ? kExitOk : kExitFail;
  if (!report_path.empty()) {
    const std::string tmp = report_path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
      out.close();
      if (!out) {
        std::fprintf(stderr, "smoe doctor: cannot write %s: %s\n", tmp.c_str(),
                     std::strerror(errno));
        std::remove(tmp.c_str());
        return kExitFail;
      }
    }
    if (std::rename(tmp.c_str(), report_path.c_str()) != 0) {
      std::fprintf(stderr, "smoe doctor: cannot write %s: %s\n",
                   report_path.c_str(), std::strerror(errno));
      std::remove(tmp.c_str());
      return kExitFail;
    }
    std::fprintf(lines, "report: %s (attach it to bug reports)\n",
                 report_path.c_str());
  }
  if (as_json)
    std::cout << j.dump(2, ' ', false, json::error_handler_t::replace)
              << std::endl;
  std::fflush(lines);
  return rc;
}

}  // namespace

Command AddDoctorCommand(CLI::App* app) {
  auto f = std::make_shared<DoctorFlags>();
  CLI::App* cmd = app->add_subcommand(
      "doctor", "check this machine: kernels, model, communicators, training");
  cmd->footer("exit: 0 no check failed, 1 a check failed, 64 usage");
  cmd->add_flag("--quick", f->options.quick,
                "shorter run (16 training steps, smaller shapes, bench on "
                "gpu0)");
  cmd->add_flag("--json", f->as_json,
                "print the JSON report on stdout (the check lines go to "
                "stderr)");
  cmd->add_option("--report", f->report_path,
                  "also write the JSON report to FILE (attach it to bug "
                  "reports)")
      ->check(NonEmpty("file name"));
  // Repeatable, one CHECK per flag.
  cmd->add_option("--only", f->only,
                  "run only these checks (repeatable); the others are SKIP")
      ->check(OneOf(DoctorCheckNames()))
      ->allow_extra_args(false);
  cmd->add_option("--inject-fault", f->inject_fault,
                  "perturb CHECK's results so it must FAIL (tests the doctor)")
      ->check(OneOf(DoctorFaultableChecks()))
      ->allow_extra_args(false);
  return {cmd, [f] { return RunDoctorFlags(*f); }};
}

int RunDoctorCommand(int argc, char** argv) {
  return RunOneCommand("smoe-trainer", &AddDoctorCommand, argc, argv, std::cout,
                       std::cerr);
}

}  // namespace smoe::trainer
