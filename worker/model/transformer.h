// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/transformer.h
//
// The SRAVEN SMoE transformer (docs/sraven.md 2.1 with the FFN replaced by
// an SmoeLayer, section 5):
//
//   h0 = x @ embed_w + embed_b                       Dense(F -> D), with bias
//   for each block l (pre-LN, separate params):
//     a = h + Attention_l(LayerNorm_l1(h))           LayerNorm eps 1e-6
//     h = a + SmoeLayer_l(LayerNorm_l2(a))
//   logits = LayerNorm_f(h) @ readout_w + readout_b  at every position
//
// With num_experts == 1 and router topk this is exactly the reference's dense
// model (same parameter count as the docs/sraven.md 2.3 table).
//
// Parameter names: embed_w [F, D], embed_b [D], block{l}.ln1.{weight,bias},
// block{l}.attn.*, block{l}.ln2.*, block{l}.moe.*, final_ln.*,
// readout_w [D, F], readout_b [F].
//
// Randomness: construction draws the initial parameters from torch's default
// generator (seed it first); forward in training mode draws the attention
// dropout masks from it. Everything else is deterministic.
#ifndef SMOE_WORKER_MODEL_TRANSFORMER_H_
#define SMOE_WORKER_MODEL_TRANSFORMER_H_

#include <torch/nn/module.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "worker/model/attention.h"
#include "worker/model/model_config.h"
#include "worker/model/moe.h"

namespace smoe::model {

struct ForwardOutput {
  torch::Tensor logits;    // [B, T, F]
  torch::Tensor aux_loss;  // scalar: summed load-balancing loss of all layers
  std::vector<RouterStats> router_stats;  // [L] iff requested, else empty
};

class BlockImpl : public torch::nn::Module {
 public:
  explicit BlockImpl(const ModelConfig& config);
  torch::Tensor forward(const torch::Tensor& h, torch::Tensor* aux_loss,
                        RouterStats* stats);
  // The block without its last residual add, for a caller that fuses that
  // add with the next LayerNorm: given h and n1 = ln1(h), returns {a, m}
  // with a = h + attn(n1) and m = moe(ln2(a)); forward(h) = a + m.
  std::pair<torch::Tensor, torch::Tensor> ForwardNormed(const torch::Tensor& h,
                                                        const torch::Tensor& n1,
                                                        torch::Tensor* aux_loss,
                                                        RouterStats* stats);

  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  Attention attn{nullptr};
  SmoeLayer moe{nullptr};
};
TORCH_MODULE(Block);

class SmoeTransformerImpl : public torch::nn::Module {
 public:
  // REQUIRES: ValidateModelConfig(config).ok().
  explicit SmoeTransformerImpl(const ModelConfig& config);

  // x: [B, T, F] with T = config.seq_len(). Dropout iff is_training().
  ForwardOutput forward(const torch::Tensor& x,
                        bool collect_router_stats = false);

  // Switches every layer's top-k dispatch strategy (same math).
  void SetDispatch(Dispatch dispatch);

  const ModelConfig& config() const { return config_; }

  torch::Tensor embed_w, embed_b, readout_w, readout_b;
  std::vector<Block> blocks;
  torch::nn::LayerNorm final_ln{nullptr};

 private:
  ModelConfig config_;
};
TORCH_MODULE(SmoeTransformer);

// Cross-entropy over the last M positions (docs/sraven.md 1.4): logits
// [B, T, F], targets [B, M] int64; mean over batch and the M query tokens.
torch::Tensor SravenLoss(const torch::Tensor& logits,
                         const torch::Tensor& targets);

// Counts for accuracy: {problems with all M correct, correct query tokens}.
std::pair<int64_t, int64_t> SravenCorrect(const torch::Tensor& logits,
                                          const torch::Tensor& targets);

// Total number of scalar parameters.
int64_t CountParameters(const torch::nn::Module& module);

// The weight-decay rule of docs/sraven.md 4: decay every parameter whose
// (logical) ndim is not 1. Stacked expert biases (names ending in expert_b1 /
// expert_b2, shape [E, n]) are per-expert 1-D biases and are not decayed; the
// q/k/v biases ([H, d]), rel_bias, router and all kernels are; soft_scale has
// shape [1] and is not.
bool DecayParameter(const std::string& name, const torch::Tensor& param);

}  // namespace smoe::model

#endif  // SMOE_WORKER_MODEL_TRANSFORMER_H_
