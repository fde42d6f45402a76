// Copyright 2026 SMoE Lab authors.
#include "common/cpu_features.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define SMOE_HAVE_CPUID 1
#else
#define SMOE_HAVE_CPUID 0
#endif

namespace smoe::cpu {
namespace {

bool Bit(uint32_t word, int bit) { return (word >> bit) & 1u; }

}  // namespace

std::string CpuFeatures::Summary() const {
  if (vendor.empty()) return "non-x86 CPU (no CPUID)";
  std::vector<std::string> isa;
  if (sse3) isa.push_back("sse3");
  if (sse4_2) isa.push_back("sse4.2");
  if (avx) isa.push_back("avx");
  if (avx2) isa.push_back("avx2");
  if (fma) isa.push_back("fma");
  std::vector<std::string> avx512;
  if (avx512f) avx512.push_back("f");
  if (avx512dq) avx512.push_back("dq");
  if (avx512cd) avx512.push_back("cd");
  if (avx512bw) avx512.push_back("bw");
  if (avx512vl) avx512.push_back("vl");
  if (avx512_bf16) avx512.push_back("bf16");
  if (!avx512.empty()) {
    isa.push_back(absl::StrCat("avx512(", absl::StrJoin(avx512, ","), ")"));
  }
  return absl::StrCat(vendor, " family ", family, " model ", model, ": ",
                      isa.empty() ? "sse2" : absl::StrJoin(isa, " "),
                      "; OS saves ",
                      os_zmm   ? "zmm"
                      : os_ymm ? "ymm"
                               : "xmm",
                      " state");
}

CpuFeatures DecodeCpuid(const CpuidLeaves& l) {
  CpuFeatures f;
  if (l.max_leaf == 0) return f;
  char vendor[13];
  std::memcpy(vendor, &l.vendor[0], 4);
  std::memcpy(vendor + 4, &l.vendor[1], 4);
  std::memcpy(vendor + 8, &l.vendor[2], 4);
  vendor[12] = '\0';
  f.vendor = vendor;
  const int base_family = static_cast<int>((l.l1_eax >> 8) & 0xF);
  const int ext_family = static_cast<int>((l.l1_eax >> 20) & 0xFF);
  const int base_model = static_cast<int>((l.l1_eax >> 4) & 0xF);
  const int ext_model = static_cast<int>((l.l1_eax >> 16) & 0xF);
  f.family = base_family == 0xF ? base_family + ext_family : base_family;
  f.model = (base_family == 0x6 || base_family == 0xF)
                ? (ext_model << 4) + base_model
                : base_model;
  f.sse2 = Bit(l.l1_edx, 26);
  f.sse3 = Bit(l.l1_ecx, 0);
  f.ssse3 = Bit(l.l1_ecx, 9);
  f.fma = Bit(l.l1_ecx, 12);
  f.sse4_1 = Bit(l.l1_ecx, 19);
  f.sse4_2 = Bit(l.l1_ecx, 20);
  const bool osxsave = Bit(l.l1_ecx, 27);
  f.avx = Bit(l.l1_ecx, 28);
  if (l.max_leaf >= 7) {
    f.avx2 = Bit(l.l7_ebx, 5);
    f.avx512f = Bit(l.l7_ebx, 16);
    f.avx512dq = Bit(l.l7_ebx, 17);
    f.avx512cd = Bit(l.l7_ebx, 28);
    f.avx512bw = Bit(l.l7_ebx, 30);
    f.avx512vl = Bit(l.l7_ebx, 31);
    f.avx512_bf16 = Bit(l.l7s1_eax, 5);
  }
  if (osxsave) {
    f.os_ymm = (l.xcr0 & 0x6) == 0x6;
    f.os_zmm = f.os_ymm && (l.xcr0 & 0xE0) == 0xE0;
  }
  return f;
}

CpuidLeaves ReadCpuid() {
  CpuidLeaves l;
#if SMOE_HAVE_CPUID
  unsigned int a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return l;
  l.max_leaf = a;
  l.vendor[0] = b;
  l.vendor[1] = d;
  l.vendor[2] = c;
  if (l.max_leaf >= 1 && __get_cpuid(1, &a, &b, &c, &d) != 0) {
    l.l1_eax = a;
    l.l1_ecx = c;
    l.l1_edx = d;
  }
  if (l.max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    l.l7_ebx = b;
    l.l7_ecx = c;
    const uint32_t max_sub = a;
    if (max_sub >= 1) {
      __cpuid_count(7, 1, a, b, c, d);
      l.l7s1_eax = a;
    }
  }
  if (Bit(l.l1_ecx, 27)) {  // OSXSAVE: XGETBV is available
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    l.xcr0 = (static_cast<uint64_t>(hi) << 32) | lo;
  }
#endif
  return l;
}

absl::string_view SimdLevelName(SimdLevel level) {
  switch (level) {
    case SimdLevel::kSse:
      return "SSE";
    case SimdLevel::kAvx:
      return "AVX";
    case SimdLevel::kAvx2:
      return "AVX2+FMA";
    case SimdLevel::kAvx512:
      return "AVX-512";
    case SimdLevel::kUnknown:
      break;
  }
  return "unknown";
}

SimdLevel BestSimdLevel(const CpuFeatures& cpu) {
  if (cpu.vendor.empty()) return SimdLevel::kUnknown;
  if (cpu.UsableAvx512()) return SimdLevel::kAvx512;
  if (cpu.UsableAvx2Fma()) return SimdLevel::kAvx2;
  if (cpu.UsableAvx()) return SimdLevel::kAvx;
  return SimdLevel::kSse;
}

SimdLevel OpenBlasCoreLevel(absl::string_view corename) {
  // The x86-64 cores of a DYNAMIC_ARCH OpenBLAS (driver/others/dynamic.c,
  // corename[]), by the vector ISA of their SGEMM kernels.
  static constexpr struct {
    const char* name;
    SimdLevel level;
  } kCores[] = {
      {"katmai", SimdLevel::kSse},
      {"coppermine", SimdLevel::kSse},
      {"northwood", SimdLevel::kSse},
      {"prescott", SimdLevel::kSse},
      {"banias", SimdLevel::kSse},
      {"atom", SimdLevel::kSse},
      {"core2", SimdLevel::kSse},
      {"penryn", SimdLevel::kSse},
      {"dunnington", SimdLevel::kSse},
      {"nehalem", SimdLevel::kSse},
      {"athlon", SimdLevel::kSse},
      {"opteron", SimdLevel::kSse},
      {"opteron_sse3", SimdLevel::kSse},
      {"barcelona", SimdLevel::kSse},
      {"nano", SimdLevel::kSse},
      {"bobcat", SimdLevel::kSse},
      {"sandybridge", SimdLevel::kAvx},
      {"bulldozer", SimdLevel::kAvx},
      {"piledriver", SimdLevel::kAvx},
      {"steamroller", SimdLevel::kAvx},
      {"excavator", SimdLevel::kAvx},
      {"haswell", SimdLevel::kAvx2},
      {"zen", SimdLevel::kAvx2},
      {"skylakex", SimdLevel::kAvx512},
      {"cooperlake", SimdLevel::kAvx512},
      {"sapphirerapids", SimdLevel::kAvx512},
  };
  const std::string name =
      absl::AsciiStrToLower(absl::StripAsciiWhitespace(corename));
  for (const auto& c : kCores) {
    if (name == c.name) return c.level;
  }
  return SimdLevel::kUnknown;
}

std::string OpenBlasCoreFor(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx512:
      return "SkylakeX";
    case SimdLevel::kAvx2:
      return "Haswell";
    case SimdLevel::kAvx:
      return "Sandybridge";
    case SimdLevel::kSse:
    case SimdLevel::kUnknown:
      break;
  }
  return "";
}

