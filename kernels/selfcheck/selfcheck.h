// Copyright 2026 SMoE Lab authors.
//
// File: kernels/selfcheck/selfcheck.h
//
// The kernels/ half of `smoe doctor` (worker/trainer/doctor.h): the checks a
// user runs on a new GPU machine, written against kernels/ only (no LibTorch,
// no CUDA types in this header), so the trainer can call them without
// including cuBLAS or NCCL headers.
//
//   * GetCudaStackInfo: driver, CUDA runtime, cuBLAS and NCCL versions, the
//     build flags, one line per visible device.
//   * Check*Kernels: each dispatch kernel (router_topk, permute with its plan
//     and combine, grouped_gemm forward / dgrad / wgrad in both variants) on
//     fresh random inputs against its CPU reference: a few cases of the
//     kernel's check (kernels/<k>/<k>_check.h), the one its GPU test runs,
//     tolerances included.
//   * CheckCommunicators: self-verifying all-to-all-v payloads
//     (all_to_all/payload.h) and a verified all-reduce on every rank of a
//     LocalCommunicator group (threads, host memory) or an NCCL group (one
//     thread per visible GPU, in this process).
//   * MeasureDeviceRates: the ceilings of kernels/common/bench.h (D2D copy
//     bandwidth, dense bf16 cublasGemmEx rate) and the fraction of them that
//     the grouped GEMM and permute/combine reach on one shape each.
//
// GPU functions return FailedPrecondition in builds without CUDA (callers
// check CudaDeviceCount() first and skip); CUDA and cuBLAS failures come back
// as the Status of kernels/common/cuda_status.h. None of them aborts.
//
// Fault injection (to prove a check can fail): `inject_fault` adds 1 to the
// first element of every GPU output before it is compared (kernel checks,
// kernels/common/device_check.h), or
// flips the lowest bit of the first element rank 0 receives in every
// collective (communicator checks; their comparisons are exact).
//
// Thread-safety: the functions may be called from any thread; the kernel
// checks and MeasureDeviceRates make `device` current in the calling thread
// and restore the previous current device before returning.
#ifndef SMOE_KERNELS_SELFCHECK_SELFCHECK_H_
#define SMOE_KERNELS_SELFCHECK_SELFCHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/common/kernel_check.h"

