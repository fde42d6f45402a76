// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/mixtral/mixtral_decode_cpu.h
//
// Batch-1 decode kernels for the Mixtral runtime on the CPU (issue 19): at
// one token per step every weight is used once per step, so the step is a
// stream over the weights the token touches and the work is matrix-vector
// products. LibTorch routes a [1, H] x [H, N] matmul to a GEMM that packs
// the weight first (one more pass over it); these kernels read each weight
// row once, straight from the checkpoint layout ([out, in], row-major), and
// split the output rows over the intra-op threads (at::parallel_for).
//
//   MatVec:      y = W x                       (q/k/v/o projections, LM head)
//   MoeDecode:   router logits, top-k (renormalised softmax over the chosen
//                logits, ties to the lower expert, as RouterTopK), then only
//                the chosen experts: h = silu(w1 x) * (w3 x) with w1 and w3
//                rows streamed together, y += gate * (w2 h).
//
// float32 CPU tensors only (DecodeKernelsApply); the model falls back to its
// LibTorch path otherwise (batch > 1, other dtypes and devices, expert
// parallelism).
#ifndef SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_DECODE_CPU_H_
#define SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_DECODE_CPU_H_

#include <torch/types.h>

#include <cstdint>

namespace smoe::model::mixtral {

// True when x is a float32 CPU tensor holding one row (numel == last dim)
// and w is a contiguous float32 CPU matrix [N, x.size(-1)].
bool DecodeKernelsApply(const torch::Tensor& x, const torch::Tensor& w);

// y [N] = w [N, K] . x [K] (x any shape with K elements). Threads over the
// N rows. REQUIRES: DecodeKernelsApply(x, w).
torch::Tensor MatVec(const torch::Tensor& x, const torch::Tensor& w);

// The MoE block for one token: x [H] (any shape with H elements), router
// gate [E, H], w1/w3 [E, F, H], w2 [E, H, F] (all float32, contiguous; all
// E experts local). Returns [H]. REQUIRES: 1 <= top_k <= E.
torch::Tensor MoeDecode(const torch::Tensor& x, const torch::Tensor& gate,
                        const torch::Tensor& w1, const torch::Tensor& w3,
                        const torch::Tensor& w2, int64_t top_k);

}  // namespace smoe::model::mixtral

#endif  // SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_DECODE_CPU_H_
