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
//   DecodeStepCpu: the whole batch-1 step in these loops (issue 19): RMSNorm,
//                q/k/v, RoPE, the new key/value written into the cache in
//                place, attention of the one query over the cached slots
//                (the causal/padding/sliding-window limits are a slot
//                range: no mask tensor), o_proj added into the residual,
//                RMSNorm, MoeDecode, final RMSNorm and the LM head. No
//                LibTorch op per layer and no per-token allocation but the
//                returned logits (scratch rows are reused per thread).
//
// Weights: float32 or bfloat16 (issue 19: Mixtral checkpoints are bf16, and
// bf16 halves both the resident weights and the bytes each token streams,
// the decode floor). bf16 weights are read as 16-bit values and widened to
// float32 in registers (exact: bf16 is a float32's top 16 bits); everything
// else is float32: activations, sums, RMSNorm, RoPE, softmax, the router and
// the logits. So a bf16 model's step equals, up to summation order, the f32
// step of a model whose weights were rounded to bf16.
//
// KV cache: float32 for both weight dtypes. MixtralModel::NewCache gives a
// batch-1 bf16 CPU model a float32 cache (the LibTorch path casts its keys
// and values to the model dtype where it uses them). Why not bf16: the
// cache is read once per token like the weights, but at batch 1 it is small
// next to them (8x7B: 256 KiB per slot in f32, 1 GiB at 4k context vs
// ~26 GB of bf16 weights per token at EPT 2: 4 %); a bf16 cache would halve
// that 4 % and round every key and value to 8 mantissa bits (~4e-3
// relative each), so the step would no longer equal the f32 step of the
// rounded weights tightly.
//
// The model falls back to its LibTorch path otherwise (batch > 1, f16 or
// other dtypes, mixed weight dtypes, CUDA, expert parallelism, a cache that
// is not float32).
#ifndef SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_DECODE_CPU_H_
#define SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_DECODE_CPU_H_

#include <torch/types.h>

#include <cstdint>

namespace smoe::model::mixtral {

struct MixtralConfig;
struct MixtralWeights;
struct MixtralKvCache;

// The version of the loops this CPU runs (GCC function multi-versioning,
// worker/model/cpu_math.h): "x86-64-v4" (AVX-512), "x86-64-v3" (AVX2 +
// FMA) or "baseline" (any x86-64; also other compilers and architectures,
// and the SMOE_DECODE_PORTABLE_ONLY test build).
const char* DecodeKernelsIsa();

// True when x is a float32 CPU tensor holding one row (numel == last dim)
// and w is a contiguous float32 or bfloat16 CPU matrix [N, x.size(-1)].
bool DecodeKernelsApply(const torch::Tensor& x, const torch::Tensor& w);

// y [N] float32 = w [N, K] . x [K] (x any shape with K elements). Threads
// over the N rows. REQUIRES: DecodeKernelsApply(x, w).
torch::Tensor MatVec(const torch::Tensor& x, const torch::Tensor& w);

// The MoE block for one token: x [H] float32 (any shape with H elements),
// router gate [E, H], w1/w3 [E, F, H], w2 [E, H, F] (contiguous CPU, one
// dtype: float32 or bfloat16; all E experts local). Returns [H] float32.
// REQUIRES: 1 <= top_k <= E.
torch::Tensor MoeDecode(const torch::Tensor& x, const torch::Tensor& gate,
                        const torch::Tensor& w1, const torch::Tensor& w3,
                        const torch::Tensor& w2, int64_t top_k);

// True when DecodeStepCpu can run the step: batch 1, every weight float32 or
// every weight bfloat16, the cache float32, all contiguous CPU tensors, all
// E experts local.
bool DecodeStepApplies(const MixtralConfig& config,
                       const MixtralWeights& weights,
                       const MixtralKvCache& cache);

// One batch-1 decode step for `token` at cache slot cache->length (the
// caller checked the capacity and the id); appends its key/value, advances
// cache->length and returns the logits [1, 1, V] float32. The same math as
// MixtralModel::Step's LibTorch path (softmax and RMSNorm in float32).
// REQUIRES: DecodeStepApplies(...), 1 <= ept <= E.
torch::Tensor DecodeStepCpu(const MixtralConfig& config,
                            const MixtralWeights& weights,
                            MixtralKvCache* cache, int64_t token, int64_t ept);

}  // namespace smoe::model::mixtral

#endif  // SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_DECODE_CPU_H_
