// Copyright 2026 SMoE Lab authors.
//
// `smoe doctor`'s device checks (kernels/selfcheck/selfcheck.cc, unchanged)
// on a machine without a GPU: the fake CUDA runtime + NCCL of tests/fakes
// with fake kernel launches and cuBLAS (fake_kernels_control.h) that run the
// kernels' CPU references in stream order. What this proves is the host
// logic around the kernels: the staging (device buffers, uploads, the
// synchronising downloads), the comparisons and their reports, the fault
// injection, the NCCL all-to-all / all-reduce check at world 2, the timing
// loop and the rate arithmetic, the version probe, and every vendor error
// coming back as a Status naming its call. It proves nothing about the CUDA
// kernels (the `gpu` tests and `smoe doctor` on a GPU do). Label unit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "cublas_api.h"
#include "cuda_runtime_api.h"
#include "kernels/permute/permute_launch.h"
#include "kernels/selfcheck/selfcheck.h"
#include "nccl.h"
#include "tests/fakes/fake_kernels_control.h"
#include "tests/fakes/fake_nccl_control.h"

namespace smoe::kernels {
namespace {

namespace fake = ::smoe::fake_nccl;
namespace fk = ::smoe::fake_kernels;

fake::Config FakeConfig() {
  fake::Config c;
  c.num_devices = 2;
  c.max_stream_op_delay_us = 20;  // fast, still out of order across streams
  c.max_enqueue_delay_us = 200;
  return c;
}

class SelfCheckFakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const uint64_t seed = fake::Reset(FakeConfig());
    fk::Reset();
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    std::fprintf(stderr, "fake seed %llu\n",
                 static_cast<unsigned long long>(seed));
  }
  void TearDown() override {
    EXPECT_EQ(absl::StrJoin(fake::Violations(), "\n"), "");
    EXPECT_EQ(absl::StrJoin(fake::ArmedCallFaults(), ", "), "")
        << "a fault armed by the test was never reached";
  }

  static KernelCheckOptions Options(bool fault = false) {
    KernelCheckOptions o;
    o.device = 1;  // not the caller's: the check must restore device 0
    o.seed = 1234;
    o.quick = true;
    o.inject_fault = fault;
    return o;
  }

  static int CurrentDevice() {
    int d = -1;
    EXPECT_EQ(cudaGetDevice(&d), cudaSuccess);
    return d;
  }
};

std::string Whats(const KernelCheckResult& r) {
  std::vector<std::string> v;
  for (const KernelComparison& c : r.comparisons) v.push_back(c.what);
  return absl::StrJoin(v, "\n");
}

// The comparisons that failed, "what: message" each.
std::vector<std::string> Failures(const KernelCheckResult& r) {
  std::vector<std::string> v;
  for (const KernelComparison& c : r.comparisons) {
    if (c.num_bad > 0) v.push_back(c.what + ": " + c.message);
  }
  return v;
}

