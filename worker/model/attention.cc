// Copyright 2026 SMoE Lab authors.
#include "worker/model/attention.h"

#include <torch/torch.h>

#include <cmath>

#include "worker/model/autocast.h"
#include "worker/model/fused_ops.h"

namespace smoe::model {

torch::Tensor LecunNormal(at::IntArrayRef shape, int64_t fan_in) {
  // Flax variance_scaling(1, fan_in, truncated_normal): a standard normal
  // truncated to [-2, 2] has std 0.87962566103423978; divide it out.
  const double std =
      1.0 / std::sqrt(static_cast<double>(fan_in)) / 0.87962566103423978;
  // Inverse-CDF sampling of the truncated normal (as torch's trunc_normal_).
  const double lo = 0.5 * (1.0 + std::erf(-2.0 / std::sqrt(2.0)));
  const double hi = 0.5 * (1.0 + std::erf(2.0 / std::sqrt(2.0)));
  torch::NoGradGuard no_grad;
  torch::Tensor t = torch::empty(shape, torch::kFloat32);
  t.uniform_(2 * lo - 1, 2 * hi - 1);
  t.erfinv_();
  t.mul_(std * std::sqrt(2.0));
  t.clamp_(-2 * std, 2 * std);
  return t;
}

torch::Tensor RelativeBucketMatrix(int seq_len) {
  torch::Tensor m = torch::empty({seq_len, seq_len}, torch::kInt64);
  auto acc = m.accessor<int64_t, 2>();
  for (int q = 0; q < seq_len; ++q) {
    for (int k = 0; k < seq_len; ++k) {
      acc[q][k] = RelativePositionBucket(q, k, seq_len, seq_len);
    }
  }
  return m;
}

AttentionImpl::AttentionImpl(const ModelConfig& config)
    : config_(config),
      d_model_(config.model_dim()),
      heads_(config.num_heads()),
      dk_(config.head_dim()),
      dv_(config.v_dim() / config.num_heads()),
      seq_len_(config.seq_len()) {
  wq =
      register_parameter("wq", LecunNormal({d_model_, heads_ * dk_}, d_model_));
  bq = register_parameter("bq", torch::zeros({heads_, dk_}));
  wk =
      register_parameter("wk", LecunNormal({d_model_, heads_ * dk_}, d_model_));
  bk = register_parameter("bk", torch::zeros({heads_, dk_}));
  wv =
      register_parameter("wv", LecunNormal({d_model_, heads_ * dv_}, d_model_));
  bv = register_parameter("bv", torch::zeros({heads_, dv_}));
  wo = register_parameter("wo",
                          LecunNormal({heads_ * dv_, d_model_}, heads_ * dv_));
  bo = register_parameter("bo", torch::zeros({d_model_}));
  {
    torch::NoGradGuard no_grad;
    rel_bias = register_parameter("rel_bias",
                                  torch::randn({heads_, seq_len_}) /
                                      std::sqrt(static_cast<double>(seq_len_)));
  }
  bucket_ = RelativeBucketMatrix(static_cast<int>(seq_len_)).reshape({-1});
}

torch::Tensor AttentionImpl::Bias(const torch::Device& device) {
  if (bucket_.device() != device) bucket_ = bucket_.to(device);
  return rel_bias.index_select(1, bucket_).view({heads_, seq_len_, seq_len_});
}

torch::Tensor AttentionImpl::Scores(const torch::Tensor& x) {
  const int64_t b = x.size(0);
  const int64_t t = x.size(1);
  TORCH_CHECK(t == seq_len_, "attention built for T=", seq_len_, ", got ", t);
  torch::Tensor q = (torch::matmul(x, wq).view({b, t, heads_, dk_}) + bq)
                        .permute({0, 2, 1, 3});
  torch::Tensor k = (torch::matmul(x, wk).view({b, t, heads_, dk_}) + bk)
                        .permute({0, 2, 1, 3});
  const double scale = 1.0 / std::sqrt(static_cast<double>(dk_));
  return torch::matmul(q, k.transpose(-1, -2)) * scale + Bias(x.device());
}

torch::Tensor AttentionImpl::Normalise(const torch::Tensor& s) const {
  switch (ScoreNormOf(config_.attention)) {
    case ScoreNorm::kSoftmaxOverKeys:
      return torch::softmax(s, -1);
    case ScoreNorm::kRmsOverHeads:
      // RMSNorm over the head axis, eps 1e-6, no learnable scale.
      return s * torch::rsqrt(s.pow(2).mean(1, /*keepdim=*/true) + 1e-6);
    case ScoreNorm::kNone:
      break;
  }
  return s;
}

torch::Tensor AttentionImpl::FusedForward(const torch::Tensor& x) {
  const int64_t b = x.size(0);
  const int64_t t = x.size(1);
  TORCH_CHECK(t == seq_len_, "attention built for T=", seq_len_, ", got ", t);
  // One GEMM for q, k and v (bias folded in), the fused attention, one GEMM
  // for the output projection: 3 large ops instead of ~20 small ones.
  torch::Tensor w = torch::cat({wq, wk, wv}, 1);
  torch::Tensor bias =
      torch::cat({bq.reshape({-1}), bk.reshape({-1}), bv.reshape({-1})});
  torch::Tensor qkv =
      Linear(x.reshape({b * t, d_model_}), w, bias).view({b, t, -1});
  const double p = config_.attention_dropout;
  torch::Tensor keep;
  if (is_training() && p > 0) {
    // The same draw as the unfused path (one T x T mask, default generator).
    keep = torch::bernoulli(
               torch::full({t, t}, 1.0 - p, x.options().dtype(torch::kFloat32)))
               .div_(1.0 - p)
               .to(x.scalar_type());
  }
  torch::Tensor y =
      FusedSoftmaxAttention(qkv, rel_bias, bucket_, keep, heads_, dk_, dv_,
                            1.0 / std::sqrt(static_cast<double>(dk_)));
  return Linear(y.view({b * t, heads_ * dv_}), wo, bo).view({b, t, d_model_});
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x) {
  // The fused op computes in x's dtype: not under autocast (bf16 GEMMs would
  // hand it bf16 q/k/v), and not for an empty batch (a rank of an
  // expert-parallel eval may hold no rows).
  if (fused_ && ScoreNormOf(config_.attention) == ScoreNorm::kSoftmaxOverKeys &&
      ValueNetOf(config_.attention) == ValueNet::kLinear && x.numel() > 0 &&
      !AutocastDtype(x).has_value() && FusedAttentionSupported(x)) {
    return FusedForward(x);
  }
  return UnfusedForward(x);
}

torch::Tensor AttentionImpl::UnfusedForward(const torch::Tensor& x) {
  const int64_t b = x.size(0);
  const int64_t t = x.size(1);
  torch::Tensor a = Normalise(Scores(x));  // [B, H, T, T]
  const double p = config_.attention_dropout;
  if (is_training() && p > 0) {
    torch::Tensor keep = torch::bernoulli(
        torch::full({t, t}, 1.0 - p, a.options().dtype(torch::kFloat32)));
    a = a * (keep / (1.0 - p)).to(a.dtype());
  }
  torch::Tensor v = torch::matmul(x, wv).view({b, t, heads_, dv_}) + bv;
  torch::Tensor y;  // [B, T(q), H, dv]
  const ValueNet net = ValueNetOf(config_.attention);
  if (net == ValueNet::kLinear) {
    // y[b,h,q] = sum_k a[b,h,q,k] v[b,k,h].
    y = torch::matmul(a, v.permute({0, 2, 1, 3})).permute({0, 2, 1, 3});
  } else {
    // Hidden layer: u[b,q,k] = sum_h a[b,h,q,k] v[b,k,h]
    // ([B,k,q,h]@[B,k,h,dv]).
    torch::Tensor u = torch::matmul(a.permute({0, 3, 2, 1}), v);  // [B,k,q,dv]
    torch::Tensor z = net == ValueNet::kTwoLayerRelu ? torch::relu(u) : u;
    // Output layer: y[b,q,h] = sum_k a[b,h,q,k] z[b,q,k]
    // ([B,q,h,k]@[B,q,k,dv]).
    y = torch::matmul(a.permute({0, 2, 1, 3}), z.permute({0, 2, 1, 3}));
  }
  return torch::matmul(y.reshape({b, t, heads_ * dv_}), wo) + bo;
}

}  // namespace smoe::model
