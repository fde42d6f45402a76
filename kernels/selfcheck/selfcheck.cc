// Copyright 2026 SMoE Lab authors.
#include "kernels/selfcheck/selfcheck.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/all_to_all/communicator.h"
#include "kernels/all_to_all/local_communicator.h"
#include "kernels/all_to_all/nccl_communicator.h"
#include "kernels/all_to_all/payload.h"
#include "kernels/common/device.h"
#include "kernels/grouped_gemm/grouped_gemm.h"
#include "kernels/permute/permute.h"
#include "kernels/router_topk/router_topk.h"

#if defined(SMOE_WITH_CUDA)
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "kernels/common/cuda_status.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/device_timing.h"
#include "kernels/grouped_gemm/grouped_gemm_check.h"
#include "kernels/permute/permute_check.h"
#include "kernels/router_topk/router_topk_check.h"
#endif
#if defined(SMOE_WITH_NCCL)
#include <nccl.h>
#endif

namespace smoe::kernels {
namespace {

#if defined(SMOE_WITH_CUDA)

uint32_t SeedOf(const KernelCheckOptions& o) {
  if (o.seed != 0) return o.seed;
  std::random_device rd;
  const uint32_t s = rd();
  return s == 0 ? 1 : s;
}
#endif  // SMOE_WITH_CUDA

// ---- Communicator checks ----------------------------------------------------

#if defined(SMOE_WITH_CUDA)
absl::Status FlipFirstDeviceByte(void* p) {
  unsigned char b = 0;
  SMOE_RETURN_IF_ERROR(
      CudaStatus(cudaMemcpy(&b, p, 1, cudaMemcpyDeviceToHost), "cudaMemcpy"));
  b ^= 1;
  return CudaStatus(cudaMemcpy(p, &b, 1, cudaMemcpyHostToDevice), "cudaMemcpy");
}
#endif

// Flips the lowest bit of the first received element on rank 0 after every
// collective (fault injection; the payload checks must then fail).
class FaultyCommunicator : public Communicator {
 public:
  explicit FaultyCommunicator(std::unique_ptr<Communicator> inner)
      : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  MemorySpace memory_space() const override { return inner_->memory_space(); }
  std::string name() const override { return inner_->name(); }
  absl::Status AllToAllCounts(const int64_t* send_counts,
                              int64_t* recv_counts) override {
    return inner_->AllToAllCounts(send_counts, recv_counts);
  }
  absl::Status AllToAllV(const void* send, const int64_t* send_counts,
                         void* recv, const int64_t* recv_counts,
                         DType dtype) override {
    SMOE_RETURN_IF_ERROR(
        inner_->AllToAllV(send, send_counts, recv, recv_counts, dtype));
    if (TotalCount(recv_counts, world_size()) == 0) return absl::OkStatus();
    return Flip(recv);
  }
  absl::Status AllReduceSum(void* buffer, int64_t count, DType dtype) override {
    SMOE_RETURN_IF_ERROR(inner_->AllReduceSum(buffer, count, dtype));
    return count > 0 ? Flip(buffer) : absl::OkStatus();
  }
  absl::Status Barrier() override { return inner_->Barrier(); }