TEST_F(SelfCheckFakeTest, KernelChecksPassOnCorrectKernels) {
  absl::StatusOr<KernelCheckResult> router = CheckRouterTopKKernels(Options());
  ASSERT_TRUE(router.ok()) << router.status();
  EXPECT_TRUE(router->ok()) << router->first_failure();
  EXPECT_EQ(router->seed, 1234u);
  // 3 quick shapes x (idx, counts, offsets, weights, grad_logits).
  EXPECT_EQ(router->comparisons.size(), 15u) << Whats(*router);
  EXPECT_EQ(CurrentDevice(), 0);

  absl::StatusOr<KernelCheckResult> permute = CheckPermuteKernels(Options());
  ASSERT_TRUE(permute.ok()) << permute.status();
  EXPECT_TRUE(permute->ok()) << permute->first_failure();
  // (3 plan + 6 f32) x 2 shapes + 2 bf16 on the first.
  EXPECT_EQ(permute->comparisons.size(), 20u) << Whats(*permute);
  EXPECT_EQ(CurrentDevice(), 0);

  absl::StatusOr<KernelCheckResult> gemm = CheckGroupedGemmKernels(Options());
  ASSERT_TRUE(gemm.ok()) << gemm.status();
  EXPECT_TRUE(gemm->ok()) << gemm->first_failure();
  // 2 variants x 2 dtypes x (forward, dgrad, wgrad).
  EXPECT_EQ(gemm->comparisons.size(), 12u) << Whats(*gemm);
  EXPECT_TRUE(gemm->notes.empty()) << absl::StrJoin(gemm->notes, "\n");
  EXPECT_LT(gemm->max_abs_err(), 0.1);  // bf16 outputs: 2^-8 relative
  EXPECT_EQ(CurrentDevice(), 0);

  // The results came from the fake kernels, run on device 1's stream.
  EXPECT_EQ(fk::LaunchesRun("LaunchRouterTopK"), 3);
  EXPECT_EQ(fk::LaunchesRun("LaunchRouterTopKBackward"), 3);
  EXPECT_EQ(fk::LaunchesRun("LaunchBuildPermutePlan"), 2);
  EXPECT_EQ(fk::LaunchesRun("LaunchGroupedGemm"), 12);
  EXPECT_GT(fk::LaunchesRun("LaunchGatherRows"), 0);
  EXPECT_GT(fk::LaunchesRun("LaunchCombine"), 0);
  EXPECT_GT(fk::LaunchesRun("LaunchCombineBackward"), 0);
}

TEST_F(SelfCheckFakeTest, InjectedFaultFailsEveryComparisonAndNamesIt) {
  absl::StatusOr<KernelCheckResult> router =
      CheckRouterTopKKernels(Options(/*fault=*/true));
  ASSERT_TRUE(router.ok()) << router.status();
  EXPECT_FALSE(router->ok());
  EXPECT_EQ(Failures(*router).size(), router->comparisons.size());
  EXPECT_TRUE(absl::StartsWith(router->first_failure(),
                               "router T=1024 E=8 k=2 renorm: topk_idx: 1 of "
                               "2048 elements differ (exact); first at 0"))
      << router->first_failure();

  absl::StatusOr<KernelCheckResult> permute =
      CheckPermuteKernels(Options(/*fault=*/true));
  ASSERT_TRUE(permute.ok()) << permute.status();
  EXPECT_EQ(Failures(*permute).size(), permute->comparisons.size());
  EXPECT_TRUE(absl::StartsWith(
      permute->first_failure(),
      "permute T=1024 E=8 k=2 hidden=256: plan sorted_idx: 1 of 2048"))
      << permute->first_failure();

  absl::StatusOr<KernelCheckResult> gemm =
      CheckGroupedGemmKernels(Options(/*fault=*/true));
  ASSERT_TRUE(gemm.ok()) << gemm.status();
  EXPECT_EQ(Failures(*gemm).size(), gemm->comparisons.size());
  EXPECT_TRUE(absl::StartsWith(gemm->first_failure(),
                               "grouped_gemm float32 per-expert-loop: forward"))
      << gemm->first_failure();
}

// The full (non-quick) shapes: two more router shapes (tied logits, T=7 with
// k = E), a third permute shape (E=64, k=1, odd hidden).
TEST_F(SelfCheckFakeTest, FullShapesPass) {
  KernelCheckOptions o = Options();
  o.quick = false;
  absl::StatusOr<KernelCheckResult> router = CheckRouterTopKKernels(o);
  ASSERT_TRUE(router.ok()) << router.status();
  EXPECT_TRUE(router->ok()) << router->first_failure();
  EXPECT_EQ(router->comparisons.size(), 25u) << Whats(*router);
  EXPECT_TRUE(absl::StrContains(Whats(*router), "router T=7 E=8 k=8 renorm"))
      << Whats(*router);
  absl::StatusOr<KernelCheckResult> permute = CheckPermuteKernels(o);
  ASSERT_TRUE(permute.ok()) << permute.status();
  EXPECT_TRUE(permute->ok()) << permute->first_failure();
  EXPECT_EQ(permute->comparisons.size(), 31u) << Whats(*permute);
}

