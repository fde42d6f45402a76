// Copyright 2026 SMoE Lab authors.
//
// CPU feature decoding and the OpenBLAS / OpenMP environment plan (pure
// functions: feature bits -> core type -> variables to set).
#include "common/cpu_features.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::cpu {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// CPUID words of the dev VM (AMD EPYC, family 25 model 17, "Genoa"), as read
// there with __get_cpuid / xgetbv.
CpuidLeaves Genoa() {
  CpuidLeaves l;
  l.max_leaf = 28;
  l.vendor[0] = 0x68747541;  // "Auth"
  l.vendor[1] = 0x69746e65;  // "enti"
  l.vendor[2] = 0x444d4163;  // "cAMD"
  l.l1_eax = 0x00a10f11;
  l.l1_ecx = 0xfffa3203;
  l.l1_edx = 0x178bfbff;
  l.l7_ebx = 0xf1bf07ab;
  l.l7_ecx = 0x00405fc6;
  l.l7s1_eax = 0x00000020;
  l.xcr0 = 0xe7;
  return l;
}

// Builds Intel-flavoured words from named features.
CpuidLeaves Intel(uint32_t l1_eax, bool avx, bool fma, bool avx2, bool avx512,
                  uint64_t xcr0, bool osxsave = true) {
  CpuidLeaves l;
  l.max_leaf = 22;
  l.vendor[0] = 0x756e6547;  // "Genu"
  l.vendor[1] = 0x49656e69;  // "ineI"
  l.vendor[2] = 0x6c65746e;  // "ntel"
  l.l1_eax = l1_eax;
  l.l1_edx = 1u << 26;                                  // sse2
  l.l1_ecx = 1u | (1u << 9) | (1u << 19) | (1u << 20);  // sse3 ssse3 4.1 4.2
  if (fma) l.l1_ecx |= 1u << 12;
  if (osxsave) l.l1_ecx |= 1u << 27;
  if (avx) l.l1_ecx |= 1u << 28;
  if (avx2) l.l7_ebx |= 1u << 5;
  if (avx512) {
    l.l7_ebx |= (1u << 16) | (1u << 17) | (1u << 28) | (1u << 30) | (1u << 31);
  }
  l.xcr0 = xcr0;
  return l;
}

TEST(CpuFeaturesTest, DecodesTheDevVm) {
  const CpuFeatures f = DecodeCpuid(Genoa());
  EXPECT_EQ(f.vendor, "AuthenticAMD");
  EXPECT_EQ(f.family, 25);
  EXPECT_EQ(f.model, 17);
  EXPECT_TRUE(f.sse2 && f.sse3 && f.ssse3 && f.sse4_1 && f.sse4_2);
  EXPECT_TRUE(f.avx && f.fma && f.avx2);
  EXPECT_TRUE(f.avx512f && f.avx512dq && f.avx512cd && f.avx512bw &&
              f.avx512vl && f.avx512_bf16);
  EXPECT_TRUE(f.os_ymm);
  EXPECT_TRUE(f.os_zmm);
  EXPECT_EQ(BestSimdLevel(f), SimdLevel::kAvx512);
  EXPECT_THAT(f.Summary(), HasSubstr("AuthenticAMD family 25 model 17"));
  EXPECT_THAT(f.Summary(), HasSubstr("avx512(f,dq,cd,bw,vl,bf16)"));
}

TEST(CpuFeaturesTest, FamilyAndModelFoldTheExtendedFields) {
  // Skylake-SP: family 6, model 0x55.
  const CpuFeatures f =
      DecodeCpuid(Intel(0x00050654, true, true, true, true, 0xe7));
  EXPECT_EQ(f.vendor, "GenuineIntel");
  EXPECT_EQ(f.family, 6);
  EXPECT_EQ(f.model, 85);
  EXPECT_EQ(BestSimdLevel(f), SimdLevel::kAvx512);
}

