// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/attention.h
//
// Multi-head attention of the SRAVEN transformer (docs/sraven.md 2.1, 2.2 and
// 3): q/k/v projections with bias (the q/k/v biases are stored with shape
// [H, d] like Flax's DenseGeneral, so the ndim != 1 weight-decay rule decays
// them, docs/sraven.md 4), scale 1/sqrt(d_k), a one-sided T5 relative bias
// table per layer, no causal mask, attention dropout with one T x T keep-mask
// shared over batch and heads (training only, applied to the normalised
// weights and scaled by 1/(1-p)), and the value networks of section 3
// (linear, or HYLA's two-layer network generated from the same latent code).
//
// Parameters (names as registered):
//   wq [D, H*dk], bq [H, dk], wk [D, H*dk], bk [H, dk],
//   wv [D, H*dv], bv [H, dv], wo [H*dv, D], bo [D], rel_bias [H, T].
// Kernels are LeCun-normal (truncated at +-2 sigma, std 1/sqrt(fan_in)),
// biases zero, rel_bias plain normal with std 1/sqrt(T) (Flax
// default_embed_init on (H, nb), docs/sraven.md 2.3).
#ifndef SMOE_WORKER_MODEL_ATTENTION_H_
#define SMOE_WORKER_MODEL_ATTENTION_H_

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

#include "worker/model/model_config.h"

namespace smoe::model {

// Returns a [rows..] tensor drawn LeCun-normal: truncated normal on +-2 sigma,
// rescaled (/0.8796) so the std is 1/sqrt(fan_in) (Flax lecun_normal). Uses
// torch's default generator. REQUIRES: fan_in > 0.
torch::Tensor LecunNormal(at::IntArrayRef shape, int64_t fan_in);

// Returns the [T, T] int64 bucket index matrix, entry (q, k) =
// RelativePositionBucket(q, k, T, T).
torch::Tensor RelativeBucketMatrix(int seq_len);

class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const ModelConfig& config);

  // x: [B, T, D] (already layer-normed), T = config.seq_len(). Returns
  // [B, T, D]. Dropout is applied iff is_training() and the rate is > 0; the
  // mask is drawn from torch's default generator for x's device.
  torch::Tensor forward(const torch::Tensor& x);

  // The scaled scores plus relative bias, [B, H, T, T] (before
  // normalisation). Exposed for tests.
  torch::Tensor Scores(const torch::Tensor& x);

  // The latent code a_{h,q,k} after normalisation, without dropout,
  // [B, H, T, T]. Exposed for tests.
  torch::Tensor Normalise(const torch::Tensor& scores) const;

  // The unfused LibTorch-op path (every attention kind, any device/dtype),
  // and the fused CPU path (softmax attention with the linear value network,
  // float32/float64 on the CPU; worker/model/fused_ops.h). forward()
  // takes the fused one where it applies unless set_fused(false). Exposed
  // for tests (the fused path is checked against the unfused one).
  torch::Tensor UnfusedForward(const torch::Tensor& x);
  torch::Tensor FusedForward(const torch::Tensor& x);
  void set_fused(bool fused) { fused_ = fused; }

  torch::Tensor wq, bq, wk, bk, wv, bv, wo, bo, rel_bias;

 private:
  torch::Tensor Bias(const torch::Device& device);

  ModelConfig config_;
  int64_t d_model_, heads_, dk_, dv_, seq_len_;
  torch::Tensor bucket_;  // [T*T] int64; not a buffer (dtype casts skip it)
  bool fused_ = true;
};
TORCH_MODULE(Attention);

}  // namespace smoe::model

#endif  // SMOE_WORKER_MODEL_ATTENTION_H_