// Seed 0 draws a fresh non-zero seed and reports it.
TEST_F(SelfCheckFakeTest, SeedZeroDrawsAFreshSeed) {
  KernelCheckOptions o = Options();
  o.seed = 0;
  absl::StatusOr<KernelCheckResult> gemm = CheckGroupedGemmKernels(o);
  ASSERT_TRUE(gemm.ok()) << gemm.status();
  EXPECT_TRUE(gemm->ok()) << gemm->first_failure();
  EXPECT_NE(gemm->seed, 0u);
}

// When the current device cannot be read, the check still runs; there is
// nothing to restore afterwards (the calling thread stays on the checked
// device, as CUDA left it).
TEST_F(SelfCheckFakeTest, UnreadableCurrentDeviceIsNotRestored) {
  fake::FailCall("cudaGetDevice", cudaErrorUnknown);
  absl::StatusOr<KernelCheckResult> router = CheckRouterTopKKernels(Options());
  ASSERT_TRUE(router.ok()) << router.status();
  EXPECT_TRUE(router->ok()) << router->first_failure();
  EXPECT_EQ(CurrentDevice(), 1);
}

// A kernel that writes one wrong element fails exactly its comparison: the
// checks compare what the device computed, so they can fail.
TEST_F(SelfCheckFakeTest, AWrongKernelFailsItsComparison) {
  fk::CorruptLaunch("LaunchRouterTopKBackward", /*skip=*/1);  // 2nd shape
  absl::StatusOr<KernelCheckResult> router = CheckRouterTopKKernels(Options());
  ASSERT_TRUE(router.ok()) << router.status();
  ASSERT_EQ(Failures(*router).size(), 1u)
      << absl::StrJoin(Failures(*router), "\n");
  EXPECT_TRUE(absl::StartsWith(Failures(*router)[0],
                               "router T=1024 E=64 k=4 norenorm: grad_logits: "
                               "1 of 65536 elements outside atol=1e-05 "
                               "eps=0.0001; first at 0"))
      << Failures(*router)[0];

  // permute f32; unpermute reads the permuted rows, so it fails too.
  fk::CorruptLaunch("LaunchGatherRows", /*skip=*/0);
  absl::StatusOr<KernelCheckResult> permute = CheckPermuteKernels(Options());
  ASSERT_TRUE(permute.ok()) << permute.status();
  ASSERT_EQ(Failures(*permute).size(), 2u)
      << absl::StrJoin(Failures(*permute), "\n");
  EXPECT_TRUE(absl::StartsWith(Failures(*permute)[0],
                               "permute T=1024 E=8 k=2 hidden=256: permute "
                               "f32: 1 of 524288 elements differ (exact)"))
      << Failures(*permute)[0];
  EXPECT_TRUE(absl::StartsWith(Failures(*permute)[1],
                               "permute T=1024 E=8 k=2 hidden=256: unpermute "
                               "f32: 1 of 524288 elements differ (exact)"))
      << Failures(*permute)[1];

  fk::CorruptLaunch("LaunchGroupedGemm", /*skip=*/4);  // bf16 loop dgrad
  absl::StatusOr<KernelCheckResult> gemm = CheckGroupedGemmKernels(Options());
  ASSERT_TRUE(gemm.ok()) << gemm.status();
  ASSERT_EQ(Failures(*gemm).size(), 1u) << absl::StrJoin(Failures(*gemm), "\n");
  EXPECT_TRUE(absl::StartsWith(Failures(*gemm)[0],
                               "grouped_gemm bfloat16 per-expert-loop: dgrad"))
      << Failures(*gemm)[0];
}

