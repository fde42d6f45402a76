// Copyright 2026 SMoE Lab authors.
//
// File: kernels/permute/permute.h
//
// Token permutation for MoE dispatch and its inverse, the gate-weighted
// combine, and the backward of each. Token-choice pairs are addressed by their
// flat index f = token * top_k + choice.
//
// A PermutePlan is built once per forward from topk_idx and reused by permute,
// unpermute, combine and every backward (DeepEP's `handle`):
//   sorted_idx [num_tokens * top_k] int32: the flat index f that sits at each
//       row of the expert-major buffer. The sort is a STABLE counting sort by
//       expert: within an expert, rows keep ascending f (token-major order).
//   dest_idx [num_tokens * top_k] int32: the inverse, dest_idx[sorted_idx[p]]
//       == p (the row of pair f in the expert-major buffer).
//   expert_offsets [num_experts + 1] int32: expert e owns rows
//       [expert_offsets[e], expert_offsets[e + 1]) of the buffer.
// There is no padding: the buffer has exactly num_tokens * top_k rows.
//
// Operations (x [num_tokens, hidden], buffer [num_tokens * top_k, hidden]):
//   Permute:          buffer[p] = x[sorted_idx[p] / top_k]
//   Unpermute:        out[f] = buffer[dest_idx[f]]   (out [num_tokens, top_k,
//                     hidden]; Unpermute(Permute(x))[t, j] == x[t] exactly)
//   PermuteBackward:  grad_x[t] = sum_j grad_buffer[dest_idx[t * top_k + j]]
//   Combine:          out[t] = sum_j topk_weights[t, j] *
//                                    expert_out[dest_idx[t * top_k + j]]
//                     (gate weights are applied here, not in the experts)
//   CombineBackward:  grad_expert_out[dest_idx[f]] = topk_weights[f] *
//                         grad_out[f / top_k];
//                     grad_topk_weights[f] = <grad_out[f / top_k],
//                                             expert_out[dest_idx[f]]>
// Sums over j run in ascending j with float accumulation (bf16 inputs are
// widened, the result rounded once).
//
// REQUIRES (all entry points): num_tokens >= 0, 1 <= top_k <= num_experts,
// hidden >= 1, every topk_idx value in [0, num_experts). GPU: num_experts <=
// kMaxPermuteExperts, num_tokens * top_k < 2^31. Out-of-range topk_idx values
// are skipped by the GPU plan builder (no memory corruption) and leave the
// plan incomplete.
//
// Thread-safety: stateless functions; concurrent calls on disjoint buffers
// are safe. Buffers are owned by the caller.
#ifndef SMOE_KERNELS_PERMUTE_PERMUTE_H_
#define SMOE_KERNELS_PERMUTE_PERMUTE_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "kernels/common/dtype.h"

#if defined(SMOE_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace smoe::kernels {

// Largest num_experts the GPU plan builder supports (shared-memory counters).
inline constexpr int kMaxPermuteExperts = 1024;

// Non-owning view of a plan (host pointers for the reference, device pointers
// for the GPU).
struct PermutePlan {
  int32_t* sorted_idx = nullptr;      // [num_tokens * top_k]
  int32_t* dest_idx = nullptr;        // [num_tokens * top_k]
  int32_t* expert_offsets = nullptr;  // [num_experts + 1]
  int64_t num_tokens = 0;
  int top_k = 1;
  int num_experts = 1;
  int64_t num_rows() const { return num_tokens * top_k; }
};

// Returns InvalidArgument naming the field and value when sizes violate the
// REQUIRES above (`for_gpu` adds the GPU limits).
absl::Status ValidatePermuteArgs(int64_t num_tokens, int num_experts, int top_k,
                                 int64_t hidden, bool for_gpu);

// Returns InvalidArgument naming the first topk_idx entry outside
// [0, num_experts). Host pointer.
absl::Status ValidateTopkIdx(const int32_t* topk_idx, int64_t num_tokens,
                             int top_k, int num_experts);

// ---- CPU references (simple loops, always compiled; host pointers) --------

