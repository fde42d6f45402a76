// Copyright 2026 SMoE Lab authors.
//
// Fake kernel launches and cuBLAS over the fake CUDA runtime (semantics in
// tests/fakes/fake_kernels_control.h). Compiled with SMOE_WITH_CUDA against
// tests/fakes/include, like the host wrappers it serves.
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cublas_api.h"
#include "cuda_bf16.h"
#include "cuda_runtime_api.h"
#include "kernels/grouped_gemm/grouped_gemm.h"
#include "kernels/grouped_gemm/grouped_gemm_launch.h"
#include "kernels/permute/permute.h"
#include "kernels/permute/permute_launch.h"
#include "kernels/router_topk/router_topk.h"
#include "kernels/router_topk/router_topk_launch.h"
#include "tests/fakes/fake_kernels_control.h"
#include "tests/fakes/fake_nccl_control.h"

namespace smoe::fake_kernels {
namespace {

struct KernelState {
  std::mutex mu;
  std::map<std::string, int> corrupt;  // launch -> runs to skip first
  std::map<std::string, int64_t> runs;
};

KernelState& K() {
  static KernelState* s = new KernelState;  // stream threads may use it late
  return *s;
}

// Counts a completed run of `name`; true when this run is to be corrupted.
bool FinishRun(const std::string& name) {
  std::lock_guard<std::mutex> l(K().mu);
  ++K().runs[name];
  auto it = K().corrupt.find(name);
  if (it == K().corrupt.end()) return false;
  if (it->second > 0) {
    --it->second;
    return false;
  }
  K().corrupt.erase(it);
  return true;
}

void Trampoline(void* p) {
  std::unique_ptr<std::function<void()>> fn(
      static_cast<std::function<void()>*>(p));
  (*fn)();
}

// Enqueues `body` on `stream` as one stream operation named `name`; `corrupt`
// damages the first output after the body when CorruptLaunch says so.
cudaError_t Enqueue(const char* name, cudaStream_t stream,
                    std::function<void()> body, std::function<void()> corrupt) {
  auto* fn = new std::function<void()>([name = std::string(name),
                                        body = std::move(body),
                                        corrupt = std::move(corrupt)] {
    body();
    if (FinishRun(name) && corrupt) corrupt();
  });
  const cudaError_t e = cudaLaunchHostFunc(stream, Trampoline, fn);
  if (e != cudaSuccess) delete fn;
  return e;
}

float Bf16(const void* p, int64_t i) {
  return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
}

// Element i of a kernel float operand (dtype 0: float, 1: bfloat16).
float Load(const void* p, int dtype, int64_t i) {
  return dtype == 0 ? static_cast<const float*>(p)[i] : Bf16(p, i);
}

[[maybe_unused]] std::vector<float> LoadAll(const void* p, int dtype,
                                            int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = Load(p, dtype, i);
  return v;
}

[[maybe_unused]] void StoreAll(const std::vector<float>& v, int dtype,
                               void* p) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == 0) {
      static_cast<float*>(p)[i] = v[i];
    } else {
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v[i]);
    }
  }
}

void AddOne(void* p, int dtype) {
  if (dtype == 0) {
    static_cast<float*>(p)[0] += 1.0f;
  } else {
    auto* b = static_cast<__nv_bfloat16*>(p);
    b[0] = __float2bfloat16(__bfloat162float(b[0]) + 1.0f);
  }
}

// Column-major C = al op(A) op(B) + be C on the host, float accumulation.
void Gemm(cublasOperation_t transa, cublasOperation_t transb, int m, int n,
          int k, float al, const void* A, int lda, const void* B, int ldb,
          float be, void* C, int ldc, int dt) {
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      float acc = 0;
      for (int p = 0; p < k; ++p) {
        const int64_t ai =
            transa == CUBLAS_OP_N ? i + int64_t{p} * lda : p + int64_t{i} * lda;
        const int64_t bi =
            transb == CUBLAS_OP_N ? p + int64_t{j} * ldb : j + int64_t{p} * ldb;
        acc += Load(A, dt, ai) * Load(B, dt, bi);
      }
      const int64_t ci = i + int64_t{j} * ldc;
      // beta == 0: C is not read (it may be uninitialised).
      float v = al * acc;
      if (be != 0) v += be * Load(C, dt, ci);
      if (dt == 0) {
        static_cast<float*>(C)[ci] = v;
      } else {
        static_cast<__nv_bfloat16*>(C)[ci] = __float2bfloat16(v);
      }
    }
  }
}

}  // namespace