// The fake kernels run in stream order, after the work before them: a caller
// that read without synchronising would see cudaMalloc's poison.
TEST_F(SelfCheckFakeTest, FakeLaunchesRunInStreamOrder) {
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  void* src = nullptr;
  void* dst = nullptr;
  void* idx = nullptr;
  ASSERT_EQ(cudaMalloc(&src, 64), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, 64), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&idx, 4 * sizeof(int32_t)), cudaSuccess);
  std::vector<unsigned char> h(64);
  for (int i = 0; i < 64; ++i) h[i] = static_cast<unsigned char>(i);
  const int32_t rows[4] = {3, 2, 1, 0};
  ASSERT_EQ(cudaMemcpy(src, h.data(), 64, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(idx, rows, sizeof(rows), cudaMemcpyHostToDevice),
            cudaSuccess);
  fake::EnqueueSleep(s, 100);  // a slow kernel ahead of the gather
  ASSERT_EQ(LaunchGatherRows(src, dst, 4, 16, static_cast<int32_t*>(idx), 1, s),
            cudaSuccess);
  // Not yet run: the fake "device" memory is host memory, still poisoned.
  EXPECT_EQ(static_cast<unsigned char*>(dst)[0], 0xA5);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(static_cast<unsigned char*>(dst)[0], 48);  // row 3's first byte
  EXPECT_EQ(static_cast<unsigned char*>(dst)[63], 15);
  EXPECT_EQ(cudaFree(src), cudaSuccess);
  EXPECT_EQ(cudaFree(dst), cudaSuccess);
  EXPECT_EQ(cudaFree(idx), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

// Each vendor error comes back as a Status naming the call, with the CUDA /
// cuBLAS error's name; the checks never abort.
TEST_F(SelfCheckFakeTest, VendorErrorsNameTheirCall) {
  struct Case {
    const char* call;
    int error;
    int skip;
    int which;  // 0 router, 1 permute, 2 grouped GEMM
    absl::StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {"cudaSetDevice", cudaErrorInvalidDevice, 0, 0,
       absl::StatusCode::kInternal, "cudaSetDevice: cudaErrorInvalidDevice"},
      {"LaunchRouterTopK", cudaErrorLaunchFailure, 0, 0,
       absl::StatusCode::kInternal, "RouterTopK: cudaErrorLaunchFailure"},
      {"LaunchRouterTopKBackward", cudaErrorInvalidValue, 0, 0,
       absl::StatusCode::kInvalidArgument,
       "RouterTopKBackward: cudaErrorInvalidValue"},
      {"cudaMalloc", cudaErrorMemoryAllocation, 0, 0,
       absl::StatusCode::kResourceExhausted, "cudaMalloc: "},
      {"cudaMemcpy", cudaErrorIllegalAddress, 0, 0, absl::StatusCode::kInternal,
       "cudaMemcpy H2D: cudaErrorIllegalAddress"},
      {"cudaMemset", cudaErrorIllegalAddress, 0, 0, absl::StatusCode::kInternal,
       "cudaMemset: cudaErrorIllegalAddress"},
      {"cudaDeviceSynchronize", cudaErrorIllegalAddress, 0, 0,
       absl::StatusCode::kInternal,
       "kernel (cudaDeviceSynchronize): cudaErrorIllegalAddress"},
      {"cudaMemcpy", cudaErrorIllegalAddress, 1, 0, absl::StatusCode::kInternal,
       "cudaMemcpy D2H: cudaErrorIllegalAddress"},
      {"LaunchBuildPermutePlan", cudaErrorLaunchFailure, 0, 1,
       absl::StatusCode::kInternal, "BuildPermutePlan: cudaErrorLaunchFailure"},
      {"LaunchGatherRows", cudaErrorLaunchFailure, 1, 1,
       absl::StatusCode::kInternal, "Unpermute: cudaErrorLaunchFailure"},
      {"LaunchCombine", cudaErrorLaunchFailure, 0, 1,
       absl::StatusCode::kInternal, "PermuteBackward: cudaErrorLaunchFailure"},
      {"LaunchCombineBackward", cudaErrorLaunchFailure, 0, 1,
       absl::StatusCode::kInternal, "CombineBackward: cudaErrorLaunchFailure"},
      {"cublasCreate", CUBLAS_STATUS_ALLOC_FAILED, 0, 2,
       absl::StatusCode::kResourceExhausted,
       "cublasCreate: CUBLAS_STATUS_ALLOC_FAILED"},
      {"LaunchGroupedGemm", CUBLAS_STATUS_EXECUTION_FAILED, 1, 2,
       absl::StatusCode::kInternal,
       "GroupedGemm: CUBLAS_STATUS_EXECUTION_FAILED"},
      {"LaunchGroupedGemm", CUBLAS_STATUS_INVALID_VALUE, 2, 2,
       absl::StatusCode::kInvalidArgument,
       "GroupedGemmWeightGrad: CUBLAS_STATUS_INVALID_VALUE"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.call) + " skip " + std::to_string(c.skip));
    fake::FailCall(c.call, c.error, /*device=*/1, c.skip);
    absl::StatusOr<KernelCheckResult> r =
        c.which == 0   ? CheckRouterTopKKernels(Options())
        : c.which == 1 ? CheckPermuteKernels(Options())
                       : CheckGroupedGemmKernels(Options());
    EXPECT_EQ(r.status().code(), c.code) << r.status();
    EXPECT_TRUE(absl::StrContains(r.status().message(), c.message))
        << r.status();
    EXPECT_EQ(absl::StrJoin(fake::FiredCallFaults(), ", "),
              std::string(c.call) + " on device 1");
    EXPECT_EQ(CurrentDevice(), 0);
    fake::Reset(FakeConfig());
  }
}

// A cuBLAS without the grouped mode: the variant is reported as a note and
// not checked; the per-expert loop still is.
TEST_F(SelfCheckFakeTest, UnsupportedGroupedVariantIsANote) {
  // The per-expert loop's 6 calls (f32, bf16) come first.
  fake::FailCall("LaunchGroupedGemm", CUBLAS_STATUS_NOT_SUPPORTED, -1, 6);
  absl::StatusOr<KernelCheckResult> gemm = CheckGroupedGemmKernels(Options());
  ASSERT_TRUE(gemm.ok()) << gemm.status();
  EXPECT_TRUE(gemm->ok()) << gemm->first_failure();
  EXPECT_EQ(gemm->comparisons.size(), 9u) << Whats(*gemm);
  ASSERT_EQ(gemm->notes.size(), 1u);
  EXPECT_TRUE(absl::StartsWith(gemm->notes[0],
                               "grouped_gemm float32 grouped-batched: not "
                               "supported by this cuBLAS (GroupedGemm: "
                               "CUBLAS_STATUS_NOT_SUPPORTED"))
      << gemm->notes[0];
}

CommCheckOptions NcclOptions(bool fault = false) {
  CommCheckOptions o;
  o.backend = CommBackend::kNccl;
  o.world_size = 2;
  o.rounds = 3;
  o.op_timeout_ms = 20000;
  o.inject_fault = fault;
  return o;
}

TEST_F(SelfCheckFakeTest, NcclCheckPassesAtWorld2) {
  absl::StatusOr<CommCheckResult> r = CheckCommunicators(NcclOptions());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->ok());
  EXPECT_EQ(r->backend, "nccl");
  EXPECT_EQ(r->world_size, 2);
  EXPECT_GT(r->alltoall_elements, 0);
  EXPECT_EQ(r->allreduce_elements, 2 * 2 * 4099);  // f64 + f32, both ranks
  EXPECT_EQ(r->alltoall_wrong, 0);
  EXPECT_EQ(r->allreduce_wrong, 0);
  EXPECT_GT(fake::GetStats().kernels_run, 0);  // it ran on the fake NCCL
  EXPECT_EQ(fake::GetStats().live_comms, 0);
}