 private:
  absl::Status Flip(void* p) {
    if (rank() != 0) return absl::OkStatus();
    if (memory_space() == MemorySpace::kHost) {
      *static_cast<unsigned char*>(p) ^= 1;
      return absl::OkStatus();
    }
#if defined(SMOE_WITH_CUDA)
    return FlipFirstDeviceByte(p);
#else
    return absl::FailedPreconditionError("device memory without CUDA");
#endif
  }
  std::unique_ptr<Communicator> inner_;
};

// Rank r contributes (r + 1) * (i % 1000 + 1) at element i: small integers,
// so the sum over W <= 64 ranks is exact in float32 and float64.
template <typename T>
absl::Status VerifiedAllReduce(Communicator& comm, int64_t count, DType dtype,
                               int64_t* checked, int64_t* wrong) {
  const int w = comm.world_size();
  const int r = comm.rank();
  std::vector<T> buf(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    buf[i] = static_cast<T>((r + 1) * (i % 1000 + 1));
  }
  if (comm.memory_space() == MemorySpace::kHost) {
    SMOE_RETURN_IF_ERROR(comm.AllReduceSum(buf.data(), count, dtype));
  } else {
#if defined(SMOE_WITH_CUDA)
    void* d = nullptr;
    const size_t bytes = buf.size() * sizeof(T);
    SMOE_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&d, bytes), "cudaMalloc"));
    absl::Status s = CudaStatus(
        cudaMemcpy(d, buf.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    if (s.ok()) s = comm.AllReduceSum(d, count, dtype);
    if (s.ok()) {
      s = CudaStatus(cudaMemcpy(buf.data(), d, bytes, cudaMemcpyDeviceToHost),
                     "cudaMemcpy");
    }
    cudaFree(d);
    SMOE_RETURN_IF_ERROR(s);
#else
    return absl::FailedPreconditionError("device communicator without CUDA");
#endif
  }
  const int64_t ranks_sum = static_cast<int64_t>(w) * (w + 1) / 2;
  for (int64_t i = 0; i < count; ++i) {
    ++*checked;
    if (buf[i] != static_cast<T>(ranks_sum * (i % 1000 + 1))) ++*wrong;
  }
  return absl::OkStatus();
}

#if defined(SMOE_WITH_CUDA)
// Restores the calling thread's current device on scope exit, so a check on
// GPU 3 does not leave later work (LibTorch's current stream) on GPU 3.
class CurrentDeviceGuard {
 public:
  CurrentDeviceGuard() {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      previous_ = -1;
      cudaGetLastError();
    }
  }
  ~CurrentDeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  CurrentDeviceGuard(const CurrentDeviceGuard&) = delete;
  CurrentDeviceGuard& operator=(const CurrentDeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

class CublasHandle {
 public:
  CublasHandle() = default;
  ~CublasHandle() {
    if (h_ != nullptr) cublasDestroy(h_);
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  absl::Status Create() {
    return CublasStatus(cublasCreate(&h_), "cublasCreate");
  }
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

// The frame of every kernel check: `options.device` current (the caller's
// restored after), the seed drawn and reported, then `body` with an RNG on
// that seed.
absl::StatusOr<KernelCheckResult> RunKernelCheck(
    const KernelCheckOptions& options,
    const std::function<absl::Status(std::mt19937&, KernelCheckResult*)>&
        body) {
  CurrentDeviceGuard restore;
  SMOE_RETURN_IF_ERROR(
      CudaStatus(cudaSetDevice(options.device), "cudaSetDevice"));
  KernelCheckResult r;
  r.seed = SeedOf(options);
  std::mt19937 rng(r.seed);
  SMOE_RETURN_IF_ERROR(body(rng, &r));
  return r;
}

#endif  // SMOE_WITH_CUDA

[[maybe_unused]] absl::Status NoCuda() {
  return absl::FailedPreconditionError(
      "built without CUDA (SMOE_WITH_CUDA=OFF)");
}

}  // namespace

// ---- Public API -------------------------------------------------------------

bool KernelCheckResult::ok() const {
  for (const KernelComparison& c : comparisons) {
    if (c.num_bad > 0) return false;
  }
  return true;
}

double KernelCheckResult::max_abs_err() const {
  double m = 0;
  for (const KernelComparison& c : comparisons) {
    if (!c.exact) m = std::max(m, c.max_abs_err);
  }
  return m;
}

std::string KernelCheckResult::first_failure() const {
  for (const KernelComparison& c : comparisons) {
    if (c.num_bad > 0) return absl::StrCat(c.what, ": ", c.message);
  }
  return "";
}

std::string FormatCudaVersion(int version) {
  if (version <= 0) return "";
  return absl::StrCat(version / 1000, ".", (version % 1000) / 10);
}

CudaStackInfo GetCudaStackInfo() {
  CudaStackInfo info;
  info.built_with_cuda = BuiltWithCuda();
  info.built_with_nccl = BuiltWithNccl();
#if defined(SMOE_WITH_CUDA)
  info.compiled_cuda_version = CUDART_VERSION;
  if (cudaDriverGetVersion(&info.driver_version) != cudaSuccess) {
    info.driver_version = 0;
    cudaGetLastError();
  }
  if (cudaRuntimeGetVersion(&info.runtime_version) != cudaSuccess) {
    info.runtime_version = 0;
    cudaGetLastError();
  }
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS) {
    info.cublas_version = major * 10000 + minor * 100 + patch;
  }
#endif
#if defined(SMOE_WITH_NCCL)
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) info.nccl_version = nccl;
#endif
  info.device_count = CudaDeviceCount();
  if (info.device_count == 0) info.device_error = DescribeDevice(0);
  for (int i = 0; i < info.device_count; ++i) {
    std::string line = DescribeDevice(i);
#if defined(SMOE_WITH_CUDA)
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) == cudaSuccess) {
      char bus[32];
      std::snprintf(bus, sizeof(bus), "%04x:%02x:%02x", prop.pciDomainID,
                    prop.pciBusID, prop.pciDeviceID);
      absl::StrAppend(&line, ", ",
                      static_cast<int64_t>(prop.totalGlobalMem >> 20),
                      " MiB, PCI ", bus);
    }
#endif
    info.devices.push_back(line);
  }
  return info;
}