// Fills plan->sorted_idx, dest_idx and expert_offsets from topk_idx
// [num_tokens, top_k]. plan's sizes must be set and its buffers allocated.
// Like the GPU builder, it skips entries outside [0, num_experts): they get
// no buffer row (dest_idx -1 here, unwritten on the GPU), so
// expert_offsets[num_experts] < num_rows() tells a caller that topk_idx had
// bad entries without reading it again.
void BuildPermutePlanRef(const int32_t* topk_idx, const PermutePlan& plan);

void PermuteRef(const float* x, int64_t hidden, const PermutePlan& plan,
                float* permuted);
void UnpermuteRef(const float* permuted, int64_t hidden,
                  const PermutePlan& plan, float* out);
void PermuteBackwardRef(const float* grad_permuted, int64_t hidden,
                        const PermutePlan& plan, float* grad_x);
void CombineRef(const float* expert_out, const float* topk_weights,
                int64_t hidden, const PermutePlan& plan, float* out);
void CombineBackwardRef(const float* grad_out, const float* expert_out,
                        const float* topk_weights, int64_t hidden,
                        const PermutePlan& plan, float* grad_expert_out,
                        float* grad_topk_weights);

// The same in double precision (the ops' float64 gradient checks).
void PermuteRef(const double* x, int64_t hidden, const PermutePlan& plan,
                double* permuted);
void UnpermuteRef(const double* permuted, int64_t hidden,
                  const PermutePlan& plan, double* out);
void PermuteBackwardRef(const double* grad_permuted, int64_t hidden,
                        const PermutePlan& plan, double* grad_x);
void CombineRef(const double* expert_out, const double* topk_weights,
                int64_t hidden, const PermutePlan& plan, double* out);
void CombineBackwardRef(const double* grad_out, const double* expert_out,
                        const double* topk_weights, int64_t hidden,
                        const PermutePlan& plan, double* grad_expert_out,
                        double* grad_topk_weights);

#if defined(SMOE_WITH_CUDA)
// ---- GPU (device pointers; enqueued on `stream`, asynchronous) ------------

// Returns the bytes of device workspace BuildPermutePlan needs.
size_t PermutePlanWorkspaceBytes(int64_t num_tokens, int top_k,
                                 int num_experts);

// GPU plan builder (histogram per chunk, per-expert scan, stable scatter with
// warp match). `workspace` holds PermutePlanWorkspaceBytes() bytes;
// `num_tokens_per_expert` [num_experts] receives the counts.
absl::Status BuildPermutePlan(const int32_t* topk_idx, const PermutePlan& plan,
                              int32_t* num_tokens_per_expert, void* workspace,
                              cudaStream_t stream);

// The element type of x / permuted / expert_out / grads is `dtype`;
// topk_weights and grad_topk_weights are always f32. Permute and Unpermute
// move whole rows and take any DType; PermuteBackward, Combine and
// CombineBackward sum rows and take kFloat32 or kBFloat16 only (else
// InvalidArgument naming the dtype).
absl::Status Permute(const void* x, DType dtype, int64_t hidden,
                     const PermutePlan& plan, void* permuted,
                     cudaStream_t stream);
absl::Status Unpermute(const void* permuted, DType dtype, int64_t hidden,
                       const PermutePlan& plan, void* out, cudaStream_t stream);
absl::Status PermuteBackward(const void* grad_permuted, DType dtype,
                             int64_t hidden, const PermutePlan& plan,
                             void* grad_x, cudaStream_t stream);
absl::Status Combine(const void* expert_out, const float* topk_weights,
                     DType dtype, int64_t hidden, const PermutePlan& plan,
                     void* out, cudaStream_t stream);
absl::Status CombineBackward(const void* grad_out, const void* expert_out,
                             const float* topk_weights, DType dtype,
                             int64_t hidden, const PermutePlan& plan,
                             void* grad_expert_out, float* grad_topk_weights,
                             cudaStream_t stream);
#endif  // SMOE_WITH_CUDA

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_PERMUTE_PERMUTE_H_