TEST_F(SelfCheckFakeTest, NcclCheckCatchesTheInjectedFault) {
  absl::StatusOr<CommCheckResult> r =
      CheckCommunicators(NcclOptions(/*fault=*/true));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->ok());
  // Rank 0's first received element of every collective, flipped on the
  // fake device: each payload round and each all-reduce has one wrong.
  EXPECT_GT(r->alltoall_wrong, 0);
  EXPECT_EQ(r->allreduce_wrong, 2);
}

TEST_F(SelfCheckFakeTest, NcclCheckReportsTheFailingRank) {
  CommCheckOptions o = NcclOptions();
  o.op_timeout_ms = 1500;  // rank 0 waits this long for rank 1
  fake::FailCall("cudaSetDevice", cudaErrorInvalidDevice, /*device=*/1);
  absl::StatusOr<CommCheckResult> r = CheckCommunicators(o);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal) << r.status();
  EXPECT_TRUE(absl::StartsWith(r.status().message(),
                               "rank 1: cudaSetDevice: cudaErrorInvalidDevice"))
      << r.status();
}

TEST_F(SelfCheckFakeTest, NcclInitFailureOnEveryRankIsReported) {
  fake::FailCall("ncclCommInitRankConfig", ncclSystemError, /*device=*/0);
  fake::FailCall("ncclCommInitRankConfig", ncclSystemError, /*device=*/1);
  absl::StatusOr<CommCheckResult> r = CheckCommunicators(NcclOptions());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal) << r.status();
  EXPECT_TRUE(absl::StartsWith(r.status().message(),
                               "rank 0: ncclCommInitRankConfig: NCCL error"))
      << r.status();
}

