// Copyright 2026 SMoE Lab authors.
//
// File: kernels/permute/permute.cu
//
// Plan builder: a stable counting sort of the T*k (token, choice) pairs by
// expert, in three launches plus a scan:
//   1. ChunkHistogramKernel: one warp per chunk of kChunk flat pairs counts
//      experts in shared memory (warp-aggregated with __match_any_sync) and
//      writes chunk_counts[e][chunk]; chunk totals also go to
//      num_tokens_per_expert with one atomic per (chunk, expert).
//   2. RowExclusiveScanKernel: one block per expert scans its row of chunk
//      counts in place (exclusive), giving each chunk its base within the
//      expert; LaunchExclusiveScan turns the totals into expert_offsets.
//   3. StableScatterKernel: the same warp re-walks its chunk in order;
//      __match_any_sync gives each lane its rank among equal experts in the
//      32-wide step, a shared counter per expert carries the rank across
//      steps, so position = offset[e] + chunk_base[e] + running[e] + rank is
//      stable (ascending flat index within an expert).
// Row movement (permute, unpermute) is a warp-per-row gather with 16-, 4- or
// 2-byte vectors when rows and pointers allow (gather_vector.h); combine and
// its backward are warp-per-token reductions over top_k rows with float
// accumulation.
//
// Napkin math (permute_bench.cu): permute reads T*d*b and writes T*k*d*b
// bytes (plus 4 B per row of index); combine reads T*k*d*b + T*k*4 and writes
// T*d*b. At T=16k, d=4096, k=2, bf16: 268 MB + 134 MB = 0.4 GB -> 120 us at
// 3.35 TB/s. Goal: >= 80 % of the measured D2D copy bandwidth.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/cuda_check.h"
#include "kernels/common/cuda_launch.cuh"
#include "kernels/permute/gather_vector.h"
#include "kernels/permute/permute_launch.h"
#include "kernels/router_topk/router_topk_launch.h"

