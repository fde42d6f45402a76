// Copyright 2026 SMoE Lab authors.
#include "common/cpu_tuning.h"

#include <dlfcn.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <setjmp.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace smoe::cpu {
namespace {

// CBLAS enums (cblas.h), spelled out to need no BLAS header.
constexpr int kRowMajor = 101;
constexpr int kNoTrans = 111;
constexpr int kTrans = 112;

using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int,
                         const float*, int, float, float*, int);
using CharFn = char* (*)();
using GetThreadsFn = int (*)();
using SetThreadsFn = void (*)(int);

template <typename Fn>
Fn Lookup(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

std::optional<std::string> Env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

sigjmp_buf g_sigill_jump;
void OnSigill(int) { siglongjmp(g_sigill_jump, 1); }

// Execs /proc/self/exe with argv; returns only when that fails.
void Reexec(char** argv) {
  std::fflush(nullptr);
  execv("/proc/self/exe", argv);
}

}  // namespace

std::string LoadedOpenBlasCoreName() {
  auto fn = Lookup<CharFn>("openblas_get_corename");
  const char* s = fn != nullptr ? fn() : nullptr;
  return s != nullptr ? std::string(s) : std::string();
}

std::string LoadedOpenBlasConfig() {
  auto fn = Lookup<CharFn>("openblas_get_config");
  const char* s = fn != nullptr ? fn() : nullptr;
  return s != nullptr ? std::string(s) : std::string();
}

CpuEnvInputs CollectCpuEnvInputs() {
  CpuEnvInputs in;
  in.cpu = DetectCpuFeatures();
  in.openblas_corename = LoadedOpenBlasCoreName();
  in.openblas_config = LoadedOpenBlasConfig();
  in.coretype = Env(kCoreTypeEnv);
  in.wait_policy = Env(kWaitPolicyEnv);
  in.omp_threads = Env("OMP_NUM_THREADS");
  in.marker = Env(kMarkerEnv);
  in.tuning = Env(kSwitchEnv);
  return in;
}

std::string RunBlasSelfTest() {
  auto sgemm = Lookup<SgemmFn>("cblas_sgemm");
  if (sgemm == nullptr) return "no cblas_sgemm in the process";
  struct Case {
    int m, n, k;
    bool ta, tb;
    float alpha, beta;
  };
  static constexpr Case kCases[] = {
      {128, 256, 128, false, false, 1.0f, 0.0f},
      {97, 211, 53, false, true, 1.0f, 0.0f},
      {33, 7, 129, true, false, 1.0f, 0.0f},
      {1, 64, 300, false, false, 1.0f, 0.0f},
      {64, 1, 64, true, true, -0.5f, 0.75f},
  };
  auto get_threads = Lookup<GetThreadsFn>("openblas_get_num_threads");
  auto set_threads = Lookup<SetThreadsFn>("openblas_set_num_threads");
  const int threads = get_threads != nullptr ? get_threads() : 0;
  // One thread: a SIGILL then arrives on this thread, where the jump is.
  if (set_threads != nullptr && threads > 1) set_threads(1);
  struct sigaction sa, old;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnSigill;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGILL, &sa, &old);
  std::string error;
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>(static_cast<int64_t>(state >> 40) -
                              (int64_t{1} << 23)) /
           static_cast<float>(int64_t{1} << 23);  // [-1, 1)
  };
  for (const Case& c : kCases) {
    std::vector<float> a(static_cast<size_t>(c.m) * c.k),
        b(static_cast<size_t>(c.k) * c.n), c0(static_cast<size_t>(c.m) * c.n);
    for (float& x : a) x = next();
    for (float& x : b) x = next();
    for (float& x : c0) x = 100.0f * next();  // must vanish when beta = 0
    std::vector<float> out = c0;
    if (sigsetjmp(g_sigill_jump, 1) != 0) {
      error = absl::StrCat("SIGILL in cblas_sgemm ", c.m, "x", c.n, "x", c.k,
                           " (the kernels use instructions this CPU lacks)");
      break;
    }
    sgemm(kRowMajor, c.ta ? kTrans : kNoTrans, c.tb ? kTrans : kNoTrans, c.m,
          c.n, c.k, c.alpha, a.data(), c.ta ? c.m : c.k, b.data(),
          c.tb ? c.k : c.n, c.beta, out.data(), c.n);
    error =
        CheckGemm(c.m, c.n, c.k, c.ta, c.tb, c.alpha, a, b, c.beta, c0, out);
    if (!error.empty()) break;
  }
  sigaction(SIGILL, &old, nullptr);
  if (set_threads != nullptr && threads > 1) set_threads(threads);
  return error;
}

void KeepFreedMemory() {
#if defined(__GLIBC__)
  const char* sw = std::getenv(kSwitchEnv);
  if (sw != nullptr && std::strcmp(sw, "off") == 0) return;
  // glibc serves blocks above M_MMAP_THRESHOLD with fresh mmap()s and gives
  // heap tops above M_TRIM_THRESHOLD back to the kernel, so a training step's
  // large activations were new pages every step: page faults and the
  // kernel's page clearing took 7-20 % of a SRAVEN step (issue 19,
  // bench/results/sraven-profile-2026-11-24.md). Serve blocks up to 32 MiB
  // (glibc's maximum) from the heap and keep up to 1 GiB of free heap.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

std::string TuneCpuRuntime(char** argv) {
  KeepFreedMemory();
  const CpuEnvInputs in = CollectCpuEnvInputs();
  const CpuEnvPlan plan = PlanCpuEnvironment(in);
  if (plan.reexec()) {
    for (const auto& [k, v] : plan.set_env) setenv(k.c_str(), v.c_str(), 1);
    Reexec(argv);
    const int err = errno;
    for (const auto& [k, v] : plan.set_env) unsetenv(k.c_str());
    const std::string msg =
        absl::StrCat(plan.message, " - but execv(/proc/self/exe) failed: ",
                     std::strerror(err), "; running unchanged");
    SMOE_LOG(WARNING) << msg;
    return msg;
  }
  if (plan.self_test) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string error =
        plan.fail_self_test
            ? absl::StrCat("failure forced by ", kSwitchEnv, "=fail-self-test")
            : RunBlasSelfTest();
    const double ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - t0)
                          .count();
    if (error.empty()) {
      const std::string msg =
          absl::StrCat(plan.message, "; GEMM self-test passed (",
                       static_cast<int>(ms + 0.5), " ms)");
      SMOE_LOG(INFO) << msg;
      return msg;
    }
    SMOE_LOG(WARNING) << plan.message << "; GEMM self-test FAILED: " << error
                      << "; re-executing with OpenBLAS's own choice";
    Marker m;
    m.fallback = true;
    m.tried = in.openblas_corename;
    unsetenv(kCoreTypeEnv);
    setenv(kMarkerEnv, FormatMarker(m).c_str(), 1);
    Reexec(argv);
    const std::string msg = absl::StrCat(
        "cpu tuning: execv(/proc/self/exe) failed: ", std::strerror(errno),
        "; running the kernels that failed the self-test");
    SMOE_LOG(ERROR) << msg;
    return msg;
  }
  if (plan.warn) {
    SMOE_LOG(WARNING) << plan.message;
  } else {
    SMOE_LOG(INFO) << plan.message;
  }
  return plan.message;
}

}  // namespace smoe::cpu