void CorruptLaunch(const std::string& launch, int skip) {
  std::lock_guard<std::mutex> l(K().mu);
  K().corrupt[launch] = skip;
}

int64_t LaunchesRun(const std::string& launch) {
  std::lock_guard<std::mutex> l(K().mu);
  if (!launch.empty()) {
    auto it = K().runs.find(launch);
    return it == K().runs.end() ? 0 : it->second;
  }
  int64_t n = 0;
  for (const auto& [name, c] : K().runs) n += c;
  return n;
}

void Reset() {
  std::lock_guard<std::mutex> l(K().mu);
  K().corrupt.clear();
  K().runs.clear();
}

}  // namespace smoe::fake_kernels

// ---- cuBLAS
// ------------------------------------------------------------------

struct smoe_fake::cublasContext {
  cudaStream_t stream = nullptr;
};

namespace smoe_fake {

#define SMOE_FAKE_KERNEL_INJECT(call, type)                           \
  do {                                                                \
    if (const int injected_ = smoe::fake_nccl::TakeCallFault(call)) { \
      return static_cast<type>(injected_);                            \
    }                                                                 \
  } while (false)

const char* cublasGetStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    default:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
  }
}

const char* cublasGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "success";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the requested functionality is not supported";
    default:
      return "an internal operation failed";
  }
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
  SMOE_FAKE_KERNEL_INJECT("cublasGetProperty", cublasStatus_t);
  if (value == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION:
      *value = CUBLAS_VERSION / 10000;
      break;
    case MINOR_VERSION:
      *value = CUBLAS_VERSION / 100 % 100;
      break;
    default:
      *value = CUBLAS_VERSION % 100;
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  SMOE_FAKE_KERNEL_INJECT("cublasCreate", cublasStatus_t);
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  SMOE_FAKE_KERNEL_INJECT("cublasDestroy", cublasStatus_t);
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  // Like cuBLAS: work already enqueued does not touch the handle.
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  SMOE_FAKE_KERNEL_INJECT("cublasSetStream", cublasStatus_t);
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream(cublasHandle_t handle, cudaStream_t* stream) {
  SMOE_FAKE_KERNEL_INJECT("cublasGetStream", cublasStatus_t);
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (stream == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k,
                            const void* alpha, const void* A,
                            cudaDataType_t Atype, int lda, const void* B,
                            cudaDataType_t Btype, int ldb, const void* beta,
                            void* C, cudaDataType_t Ctype, int ldc,
                            cublasComputeType_t computeType,
                            cublasGemmAlgo_t /*algo*/) {
  SMOE_FAKE_KERNEL_INJECT("cublasGemmEx", cublasStatus_t);
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (Atype != Btype || Atype != Ctype ||
      (Atype != CUDA_R_32F && Atype != CUDA_R_16BF) ||
      (computeType != CUBLAS_COMPUTE_32F &&
       computeType != CUBLAS_COMPUTE_32F_FAST_TF32) ||
      transa == CUBLAS_OP_C || transb == CUBLAS_OP_C) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (m < 0 || n < 0 || k < 0 || lda < (transa == CUBLAS_OP_N ? m : k) ||
      ldb < (transb == CUBLAS_OP_N ? k : n) || ldc < m) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  // Host pointer mode: the scalars are read at the call.
  const float al = *static_cast<const float*>(alpha);
  const float be = *static_cast<const float*>(beta);
  const int dt = Atype == CUDA_R_32F ? 0 : 1;
  const cudaError_t e = smoe::fake_kernels::Enqueue(
      "cublasGemmEx", handle->stream,
      [=] {
        smoe::fake_kernels::Gemm(transa, transb, m, n, k, al, A, lda, B, ldb,
                                 be, C, ldc, dt);
      },
      [=] {
        if (m > 0 && n > 0) smoe::fake_kernels::AddOne(C, dt);
      });
  return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS
                          : CUBLAS_STATUS_EXECUTION_FAILED;
}

cublasStatus_t cublasGemmGroupedBatchedEx(
    cublasHandle_t handle, const cublasOperation_t transa_array[],
    const cublasOperation_t transb_array[], const int m_array[],
    const int n_array[], const int k_array[], const void* alpha_array,
    const void* const Aarray[], cudaDataType_t Atype, const int lda_array[],
    const void* const Barray[], cudaDataType_t Btype, const int ldb_array[],
    const void* beta_array, void* const Carray[], cudaDataType_t Ctype,
    const int ldc_array[], int group_count, const int group_size[],
    cublasComputeType_t computeType) {
  SMOE_FAKE_KERNEL_INJECT("cublasGemmGroupedBatchedEx", cublasStatus_t);
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (Atype != Btype || Atype != Ctype ||
      (Atype != CUDA_R_32F && Atype != CUDA_R_16BF) ||
      (computeType != CUBLAS_COMPUTE_32F &&
       computeType != CUBLAS_COMPUTE_32F_FAST_TF32) ||
      group_count < 0) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  // The sizes and scalars are host arrays: copied at the call.
  struct Problem {
    cublasOperation_t ta, tb;
    int m, n, k, lda, ldb, ldc;
    float alpha, beta;
  };
  std::vector<Problem> probs;
  const auto* al = static_cast<const float*>(alpha_array);
  const auto* be = static_cast<const float*>(beta_array);
  for (int g = 0; g < group_count; ++g) {
    const Problem p{
        transa_array[g], transb_array[g], m_array[g],   n_array[g], k_array[g],
        lda_array[g],    ldb_array[g],    ldc_array[g], al[g],      be[g]};
    if (p.ta == CUBLAS_OP_C || p.tb == CUBLAS_OP_C) {
      return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (group_size[g] < 0 || p.m < 0 || p.n < 0 || p.k < 0 ||
        p.lda < (p.ta == CUBLAS_OP_N ? p.m : p.k) ||
        p.ldb < (p.tb == CUBLAS_OP_N ? p.k : p.n) || p.ldc < p.m) {
      return CUBLAS_STATUS_INVALID_VALUE;
    }
    for (int i = 0; i < group_size[g]; ++i) probs.push_back(p);
  }
  const int dt = Atype == CUDA_R_32F ? 0 : 1;
  const cudaError_t e = smoe::fake_kernels::Enqueue(
      "cublasGemmGroupedBatchedEx", handle->stream,
      [=] {
        // The pointer arrays are device memory: read when the op runs.
        for (size_t i = 0; i < probs.size(); ++i) {
          const Problem& p = probs[i];
          smoe::fake_kernels::Gemm(p.ta, p.tb, p.m, p.n, p.k, p.alpha,
                                   Aarray[i], p.lda, Barray[i], p.ldb, p.beta,
                                   Carray[i], p.ldc, dt);
        }
      },
      [=] {
        if (!probs.empty() && probs[0].m > 0 && probs[0].n > 0) {
          smoe::fake_kernels::AddOne(Carray[0], dt);
        }
      });
  return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS
                          : CUBLAS_STATUS_EXECUTION_FAILED;
}

}  // namespace smoe_fake

// ---- Kernel launches
// ----------------------------------------------------------

namespace smoe::kernels {

using smoe::fake_kernels::Enqueue;
using smoe::fake_kernels::LoadAll;
using smoe::fake_kernels::StoreAll;

#define SMOE_FAKE_LAUNCH_INJECT(call)                                 \
  do {                                                                \
    if (const int injected_ = smoe::fake_nccl::TakeCallFault(call)) { \
      return static_cast<cudaError_t>(injected_);                     \
    }                                                                 \
  } while (false)

#if defined(SMOE_FAKE_KERNELS_CUBLAS_ONLY)
// Only the fake cuBLAS and the control functions: the real launchers come
// unrenamed from kernels compiled over the emulator (the mutation tests of
// kernels/emu/CMakeLists.txt).
#elif defined(SMOE_FAKE_KERNELS_EMU)
// The real launchers of kernels/*/*.cu, compiled as C++ over the CUDA
// emulator (kernels/emu) with an Emu prefix (tests/fakes/kernels_on_emu.h):
// each fake launch below keeps the fault knobs (FailCall, CorruptLaunch) and
// the run counts, and runs the real kernels.
cudaError_t EmuLaunchRouterTopK(const float* logits, int64_t num_tokens,
                                int num_experts, int top_k, int gating,
                                int32_t* topk_idx, float* topk_weights,
                                int32_t* num_tokens_per_expert,
                                int32_t* expert_offsets, cudaStream_t stream);
cudaError_t EmuLaunchRouterTopKBackward(
    const float* logits, const int32_t* topk_idx, const float* topk_weights,
    const float* grad_topk_weights, int64_t num_tokens, int num_experts,
    int top_k, int gating, float* grad_logits, cudaStream_t stream);
cudaError_t EmuLaunchExclusiveScan(const int32_t* counts, int num_experts,
                                   int32_t* expert_offsets,
                                   cudaStream_t stream);
size_t EmuLaunchPermutePlanWorkspaceBytes(int64_t num_rows, int num_experts);
cudaError_t EmuLaunchBuildPermutePlan(const int32_t* topk_idx, int64_t num_rows,
                                      int num_experts, int32_t* sorted_idx,
                                      int32_t* dest_idx,
                                      int32_t* expert_offsets,
                                      int32_t* num_tokens_per_expert,
                                      void* workspace, cudaStream_t stream);
cudaError_t EmuLaunchGatherRows(const void* src, void* dst, int64_t num_rows,
                                int64_t row_bytes, const int32_t* index,
                                int divisor, cudaStream_t stream);
cudaError_t EmuLaunchCombine(const void* src, const float* weights, int dtype,
                             int64_t num_tokens, int top_k, int64_t hidden,
                             const int32_t* dest_idx, void* out,
                             cudaStream_t stream);
cudaError_t EmuLaunchCombineBackward(
    const void* grad_out, const void* expert_out, const float* weights,
    int dtype, int64_t num_tokens, int top_k, int64_t hidden,
    const int32_t* dest_idx, void* grad_expert_out, float* grad_topk_weights,
    cudaStream_t stream);
GemmLaunchResult EmuLaunchGroupedGemm(cublasHandle_t handle, const void* a,
                                      const void* b, void* c, int dtype,
                                      const int64_t* expert_offsets,
                                      int num_experts, int64_t k, int64_t n,
                                      int mode, int variant, int math,
                                      void* workspace, cudaStream_t stream);

namespace {
// After a successful real launch: one stream operation that counts the run
// and applies CorruptLaunch, in stream order after the kernels.
cudaError_t After(const char* name, cudaStream_t stream, cudaError_t e,
                  std::function<void()> corrupt) {
  if (e != cudaSuccess) return e;
  return Enqueue(
      name, stream, [] {}, std::move(corrupt));
}
}  // namespace

cudaError_t LaunchRouterTopK(const float* logits, int64_t num_tokens,
                             int num_experts, int top_k, int gating,
                             int32_t* topk_idx, float* topk_weights,
                             int32_t* num_tokens_per_expert,
                             int32_t* expert_offsets, cudaStream_t stream) {
  SMOE_FAKE_LAUNCH_INJECT("LaunchRouterTopK");
  return After("LaunchRouterTopK", stream,
               EmuLaunchRouterTopK(
                   logits, num_tokens, num_experts, top_k, gating, topk_idx,
                   topk_weights, num_tokens_per_expert, expert_offsets, stream),
               [=] {
                 if (num_tokens > 0) {
                   topk_idx[0] = (topk_idx[0] + 1) % num_experts;
                 }
               });
}

cudaError_t LaunchRouterTopKBackward(
    const float* logits, const int32_t* topk_idx, const float* topk_weights,
    const float* grad_topk_weights, int64_t num_tokens, int num_experts,
    int top_k, int gating, float* grad_logits, cudaStream_t stream) {
  SMOE_FAKE_LAUNCH_INJECT("LaunchRouterTopKBackward");
  return After("LaunchRouterTopKBackward", stream,
               EmuLaunchRouterTopKBackward(
                   logits, topk_idx, topk_weights, grad_topk_weights,
                   num_tokens, num_experts, top_k, gating, grad_logits, stream),
               [=] {
                 if (num_tokens > 0) grad_logits[0] += 1.0f;
               });
}

cudaError_t LaunchExclusiveScan(const int32_t* counts, int num_experts,
                                int32_t* expert_offsets, cudaStream_t stream) {
  SMOE_FAKE_LAUNCH_INJECT("LaunchExclusiveScan");
  return After(
      "LaunchExclusiveScan", stream,
      EmuLaunchExclusiveScan(counts, num_experts, expert_offsets, stream),
      [=] { expert_offsets[0] += 1; });
}

size_t LaunchPermutePlanWorkspaceBytes(int64_t num_rows, int num_experts) {
  return EmuLaunchPermutePlanWorkspaceBytes(num_rows, num_experts);
}

cudaError_t LaunchBuildPermutePlan(const int32_t* topk_idx, int64_t num_rows,
                                   int num_experts, int32_t* sorted_idx,
                                   int32_t* dest_idx, int32_t* expert_offsets,
                                   int32_t* num_tokens_per_expert,
                                   void* workspace, cudaStream_t stream) {
  SMOE_FAKE_LAUNCH_INJECT("LaunchBuildPermutePlan");
  return After("LaunchBuildPermutePlan", stream,
               EmuLaunchBuildPermutePlan(
                   topk_idx, num_rows, num_experts, sorted_idx, dest_idx,
                   expert_offsets, num_tokens_per_expert, workspace, stream),
               [=] {
                 if (num_rows > 0) {
                   sorted_idx[0] = (sorted_idx[0] + 1) % num_rows;
                 }
               });
}

cudaError_t LaunchGatherRows(const void* src, void* dst, int64_t num_rows,
                             int64_t row_bytes, const int32_t* index,
                             int divisor, cudaStream_t stream) {
  SMOE_FAKE_LAUNCH_INJECT("LaunchGatherRows");
  const cudaError_t e = EmuLaunchGatherRows(src, dst, num_rows, row_bytes,
                                            index, divisor, stream);
  if (e != cudaSuccess || num_rows == 0) return e;
  return After("LaunchGatherRows", stream, e,
               [=] { static_cast<unsigned char*>(dst)[0] ^= 0x40; });
}

cudaError_t LaunchCombine(const void* src, const float* weights, int dtype,
                          int64_t num_tokens, int top_k, int64_t hidden,
                          const int32_t* dest_idx, void* out,
                          cudaStream_t stream) {
  SMOE_FAKE_LAUNCH_INJECT("LaunchCombine");
  const cudaError_t e = EmuLaunchCombine(src, weights, dtype, num_tokens, top_k,
                                         hidden, dest_idx, out, stream);
  if (e != cudaSuccess || num_tokens == 0) return e;
  return After("LaunchCombine", stream, e,
               [=] { smoe::fake_kernels::AddOne(out, dtype); });
}

cudaError_t LaunchCombineBackward(const void* grad_out, const void* expert_out,
                                  const float* weights, int dtype,
                                  int64_t num_tokens, int top_k, int64_t hidden,
                                  const int32_t* dest_idx,
                                  void* grad_expert_out,
                                  float* grad_topk_weights,
                                  cudaStream_t stream) {
  SMOE_FAKE_LAUNCH_INJECT("LaunchCombineBackward");
  const cudaError_t e = EmuLaunchCombineBackward(
      grad_out, expert_out, weights, dtype, num_tokens, top_k, hidden, dest_idx,
      grad_expert_out, grad_topk_weights, stream);
  if (e != cudaSuccess || num_tokens == 0) return e;
  return After("LaunchCombineBackward", stream, e,
               [=] { smoe::fake_kernels::AddOne(grad_expert_out, dtype); });
}

GemmLaunchResult LaunchGroupedGemm(cublasHandle_t handle, const void* a,
                                   const void* b, void* c, int dtype,
                                   const int64_t* expert_offsets,
                                   int num_experts, int64_t k, int64_t n,
                                   int mode, int variant, int math,
                                   void* workspace, cudaStream_t stream) {
  GemmLaunchResult r;
  if (const int injected =
          smoe::fake_nccl::TakeCallFault("LaunchGroupedGemm")) {
    r.cublas = static_cast<cublasStatus_t>(injected);
    return r;
  }
  r = EmuLaunchGroupedGemm(handle, a, b, c, dtype, expert_offsets, num_experts,
                           k, n, mode, variant, math, workspace, stream);
  if (r.cuda != cudaSuccess || r.cublas != CUBLAS_STATUS_SUCCESS) return r;
  r.cuda = After("LaunchGroupedGemm", stream, cudaSuccess,
                 [=] { smoe::fake_kernels::AddOne(c, dtype); });
  return r;
}

#else  // the kernels' CPU references

cudaError_t LaunchRouterTopK(const float* logits, int64_t num_tokens,
                             int num_experts, int top_k, int gating,
                             int32_t* topk_idx, float* topk_weights,
                             int32_t* num_tokens_per_expert,
                             int32_t* expert_offsets, cudaStream_t stream) {
  SMOE_FAKE_LAUNCH_INJECT("LaunchRouterTopK");
  if (num_tokens < 0 || num_experts < 1 || num_experts > kMaxRouterExperts ||
      top_k < 1 || top_k > num_experts) {
    return cudaErrorInvalidValue;
  }
  return Enqueue(
      "LaunchRouterTopK", stream,
      [=] {
        RouterTopKRef(logits, num_tokens, num_experts, top_k,
                      static_cast<RouterGating>(gating), topk_idx, topk_weights,
                      num_tokens_per_expert, expert_offsets);
      },
      [=] {
        if (num_tokens > 0) topk_idx[0] = (topk_idx[0] + 1) % num_experts;
      });
}

cudaError_t LaunchRouterTopKBackward(
    const float* logits, const int32_t* topk_idx, const float* topk_weights,
    const float* grad_topk_weights, int64_t num_tokens, int num_experts,
    int top_k, int gating, float* grad_logits, cudaStream_t stream) {
  SMOE_FAKE_LAUNCH_INJECT("LaunchRouterTopKBackward");
  if (num_tokens < 0 || num_experts < 1 || top_k < 1 || top_k > num_experts) {
    return cudaErrorInvalidValue;
  }
  return Enqueue(
      "LaunchRouterTopKBackward", stream,
      [=] {
        RouterTopKBackwardRef(logits, topk_idx, topk_weights, grad_topk_weights,
                              num_tokens, num_experts, top_k,
                              static_cast<RouterGating>(gating), grad_logits);
      },
      [=] {
        if (num_tokens > 0) grad_logits[0] += 1.0f;
      });
}

cudaError_t LaunchExclusiveScan(const int32_t* counts, int num_experts,
                                int32_t* expert_offsets, cudaStream_t stream) {
  SMOE_FAKE_LAUNCH_INJECT("LaunchExclusiveScan");
  if (num_experts < 1) return cudaErrorInvalidValue;
  return Enqueue(
      "LaunchExclusiveScan", stream,
      [=] {
        int32_t sum = 0;
        for (int e = 0; e < num_experts; ++e) {
          expert_offsets[e] = sum;
          sum += counts[e];
        }
        expert_offsets[num_experts] = sum;
      },
      [=] { expert_offsets[0] += 1; });
}

size_t LaunchPermutePlanWorkspaceBytes(int64_t num_rows, int num_experts) {
  (void)num_rows;
  return sizeof(int32_t) * static_cast<size_t>(num_experts);
}

cudaError_t LaunchBuildPermutePlan(const int32_t* topk_idx, int64_t num_rows,
                                   int num_experts, int32_t* sorted_idx,
                                   int32_t* dest_idx, int32_t* expert_offsets,
                                   int32_t* num_tokens_per_expert,
                                   void* workspace, cudaStream_t stream) {
  SMOE_FAKE_LAUNCH_INJECT("LaunchBuildPermutePlan");
  if (num_rows < 0 || num_rows >= (int64_t{1} << 31) || num_experts < 1 ||
      num_experts > kMaxPermuteExperts || workspace == nullptr) {
    return cudaErrorInvalidValue;
  }
  return Enqueue(
      "LaunchBuildPermutePlan", stream,
      [=] {
        // Flat rows: the plan's indices do not depend on how rows split
        // into tokens x top_k.
        const PermutePlan p{sorted_idx, dest_idx, expert_offsets,
                            num_rows,   1,        num_experts};
        BuildPermutePlanRef(topk_idx, p);
        for (int e = 0; e < num_experts; ++e) {
          num_tokens_per_expert[e] = expert_offsets[e + 1] - expert_offsets[e];
        }
      },
      [=] {
        if (num_rows > 0) sorted_idx[0] = (sorted_idx[0] + 1) % num_rows;
      });
}

cudaError_t LaunchGatherRows(const void* src, void* dst, int64_t num_rows,
                             int64_t row_bytes, const int32_t* index,
                             int divisor, cudaStream_t stream) {
  SMOE_FAKE_LAUNCH_INJECT("LaunchGatherRows");
  if (num_rows < 0 || row_bytes < 1 || divisor < 1) {
    return cudaErrorInvalidValue;
  }
  if (num_rows == 0) return cudaSuccess;
  return Enqueue(
      "LaunchGatherRows", stream,
      [=] {
        const char* s = static_cast<const char*>(src);
        char* d = static_cast<char*>(dst);
        for (int64_t r = 0; r < num_rows; ++r) {
          std::memcpy(d + r * row_bytes,
                      s + int64_t{index[r] / divisor} * row_bytes,
                      static_cast<size_t>(row_bytes));
        }
      },
      [=] { static_cast<unsigned char*>(dst)[0] ^= 0x40; });
}

cudaError_t LaunchCombine(const void* src, const float* weights, int dtype,
                          int64_t num_tokens, int top_k, int64_t hidden,
                          const int32_t* dest_idx, void* out,
                          cudaStream_t stream) {
  SMOE_FAKE_LAUNCH_INJECT("LaunchCombine");
  if (num_tokens < 0 || top_k < 1 || hidden < 1) return cudaErrorInvalidValue;
  if (num_tokens == 0) return cudaSuccess;
  return Enqueue(
      "LaunchCombine", stream,
      [=] {
        const int64_t rows = num_tokens * top_k;
        const PermutePlan p{nullptr, const_cast<int32_t*>(dest_idx),
                            nullptr, num_tokens,
                            top_k,   1};
        const std::vector<float> y = LoadAll(src, dtype, rows * hidden);
        std::vector<float> o(static_cast<size_t>(num_tokens * hidden));
        if (weights == nullptr) {
          PermuteBackwardRef(y.data(), hidden, p, o.data());
        } else {
          CombineRef(y.data(), weights, hidden, p, o.data());
        }
        StoreAll(o, dtype, out);
      },
      [=] { smoe::fake_kernels::AddOne(out, dtype); });
}

cudaError_t LaunchCombineBackward(const void* grad_out, const void* expert_out,
                                  const float* weights, int dtype,
                                  int64_t num_tokens, int top_k, int64_t hidden,
                                  const int32_t* dest_idx,
                                  void* grad_expert_out,
                                  float* grad_topk_weights,
                                  cudaStream_t stream) {
  SMOE_FAKE_LAUNCH_INJECT("LaunchCombineBackward");
  if (num_tokens < 0 || top_k < 1 || hidden < 1 || weights == nullptr) {
    return cudaErrorInvalidValue;
  }
  if (num_tokens == 0) return cudaSuccess;
  return Enqueue(
      "LaunchCombineBackward", stream,
      [=] {
        const int64_t rows = num_tokens * top_k;
        const PermutePlan p{nullptr, const_cast<int32_t*>(dest_idx),
                            nullptr, num_tokens,
                            top_k,   1};
        const std::vector<float> g =
            LoadAll(grad_out, dtype, num_tokens * hidden);
        const std::vector<float> y = LoadAll(expert_out, dtype, rows * hidden);
        std::vector<float> gy(static_cast<size_t>(rows * hidden));
        CombineBackwardRef(g.data(), y.data(), weights, hidden, p, gy.data(),
                           grad_topk_weights);
        StoreAll(gy, dtype, grad_expert_out);
      },
      [=] { smoe::fake_kernels::AddOne(grad_expert_out, dtype); });
}

GemmLaunchResult LaunchGroupedGemm(cublasHandle_t handle, const void* a,
                                   const void* b, void* c, int dtype,
                                   const int64_t* expert_offsets,
                                   int num_experts, int64_t k, int64_t n,
                                   int mode, int variant, int math,
                                   void* workspace, cudaStream_t stream) {
  (void)variant;
  (void)math;
  (void)workspace;
  GemmLaunchResult r;
  if (const int injected =
          smoe::fake_nccl::TakeCallFault("LaunchGroupedGemm")) {
    r.cublas = static_cast<cublasStatus_t>(injected);
    return r;
  }
  // As grouped_gemm.cu: bind the handle to `stream` when it is elsewhere.
  cudaStream_t bound = nullptr;
  r.cublas = cublasGetStream(handle, &bound);
  if (r.cublas != CUBLAS_STATUS_SUCCESS) return r;
  if (bound != stream) {
    r.cublas = cublasSetStream(handle, stream);
    if (r.cublas != CUBLAS_STATUS_SUCCESS) return r;
  }
  // Host offsets: read at the call, as cuBLAS reads the sizes.
  const std::vector<int64_t> off(expert_offsets,
                                 expert_offsets + num_experts + 1);
  const int64_t rows = off.back();
  r.cuda = Enqueue(
      "LaunchGroupedGemm", stream,
      [=] {
        const std::vector<float> fa = LoadAll(a, dtype, rows * k);
        if (mode == 2) {  // db[e] = a_e^T dc_e
          const std::vector<float> fdc = LoadAll(b, dtype, rows * n);
          std::vector<float> db(static_cast<size_t>(num_experts * k * n));
          GroupedGemmWeightGradRef(fa.data(), fdc.data(), db.data(), off.data(),
                                   num_experts, k, n);
          StoreAll(db, dtype, c);
          return;
        }
        const std::vector<float> fb = LoadAll(b, dtype, num_experts * k * n);
        std::vector<float> fc(static_cast<size_t>(rows * n));
        GroupedGemmRef(fa.data(), fb.data(), fc.data(), off.data(), num_experts,
                       k, n, mode == 1);
        StoreAll(fc, dtype, c);
      },
      [=] { smoe::fake_kernels::AddOne(c, dtype); });
  return r;
}

#endif  // SMOE_FAKE_KERNELS_EMU

}  // namespace smoe::kernels