namespace smoe::kernels {
namespace {

constexpr int kChunk = 1024;  // flat pairs per warp in the plan builder
constexpr int kPlanWarps = 4;
constexpr int kRowWarps = 8;
constexpr int kMaxRowBlocks = 65535;  // grid-stride loops cover the rest
constexpr int kScanThreads = 256;
constexpr int kMaxExperts = 1024;
static_assert(kChunk % kWarpSize == 0, "chunk must be whole warp steps");
static_assert(kPlanWarps * kMaxExperts * 4 <= 48 * 1024,
              "plan counters must fit the default shared memory");

int64_t NumChunks(int64_t num_rows) { return (num_rows + kChunk - 1) / kChunk; }

__global__ void ChunkHistogramKernel(const int32_t* __restrict__ topk_idx,
                                     int64_t num_rows, int num_experts,
                                     int64_t num_chunks,
                                     int32_t* __restrict__ chunk_counts,
                                     int32_t* __restrict__ counts) {
  SMOE_DYNAMIC_SHARED(int32_t, s_mem);
  const int warp = threadIdx.x / kWarpSize;
  const int lane = LaneId();
  int32_t* s_cnt = s_mem + warp * num_experts;
  const int64_t chunk = static_cast<int64_t>(blockIdx.x) * kPlanWarps + warp;
  for (int e = lane; e < num_experts; e += kWarpSize) s_cnt[e] = 0;
  __syncwarp();
  if (chunk < num_chunks) {
    const int64_t begin = chunk * kChunk;
    for (int64_t i = begin + lane; i < begin + kChunk; i += kWarpSize) {
      const int e = i < num_rows ? topk_idx[i] : -1;
      const unsigned group = __match_any_sync(kFullWarpMask, e);
      const bool valid = e >= 0 && e < num_experts;
      if (valid && lane == __ffs(group) - 1) s_cnt[e] += __popc(group);
      __syncwarp();
    }
    for (int e = lane; e < num_experts; e += kWarpSize) {
      chunk_counts[static_cast<int64_t>(e) * num_chunks + chunk] = s_cnt[e];
      if (s_cnt[e] != 0) atomicAdd(&counts[e], s_cnt[e]);
    }
  }
}

// In-place exclusive scan of row blockIdx.x (length n) of `data`.
__global__ void RowExclusiveScanKernel(int32_t* __restrict__ data, int64_t n) {
  int32_t* row = data + static_cast<int64_t>(blockIdx.x) * n;
  BlockExclusiveScan<kScanThreads>(row, row, n);
}

__global__ void StableScatterKernel(const int32_t* __restrict__ topk_idx,
                                    int64_t num_rows, int num_experts,
                                    int64_t num_chunks,
                                    const int32_t* __restrict__ chunk_base,
                                    const int32_t* __restrict__ offsets,
                                    int32_t* __restrict__ sorted_idx,
                                    int32_t* __restrict__ dest_idx) {
  SMOE_DYNAMIC_SHARED(int32_t, s_mem);
  const int warp = threadIdx.x / kWarpSize;
  const int lane = LaneId();
  int32_t* s_run = s_mem + warp * num_experts;
  const int64_t chunk = static_cast<int64_t>(blockIdx.x) * kPlanWarps + warp;
  if (chunk >= num_chunks) return;  // NOTE: no block-level sync below.
  for (int e = lane; e < num_experts; e += kWarpSize) {
    s_run[e] =
        offsets[e] + chunk_base[static_cast<int64_t>(e) * num_chunks + chunk];
  }
  __syncwarp();
  const unsigned lt_mask = (1u << lane) - 1u;
  const int64_t begin = chunk * kChunk;
  for (int64_t i = begin + lane; i < begin + kChunk; i += kWarpSize) {
    const int e = i < num_rows ? topk_idx[i] : -1;
    const unsigned group = __match_any_sync(kFullWarpMask, e);
    const bool valid = e >= 0 && e < num_experts;
    int32_t pos = 0;
    if (valid) pos = s_run[e] + __popc(group & lt_mask);
    __syncwarp();  // NOTE: all lanes read s_run before the leader bumps it.
    if (valid) {
      sorted_idx[pos] = static_cast<int32_t>(i);
      dest_idx[i] = pos;
      if (lane == __ffs(group) - 1) s_run[e] += __popc(group);
    }
    __syncwarp();
  }
}

template <typename V>
__global__ void GatherRowsKernel(const char* __restrict__ src,
                                 char* __restrict__ dst, int64_t num_rows,
                                 int64_t row_vecs,
                                 const int32_t* __restrict__ index,
                                 int divisor) {
  const int lane = LaneId();
  const int64_t step = GridWarps();
  for (int64_t r = GlobalWarpId(); r < num_rows; r += step) {
    const int64_t s = index[r] / divisor;
    const V* in = reinterpret_cast<const V*>(src) + s * row_vecs;
    V* out = reinterpret_cast<V*>(dst) + r * row_vecs;
    for (int64_t c = lane; c < row_vecs; c += kWarpSize) out[c] = in[c];
  }
}

template <typename T>
__device__ __forceinline__ float ToF(T v);
template <>
__device__ __forceinline__ float ToF<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ float ToF<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <typename T>
__device__ __forceinline__ T FromF(float v);
template <>
__device__ __forceinline__ float FromF<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromF<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}

// kVec elements of T moved as one aligned vector.
template <typename T, int kVec>
struct alignas(sizeof(T) * kVec) Pack {
  T v[kVec];
};

template <typename T, int kVec>
__global__ void CombineKernel(const T* __restrict__ src,
                              const float* __restrict__ weights,
                              int64_t num_tokens, int top_k, int64_t hidden,
                              const int32_t* __restrict__ dest_idx,
                              T* __restrict__ out) {
  using P = Pack<T, kVec>;
  const int lane = LaneId();
  const int64_t packs = hidden / kVec;
  const int64_t step = GridWarps();
  for (int64_t t = GlobalWarpId(); t < num_tokens; t += step) {
    for (int64_t c = lane; c < packs; c += kWarpSize) {
      float acc[kVec];
#pragma unroll
      for (int v = 0; v < kVec; ++v) acc[v] = 0.0f;
      for (int j = 0; j < top_k; ++j) {
        const int64_t f = t * top_k + j;
        const float w = weights == nullptr ? 1.0f : weights[f];
        const P p = reinterpret_cast<const P*>(src + dest_idx[f] * hidden)[c];
#pragma unroll
        for (int v = 0; v < kVec; ++v) acc[v] += w * ToF<T>(p.v[v]);
      }
      P o;
#pragma unroll
      for (int v = 0; v < kVec; ++v) o.v[v] = FromF<T>(acc[v]);
      reinterpret_cast<P*>(out + t * hidden)[c] = o;
    }
  }
}

template <typename T, int kVec>
__global__ void CombineBackwardKernel(
    const T* __restrict__ grad_out, const T* __restrict__ expert_out,
    const float* __restrict__ weights, int64_t num_tokens, int top_k,
    int64_t hidden, const int32_t* __restrict__ dest_idx,
    T* __restrict__ grad_expert_out, float* __restrict__ grad_topk_weights) {
  using P = Pack<T, kVec>;
  const int lane = LaneId();
  const int64_t packs = hidden / kVec;
  const int64_t step = GridWarps();
  for (int64_t t = GlobalWarpId(); t < num_tokens; t += step) {
    const P* g = reinterpret_cast<const P*>(grad_out + t * hidden);
    for (int j = 0; j < top_k; ++j) {
      const int64_t f = t * top_k + j;
      const int64_t row = static_cast<int64_t>(dest_idx[f]) * hidden;
      const float w = weights[f];
      const P* y = reinterpret_cast<const P*>(expert_out + row);
      P* gy = reinterpret_cast<P*>(grad_expert_out + row);
      float dot = 0.0f;
      for (int64_t c = lane; c < packs; c += kWarpSize) {
        const P gp = g[c];
        const P yp = y[c];
        P o;
#pragma unroll
        for (int v = 0; v < kVec; ++v) {
          const float gv = ToF<T>(gp.v[v]);
          dot += gv * ToF<T>(yp.v[v]);
          o.v[v] = FromF<T>(w * gv);
        }
        gy[c] = o;
      }
      dot = WarpSum(dot);
      if (lane == 0) grad_topk_weights[f] = dot;
    }
  }
}

bool Aligned(const void* p, int bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// Picks the widest vector (16 B) that divides a row and keeps every row
// aligned, else falls back to one element.
template <typename T, template <typename, int> class K, typename... Args>
cudaError_t LaunchTyped(int64_t hidden, bool aligned16, int64_t items,
                        cudaStream_t stream, Args... args) {
  constexpr int kVec = 16 / sizeof(T);
  const dim3 grid(GridFor(items, kRowWarps, kMaxRowBlocks));
  const dim3 block(kRowWarps * kWarpSize);
  if (aligned16 && hidden % kVec == 0) {
    K<T, kVec>::Launch(grid, block, stream, args...);
  } else {
    K<T, 1>::Launch(grid, block, stream, args...);
  }
  return cudaPeekAtLastError();
}

template <typename T, int kVec>
struct CombineLauncher {
  static void Launch(dim3 grid, dim3 block, cudaStream_t stream,
                     const void* src, const float* w, int64_t n, int k,
                     int64_t hidden, const int32_t* dest, void* out) {
    SMOE_LAUNCH(SMOE_KERNEL(CombineKernel<T, kVec>), grid, block, 0, stream,
                static_cast<const T*>(src), w, n, k, hidden, dest,
                static_cast<T*>(out));
  }
};

template <typename T, int kVec>
struct CombineBackwardLauncher {
  static void Launch(dim3 grid, dim3 block, cudaStream_t stream, const void* g,
                     const void* y, const float* w, int64_t n, int k,
                     int64_t hidden, const int32_t* dest, void* gy, float* gw) {
    SMOE_LAUNCH(SMOE_KERNEL(CombineBackwardKernel<T, kVec>), grid, block, 0,
                stream, static_cast<const T*>(g), static_cast<const T*>(y), w,
                n, k, hidden, dest, static_cast<T*>(gy), gw);
  }
};

}  // namespace

size_t LaunchPermutePlanWorkspaceBytes(int64_t num_rows, int num_experts) {
  return sizeof(int32_t) * static_cast<size_t>(num_experts) *
         static_cast<size_t>(NumChunks(num_rows) < 1 ? 1 : NumChunks(num_rows));
}

cudaError_t LaunchBuildPermutePlan(const int32_t* topk_idx, int64_t num_rows,
                                   int num_experts, int32_t* sorted_idx,
                                   int32_t* dest_idx, int32_t* expert_offsets,
                                   int32_t* num_tokens_per_expert,
                                   void* workspace, cudaStream_t stream) {
  if (num_rows < 0 || num_rows >= (int64_t{1} << 31) || num_experts < 1 ||
      num_experts > kMaxExperts) {
    return cudaErrorInvalidValue;
  }
  SMOE_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(
      num_tokens_per_expert, 0, sizeof(int32_t) * num_experts, stream));
  if (num_rows > 0) {
    const int64_t chunks = NumChunks(num_rows);
    int32_t* chunk_counts = static_cast<int32_t*>(workspace);
    const dim3 grid(
        static_cast<unsigned>((chunks + kPlanWarps - 1) / kPlanWarps));
    const size_t smem = sizeof(int32_t) * kPlanWarps * num_experts;
    SMOE_LAUNCH(ChunkHistogramKernel, grid, kPlanWarps * kWarpSize, smem,
                stream, topk_idx, num_rows, num_experts, chunks, chunk_counts,
                num_tokens_per_expert);
    SMOE_CUDA_RETURN_LAUNCH_ERROR();
    SMOE_LAUNCH(RowExclusiveScanKernel, num_experts, kScanThreads, 0, stream,
                chunk_counts, chunks);
    SMOE_CUDA_RETURN_LAUNCH_ERROR();
    SMOE_CUDA_RETURN_IF_ERROR(LaunchExclusiveScan(
        num_tokens_per_expert, num_experts, expert_offsets, stream));
    SMOE_LAUNCH(StableScatterKernel, grid, kPlanWarps * kWarpSize, smem, stream,
                topk_idx, num_rows, num_experts, chunks, chunk_counts,
                expert_offsets, sorted_idx, dest_idx);
    return cudaPeekAtLastError();
  }
  return LaunchExclusiveScan(num_tokens_per_expert, num_experts, expert_offsets,
                             stream);
}