TEST(CpuFeaturesTest, TheOsMustSaveTheRegisters) {
  // AVX-512 listed, but the OS saves only ymm state: AVX2 at best.
  EXPECT_EQ(BestSimdLevel(DecodeCpuid(
                Intel(0x00050654, true, true, true, true, /*xcr0=*/0x7))),
            SimdLevel::kAvx2);
  // No OSXSAVE: XCR0 is not even readable, so no AVX of any kind.
  EXPECT_EQ(BestSimdLevel(DecodeCpuid(Intel(0x00050654, true, true, true, true,
                                            0xe7, /*osxsave=*/false))),
            SimdLevel::kSse);
  // ymm state saved but not the SSE state bit: unusable too.
  EXPECT_EQ(BestSimdLevel(DecodeCpuid(
                Intel(0x00050654, true, true, true, false, /*xcr0=*/0x5))),
            SimdLevel::kSse);
}

TEST(CpuFeaturesTest, LevelsFollowTheInstructionSets) {
  // Sandy Bridge: AVX without FMA/AVX2.
  EXPECT_EQ(BestSimdLevel(
                DecodeCpuid(Intel(0x000206a7, true, false, false, false, 0x7))),
            SimdLevel::kAvx);
  // Haswell: AVX2 + FMA.
  EXPECT_EQ(BestSimdLevel(
                DecodeCpuid(Intel(0x000306c3, true, true, true, false, 0x7))),
            SimdLevel::kAvx2);
  // AVX2 without FMA is not Haswell-class.
  EXPECT_EQ(BestSimdLevel(
                DecodeCpuid(Intel(0x000306c3, true, false, true, false, 0x7))),
            SimdLevel::kAvx);
  // Nehalem: SSE only.
  EXPECT_EQ(BestSimdLevel(DecodeCpuid(
                Intel(0x000106a5, false, false, false, false, 0x3))),
            SimdLevel::kSse);
  // No CPUID at all (non-x86).
  EXPECT_EQ(BestSimdLevel(DecodeCpuid(CpuidLeaves{})), SimdLevel::kUnknown);
}

TEST(CpuFeaturesTest, ThisMachineDecodesSomething) {
  const CpuFeatures f = DetectCpuFeatures();
#if defined(__x86_64__)
  EXPECT_FALSE(f.vendor.empty());
  EXPECT_TRUE(f.sse2);  // every x86-64 CPU has it
  EXPECT_NE(BestSimdLevel(f), SimdLevel::kUnknown);
#endif
}

