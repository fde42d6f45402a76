// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/ops/launch.h
//
// The kernel launches of worker/model/ops: the ONLY place where the ops'
// code differs between CPU and CUDA tensors. Everything else in moe_ops.cc
// (validation, allocation, dtype handling, the plan, autograd bookkeeping,
// bias terms) is one code path that CI runs on the CPU.
//
// Each function below takes contiguous tensors that the caller allocated with
// the right shapes and dtypes on one device, and fills the outputs:
//   * CUDA tensors: enqueue the kernels/ CUDA kernel (or cuBLAS) on LibTorch's
//     current stream (launch_cuda.cc; Unimplemented in builds without
//     CUDA-enabled LibTorch + nvcc). Asynchronous, like any LibTorch op.
//   * CPU tensors: run the kernels' CPU reference (float32 and float64). A
//     bfloat16 tensor is upcast to float32, run through the float32
//     reference and rounded to bfloat16 at the store, which is exactly what
//     the GPU kernels do (load bf16, math in f32, round once), so bf16 runs
//     on the CPU with the GPU's numerics. The expert GEMMs on CPU are one
//     torch::mm per non-empty expert (the reference triple loop is far too
//     slow for training; ops_test checks the two agree).
//
// Supported dtypes: the router takes float32 (and float64 on the CPU);
// permute/combine/GEMM take float32 and bfloat16 (and float64 on the CPU).
// topk weights are float32 next to float32/bf16 data, float64 next to
// float64 data. Anything else is InvalidArgument naming the dtype.
#ifndef SMOE_WORKER_MODEL_OPS_LAUNCH_H_
#define SMOE_WORKER_MODEL_OPS_LAUNCH_H_

#include <torch/types.h>

#include "absl/status/status.h"
#include "kernels/router_topk/router_topk.h"
#include "worker/model/ops/moe_ops.h"

namespace smoe::model::ops::launch {

// Router forward: idx [N, k] int32, w [N, k] (logits' dtype), counts [E]
// int32, offsets [E + 1] int32.
absl::Status RouterTopK(const torch::Tensor& logits, int top_k,
                        kernels::RouterGating gating, const torch::Tensor& idx,
                        const torch::Tensor& w, const torch::Tensor& counts,
                        const torch::Tensor& offsets);
// Router backward: grad_logits [N, E].
absl::Status RouterTopKBackward(const torch::Tensor& logits,
                                const torch::Tensor& idx,
                                const torch::Tensor& w, const torch::Tensor& g,
                                kernels::RouterGating gating,
                                const torch::Tensor& grad_logits);

// Fills plan.sorted_idx / dest_idx / expert_offsets (allocated, on idx's
// device) from idx [N, k] int32; entries outside [0, E) are skipped (the
// caller detects them from the offsets' total). counts [E] int32 scratch.
absl::Status BuildPlan(const torch::Tensor& idx, const Plan& plan,
                       const torch::Tensor& counts);

// permuted [N*k, D] from x [N, D]; grad_x [N, D] from grad_permuted.
absl::Status Permute(const torch::Tensor& x, const Plan& plan,
                     const torch::Tensor& permuted);
absl::Status PermuteBackward(const torch::Tensor& grad_permuted,
                             const Plan& plan, const torch::Tensor& grad_x);

// out [N, D] = sum_j w[t, j] * y[dest_idx[t*k + j]]; backward fills
// grad_y [N*k, D] and grad_w [N, k].
absl::Status Combine(const torch::Tensor& y, const torch::Tensor& w,
                     const Plan& plan, const torch::Tensor& out);
absl::Status CombineBackward(const torch::Tensor& grad_out,
                             const torch::Tensor& y, const torch::Tensor& w,
                             const Plan& plan, const torch::Tensor& grad_y,
                             const torch::Tensor& grad_w);

// c[rows of e] = a[rows of e] . b[e] (b [E, k, n]) or . b[e]^T (trans_b,
// b [E, n, k]); no bias. Rows of experts without rows are left untouched
// (there are none). db[e] = a_e^T . dc_e, zero for experts without rows.
absl::Status GroupedGemm(const torch::Tensor& a, const torch::Tensor& b,
                         const torch::Tensor& c, const Plan& plan,
                         bool trans_b);
absl::Status GroupedGemmWeightGrad(const torch::Tensor& a,
                                   const torch::Tensor& dc,
                                   const torch::Tensor& db, const Plan& plan);

// Test-only: CPU tensors (float32, bfloat16) go through the kernels' device
// entry points (launch_cuda.cc's host branch: default stream, per-thread
// cuBLAS handle, a synchronize after each launch) instead of the CPU
// references. Only meaningful over the fake CUDA runtime of tests/fakes,
// whose device memory is host memory and whose launches run the real
// kernels on the CPU emulator (tests/fakes/nccl_ep_train_fake_test.cc); on a
// real GPU it would hand host pointers to kernels. Unimplemented in a build
// without the kernels (SMOE_WITH_CUDA off). Process-wide; returns the
// previous setting through `was` when not null.
absl::Status SetHostTensorsThroughKernelsForTesting(bool on,
                                                    bool* was = nullptr);
// Whether it is on: moe_ops.cc then skips its CPU-only loops (the fused
// expert MLP, the per-expert addmm), so CPU tensors take a GPU run's path.
bool HostTensorsThroughKernels();

// The device launches (launch_cuda.cc), same contracts: CUDA tensors, and
// CPU tensors under SetHostTensorsThroughKernelsForTesting.
namespace cuda {
absl::Status RouterTopK(const torch::Tensor& logits, int top_k,
                        kernels::RouterGating gating, const torch::Tensor& idx,
                        const torch::Tensor& w, const torch::Tensor& counts,
                        const torch::Tensor& offsets);
absl::Status RouterTopKBackward(const torch::Tensor& logits,
                                const torch::Tensor& idx,
                                const torch::Tensor& w, const torch::Tensor& g,
                                kernels::RouterGating gating,
                                const torch::Tensor& grad_logits);
absl::Status BuildPlan(const torch::Tensor& idx, const Plan& plan,
                       const torch::Tensor& counts);
absl::Status Permute(const torch::Tensor& x, const Plan& plan,
                     const torch::Tensor& permuted);
absl::Status PermuteBackward(const torch::Tensor& grad_permuted,
                             const Plan& plan, const torch::Tensor& grad_x);
absl::Status Combine(const torch::Tensor& y, const torch::Tensor& w,
                     const Plan& plan, const torch::Tensor& out);
absl::Status CombineBackward(const torch::Tensor& grad_out,
                             const torch::Tensor& y, const torch::Tensor& w,
                             const Plan& plan, const torch::Tensor& grad_y,
                             const torch::Tensor& grad_w);
absl::Status GroupedGemm(const torch::Tensor& a, const torch::Tensor& b,
                         const torch::Tensor& c, const Plan& plan,
                         bool trans_b);
absl::Status GroupedGemmWeightGrad(const torch::Tensor& a,
                                   const torch::Tensor& dc,
                                   const torch::Tensor& db, const Plan& plan);
}  // namespace cuda

}  // namespace smoe::model::ops::launch

#endif  // SMOE_WORKER_MODEL_OPS_LAUNCH_H_
