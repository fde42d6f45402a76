// Copyright 2026 SMoE Lab authors.
#include "worker/model/moe.h"

#include <torch/torch.h>

#include <utility>
#include <vector>

#include "worker/model/attention.h"
#include "worker/model/ops/moe_ops.h"

namespace smoe::model {
namespace {

// Indices of each row sorted by descending value, ties keep ascending index.
torch::Tensor DescendingOrder(const torch::Tensor& scores) {
  return std::get<1>(
      scores.sort(/*stable=*/true, /*dim=*/-1, /*descending=*/true));
}

std::vector<double> ToVector(const torch::Tensor& t) {
  torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(),
                             c.data_ptr<double>() + c.numel());
}

double MeanEntropy(const torch::Tensor& probs) {
  torch::Tensor p = probs.detach().to(torch::kFloat64);
  torch::Tensor h = -(p * torch::log(p.clamp_min(1e-300))).sum(-1);
  return h.mean().item<double>();
}

}  // namespace

torch::Tensor TopKMask(const torch::Tensor& scores, int k) {
  torch::Tensor idx = DescendingOrder(scores).narrow(-1, 0, k);
  return torch::zeros(scores.sizes(), scores.options().dtype(torch::kInt64))
      .scatter(-1, idx, 1);
}

SmoeLayerImpl::SmoeLayerImpl(const ModelConfig& config)
    : config_(config),
      d_model_(config.model_dim()),
      mlp_(config.mlp_dim()),
      experts_(config.num_experts) {
  expert_w1 = register_parameter(
      "expert_w1", LecunNormal({experts_, d_model_, mlp_}, d_model_));
  expert_b1 = register_parameter("expert_b1", torch::zeros({experts_, mlp_}));
  expert_w2 = register_parameter("expert_w2",
                                 LecunNormal({experts_, mlp_, d_model_}, mlp_));
  expert_b2 =
      register_parameter("expert_b2", torch::zeros({experts_, d_model_}));
  if (config.router == RouterKind::kTopK) {
    if (experts_ > 1) {
      router_w = register_parameter(
          "router_w", LecunNormal({d_model_, experts_}, d_model_));
    }
  } else {
    soft_phi = register_parameter(
        "soft_phi",
        LecunNormal({d_model_, experts_ * config.soft_slots_per_expert},
                    d_model_));
    soft_scale = register_parameter("soft_scale", torch::ones({1}));
  }
}

torch::Tensor SmoeLayerImpl::Expert(int64_t e, const torch::Tensor& x) const {
  torch::Tensor h =
      torch::gelu(torch::matmul(x, expert_w1[e]) + expert_b1[e], "tanh");
  return torch::matmul(h, expert_w2[e]) + expert_b2[e];
}

torch::Tensor SmoeLayerImpl::RouterLogits(const torch::Tensor& flat) const {
  return torch::matmul(flat, router_w);
}

torch::Tensor SmoeLayerImpl::forward(const torch::Tensor& x,
                                     torch::Tensor* aux_loss,
                                     RouterStats* stats) {
  if (aux_loss != nullptr) *aux_loss = torch::zeros({}, x.options());
  if (config_.router == RouterKind::kSoft) return SoftForward(x, stats);
  torch::Tensor flat = x.reshape({-1, d_model_});
  torch::Tensor y;
  if (experts_ == 1) {
    y = Expert(0, flat);
    if (stats != nullptr) *stats = RouterStats{{1.0}, 0.0};
  } else {
    y = TopKForward(flat, aux_loss, stats);
  }
  return y.view(x.sizes());
}

torch::Tensor SmoeLayerImpl::TopKForward(const torch::Tensor& flat,
                                         torch::Tensor* aux_loss,
                                         RouterStats* stats) {
  const bool want_aux = aux_loss != nullptr && config_.load_balance_alpha > 0;
  torch::Tensor logits = RouterLogits(flat);
  absl::StatusOr<RouterOutput> routed =
      ops::RouterTopK(logits, config_.top_k, config_.gating);
  // NOTE: the config was validated; a failure here is a broken invariant and
  // surfaces as c10::Error like any LibTorch op (trainer entry points catch).
  TORCH_CHECK(routed.ok(), "SMoE router: ", routed.status().ToString());
  const RouterOutput& r = *routed;
  torch::Tensor y;
  if (dispatcher_ != nullptr) {
    y = dispatcher_->Dispatch(*this, flat, r);
  } else if (config_.dispatch == Dispatch::kOps) {
    y = OpsDispatch(flat, r);
  } else if (config_.dispatch == Dispatch::kGather) {
    y = GatherDispatch(flat, r);
  } else {
    y = DenseDispatch(flat, r);
  }
  if (want_aux || stats != nullptr) {
    torch::Tensor probs = torch::softmax(logits, -1);
    torch::Tensor counts = r.num_tokens_per_expert.to(probs.scalar_type());
    // Expert parallel: f_i over the global batch (P_i stays local; averaging
    // the gradients over ranks then gives the global loss's gradient).
    if (dispatcher_ != nullptr)
      counts = dispatcher_->GlobalExpertCounts(counts);
    torch::Tensor frac = counts / counts.sum().clamp_min(1.0);
    if (want_aux) {
      *aux_loss = config_.load_balance_alpha * static_cast<double>(experts_) *
                  (frac.detach() * probs.mean(0)).sum();
    }
    if (stats != nullptr) {
      stats->expert_fraction = ToVector(frac);
      stats->entropy = MeanEntropy(probs);
    }
  }
  return y;
}