Marker ParseMarker(absl::string_view value) {
  Marker m;
  std::vector<absl::string_view> parts = absl::StrSplit(value, ';');
  if (parts.empty()) return m;
  if (parts[0] == kMarkerFallback) {
    m.fallback = true;
  } else {
    for (absl::string_view n :
         absl::StrSplit(parts[0], ',', absl::SkipEmpty())) {
      m.names.emplace_back(absl::StripAsciiWhitespace(n));
    }
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    absl::string_view p = parts[i];
    if (absl::ConsumePrefix(&p, "was=")) m.was = std::string(p);
    if (absl::ConsumePrefix(&p, "tried=")) m.tried = std::string(p);
  }
  return m;
}

std::string FormatMarker(const Marker& m) {
  std::string out = m.fallback ? kMarkerFallback : absl::StrJoin(m.names, ",");
  if (!m.was.empty()) absl::StrAppend(&out, ";was=", m.was);
  if (!m.tried.empty()) absl::StrAppend(&out, ";tried=", m.tried);
  return out;
}

TuningSwitch ParseTuningSwitch(const std::optional<std::string>& value) {
  TuningSwitch t;
  if (!value.has_value()) return t;
  for (absl::string_view f : absl::StrSplit(*value, ',', absl::SkipEmpty())) {
    const std::string flag =
        absl::AsciiStrToLower(absl::StripAsciiWhitespace(f));
    if (flag == "off" || flag == "0" || flag == "false" || flag == "no") {
      t.off = true;
    } else if (flag == "force") {
      t.force = true;
    } else if (flag == "fail-self-test") {
      t.fail_self_test = true;
    }
  }
  return t;
}

