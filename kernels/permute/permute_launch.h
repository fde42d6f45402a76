// Copyright 2026 SMoE Lab authors.
//
// File: kernels/permute/permute_launch.h
//
// Raw launchers defined in permute.cu (no absl, no torch); wrapped by
// permute.cc. Semantics and REQUIRES as in permute.h. `dtype`: 0 = f32,
// 1 = bf16. Launchers return cudaErrorInvalidValue for sizes that would
// corrupt memory.
#ifndef SMOE_KERNELS_PERMUTE_PERMUTE_LAUNCH_H_
#define SMOE_KERNELS_PERMUTE_PERMUTE_LAUNCH_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace smoe::kernels {

size_t LaunchPermutePlanWorkspaceBytes(int64_t num_rows, int num_experts);

cudaError_t LaunchBuildPermutePlan(const int32_t* topk_idx, int64_t num_rows,
                                   int num_experts, int32_t* sorted_idx,
                                   int32_t* dest_idx, int32_t* expert_offsets,
                                   int32_t* num_tokens_per_expert,
                                   void* workspace, cudaStream_t stream);

// dst[r] = src[index[r] / divisor] for r in [0, num_rows); rows of row_bytes.
cudaError_t LaunchGatherRows(const void* src, void* dst, int64_t num_rows,
                             int64_t row_bytes, const int32_t* index,
                             int divisor, cudaStream_t stream);

// out[t] = sum_j w[t * top_k + j] * src[dest_idx[t * top_k + j]]; w may be
// null (all ones).
cudaError_t LaunchCombine(const void* src, const float* weights, int dtype,
                          int64_t num_tokens, int top_k, int64_t hidden,
                          const int32_t* dest_idx, void* out,
                          cudaStream_t stream);

cudaError_t LaunchCombineBackward(const void* grad_out, const void* expert_out,
                                  const float* weights, int dtype,
                                  int64_t num_tokens, int top_k, int64_t hidden,
                                  const int32_t* dest_idx,
                                  void* grad_expert_out,
                                  float* grad_topk_weights,
                                  cudaStream_t stream);

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_PERMUTE_PERMUTE_LAUNCH_H_