torch::Tensor SmoeLayerImpl::OpsDispatch(const torch::Tensor& flat,
                                         const RouterOutput& r) const {
  absl::StatusOr<torch::Tensor> y =
      ops::RoutedExperts(flat, r, expert_w1, expert_b1, expert_w2, expert_b2);
  TORCH_CHECK(y.ok(), "SMoE ops dispatch: ", y.status().ToString());
  return *std::move(y);
}

torch::Tensor SmoeLayerImpl::GatherDispatch(const torch::Tensor& flat,
                                            const RouterOutput& r) const {
  const int64_t k = r.topk_idx.size(1);
  torch::Tensor expert_of = r.topk_idx.reshape({-1}).to(torch::kInt64);
  torch::Tensor order = std::get<1>(
      expert_of.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false));
  torch::Tensor counts = r.num_tokens_per_expert.to(torch::kCPU, torch::kInt64);
  const int64_t* count = counts.data_ptr<int64_t>();
  torch::Tensor token = torch::div(order, k, "floor");
  torch::Tensor gate = r.topk_weights.to(flat.scalar_type())
                           .reshape({-1})
                           .index_select(0, order);
  torch::Tensor xs = flat.index_select(0, token);
  std::vector<torch::Tensor> outs;
  int64_t offset = 0;
  for (int64_t e = 0; e < experts_; ++e) {
    if (count[e] == 0) continue;
    outs.push_back(Expert(e, xs.narrow(0, offset, count[e])));
    offset += count[e];
  }
  torch::Tensor ys = torch::cat(outs, 0) * gate.unsqueeze(1);
  return torch::zeros_like(flat).index_add(0, token, ys);
}

torch::Tensor SmoeLayerImpl::DenseDispatch(const torch::Tensor& flat,
                                           const RouterOutput& r) const {
  const int64_t n = flat.size(0);
  torch::Tensor w = r.topk_weights.to(flat.scalar_type());
  torch::Tensor g = torch::zeros({n, experts_}, w.options())
                        .scatter(1, r.topk_idx.to(torch::kInt64), w);  // [N, E]
  torch::Tensor h = torch::gelu(
      torch::matmul(flat.unsqueeze(0), expert_w1) + expert_b1.unsqueeze(1),
      "tanh");  // [E, N, mlp]
  torch::Tensor ye = torch::matmul(h, expert_w2) + expert_b2.unsqueeze(1);
  // out[n] = sum_e g[n, e] ye[e, n]:  [N, 1, E] @ [N, E, D].
  return torch::bmm(g.unsqueeze(1), ye.permute({1, 0, 2})).squeeze(1);
}

std::pair<torch::Tensor, torch::Tensor> SmoeLayerImpl::SoftWeights(
    const torch::Tensor& x) const {
  torch::Tensor xn = x * torch::rsqrt(x.pow(2).sum(-1, true) + 1e-6);
  torch::Tensor phin =
      soft_phi * torch::rsqrt(soft_phi.pow(2).sum(0, true) + 1e-6) * soft_scale;
  torch::Tensor logits = torch::matmul(xn, phin);  // [B, T, S]
  return {torch::softmax(logits, 1), torch::softmax(logits, 2)};
}

torch::Tensor SmoeLayerImpl::SoftForward(const torch::Tensor& x,
                                         RouterStats* stats) {
  const int64_t b = x.size(0);
  const int64_t p = config_.soft_slots_per_expert;
  auto [dispatch, combine] = SoftWeights(x);
  torch::Tensor slots = torch::matmul(dispatch.transpose(1, 2), x);  // [B,S,D]
  torch::Tensor se = slots.view({b, experts_, p, d_model_})
                         .permute({1, 0, 2, 3})
                         .reshape({experts_, b * p, d_model_});
  torch::Tensor h = torch::gelu(
      torch::matmul(se, expert_w1) + expert_b1.unsqueeze(1), "tanh");
  torch::Tensor ye = torch::matmul(h, expert_w2) + expert_b2.unsqueeze(1);
  torch::Tensor ys = ye.view({experts_, b, p, d_model_}).permute({1, 0, 2, 3});
  torch::Tensor per_expert = combine.view({b, -1, experts_, p}).sum(-1);
  if (!is_training() && config_.top_k < experts_) {
    // Algorithm 1: C_sum over tokens; keep the top_k experts per sequence.
    torch::Tensor keep = TopKMask(per_expert.sum(1), config_.top_k);  // [B,E]
    ys = ys * keep.to(ys.dtype()).view({b, experts_, 1, 1});
  }
  ys = ys.reshape({b, experts_ * p, d_model_});
  if (stats != nullptr) {
    stats->expert_fraction =
        ToVector(per_expert.reshape({-1, experts_}).mean(0));
    stats->entropy = MeanEntropy(combine);
  }
  return torch::matmul(combine, ys);
}

}  // namespace smoe::model