cudaError_t LaunchGatherRows(const void* src, void* dst, int64_t num_rows,
                             int64_t row_bytes, const int32_t* index,
                             int divisor, cudaStream_t stream) {
  if (num_rows < 0 || row_bytes < 1 || divisor < 1) {
    return cudaErrorInvalidValue;
  }
  if (num_rows == 0) return cudaSuccess;
  const dim3 grid(GridFor(num_rows, kRowWarps, kMaxRowBlocks));
  const dim3 block(kRowWarps * kWarpSize);
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  switch (GatherRowsVectorBytes(row_bytes, reinterpret_cast<uintptr_t>(src),
                                reinterpret_cast<uintptr_t>(dst))) {
    case 16:
      SMOE_LAUNCH(GatherRowsKernel<uint4>, grid, block, 0, stream, s, d,
                  num_rows, row_bytes / 16, index, divisor);
      break;
    case 4:
      SMOE_LAUNCH(GatherRowsKernel<uint32_t>, grid, block, 0, stream, s, d,
                  num_rows, row_bytes / 4, index, divisor);
      break;
    case 2:  // bf16 rows with an odd hidden size
      SMOE_LAUNCH(GatherRowsKernel<uint16_t>, grid, block, 0, stream, s, d,
                  num_rows, row_bytes / 2, index, divisor);
      break;
    default:
      SMOE_LAUNCH(GatherRowsKernel<unsigned char>, grid, block, 0, stream, s, d,
                  num_rows, row_bytes, index, divisor);
  }
  return cudaPeekAtLastError();
}