DeviceRatesOptions SmallRates() {
  DeviceRatesOptions o;
  o.device = 1;
  o.warmup = 1;
  o.reps = 3;
  o.flush_bytes = 1 << 20;
  o.copy_bytes = 4 << 20;
  o.gemm_size = 48;
  o.grouped_tokens = 64;
  o.grouped_dim = 32;
  o.permute_tokens = 64;
  o.permute_hidden = 32;
  return o;
}

TEST_F(SelfCheckFakeTest, DeviceRatesOnSmallShapes) {
  absl::StatusOr<DeviceRates> r = MeasureDeviceRates(SmallRates());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->device, 1);
  EXPECT_EQ(CurrentDevice(), 0);
  for (double v : {r->copy_gbps, r->dense_bf16_tflops, r->grouped_gemm_tflops,
                   r->permute_gbps, r->combine_gbps}) {
    EXPECT_TRUE(std::isfinite(v) && v > 0) << v;
  }
  EXPECT_DOUBLE_EQ(r->grouped_gemm_fraction,
                   r->grouped_gemm_tflops / r->dense_bf16_tflops);
  EXPECT_DOUBLE_EQ(r->permute_fraction, r->permute_gbps / r->copy_gbps);
  EXPECT_DOUBLE_EQ(r->combine_fraction, r->combine_gbps / r->copy_gbps);
  EXPECT_EQ(r->grouped_gemm_shape,
            "bf16 fwd E=8 T=64 k=2 d=32 h=32 balanced (16 rows/expert)");
  EXPECT_EQ(r->permute_shape, "bf16 E=8 T=64 k=2 d=32 balanced");
  // warmup + reps calls of each timed function.
#if defined(SMOE_FAKE_KERNELS_ON_EMU)
  // The real grouped_gemm.cu: the per-expert loop is one cublasGemmEx per
  // expert (8) per call, the grouped variant one grouped call per call.
  EXPECT_EQ(fk::LaunchesRun("cublasGemmEx"), 4 + 4 * 8);
  EXPECT_EQ(fk::LaunchesRun("cublasGemmGroupedBatchedEx"), 4);
#else
  EXPECT_EQ(fk::LaunchesRun("cublasGemmEx"), 4);
#endif
  EXPECT_EQ(fk::LaunchesRun("LaunchGroupedGemm"), 8);  // both variants
}

TEST_F(SelfCheckFakeTest, DeviceRatesSkipAnUnsupportedGroupedVariant) {
  // The grouped-batched variant is timed first; its first call says
  // NOT_SUPPORTED: the per-expert loop alone gives the rate.
  fake::FailCall("LaunchGroupedGemm", CUBLAS_STATUS_NOT_SUPPORTED);
  absl::StatusOr<DeviceRates> r = MeasureDeviceRates(SmallRates());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->grouped_gemm_tflops, 0);
  EXPECT_EQ(fk::LaunchesRun("LaunchGroupedGemm"), 4);
}