absl::StatusOr<KernelCheckResult> CheckRouterTopKKernels(
    const KernelCheckOptions& options) {
#if defined(SMOE_WITH_CUDA)
  return RunKernelCheck(options, [&options](std::mt19937& rng,
                                            KernelCheckResult* r) {
    const int64_t t = options.quick ? 1024 : 4096;
    const RouterGating kRe = RouterGating::kRenormalized;
    const RouterGating kNo = RouterGating::kNoRenorm;
    std::vector<RouterTopKCheckCase> cases = {
        {t, 8, 2, kRe, false}, {t, 64, 4, kNo, false}, {t, 200, 8, kRe, true}};
    if (!options.quick) {
      cases.push_back({t, 8, 2, kNo, true});
      cases.push_back({7, 8, 8, kRe, false});
    }
    for (const RouterTopKCheckCase& c : cases) {
      SMOE_RETURN_IF_ERROR(
          CheckRouterTopK(c, rng, options.inject_fault, &r->comparisons));
    }
    return absl::OkStatus();
  });
#else
  (void)options;
  return NoCuda();
#endif
}

absl::StatusOr<KernelCheckResult> CheckPermuteKernels(
    const KernelCheckOptions& options) {
#if defined(SMOE_WITH_CUDA)
  return RunKernelCheck(
      options, [&options](std::mt19937& rng, KernelCheckResult* r) {
        // hidden 256 takes the 16-byte vector path, 5 none.
        std::vector<PermuteCheckCase> cases = {
            {options.quick ? 1024 : 4096, 8, 2, 256, false, /*with_bf16=*/true},
            {7, 8, 8, 5, false, /*with_bf16=*/false}};
        if (!options.quick) {
          cases.push_back({4096, 64, 1, 5, false, /*with_bf16=*/true});
        }
        for (const PermuteCheckCase& c : cases) {
          SMOE_RETURN_IF_ERROR(
              CheckPermute(c, rng, options.inject_fault, &r->comparisons));
        }
        return absl::OkStatus();
      });
#else
  (void)options;
  return NoCuda();
#endif
}

absl::StatusOr<KernelCheckResult> CheckGroupedGemmKernels(
    const KernelCheckOptions& options) {
#if defined(SMOE_WITH_CUDA)
  return RunKernelCheck(
      options, [&options](std::mt19937& rng, KernelCheckResult* r) {
        CublasHandle h;
        SMOE_RETURN_IF_ERROR(h.Create());
        for (GroupedGemmVariant v : {GroupedGemmVariant::kPerExpertLoop,
                                     GroupedGemmVariant::kGroupedBatched}) {
          for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
            const GroupedGemmCheckCase c{dtype, v, GroupedGemmMath::kStrictF32};
            std::string unsupported;
            SMOE_RETURN_IF_ERROR(
                CheckGroupedGemm(h.get(), c, rng, options.inject_fault,
                                 &r->comparisons, &unsupported));
            if (!unsupported.empty()) {
              r->notes.push_back(absl::StrCat(
                  "grouped_gemm ", DTypeName(dtype),
                  v == GroupedGemmVariant::kGroupedBatched ? " grouped-batched"
                                                           : " per-expert-loop",
                  ": not supported by this cuBLAS (", unsupported,
                  "); not checked"));
            }
          }
        }
        return absl::OkStatus();
      });
#else
  (void)options;
  return NoCuda();
#endif
}