TEST(OpenBlasCoreTest, NamesRankByTheirKernels) {
  EXPECT_EQ(OpenBlasCoreLevel("Prescott"), SimdLevel::kSse);
  EXPECT_EQ(OpenBlasCoreLevel("NEHALEM"), SimdLevel::kSse);
  EXPECT_EQ(OpenBlasCoreLevel("Sandybridge"), SimdLevel::kAvx);
  EXPECT_EQ(OpenBlasCoreLevel("Haswell"), SimdLevel::kAvx2);
  EXPECT_EQ(OpenBlasCoreLevel("Zen"), SimdLevel::kAvx2);
  EXPECT_EQ(OpenBlasCoreLevel("SkylakeX"), SimdLevel::kAvx512);
  EXPECT_EQ(OpenBlasCoreLevel(" cooperlake "), SimdLevel::kAvx512);
  EXPECT_EQ(OpenBlasCoreLevel("SapphireRapids"), SimdLevel::kAvx512);
  EXPECT_EQ(OpenBlasCoreLevel("NeoverseN1"), SimdLevel::kUnknown);
  EXPECT_EQ(OpenBlasCoreLevel(""), SimdLevel::kUnknown);
  EXPECT_EQ(OpenBlasCoreFor(SimdLevel::kAvx512), "SkylakeX");
  EXPECT_EQ(OpenBlasCoreFor(SimdLevel::kAvx2), "Haswell");
  EXPECT_EQ(OpenBlasCoreFor(SimdLevel::kAvx), "Sandybridge");
  EXPECT_EQ(OpenBlasCoreFor(SimdLevel::kSse), "");
  // Every core we may ask for ranks at the level it was chosen for.
  for (SimdLevel l : {SimdLevel::kAvx, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    EXPECT_EQ(OpenBlasCoreLevel(OpenBlasCoreFor(l)), l);
  }
}

constexpr char kDynamic[] =
    "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Prescott "
    "MAX_THREADS=64";

CpuEnvInputs Inputs(const std::string& core) {
  CpuEnvInputs in;
  in.cpu = DecodeCpuid(Genoa());
  in.openblas_corename = core;
  in.openblas_config = kDynamic;
  return in;
}

TEST(PlanCpuEnvironmentTest, CorrectsAMisdetectedCore) {
  const CpuEnvPlan p = PlanCpuEnvironment(Inputs("Prescott"));
  EXPECT_TRUE(p.reexec());
  EXPECT_EQ(p.set_env.at("OPENBLAS_CORETYPE"), "SkylakeX");
  EXPECT_EQ(p.set_env.at("SMOE_CPU_TUNED"), "OPENBLAS_CORETYPE;was=Prescott");
  EXPECT_EQ(p.set_env.count("OMP_WAIT_POLICY"), 0u);  // one thread
  EXPECT_FALSE(p.self_test);
  EXPECT_THAT(p.message, HasSubstr("OpenBLAS picked Prescott (SSE kernels) on "
                                   "a CPU with AVX-512: "
                                   "OPENBLAS_CORETYPE=SkylakeX"));
}

TEST(PlanCpuEnvironmentTest, AvxTwoCpuGetsHaswell) {
  CpuEnvInputs in = Inputs("Prescott");
  in.cpu = DecodeCpuid(Intel(0x000306c3, true, true, true, false, 0x7));
  EXPECT_EQ(PlanCpuEnvironment(in).set_env.at("OPENBLAS_CORETYPE"), "Haswell");
  in.openblas_corename = "Sandybridge";  // still below the CPU
  EXPECT_EQ(PlanCpuEnvironment(in).set_env.at("OPENBLAS_CORETYPE"), "Haswell");
  in.openblas_corename = "Zen";  // AVX2 kernels: fine
  EXPECT_FALSE(PlanCpuEnvironment(in).reexec());
}

TEST(PlanCpuEnvironmentTest, LeavesAMatchingCoreAlone) {
  for (const char* core : {"Cooperlake", "SkylakeX", "SapphireRapids"}) {
    const CpuEnvPlan p = PlanCpuEnvironment(Inputs(core));
    EXPECT_FALSE(p.reexec()) << core;
    EXPECT_FALSE(p.warn) << core;
    EXPECT_THAT(p.message, HasSubstr("matches the CPU")) << core;
  }
}

TEST(PlanCpuEnvironmentTest, NeverOverridesTheUser) {
  CpuEnvInputs in = Inputs("Prescott");
  in.coretype = "Prescott";
  CpuEnvPlan p = PlanCpuEnvironment(in);
  EXPECT_FALSE(p.reexec());
  EXPECT_THAT(p.message, HasSubstr("OPENBLAS_CORETYPE=Prescott set by the "
                                   "user: kept"));
  // ... unless told to.
  in.tuning = "force";
  p = PlanCpuEnvironment(in);
  EXPECT_EQ(p.set_env.at("OPENBLAS_CORETYPE"), "SkylakeX");

  in = Inputs("Cooperlake");
  in.omp_threads = "2";
  in.wait_policy = "ACTIVE";
  p = PlanCpuEnvironment(in);
  EXPECT_FALSE(p.reexec());
  EXPECT_THAT(p.message, HasSubstr("OMP_WAIT_POLICY=ACTIVE set by the user"));
}

TEST(PlanCpuEnvironmentTest, PassiveWaitForMultiThreadTrials) {
  CpuEnvInputs in = Inputs("Cooperlake");
  in.omp_threads = "2";
  CpuEnvPlan p = PlanCpuEnvironment(in);
  EXPECT_EQ(p.set_env.at("OMP_WAIT_POLICY"), "PASSIVE");
  EXPECT_EQ(p.set_env.at("SMOE_CPU_TUNED"), "OMP_WAIT_POLICY");
  EXPECT_EQ(p.set_env.count("OPENBLAS_CORETYPE"), 0u);
  for (const char* n : {"1", "0", "", "x"}) {
    in.omp_threads = n;
    EXPECT_FALSE(PlanCpuEnvironment(in).reexec()) << n;
  }
  in = Inputs("Prescott");
  in.omp_threads = "4";
  p = PlanCpuEnvironment(in);
  EXPECT_EQ(p.set_env.at("SMOE_CPU_TUNED"),
            "OMP_WAIT_POLICY,OPENBLAS_CORETYPE;was=Prescott");
}

TEST(PlanCpuEnvironmentTest, WarnsWhenItCannotCorrect) {
  CpuEnvInputs in = Inputs("Prescott");
  in.openblas_config = "OpenBLAS 0.3.21 NO_AFFINITY Prescott MAX_THREADS=64";
  const CpuEnvPlan p = PlanCpuEnvironment(in);
  EXPECT_FALSE(p.reexec());
  EXPECT_TRUE(p.warn);
  EXPECT_THAT(p.message, HasSubstr("no DYNAMIC_ARCH"));
}

TEST(PlanCpuEnvironmentTest, OtherBlasAndUnknownCoresAreLeftAlone) {
  CpuEnvPlan p = PlanCpuEnvironment(Inputs(""));
  EXPECT_FALSE(p.reexec());
  EXPECT_THAT(p.message, HasSubstr("not OpenBLAS"));
  p = PlanCpuEnvironment(Inputs("NeoverseN1"));
  EXPECT_FALSE(p.reexec());
  EXPECT_THAT(p.message, HasSubstr("left alone"));
  CpuEnvInputs in = Inputs("Prescott");
  in.cpu = CpuFeatures{};  // no CPUID
  EXPECT_FALSE(PlanCpuEnvironment(in).reexec());
}

TEST(PlanCpuEnvironmentTest, OffSwitch) {
  CpuEnvInputs in = Inputs("Prescott");
  in.omp_threads = "2";
  in.tuning = "off";
  const CpuEnvPlan p = PlanCpuEnvironment(in);
  EXPECT_FALSE(p.reexec());
  EXPECT_FALSE(p.self_test);
  EXPECT_THAT(p.message, HasSubstr("cpu tuning off"));
}

TEST(PlanCpuEnvironmentTest, AfterTheReexecItSelfTestsAndNeverLoops) {
  CpuEnvInputs in = Inputs("SkylakeX");
  in.coretype = "SkylakeX";
  in.omp_threads = "2";
  in.wait_policy = "PASSIVE";
  in.marker = "OMP_WAIT_POLICY,OPENBLAS_CORETYPE;was=Prescott";
  CpuEnvPlan p = PlanCpuEnvironment(in);
  EXPECT_FALSE(p.reexec());
  EXPECT_TRUE(p.self_test);
  EXPECT_FALSE(p.warn);
  EXPECT_THAT(p.message, HasSubstr("OpenBLAS picked Prescott (SSE kernels); "
                                   "now runs SkylakeX"));
  EXPECT_THAT(p.message, HasSubstr("OMP_WAIT_POLICY=PASSIVE (2 OpenMP"));
  // OpenBLAS ignored the variable: warn, nothing to self-test.
  in.openblas_corename = "Prescott";
  p = PlanCpuEnvironment(in);
  EXPECT_FALSE(p.reexec());
  EXPECT_FALSE(p.self_test);
  EXPECT_TRUE(p.warn);
  EXPECT_THAT(p.message, HasSubstr("ignored OPENBLAS_CORETYPE=SkylakeX"));
  // Only the wait policy was ours: nothing to self-test.
  in = Inputs("Cooperlake");
  in.marker = "OMP_WAIT_POLICY";
  in.wait_policy = "PASSIVE";
  p = PlanCpuEnvironment(in);
  EXPECT_FALSE(p.reexec());
  EXPECT_FALSE(p.self_test);
}

TEST(PlanCpuEnvironmentTest, FallbackAfterAFailedSelfTest) {
  CpuEnvInputs in = Inputs("Prescott");
  in.marker = "fallback;tried=SkylakeX";
  const CpuEnvPlan p = PlanCpuEnvironment(in);
  EXPECT_FALSE(p.reexec());
  EXPECT_FALSE(p.self_test);
  EXPECT_TRUE(p.warn);
  EXPECT_THAT(p.message, HasSubstr("SkylakeX kernels failed the GEMM "
                                   "self-test: running OpenBLAS's own choice "
                                   "(Prescott)"));
}

TEST(PlanCpuEnvironmentTest, SwitchFlags) {
  EXPECT_FALSE(ParseTuningSwitch(std::nullopt).off);
  EXPECT_TRUE(ParseTuningSwitch("OFF").off);
  EXPECT_TRUE(ParseTuningSwitch("0").off);
  const TuningSwitch t = ParseTuningSwitch("force, fail-self-test");
  EXPECT_TRUE(t.force);
  EXPECT_TRUE(t.fail_self_test);
  EXPECT_FALSE(t.off);
}

TEST(MarkerTest, RoundTrips) {
  Marker m;
  m.names = {"OMP_WAIT_POLICY", "OPENBLAS_CORETYPE"};
  m.was = "Prescott";
  EXPECT_EQ(FormatMarker(m), "OMP_WAIT_POLICY,OPENBLAS_CORETYPE;was=Prescott");
  const Marker back = ParseMarker(FormatMarker(m));
  EXPECT_FALSE(back.fallback);
  EXPECT_EQ(back.names, m.names);
  EXPECT_EQ(back.was, "Prescott");
  const Marker f = ParseMarker("fallback;tried=SkylakeX");
  EXPECT_TRUE(f.fallback);
  EXPECT_THAT(f.names, IsEmpty());
  EXPECT_EQ(f.tried, "SkylakeX");
}

// A plain float GEMM (row-major, op = transpose when asked).
std::vector<float> NaiveSgemm(int m, int n, int k, bool ta, bool tb,
                              float alpha, const std::vector<float>& a,
                              const std::vector<float>& b, float beta,
                              const std::vector<float>& c0) {
  std::vector<float> c(c0.size());
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      float s = 0;
      for (int p = 0; p < k; ++p) {
        s += (ta ? a[p * m + i] : a[i * k + p]) *
             (tb ? b[j * k + p] : b[p * n + j]);
      }
      c[i * n + j] = alpha * s + (beta == 0 ? 0 : beta * c0[i * n + j]);
    }
  }
  return c;
}

