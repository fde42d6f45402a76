// Copyright 2026 SMoE Lab authors.
//
// File: common/cpu_features.h
//
// x86-64 CPU feature detection (CPUID + XGETBV) and the pure decisions built
// on it for CPU training processes (issue 20):
//
//  * OpenBLAS kernel choice. A DYNAMIC_ARCH OpenBLAS picks its kernels from
//    the CPU model in its load-time constructor and falls back to the oldest
//    ones ("Prescott", SSE3) for models it does not know; a 2-vCPU VM with a
//    masked model name got them and ran single-thread SGEMM at 27-31 GFLOP/s
//    instead of 123-154 (SkylakeX kernels). OpenBlasCoreLevel() ranks the
//    core OpenBLAS reports, BestSimdLevel() what the CPU and the OS support,
//    and PlanCpuEnvironment() decides to set OPENBLAS_CORETYPE.
//  * OMP_WAIT_POLICY=PASSIVE for multi-thread trials: libgomp's default
//    spinning made 2 threads slower than 1 on a 2-core machine shared with
//    OpenBLAS; passive waiting gives 1.04-1.44x.
//
// Both variables are read by the libraries' constructors when the process
// loads, so they only take effect in a new process image: common/
// cpu_tuning.h applies the plan by re-executing the process once.
//
// Everything here but ReadCpuid() is a pure function (unit-tested in
// cpu_features_test.cc). No LibTorch, no BLAS: any binary may link it.
#ifndef SMOE_COMMON_CPU_FEATURES_H_
#define SMOE_COMMON_CPU_FEATURES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace smoe::cpu {

// The CPUID/XGETBV words the decoder reads (all zero off x86-64).
struct CpuidLeaves {
  uint32_t max_leaf = 0;           // leaf 0 EAX
  uint32_t vendor[3] = {0, 0, 0};  // leaf 0 EBX, EDX, ECX
  uint32_t l1_eax = 0;             // leaf 1: family/model/stepping
  uint32_t l1_ecx = 0;             // leaf 1 ECX
  uint32_t l1_edx = 0;             // leaf 1 EDX
  uint32_t l7_ebx = 0;             // leaf 7 subleaf 0 EBX
  uint32_t l7_ecx = 0;             // leaf 7 subleaf 0 ECX
  uint32_t l7s1_eax = 0;           // leaf 7 subleaf 1 EAX
  uint64_t xcr0 = 0;               // XGETBV(0), when OSXSAVE
};

struct CpuFeatures {
  std::string vendor;  // "GenuineIntel", "AuthenticAMD"; "" off x86-64
  int family = 0;      // display family/model (extended fields folded in)
  int model = 0;
  // Instruction-set bits as CPUID reports them.
  bool sse2 = false, sse3 = false, ssse3 = false, sse4_1 = false,
       sse4_2 = false, avx = false, fma = false, avx2 = false;
  bool avx512f = false, avx512dq = false, avx512cd = false, avx512bw = false,
       avx512vl = false, avx512_bf16 = false;
  // Register state the OS saves on context switch (XCR0): without it the
  // instructions fault even though CPUID lists them.
  bool os_ymm = false;  // XCR0 bits 1-2 (SSE + AVX state)
  bool os_zmm = false;  // XCR0 bits 5-7 (opmask, ZMM_Hi256, Hi16_ZMM)

  // Usable = listed by CPUID and enabled by the OS.
  bool UsableAvx() const { return avx && os_ymm; }
  bool UsableAvx2Fma() const { return UsableAvx() && avx2 && fma; }
  // The AVX-512 subset OpenBLAS's SkylakeX kernels use.
  bool UsableAvx512() const {
    return UsableAvx2Fma() && os_zmm && avx512f && avx512dq && avx512cd &&
           avx512bw && avx512vl;
  }
  // "AuthenticAMD family 25 model 17: avx2 fma avx512(f,dq,cd,bw,vl) ..."
  std::string Summary() const;
};

// Decodes raw CPUID words (pure).
CpuFeatures DecodeCpuid(const CpuidLeaves& leaves);
// Executes CPUID/XGETBV on this CPU (zeros off x86-64).
CpuidLeaves ReadCpuid();
inline CpuFeatures DetectCpuFeatures() { return DecodeCpuid(ReadCpuid()); }

// Vector ISA levels that OpenBLAS's x86-64 kernels are built for.
enum class SimdLevel {
  kUnknown = -1,
  kSse = 0,     // Prescott, Core2, Nehalem, Barcelona, ... (SSE2/SSE3)
  kAvx = 1,     // Sandybridge, Bulldozer, ... (AVX)
  kAvx2 = 2,    // Haswell, Zen (AVX2 + FMA)
  kAvx512 = 3,  // SkylakeX, Cooperlake, SapphireRapids (AVX-512)
};
absl::string_view SimdLevelName(SimdLevel level);