absl::StatusOr<CommCheckResult> CheckCommunicators(
    const CommCheckOptions& options) {
  const int world = options.world_size;
  if (world < 1 || world > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("world_size=", world, ": must be in 1..64"));
  }
  CommunicatorOptions copt;
  copt.op_timeout_ms = options.op_timeout_ms;
  std::vector<std::unique_ptr<Communicator>> local;
  NcclUniqueIdBytes id{};
  if (options.backend == CommBackend::kLocal) {
    local = CreateLocalCommunicators(world, copt);
  } else {
    if (!BuiltWithNccl()) {
      return absl::UnimplementedError("built without NCCL (SMOE_WITH_NCCL)");
    }
    SMOE_ASSIGN_OR_RETURN(id, NewNcclUniqueId());
  }
  struct RankOut {
    absl::Status status;
    std::string name;
    int64_t a2a = 0, a2a_wrong = 0, ar = 0, ar_wrong = 0;
    double seconds = 0;
  };
  std::vector<RankOut> outs(world);
  auto run_rank = [&](int rank) {
    RankOut& o = outs[rank];
    std::unique_ptr<Communicator> comm;
    if (options.backend == CommBackend::kLocal) {
      comm = std::move(local[rank]);
    } else {
#if defined(SMOE_WITH_CUDA)
      o.status = CudaStatus(cudaSetDevice(rank), "cudaSetDevice");
      if (!o.status.ok()) return;
#endif
      NcclCommunicatorOptions nopt;
      nopt.common = copt;
      nopt.device = rank;
      absl::StatusOr<std::unique_ptr<Communicator>> made =
          CreateNcclCommunicator(rank, world, id, nopt);
      if (!made.ok()) {
        o.status = made.status();
        return;
      }
      comm = *std::move(made);
    }
    if (options.inject_fault) {
      comm = std::make_unique<FaultyCommunicator>(std::move(comm));
    }
    o.name = comm->name();
    const auto t0 = std::chrono::steady_clock::now();
    for (int round = 1; round <= options.rounds && o.status.ok(); ++round) {
      PayloadCheck check;
      o.status = RunPayloadAllToAll(*comm, options.columns,
                                    static_cast<uint64_t>(round), &check);
      o.a2a += check.checked;
      o.a2a_wrong += check.wrong;
    }
    if (o.status.ok()) {
      o.status = VerifiedAllReduce<double>(*comm, options.allreduce_count,
                                           DType::kFloat64, &o.ar, &o.ar_wrong);
    }
    if (o.status.ok()) {
      o.status = VerifiedAllReduce<float>(*comm, options.allreduce_count,
                                          DType::kFloat32, &o.ar, &o.ar_wrong);
    }
    if (o.status.ok()) o.status = comm->Barrier();
    o.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) threads.emplace_back(run_rank, r);
  for (std::thread& t : threads) t.join();

  // A rank that fails makes its peers time out or abort: report the root
  // cause, i.e. the first error that is neither of those.
  int failed = -1;
  for (int pass = 0; pass < 2 && failed < 0; ++pass) {
    for (int r = 0; r < world && failed < 0; ++r) {
      const absl::Status& s = outs[r].status;
      const bool secondary = absl::IsDeadlineExceeded(s) || absl::IsAborted(s);
      if (!s.ok() && (pass == 1 || !secondary)) failed = r;
    }
  }
  if (failed >= 0) {
    const absl::Status& s = outs[failed].status;
    return absl::Status(s.code(),
                        absl::StrCat("rank ", failed, ": ", s.message()));
  }
  CommCheckResult result;
  result.backend = outs[0].name;
  result.world_size = world;
  for (const RankOut& o : outs) {
    result.alltoall_elements += o.a2a;
    result.alltoall_wrong += o.a2a_wrong;
    result.allreduce_elements += o.ar;
    result.allreduce_wrong += o.ar_wrong;
    result.seconds = std::max(result.seconds, o.seconds);
  }
  return result;
}

DeviceRatesOptions DeviceRatesOptionsFor(int device, bool quick) {
  DeviceRatesOptions o;
  o.device = device;
  if (quick) {
    o.warmup = 2;
    o.reps = 5;
    o.copy_bytes = int64_t{256} << 20;
    o.gemm_size = 4096;
    o.grouped_tokens = 4096;
    o.permute_tokens = 4096;
    o.permute_hidden = 1024;
  }
  return o;
}