std::vector<float> Random(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (float& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(seed >> 8) / static_cast<float>(1 << 24) * 2 - 1;
  }
  return v;
}

TEST(CheckGemmTest, AcceptsAFloatGemmInEveryLayout) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const int m = 37, n = 29, k = 300;
      const auto a = Random(m * k, 1), b = Random(k * n, 2),
                 c0 = Random(m * n, 3);
      const auto c = NaiveSgemm(m, n, k, ta, tb, 0.5f, a, b, -2.0f, c0);
      EXPECT_EQ(CheckGemm(m, n, k, ta, tb, 0.5f, a, b, -2.0f, c0, c), "")
          << ta << tb;
    }
  }
}

TEST(CheckGemmTest, RejectsWrongResults) {
  const int m = 16, n = 16, k = 64;
  const auto a = Random(m * k, 4), b = Random(k * n, 5), c0 = Random(m * n, 6);
  auto c = NaiveSgemm(m, n, k, false, false, 1, a, b, 0, c0);
  ASSERT_EQ(CheckGemm(m, n, k, false, false, 1, a, b, 0, c0, c), "");
  auto bad = c;
  bad[17] += 1e-3f * (std::fabs(bad[17]) + 1);
  EXPECT_THAT(CheckGemm(m, n, k, false, false, 1, a, b, 0, c0, bad),
              HasSubstr("C[1,1]"));
  bad = c;
  bad[5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THAT(CheckGemm(m, n, k, false, false, 1, a, b, 0, c0, bad),
              HasSubstr("C[0,5]"));
  // Transposed operands read as untransposed: wrong.
  const auto t = NaiveSgemm(m, n, k, false, true, 1, a, b, 0, c0);
  EXPECT_NE(CheckGemm(m, n, k, false, false, 1, a, b, 0, c0, t), "");
  // beta = 0 must not keep C0 (stale or NaN C is overwritten).
  EXPECT_NE(CheckGemm(m, n, k, false, false, 1, a, b, 0, c0, c0), "");
  EXPECT_THAT(CheckGemm(m, n, k, false, false, 1, a, b, 0, c0, {}),
              HasSubstr("sizes"));
}

}  // namespace
}  // namespace smoe::cpu
