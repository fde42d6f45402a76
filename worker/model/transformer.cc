// Copyright 2026 SMoE Lab authors.
#include "worker/model/transformer.h"

#include <torch/torch.h>

#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "worker/model/autocast.h"
#include "worker/model/fused_ops.h"

namespace smoe::model {
namespace {

torch::nn::LayerNorm MakeLayerNorm(int64_t dim) {
  return torch::nn::LayerNorm(
      torch::nn::LayerNormOptions({dim}).eps(1e-6).elementwise_affine(true));
}

}  // namespace

BlockImpl::BlockImpl(const ModelConfig& config) {
  ln1 = register_module("ln1", MakeLayerNorm(config.model_dim()));
  attn = register_module("attn", Attention(config));
  ln2 = register_module("ln2", MakeLayerNorm(config.model_dim()));
  moe = register_module("moe", SmoeLayer(config));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& h,
                                 torch::Tensor* aux_loss, RouterStats* stats) {
  auto [a, m] = ForwardNormed(h, ln1->forward(h), aux_loss, stats);
  return a + m;
}

std::pair<torch::Tensor, torch::Tensor> BlockImpl::ForwardNormed(
    const torch::Tensor& h, const torch::Tensor& n1, torch::Tensor* aux_loss,
    RouterStats* stats) {
  const torch::Tensor att = attn->forward(n1);
  // a = h + att and ln2(a) in one op on CPU float (fused_ops.h); the
  // LibTorch ops elsewhere and under autocast.
  if (!AutocastDtype(h).has_value()) {
    auto [a, n] =
        AddLayerNorm(h, att, ln2->weight, ln2->bias, ln2->options.eps());
    return {a, moe->forward(n, aux_loss, stats)};
  }
  torch::Tensor a = h + att;
  return {a, moe->forward(ln2->forward(a), aux_loss, stats)};
}

SmoeTransformerImpl::SmoeTransformerImpl(const ModelConfig& config)
    : config_(config) {
  const int64_t d = config.model_dim();
  const int64_t f = config.num_values;
  embed_w = register_parameter("embed_w", LecunNormal({f, d}, f));
  embed_b = register_parameter("embed_b", torch::zeros({d}));
  for (int l = 0; l < config.depth; ++l) {
    blocks.push_back(register_module(absl::StrCat("block", l), Block(config)));
  }
  final_ln = register_module("final_ln", MakeLayerNorm(d));
  readout_w = register_parameter("readout_w", LecunNormal({d, f}, d));
  readout_b = register_parameter("readout_b", torch::zeros({f}));
}

ForwardOutput SmoeTransformerImpl::forward(const torch::Tensor& x,
                                           bool collect_router_stats) {
  ForwardOutput out;
  torch::Tensor h = torch::matmul(x, embed_w) + embed_b;
  out.aux_loss = torch::zeros({}, h.options());
  if (collect_router_stats) out.router_stats.resize(blocks.size());
  if (AutocastDtype(h).has_value()) {
    for (size_t l = 0; l < blocks.size(); ++l) {
      torch::Tensor aux;
      h = blocks[l]->forward(
          h, &aux, collect_router_stats ? &out.router_stats[l] : nullptr);
      out.aux_loss = out.aux_loss + aux;
    }
    out.logits = torch::matmul(final_ln->forward(h), readout_w) + readout_b;
    return out;
  }
  // Each block's last residual add (h' = a + m) and the LayerNorm that
  // reads h' next (the next block's ln1, or final_ln) as one AddLayerNorm
  // op (fused_ops.h: one pass on CPU float, the LibTorch ops elsewhere).
  torch::Tensor n =
      blocks.empty() ? final_ln->forward(h) : blocks[0]->ln1->forward(h);
  for (size_t l = 0; l < blocks.size(); ++l) {
    torch::Tensor aux;
    auto [a, m] = blocks[l]->ForwardNormed(
        h, n, &aux, collect_router_stats ? &out.router_stats[l] : nullptr);
    out.aux_loss = out.aux_loss + aux;
    torch::nn::LayerNorm& next =
        l + 1 < blocks.size() ? blocks[l + 1]->ln1 : final_ln;
    std::tie(h, n) =
        AddLayerNorm(a, m, next->weight, next->bias, next->options.eps());
  }
  out.logits = torch::matmul(n, readout_w) + readout_b;
  return out;
}

void SmoeTransformerImpl::SetDispatch(Dispatch dispatch) {
  config_.dispatch = dispatch;
  for (auto& block : blocks) block->moe->set_dispatch(dispatch);
}

torch::Tensor SravenLoss(const torch::Tensor& logits,
                         const torch::Tensor& targets) {
  const int64_t m = targets.size(1);
  const int64_t f = logits.size(2);
  torch::Tensor last = logits.narrow(1, logits.size(1) - m, m);
  return torch::nn::functional::cross_entropy(last.reshape({-1, f}),
                                              targets.reshape({-1}));
}

std::pair<int64_t, int64_t> SravenCorrect(const torch::Tensor& logits,
                                          const torch::Tensor& targets) {
  const int64_t m = targets.size(1);
  torch::Tensor pred = logits.narrow(1, logits.size(1) - m, m).argmax(-1);
  torch::Tensor ok = pred.eq(targets);
  return {ok.all(1).sum().item<int64_t>(), ok.sum().item<int64_t>()};
}

int64_t CountParameters(const torch::nn::Module& module) {
  int64_t n = 0;
  for (const auto& p : module.parameters()) n += p.numel();
  return n;
}

bool DecayParameter(const std::string& name, const torch::Tensor& param) {
  if (absl::EndsWith(name, "expert_b1") || absl::EndsWith(name, "expert_b2")) {
    return false;
  }
  return param.dim() != 1;
}

}  // namespace smoe::model