absl::Status ValidateDeviceRatesOptions(const DeviceRatesOptions& o) {
  const std::pair<const char*, int64_t> fields[] = {
      {"warmup", o.warmup},
      {"reps", o.reps},
      {"flush_bytes", o.flush_bytes},
      {"copy_bytes", o.copy_bytes},
      {"gemm_size", o.gemm_size},
      {"grouped_tokens", o.grouped_tokens},
      {"grouped_dim", o.grouped_dim},
      {"permute_tokens", o.permute_tokens},
      {"permute_hidden", o.permute_hidden}};
  for (const auto& [name, value] : fields) {
    // warmup may be 0; everything else must be positive.
    if (value < 0 || (value == 0 && std::string_view(name) != "warmup")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "DeviceRatesOptions.", name, "=", value,
          value < 0 ? ": must not be negative" : ": must be positive"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<DeviceRates> MeasureDeviceRates(int device, bool quick) {
  return MeasureDeviceRates(DeviceRatesOptionsFor(device, quick));
}

absl::StatusOr<DeviceRates> MeasureDeviceRates(
    const DeviceRatesOptions& options) {
  SMOE_RETURN_IF_ERROR(ValidateDeviceRatesOptions(options));
#if defined(SMOE_WITH_CUDA)
  CurrentDeviceGuard restore;
  SMOE_RETURN_IF_ERROR(
      CudaStatus(cudaSetDevice(options.device), "cudaSetDevice"));
  DeviceRates rates;
  rates.device = options.device;
  const int warmup = options.warmup;
  const int reps = options.reps;
  // 256 MiB by default: 5x the H100's 50 MB L2 (bench.h's L2Flusher).
  const size_t flush_bytes = static_cast<size_t>(options.flush_bytes);
  DeviceMem flush;
  SMOE_RETURN_IF_ERROR(flush.Alloc(flush_bytes));
  cudaStream_t stream = nullptr;  // legacy default stream

  {  // D2D copy, read + write bytes.
    const size_t bytes = static_cast<size_t>(options.copy_bytes);
    DeviceMem a, b;
    SMOE_RETURN_IF_ERROR(Zeros<char>(bytes, &a));
    SMOE_RETURN_IF_ERROR(b.Alloc(bytes));
    SMOE_ASSIGN_OR_RETURN(
        const double us, TimeDeviceMedianUs(
                             [&](cudaStream_t s) {
                               return CudaStatus(
                                   cudaMemcpyAsync(b.get(), a.get(), bytes,
                                                   cudaMemcpyDeviceToDevice, s),
                                   "cudaMemcpyAsync");
                             },
                             stream, flush.get(), flush_bytes, warmup, reps));
    rates.copy_gbps = 2.0 * static_cast<double>(bytes) / (us * 1e3);
  }
  CublasHandle handle;
  SMOE_RETURN_IF_ERROR(handle.Create());
  SMOE_RETURN_IF_ERROR(
      CublasStatus(cublasSetStream(handle.get(), stream), "cublasSetStream"));
  {  // Dense bf16 GEMM, fp32 accumulation.
    const int size = options.gemm_size;
    const size_t elems = static_cast<size_t>(size) * size;
    DeviceMem a, b, c;
    SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(elems, &a));
    SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(elems, &b));
    SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(elems, &c));
    const float alpha = 1.0f, beta = 0.0f;
    SMOE_ASSIGN_OR_RETURN(
        const double us,
        TimeDeviceMedianUs(
            [&](cudaStream_t) {
              return CublasStatus(
                  cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, size,
                               size, size, &alpha, a.get(), CUDA_R_16BF, size,
                               b.get(), CUDA_R_16BF, size, &beta, c.get(),
                               CUDA_R_16BF, size, CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT),
                  "cublasGemmEx");
            },
            stream, flush.get(), flush_bytes, warmup, reps));
    rates.dense_bf16_tflops =
        2.0 * size * static_cast<double>(size) * size / (us * 1e6);
  }
  {  // Grouped GEMM bf16 forward, balanced: best of the two variants.
    const int e = 8, k = 2;
    const int64_t t = options.grouped_tokens, d = options.grouped_dim,
                  hdim = options.grouped_dim;
    const int64_t rows = t * k;
    std::vector<int64_t> off(e + 1);
    for (int x = 0; x <= e; ++x) off[x] = rows * x / e;
    DeviceMem a, b, c, ws;
    SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(rows * d, &a));
    SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(e * d * hdim, &b));
    SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(rows * hdim, &c));
    SMOE_RETURN_IF_ERROR(ws.Alloc(GroupedGemmWorkspaceBytes(e)));
    double best_us = 0;
    for (GroupedGemmVariant v : {GroupedGemmVariant::kGroupedBatched,
                                 GroupedGemmVariant::kPerExpertLoop}) {
      const auto grouped = [&](cudaStream_t s) {
        return GroupedGemm(handle.get(), a.get(), b.get(), c.get(),
                           DType::kBFloat16, off.data(), e, d, hdim, false, v,
                           ws.get(), s);
      };
      absl::StatusOr<double> us = TimeDeviceMedianUs(
          grouped, stream, flush.get(), flush_bytes, warmup, reps);
      if (absl::IsUnimplemented(us.status())) continue;
      SMOE_RETURN_IF_ERROR(us.status());
      if (best_us == 0 || *us < best_us) best_us = *us;
    }
    if (best_us > 0) {
      rates.grouped_gemm_tflops = 2.0 * rows * d * hdim / (best_us * 1e6);
      rates.grouped_gemm_fraction =
          rates.grouped_gemm_tflops / rates.dense_bf16_tflops;
    }
    rates.grouped_gemm_shape =
        absl::StrCat("bf16 fwd E=", e, " T=", t, " k=", k, " d=", d,
                     " h=", hdim, " balanced (", rows / e, " rows/expert)");
  }
  {  // Permute and combine bf16 (bytes as in permute_bench.cu).
    const int e = 8, k = 2;
    const int64_t t = options.permute_tokens, d = options.permute_hidden;
    const int64_t rows = t * k;
    std::vector<int32_t> topk(rows);
    for (int64_t r = 0; r < t; ++r) {
      for (int j = 0; j < k; ++j)
        topk[r * k + j] = static_cast<int>((r + j) % e);
    }
    DeviceMem d_topk, sorted, dest, offs, cnt, ws, x, perm, out, w;
    SMOE_RETURN_IF_ERROR(Upload(topk, &d_topk));
    SMOE_RETURN_IF_ERROR(Zeros<int32_t>(rows, &sorted));
    SMOE_RETURN_IF_ERROR(Zeros<int32_t>(rows, &dest));
    SMOE_RETURN_IF_ERROR(Zeros<int32_t>(e + 1, &offs));
    SMOE_RETURN_IF_ERROR(Zeros<int32_t>(e, &cnt));
    SMOE_RETURN_IF_ERROR(ws.Alloc(PermutePlanWorkspaceBytes(t, k, e)));
    SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(t * d, &x));
    SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(rows * d, &perm));
    SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(t * d, &out));
    SMOE_RETURN_IF_ERROR(Upload(std::vector<float>(rows, 0.5f), &w));
    const PermutePlan plan{
        sorted.as<int32_t>(), dest.as<int32_t>(), offs.as<int32_t>(), t, k, e};
    SMOE_RETURN_IF_ERROR(BuildPermutePlan(d_topk.as<int32_t>(), plan,
                                          cnt.as<int32_t>(), ws.get(), stream));
    SMOE_ASSIGN_OR_RETURN(const double perm_us,
                          TimeDeviceMedianUs(
                              [&](cudaStream_t s) {
                                return Permute(x.get(), DType::kBFloat16, d,
                                               plan, perm.get(), s);
                              },
                              stream, flush.get(), flush_bytes, warmup, reps));
    SMOE_ASSIGN_OR_RETURN(const double comb_us,
                          TimeDeviceMedianUs(
                              [&](cudaStream_t s) {
                                return Combine(perm.get(), w.as<float>(),
                                               DType::kBFloat16, d, plan,
                                               out.get(), s);
                              },
                              stream, flush.get(), flush_bytes, warmup, reps));
    const double perm_bytes = 2.0 * 2 * rows * d + 4.0 * rows;
    const double comb_bytes = 2.0 * rows * d + 8.0 * rows + 2.0 * t * d;
    rates.permute_gbps = perm_bytes / (perm_us * 1e3);
    rates.combine_gbps = comb_bytes / (comb_us * 1e3);
    rates.permute_fraction = rates.permute_gbps / rates.copy_gbps;
    rates.combine_fraction = rates.combine_gbps / rates.copy_gbps;
    rates.permute_shape =
        absl::StrCat("bf16 E=", e, " T=", t, " k=", k, " d=", d, " balanced");
  }
  return rates;
#else
  return NoCuda();
#endif
}

}  // namespace smoe::kernels