cudaError_t LaunchCombine(const void* src, const float* weights, int dtype,
                          int64_t num_tokens, int top_k, int64_t hidden,
                          const int32_t* dest_idx, void* out,
                          cudaStream_t stream) {
  if (num_tokens < 0 || top_k < 1 || hidden < 1) return cudaErrorInvalidValue;
  if (num_tokens == 0) return cudaSuccess;
  const bool a16 = Aligned(src, 16) && Aligned(out, 16);
  if (dtype == 0) {
    return LaunchTyped<float, CombineLauncher>(hidden, a16, num_tokens, stream,
                                               src, weights, num_tokens, top_k,
                                               hidden, dest_idx, out);
  }
  return LaunchTyped<__nv_bfloat16, CombineLauncher>(
      hidden, a16, num_tokens, stream, src, weights, num_tokens, top_k, hidden,
      dest_idx, out);
}

cudaError_t LaunchCombineBackward(const void* grad_out, const void* expert_out,
                                  const float* weights, int dtype,
                                  int64_t num_tokens, int top_k, int64_t hidden,
                                  const int32_t* dest_idx,
                                  void* grad_expert_out,
                                  float* grad_topk_weights,
                                  cudaStream_t stream) {
  if (num_tokens < 0 || top_k < 1 || hidden < 1 || weights == nullptr) {
    return cudaErrorInvalidValue;
  }
  if (num_tokens == 0) return cudaSuccess;
  const bool a16 = Aligned(grad_out, 16) && Aligned(expert_out, 16) &&
                   Aligned(grad_expert_out, 16);
  if (dtype == 0) {
    return LaunchTyped<float, CombineBackwardLauncher>(
        hidden, a16, num_tokens, stream, grad_out, expert_out, weights,
        num_tokens, top_k, hidden, dest_idx, grad_expert_out,
        grad_topk_weights);
  }
  return LaunchTyped<__nv_bfloat16, CombineBackwardLauncher>(
      hidden, a16, num_tokens, stream, grad_out, expert_out, weights,
      num_tokens, top_k, hidden, dest_idx, grad_expert_out, grad_topk_weights);
}

}  // namespace smoe::kernels
