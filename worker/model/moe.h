// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/moe.h
//
// The SMoE feed-forward layer that replaces each block's MLP (docs/sraven.md
// section 5; Soft MoE 5.1). E experts, each the block's GELU(tanh) MLP
// D -> mlp -> D with biases, stored stacked:
//   expert_w1 [E, D, mlp], expert_b1 [E, mlp], expert_w2 [E, mlp, D],
//   expert_b2 [E, D]
// (kernels LeCun-normal with fan_in D resp. mlp per expert, biases zero; the
// stacked biases are logically 1-D per expert and are NOT weight-decayed, see
// DecayParameter in transformer.h).
//
// Routers:
//  * kTopK: router [D, E] without bias on the pre-LN input; top-k by logit
//    with ties broken towards the lower expert index (ops::RouterTopK, the
//    one router of every dispatch, into a RouterOutput, routing.h); gates
//    renormalised over the chosen k (RouterGating::kRenormalized) or softmax
//    over all E then top-k without renormalisation (kNoRenorm). No capacity,
//    no token dropping.
//    Optional Switch load-balancing loss alpha * E * sum_i f_i P_i with f_i =
//    fraction of (token, choice) assignments to expert i (no gradient) and
//    P_i = mean full-softmax probability of expert i.
//    E == 1: no router parameter at all (the dense model; gate = 1).
//  * kSoft: Soft MoE per sequence (the group is one sequence of T tokens).
//    soft_phi [D, E*p], soft_scale [1]; tokens and the columns of phi are
//    L2-normalised (eps 1e-6) and phi is multiplied by soft_scale (init 1),
//    as in google-research/vmoe. logits [B,T,E*p]; dispatch D = softmax over
//    tokens, combine C = softmax over all slots; y = C * f(D^T x). In eval
//    mode with top_k < E, Algorithm 1 of Chung et al. (docs/sraven.md 5.1): per
//    sequence keep the top_k experts with the largest summed combine weight
//    (over tokens and the expert's slots, ties -> lower index), zero the
//    others' slot outputs; C and D are not renormalised.
#ifndef SMOE_WORKER_MODEL_MOE_H_
#define SMOE_WORKER_MODEL_MOE_H_

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "worker/model/model_config.h"
#include "worker/model/routing.h"

namespace smoe::model {

// Router telemetry of one layer for one forward call, plain values.
struct RouterStats {
  // [E]: kTopK: fraction of (token, choice) assignments that went to each
  // expert (sums to 1); kSoft: mean combine mass per expert over tokens.
  std::vector<double> expert_fraction;
  // Mean over tokens of the entropy (nats) of the token's full router
  // distribution (kTopK: softmax over all E logits; kSoft: the combine row
  // over all slots). 0 for E == 1.
  double entropy = 0.0;
};

// Returns [B, E] int64 (0/1) marking, per row, the k largest entries of
// `scores` [B, E] (ties -> lower index).
torch::Tensor TopKMask(const torch::Tensor& scores, int k);

class SmoeLayerImpl;

// Expert-parallel hook (worker/model/expert_parallel.h). When a layer has a
// dispatcher, its top-k path (E > 1) sends tokens through it instead of the
// ops/gather/dense dispatch, and the load-balancing f_i uses global counts.
class ExpertDispatcher {
 public:
  virtual ~ExpertDispatcher() = default;
  // Returns [N, D]: row n = sum_j routing.topk_weights[n, j] * expert
  // routing.topk_idx[n, j] applied to flat[n] (flat [N, D]), wherever that
  // expert lives. Collective: every rank calls it once per forward.
  virtual torch::Tensor Dispatch(const SmoeLayerImpl& layer,
                                 const torch::Tensor& flat,
                                 const RouterOutput& routing) = 0;
  // Returns per-expert assignment counts [E] summed over ranks (collective).
  virtual torch::Tensor GlobalExpertCounts(const torch::Tensor& counts) = 0;
};

class SmoeLayerImpl : public torch::nn::Module {
 public:
  explicit SmoeLayerImpl(const ModelConfig& config);

  // x: [B, T, D] (pre-LN output). Returns [B, T, D]. When `aux_loss` is not
  // null it receives the load-balancing term (a scalar; zero when alpha == 0
  // or the router has none). When `stats` is not null it receives telemetry.
  torch::Tensor forward(const torch::Tensor& x, torch::Tensor* aux_loss,
                        RouterStats* stats);

  // Expert e's MLP on x [n, D] -> [n, D].
  torch::Tensor Expert(int64_t e, const torch::Tensor& x) const;

  // Soft MoE dispatch / combine weights for x [B, T, D]: both [B, T, E*p].
  // REQUIRES: router == kSoft.
  std::pair<torch::Tensor, torch::Tensor> SoftWeights(
      const torch::Tensor& x) const;

  // Router logits [N, E] for flat tokens [N, D]. REQUIRES: kTopK, E > 1.
  torch::Tensor RouterLogits(const torch::Tensor& flat) const;

  void set_dispatch(Dispatch d) { config_.dispatch = d; }

  // Installs (or, with nullptr, removes) the expert-parallel dispatcher.
  void set_expert_dispatcher(std::shared_ptr<ExpertDispatcher> d) {
    dispatcher_ = std::move(d);
  }
  const ModelConfig& config() const { return config_; }

  torch::Tensor expert_w1, expert_b1, expert_w2, expert_b2;
  torch::Tensor router_w;              // kTopK with E > 1
  torch::Tensor soft_phi, soft_scale;  // kSoft

 private:
  torch::Tensor TopKForward(const torch::Tensor& flat, torch::Tensor* aux_loss,
                            RouterStats* stats);
  torch::Tensor SoftForward(const torch::Tensor& x, RouterStats* stats);
  torch::Tensor GatherDispatch(const torch::Tensor& flat,
                               const RouterOutput& r) const;
  torch::Tensor DenseDispatch(const torch::Tensor& flat,
                              const RouterOutput& r) const;
  // Dispatch::kOps: permute, expert MLPs and combine through worker/model/ops
  // (gates applied in the combine).
  torch::Tensor OpsDispatch(const torch::Tensor& flat,
                            const RouterOutput& r) const;

  ModelConfig config_;
  int64_t d_model_, mlp_, experts_;
  std::shared_ptr<ExpertDispatcher> dispatcher_;
};
TORCH_MODULE(SmoeLayer);

}  // namespace smoe::model

#endif  // SMOE_WORKER_MODEL_MOE_H_