TEST_F(SelfCheckFakeTest, DeviceRateErrorsNameTheirCall) {
  const std::pair<const char*, const char*> cases[] = {
      {"cudaEventCreate", "cudaEventCreate: cudaErrorMemoryAllocation"},
      {"cudaMemsetAsync", "cudaMemsetAsync (L2 flush): "},
      {"cudaEventRecord", "cudaEventRecord: "},
      {"cudaEventSynchronize", "cudaEventSynchronize: "},
      {"cudaEventElapsedTime", "cudaEventElapsedTime: "},
      {"cudaMemcpyAsync", "cudaMemcpyAsync: "},
      {"cublasCreate", "cublasCreate: CUBLAS_STATUS_ALLOC_FAILED"},
      {"cublasSetStream", "cublasSetStream: CUBLAS_STATUS_ALLOC_FAILED"},
      {"cublasGemmEx", "cublasGemmEx: CUBLAS_STATUS_ALLOC_FAILED"},
      {"LaunchBuildPermutePlan", "BuildPermutePlan: "},
      {"LaunchGatherRows", "Permute: "},
      {"LaunchCombine", "Combine: "},
  };
  for (const auto& [call, message] : cases) {
    SCOPED_TRACE(call);
    const bool cublas = absl::StartsWith(call, "cublas");
    fake::FailCall(call,
                   cublas ? static_cast<int>(CUBLAS_STATUS_ALLOC_FAILED)
                          : static_cast<int>(cudaErrorMemoryAllocation),
                   /*device=*/1);
    absl::StatusOr<DeviceRates> r = MeasureDeviceRates(SmallRates());
    EXPECT_FALSE(r.ok());
    EXPECT_TRUE(absl::StrContains(r.status().message(), message)) << r.status();
    EXPECT_EQ(CurrentDevice(), 0);
    fake::Reset(FakeConfig());
  }
}

TEST_F(SelfCheckFakeTest, StackInfoListsTheFakeDevices) {
  CudaStackInfo info = GetCudaStackInfo();
  EXPECT_TRUE(info.built_with_cuda);
  EXPECT_TRUE(info.built_with_nccl);
  EXPECT_EQ(info.compiled_cuda_version, 13000);
  EXPECT_EQ(info.driver_version, 13000);
  EXPECT_EQ(info.runtime_version, 13000);
  EXPECT_EQ(info.cublas_version, 130000);
  EXPECT_EQ(info.nccl_version, NCCL_VERSION_CODE);
  EXPECT_EQ(info.device_count, 2);
  ASSERT_EQ(info.devices.size(), 2u);
  EXPECT_TRUE(absl::StrContains(info.devices[1], "Fake GPU 1"))
      << info.devices[1];
  EXPECT_TRUE(absl::EndsWith(info.devices[1], ", 81920 MiB, PCI 0000:19:00"))
      << info.devices[1];

  // Each probe failing leaves its field 0 (and the device line without the
  // memory), never an error.
  fake::FailCall("cudaDriverGetVersion", cudaErrorUnknown);
  fake::FailCall("cudaRuntimeGetVersion", cudaErrorUnknown);
  fake::FailCall("cublasGetProperty", CUBLAS_STATUS_NOT_INITIALIZED);
  fake::FailCall("ncclGetVersion", ncclSystemError);
  // DescribeDevice(0) asks first; the second call is the memory/PCI probe.
  fake::FailCall("cudaGetDeviceProperties", cudaErrorUnknown, 0, /*skip=*/1);
  info = GetCudaStackInfo();
  EXPECT_EQ(info.driver_version, 0);
  EXPECT_EQ(info.runtime_version, 0);
  EXPECT_EQ(info.cublas_version, 0);
  EXPECT_EQ(info.nccl_version, 0);
  ASSERT_EQ(info.devices.size(), 2u);
  EXPECT_FALSE(absl::StrContains(info.devices[0], "MiB")) << info.devices[0];
  EXPECT_TRUE(absl::StrContains(info.devices[1], "MiB")) << info.devices[1];
}

}  // namespace
}  // namespace smoe::kernels