CpuEnvPlan PlanCpuEnvironment(const CpuEnvInputs& in) {
  CpuEnvPlan plan;
  const std::string& core = in.openblas_corename;
  const std::string cpu = in.cpu.Summary();
  const TuningSwitch sw = ParseTuningSwitch(in.tuning);
  plan.fail_self_test = sw.fail_self_test;
  if (sw.off) {
    plan.message = absl::StrCat(
        "cpu tuning off (", kSwitchEnv, "=", *in.tuning, "); ", cpu,
        core.empty() ? "" : absl::StrCat("; OpenBLAS core ", core));
    return plan;
  }
  if (in.marker.has_value()) {
    const Marker m = ParseMarker(*in.marker);
    if (m.fallback) {
      plan.warn = true;
      plan.message = absl::StrCat(
          "cpu tuning: ", cpu, "; OpenBLAS ",
          m.tried.empty() ? "kernels" : absl::StrCat(m.tried, " kernels"),
          " failed the GEMM self-test: running OpenBLAS's own choice",
          core.empty() ? "" : absl::StrCat(" (", core, ")"));
      return plan;
    }
    std::vector<std::string> notes;
    for (const std::string& v : m.names) {
      if (v == kCoreTypeEnv) {
        const std::string want = in.coretype.value_or("");
        if (absl::AsciiStrToLower(want) == absl::AsciiStrToLower(core)) {
          plan.self_test = true;
          notes.push_back(absl::StrCat(
              "OpenBLAS picked ", m.was.empty() ? "?" : m.was, " (",
              SimdLevelName(OpenBlasCoreLevel(m.was)), " kernels); now runs ",
              core, " (", kCoreTypeEnv, "=", want, ")"));
        } else {
          plan.warn = true;
          notes.push_back(absl::StrCat("OpenBLAS ignored ", kCoreTypeEnv, "=",
                                       want, " and runs ",
                                       core.empty() ? "?" : core));
        }
      } else if (v == kWaitPolicyEnv) {
        notes.push_back(
            absl::StrCat(kWaitPolicyEnv, "=", in.wait_policy.value_or(""), " (",
                         in.omp_threads.value_or("?"), " OpenMP threads)"));
      }
    }
    plan.message =
        absl::StrCat("cpu tuning: ", cpu, "; ", absl::StrJoin(notes, "; "));
    return plan;
  }

  std::vector<std::string> notes;
  // OMP_WAIT_POLICY: only matters with more than one OpenMP thread.
  int threads = 1;
  if (in.omp_threads.has_value() &&
      !absl::SimpleAtoi(*in.omp_threads, &threads)) {
    threads = 1;
  }
  if (threads > 1) {
    if (in.wait_policy.has_value()) {
      notes.push_back(absl::StrCat(kWaitPolicyEnv, "=", *in.wait_policy,
                                   " set by the user: kept"));
    } else {
      plan.set_env[kWaitPolicyEnv] = "PASSIVE";
      notes.push_back(absl::StrCat(threads, " OpenMP threads: ", kWaitPolicyEnv,
                                   "=PASSIVE"));
    }
  }
  // OpenBLAS kernels.
  const SimdLevel cpu_level = BestSimdLevel(in.cpu);
  if (core.empty()) {
    notes.push_back(
        "the BLAS is not OpenBLAS (no openblas_get_corename): kernels not "
        "checked");
  } else if (in.coretype.has_value() && !sw.force) {
    notes.push_back(absl::StrCat(kCoreTypeEnv, "=", *in.coretype,
                                 " set by the user: kept (OpenBLAS runs ", core,
                                 ")"));
  } else {
    const SimdLevel blas_level = OpenBlasCoreLevel(core);
    if (blas_level == SimdLevel::kUnknown || cpu_level == SimdLevel::kUnknown) {
      notes.push_back(absl::StrCat("OpenBLAS core ", core,
                                   ": not ranked here, left alone"));
    } else if (blas_level >= cpu_level) {
      notes.push_back(absl::StrCat("OpenBLAS core ", core, " (",
                                   SimdLevelName(blas_level),
                                   ") matches the CPU"));
    } else if (!absl::StrContains(in.openblas_config, "DYNAMIC_ARCH")) {
      plan.warn = true;
      notes.push_back(absl::StrCat(
          "OpenBLAS is built for ", core, " only (", SimdLevelName(blas_level),
          " kernels, no DYNAMIC_ARCH) on a CPU with ", SimdLevelName(cpu_level),
          ": GEMM runs several times slower; install a DYNAMIC_ARCH OpenBLAS "
          "(Debian: libopenblas0-pthread)"));
    } else {
      const std::string want = OpenBlasCoreFor(cpu_level);
      plan.set_env[kCoreTypeEnv] = want;
      notes.push_back(absl::StrCat(
          "OpenBLAS picked ", core, " (", SimdLevelName(blas_level),
          " kernels) on a CPU with ", SimdLevelName(cpu_level), ": ",
          kCoreTypeEnv, "=", want));
    }
  }
  if (plan.reexec()) {
    Marker m;
    for (const auto& [k, v] : plan.set_env) m.names.push_back(k);
    if (plan.set_env.count(kCoreTypeEnv) > 0) m.was = core;
    plan.set_env[kMarkerEnv] = FormatMarker(m);
    notes.push_back("re-executing once to apply");
  }
  plan.message =
      absl::StrCat("cpu tuning: ", cpu, "; ", absl::StrJoin(notes, "; "));
  return plan;
}

