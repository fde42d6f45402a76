// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/fused_ops.h
//
// The CPU fused ops of the SRAVEN model (issue 19), each one autograd op
// whose loops live in fused_cpu_kernels.cc (torch-free, vectorised).
//
// 1. Fused short-sequence softmax attention for the SRAVEN transformer on the
// CPU (issue 19): one autograd op for scores + relative bias + softmax +
// dropout + values over every (batch, head) pair, reading q/k/v straight out
// of the fused projection [B, T, H*dk | H*dk | H*dv] and writing the heads'
// outputs in the [B, T, H*dv] layout the output projection reads. It replaces
// ~12 LibTorch ops per layer (3 bias adds, permutes, 2 batched matmuls of
// 2,048 tiny [T, 4] products, the bias gather, softmax, the dropout multiply)
// and their backward ops.
//
// Math (per b, h; i, j in [0, T); c over the head's value width):
//   S[i,j] = scale * q_i . k_j + rel_bias[h, bucket[i*T + j]]
//   P      = softmax_j(S)                 (saved for backward, [B, H, T, T])
//   A      = P * keep                     (keep: [T, T], already 1/(1-p))
//   y_i    = sum_j A[i,j] v_j
// Backward: dA = dy v^T, dv = A^T dy, dP = dA * keep,
//   dS = P * (dP - rowsum(P * dP)), dq = scale dS k, dk = scale dS^T q,
//   d rel_bias[h, bucket[i*T + j]] += sum_b dS[b,h,i,j].
//
// Threads: at::parallel_for over heads (each head's bias gradient is then
// private to one thread; no atomics, deterministic).
// dtypes: float32 and float64 on the CPU (float64 for the gradient checks).
// Callers fall back to the unfused LibTorch ops elsewhere
// (FusedAttentionSupported).
//
// 2. GELU with the tanh approximation, exactly the formula of
// torch::gelu(x, "tanh") and its backward, for float32/float64 CPU tensors,
// as one autograd op whose loops vectorise (issue 19: LibTorch's CPU gelu
// calls Sleef's 1-ulp tanhf, 4-10 % of a SRAVEN step). tanh is computed
// from one exp (cpu_math.h): within ~2 ulp of 1 + tanh, i.e. GELU within a
// few float ulps of LibTorch's. float64 uses std::tanh (gradient checks).
#ifndef SMOE_WORKER_MODEL_FUSED_OPS_H_
#define SMOE_WORKER_MODEL_FUSED_OPS_H_

#include <torch/types.h>

#include <cstdint>
#include <utility>

namespace smoe::model {

// True when FusedSoftmaxAttention can take `qkv` (CPU, float32/float64).
bool FusedAttentionSupported(const torch::Tensor& qkv);

// qkv [B, T, H*dk + H*dk + H*dv] (q, then k, then v; head-major within
// each), rel_bias [H, NB], bucket [T*T] int64 (entries in [0, NB)), keep
// undefined (no dropout) or [T, T] of the qkv dtype (the keep mask already
// divided by 1 - p). Returns y [B, T, H*dv]. Differentiable in qkv and
// rel_bias.
torch::Tensor FusedSoftmaxAttention(const torch::Tensor& qkv,
                                    const torch::Tensor& rel_bias,
                                    const torch::Tensor& bucket,
                                    const torch::Tensor& keep, int64_t heads,
                                    int64_t dk, int64_t dv, double scale);

// True for CPU float32/float64 tensors.
bool FastGeluSupported(const torch::Tensor& x);

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), differentiable in x.
// Other devices/dtypes: torch::gelu(x, "tanh").
torch::Tensor GeluTanh(const torch::Tensor& x);

// 3. Residual add + LayerNorm (the SRAVEN block's a = h + attn(...);
// ln2(a)) as one autograd op with two outputs: one pass over the rows
// forward (the sum, its mean and rstd, the normalised row), one backward
// (the LayerNorm gradient plus the gradient that reached the sum directly,
// and the weight/bias gradients summed over fixed blocks of rows in a fixed
// order: deterministic for any thread count). Replaces add + layer_norm
// forward and layer_norm_backward + the gradient accumulation of the sum.

// True for contiguous-able CPU float32/float64 x, y of one shape and dtype.
bool FusedAddLayerNormSupported(const torch::Tensor& x, const torch::Tensor& y);

// {s = x + y, layer_norm(s, [dm], weight, bias, eps)} over the last dim dm;
// differentiable in x, y, weight and bias. unfused = true (tests) or an
// unsupported input (CUDA, other dtypes): the LibTorch ops x + y and
// torch::layer_norm.
std::pair<torch::Tensor, torch::Tensor> AddLayerNorm(
    const torch::Tensor& x, const torch::Tensor& y, const torch::Tensor& weight,
    const torch::Tensor& bias, double eps, bool unfused = false);

// x [M, K] . w [K, N] + b [N] (torch::addmm(b, x, w)), differentiable in
// all three. On CPU float32/float64 (FusedLinearSupported) the bias rows are
// written first and the GEMM accumulates onto them (no broadcasting copy),
// and the bias gradient is summed over fixed 256-row blocks in block order
// (deterministic for any thread count). unfused = true (tests) or other
// inputs: torch::addmm.
bool FusedLinearSupported(const torch::Tensor& x, const torch::Tensor& w,
                          const torch::Tensor& b);
torch::Tensor Linear(const torch::Tensor& x, const torch::Tensor& w,
                     const torch::Tensor& b, bool unfused = false);

// 4. AdamW's per-parameter update (optax.adamw: b1, b2, eps outside the
// sqrt, decoupled decay) as one pass over the parameter and its two moments
// instead of ~8 LibTorch ops and 2 temporaries per parameter (issue 19:
// ~700 ops per SRAVEN step). The loop keeps the LibTorch ops' operation
// order, so the two paths agree to float rounding.
struct AdamWHyper {
  double lr = 0;
  double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  double bc1 = 1, bc2 = 1;  // 1 - b1^t, 1 - b2^t at update t (1-based)
  double weight_decay = 0;  // 0: no decay for this parameter
};

// True when p, g (or undefined g), m and v are contiguous CPU tensors of one
// float32/float64 dtype and size.
bool FusedAdamWSupported(const torch::Tensor& p, const torch::Tensor& g,
                         const torch::Tensor& m, const torch::Tensor& v);

// p, m, v updated in place (no autograd). g undefined: a zero gradient.
// Fused loop when FusedAdamWSupported and !unfused; otherwise (CUDA,
// other dtypes, or unfused = true for tests) the LibTorch ops:
//   m.mul_(b1).add_(g, 1-b1); v.mul_(b2).addcmul_(g, g, 1-b2);
//   u = (m/bc1) / ((v/bc2).sqrt() + eps); u.add_(p, wd); p.add_(u, -lr).
void AdamWStep(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m,
               torch::Tensor& v, const AdamWHyper& h, bool unfused = false);

}  // namespace smoe::model

#endif  // SMOE_WORKER_MODEL_FUSED_OPS_H_