// The best level this CPU and OS can run.
SimdLevel BestSimdLevel(const CpuFeatures& cpu);
// The level of an OpenBLAS core name (openblas_get_corename(), any case);
// kUnknown for names not listed (left alone by the planner).
SimdLevel OpenBlasCoreLevel(absl::string_view corename);
// The OPENBLAS_CORETYPE that selects a level's kernels: "SkylakeX",
// "Haswell", "Sandybridge"; "" for kSse and kUnknown.
std::string OpenBlasCoreFor(SimdLevel level);

// Environment variables involved.
inline constexpr char kCoreTypeEnv[] = "OPENBLAS_CORETYPE";
inline constexpr char kWaitPolicyEnv[] = "OMP_WAIT_POLICY";
// Set by the re-exec so that the new image knows what happened and never
// re-execs again: "NAMES;was=CORE", NAMES the comma-separated variables this
// process set for itself ("OMP_WAIT_POLICY,OPENBLAS_CORETYPE") and CORE the
// core OpenBLAS had picked; "fallback;tried=CORE" after a failed self-test.
inline constexpr char kMarkerEnv[] = "SMOE_CPU_TUNED";
// Comma-separated flags: "off" (or "0") turns the whole mechanism off;
// "force" also corrects a user-set OPENBLAS_CORETYPE that is weaker than the
// CPU (so the correction can be exercised on a CPU that OpenBLAS detects
// right: OPENBLAS_CORETYPE=Prescott SMOE_CPU_TUNING=force); "fail-self-test"
// makes the self-test fail (tests of the fallback).
inline constexpr char kSwitchEnv[] = "SMOE_CPU_TUNING";
struct TuningSwitch {
  bool off = false;
  bool force = false;
  bool fail_self_test = false;
};
TuningSwitch ParseTuningSwitch(const std::optional<std::string>& value);
inline constexpr char kMarkerFallback[] = "fallback";

struct Marker {
  bool fallback = false;
  std::vector<std::string> names;  // variables set by this process
  std::string was;                 // OpenBLAS's own core before the re-exec
  std::string tried;               // the core that failed (fallback)
};
Marker ParseMarker(absl::string_view value);
std::string FormatMarker(const Marker& marker);

// What PlanCpuEnvironment() looks at.
struct CpuEnvInputs {
  CpuFeatures cpu;
  // From the loaded BLAS (dlsym); both empty when it is not OpenBLAS.
  std::string openblas_corename;  // "Prescott"
  std::string openblas_config;    // "OpenBLAS 0.3.21 ... DYNAMIC_ARCH ..."
  // The process environment (unset = nullopt).
  std::optional<std::string> coretype;     // OPENBLAS_CORETYPE
  std::optional<std::string> wait_policy;  // OMP_WAIT_POLICY
  std::optional<std::string> omp_threads;  // OMP_NUM_THREADS
  std::optional<std::string> marker;       // SMOE_CPU_TUNED
  std::optional<std::string> tuning;       // SMOE_CPU_TUNING
};

struct CpuEnvPlan {
  // Variables to set before re-executing (empty: no re-exec).
  std::map<std::string, std::string> set_env;
  // This process runs kernels chosen by an earlier image's plan: run the
  // GEMM self-test before trusting them (and fall back when it fails).
  bool self_test = false;
  bool fail_self_test = false;  // SMOE_CPU_TUNING=fail-self-test
  // The one log line about what was detected and decided; `warn` when the
  // BLAS runs below what the CPU supports and nothing could fix it.
  std::string message;
  bool warn = false;

  bool reexec() const { return !set_env.empty(); }
};

// The decision (pure). Never overrides a user-set OPENBLAS_CORETYPE (unless
// SMOE_CPU_TUNING=force) or OMP_WAIT_POLICY; re-execs at most once (the
// marker).
CpuEnvPlan PlanCpuEnvironment(const CpuEnvInputs& in);

// Numeric check of one SGEMM result against a double-precision reference:
// C = alpha * op(A) * op(B) + beta * C0, row-major, op = transpose when
// trans_*. Every element must lie within the worst-case float rounding bound
// of a k-term dot product in any summation order (with or without FMA):
// |C - ref| <= (2 k u) (|alpha| |op(A)| |op(B)| + |beta| |C0|) + u |ref|,
// u = 2^-24, and be finite. Returns "" when it does, else a description of
// the first bad element (pure).
std::string CheckGemm(int m, int n, int k, bool trans_a, bool trans_b,
                      float alpha, const std::vector<float>& a,
                      const std::vector<float>& b, float beta,
                      const std::vector<float>& c0,
                      const std::vector<float>& c);

}  // namespace smoe::cpu

#endif  // SMOE_COMMON_CPU_FEATURES_H_