std::string CheckGemm(int m, int n, int k, bool trans_a, bool trans_b,
                      float alpha, const std::vector<float>& a,
                      const std::vector<float>& b, float beta,
                      const std::vector<float>& c0,
                      const std::vector<float>& c) {
  const size_t mn = static_cast<size_t>(m) * n;
  if (a.size() != static_cast<size_t>(m) * k ||
      b.size() != static_cast<size_t>(k) * n || c0.size() != mn ||
      c.size() != mn) {
    return "CheckGemm: sizes do not match m, n, k";
  }
  constexpr double u = 1.0 / (1 << 24);  // float unit roundoff
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double ref = 0, mag = 0;
      for (int p = 0; p < k; ++p) {
        const double av = trans_a ? a[static_cast<size_t>(p) * m + i]
                                  : a[static_cast<size_t>(i) * k + p];
        const double bv = trans_b ? b[static_cast<size_t>(j) * k + p]
                                  : b[static_cast<size_t>(p) * n + j];
        ref += av * bv;
        mag += std::fabs(av * bv);
      }
      const size_t idx = static_cast<size_t>(i) * n + j;
      // beta = 0: C0 is not read (BLAS semantics; it may hold NaN).
      const double cv = beta == 0 ? 0.0 : static_cast<double>(c0[idx]);
      ref = alpha * ref + beta * cv;
      mag = std::fabs(alpha) * mag + std::fabs(beta * cv);
      const double got = c[idx];
      const double bound = 2.0 * (k + 2) * u * mag + u * std::fabs(ref);
      if (!std::isfinite(got) || std::fabs(got - ref) > bound) {
        return absl::StrCat("C[", i, ",", j, "] = ", got, ", reference ", ref,
                            " (error ", std::fabs(got - ref), " > bound ",
                            bound, ") for ", m, "x", n, "x", k,
                            trans_a ? " A^T" : "", trans_b ? " B^T" : "");
      }
    }
  }
  return "";
}

}  // namespace smoe::cpu