namespace smoe::kernels {

// Versions are the libraries' integer encodings (0 = not available):
// CUDA 12.4 = 12040 (driver and runtime), cuBLAS 12.4.5 = 120405, NCCL
// 2.21.5 = 22105.
struct CudaStackInfo {
  bool built_with_cuda = false;   // SMOE_WITH_CUDA
  bool built_with_nccl = false;   // SMOE_WITH_NCCL
  int compiled_cuda_version = 0;  // CUDART_VERSION of the headers built with
  int driver_version = 0;         // cudaDriverGetVersion (0: no driver)
  int runtime_version = 0;        // cudaRuntimeGetVersion of the linked runtime
  int cublas_version = 0;         // cublasGetProperty
  int nccl_version = 0;           // ncclGetVersion
  int device_count = 0;           // CudaDeviceCount()
  std::string device_error;       // why device_count is 0 ("" otherwise)
  std::vector<std::string> devices;  // DescribeDevice(i) + memory
};

CudaStackInfo GetCudaStackInfo();

// "12.4" for 12040 (CUDA), "" for 0.
std::string FormatCudaVersion(int version);

struct KernelCheckResult {
  uint32_t seed = 0;  // of the random inputs (reported for reproduction)
  std::vector<KernelComparison> comparisons;
  // Notes such as "grouped variant unsupported by this cuBLAS for bf16".
  std::vector<std::string> notes;
  // True when every comparison passed.
  bool ok() const;
  // Largest max_abs_err over the non-exact comparisons.
  double max_abs_err() const;
  // The first failing comparison's what + message, or "".
  std::string first_failure() const;
};

// KernelComparison, CompareCloseOutput and CompareExactOutput:
// kernels/common/kernel_check.h.

struct KernelCheckOptions {
  int device = 0;
  uint32_t seed = 0;   // 0: a fresh seed from std::random_device
  bool quick = false;  // fewer and smaller shapes
  bool inject_fault = false;
};

// router_topk forward and backward: topk_idx, counts, offsets exact;
// weights atol 1e-6 eps 1e-5; grad logits atol 1e-5 eps 1e-4.
absl::StatusOr<KernelCheckResult> CheckRouterTopKKernels(
    const KernelCheckOptions& options);
// permute: the plan (sorted_idx, dest_idx, offsets) and permute/unpermute
// exact; permute backward and combine atol 1e-5, combine backward 1e-6,
// grad weights 1e-6 * hidden (eps 1e-5); bf16 permute exact, bf16 combine
// atol 1e-5 eps 2^-8.
absl::StatusOr<KernelCheckResult> CheckPermuteKernels(
    const KernelCheckOptions& options);
// grouped_gemm forward, dgrad (trans_b) and wgrad, f32 and bf16, per-expert
// loop and grouped-batched: atol 1e-4, eps 1e-5 (f32) / 2^-7 (bf16).
absl::StatusOr<KernelCheckResult> CheckGroupedGemmKernels(
    const KernelCheckOptions& options);

enum class CommBackend { kLocal, kNccl };

struct CommCheckOptions {
  CommBackend backend = CommBackend::kLocal;
  int world_size = 2;              // kNccl: one rank per GPU 0..world_size-1
  int rounds = 4;                  // payload all-to-alls (seeds 1..rounds)
  int64_t columns = 7;             // payload row width (1..999)
  int64_t allreduce_count = 4099;  // elements per all-reduce (f64 and f32)
  int64_t op_timeout_ms = 60000;   // every collective and the init
  bool inject_fault = false;
};

struct CommCheckResult {
  std::string backend;  // the communicator's name(): "local", "nccl"
  int world_size = 0;
  int64_t alltoall_elements = 0;  // received and checked, all ranks
  int64_t alltoall_wrong = 0;
  int64_t allreduce_elements = 0;
  int64_t allreduce_wrong = 0;
  double seconds = 0;  // wall time of the collectives (init excluded)
  bool ok() const { return alltoall_wrong == 0 && allreduce_wrong == 0; }
};

// Builds the group (kNccl: NewNcclUniqueId, then CreateNcclCommunicator on
// each rank's thread with device = rank), runs `rounds` payload all-to-alls,
// an all-reduce of f64 and of f32 values (small integers: exact sums) and a
// barrier on every rank. Returns the first rank's error (Unimplemented for
// kNccl without NCCL), else the counts.
absl::StatusOr<CommCheckResult> CheckCommunicators(
    const CommCheckOptions& options);

// Measured rates on one device. Shapes (quick in brackets): copy 1 GiB [256
// MiB]; dense bf16 GEMM 8192^3 [4096^3]; grouped GEMM bf16 forward, E=8,
// T=16384 [4096] tokens x k=2, d=h=1024, balanced (2*T*k*d*h FLOP), best of
// the two variants; permute and combine bf16, T=16384 [4096], k=2, d=4096
// [1024], E=8 balanced (bytes as in permute_bench.cu).
struct DeviceRates {
  int device = 0;
  double copy_gbps = 0;
  double dense_bf16_tflops = 0;
  double grouped_gemm_tflops = 0;
  double grouped_gemm_fraction = 0;  // of dense_bf16_tflops
  std::string grouped_gemm_shape;
  double permute_gbps = 0;
  double permute_fraction = 0;  // of copy_gbps
  double combine_gbps = 0;
  double combine_fraction = 0;
  std::string permute_shape;
};

// The shapes and repetitions of MeasureDeviceRates. DeviceRatesOptionsFor
// gives the ones documented above (what `smoe doctor` measures); tests on the
// fake runtime (tests/fakes/) use small ones.
struct DeviceRatesOptions {
  int device = 0;
  int warmup = 3;  // untimed calls, then `reps` timed ones (median)
  int reps = 10;
  int64_t flush_bytes = int64_t{256} << 20;  // L2 flush before each rep
  int64_t copy_bytes = int64_t{1} << 30;     // D2D copy
  int gemm_size = 8192;                      // dense bf16 GEMM, square
  int64_t grouped_tokens = 16384;            // grouped GEMM: E=8, k=2
  int64_t grouped_dim = 1024;                // grouped GEMM d = h
  int64_t permute_tokens = 16384;            // permute/combine: E=8, k=2
  int64_t permute_hidden = 4096;
};

// The documented shapes: `quick` in brackets above (warmup 2, reps 5).
DeviceRatesOptions DeviceRatesOptionsFor(int device, bool quick);

// Returns InvalidArgument naming the field and value when a size or count of
// `options` is not positive (checked in every build, before any CUDA call).
absl::Status ValidateDeviceRatesOptions(const DeviceRatesOptions& options);

absl::StatusOr<DeviceRates> MeasureDeviceRates(
    const DeviceRatesOptions& options);
// MeasureDeviceRates(DeviceRatesOptionsFor(device, quick)).
absl::StatusOr<DeviceRates> MeasureDeviceRates(int device, bool quick);

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_SELFCHECK_SELFCHECK_H_
