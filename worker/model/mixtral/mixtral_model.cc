// Copyright 2026 SMoE Lab authors.
#include "worker/model/mixtral/mixtral_model.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "worker/model/mixtral/mixtral_checkpoint.h"
#include "worker/model/mixtral/mixtral_decode_cpu.h"
#include "worker/model/mixtral/mixtral_expert_parallel.h"
#include "worker/model/ops/moe_ops.h"

namespace smoe::model::mixtral {
namespace {

namespace F = torch::nn::functional;

std::string ShapeString(c10::IntArrayRef shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::Status CheckShape(const std::string& name, const torch::Tensor& t,
                        std::vector<int64_t> want) {
  if (!t.defined()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "' is missing"));
  }
  if (t.sizes().vec() != want) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "' has shape ", ShapeString(t.sizes()),
                     " but config.json implies ", ShapeString(want)));
  }
  return absl::OkStatus();
}

// Converts a LibTorch exception into a Status (the runtime's entry points
// catch here once).
absl::Status FromTorch(const char* where, const std::exception& e) {
  return absl::InternalError(absl::StrCat(where, ": ", e.what()));
}

}  // namespace

// ---- building blocks
// ------------------------------------------------------------

torch::Tensor RmsNorm(const torch::Tensor& x, const torch::Tensor& weight,
                      double eps) {
  torch::Tensor h = x.to(torch::kFloat32);
  const torch::Tensor variance = h.pow(2).mean(-1, /*keepdim=*/true);
  h = h * torch::rsqrt(variance + eps);
  return weight * h.to(x.scalar_type());
}

torch::Tensor ApplyRope(const torch::Tensor& x, const torch::Tensor& positions,
                        double theta) {
  const int64_t d = x.size(-1);
  const auto f32 = torch::TensorOptions(torch::kFloat32).device(x.device());
  // NOTE: HF computes inv_freq as 1 / theta^(arange(0, d, 2).float() / d).
  const torch::Tensor inv_freq =
      1.0 /
      torch::pow(
          theta,
          torch::arange(0, d, 2, f32.dtype(torch::kInt64)).to(torch::kFloat32) /
              static_cast<double>(d));
  const torch::Tensor freqs =
      positions.to(f32).unsqueeze(-1) * inv_freq.view({1, 1, -1});  // [B,T,d/2]
  const torch::Tensor emb = torch::cat({freqs, freqs}, -1);         // [B,T,d]
  const torch::Tensor cos = emb.cos().to(x.scalar_type()).unsqueeze(1);
  const torch::Tensor sin = emb.sin().to(x.scalar_type()).unsqueeze(1);
  const torch::Tensor x1 = x.narrow(-1, 0, d / 2);
  const torch::Tensor x2 = x.narrow(-1, d / 2, d / 2);
  const torch::Tensor rotated = torch::cat({-x2, x1}, -1);
  return x * cos + rotated * sin;
}

RouterOutput RouteMixtral(const torch::Tensor& router_logits, int64_t top_k) {
  absl::StatusOr<RouterOutput> r =
      ops::RouterTopK(router_logits.to(torch::kFloat32),
                      static_cast<int>(top_k), RouterGating::kRenormalized);
  // NOTE: callers validate top_k (SetExpertsPerToken / ResolveEpt); a failure
  // is a broken invariant and raises c10::Error like any LibTorch op.
  TORCH_CHECK(r.ok(), "Mixtral router: ", r.status().ToString());
  return *std::move(r);
}

torch::Tensor MoeForward(const torch::Tensor& x,
                         const MixtralLayerWeights& layer, int64_t top_k) {
  const RouterOutput r = RouteMixtral(torch::matmul(x, layer.gate.t()), top_k);
  const int64_t local = layer.w1.size(0);
  const int64_t first = layer.first_expert;
  absl::StatusOr<ops::Plan> plan =
      ops::BuildPermutePlan(r.topk_idx, static_cast<int>(layer.gate.size(0)));
  TORCH_CHECK(plan.ok(), "Mixtral MoE: ", plan.status().ToString());
  // The ops permute and combine f32, bf16 and f64; f16 goes through f32
  // (a permute is a copy, so only the combine's rounding changes).
  const bool via_f32 = x.scalar_type() == torch::kFloat16;
  absl::StatusOr<torch::Tensor> rows =
      ops::Permute(via_f32 ? x.to(torch::kFloat32) : x, *plan);
  TORCH_CHECK(rows.ok(), "Mixtral MoE: ", rows.status().ToString());
  torch::Tensor expert_out = torch::zeros_like(*rows);
  for (int64_t e = 0; e < local; ++e) {
    const int64_t lo = plan->host_offsets[first + e];
    const int64_t n = plan->host_offsets[first + e + 1] - lo;
    if (n == 0) continue;
    const torch::Tensor xe = rows->narrow(0, lo, n).to(x.scalar_type());
    const torch::Tensor h = F::silu(torch::matmul(xe, layer.w1[e].t())) *
                            torch::matmul(xe, layer.w3[e].t());
    expert_out.narrow(0, lo, n).copy_(torch::matmul(h, layer.w2[e].t()));
  }
  // Only the local experts' pairs count: the others' weights are zero.
  const torch::Tensor mine =
      (r.topk_idx >= first) & (r.topk_idx < first + local);
  absl::StatusOr<torch::Tensor> y = ops::Combine(
      expert_out, r.topk_weights * mine.to(r.topk_weights.scalar_type()),
      *plan);
  TORCH_CHECK(y.ok(), "Mixtral MoE: ", y.status().ToString());
  return y->to(x.scalar_type());
}

torch::Tensor FilterLogits(const torch::Tensor& logits, int64_t top_k,
                           double top_p) {
  const double kNegInf = -std::numeric_limits<double>::infinity();
  torch::Tensor out = logits.clone();
  const int64_t vocab = out.size(-1);
  if (top_k > 0 && top_k < vocab) {
    const torch::Tensor kth =
        std::get<0>(torch::topk(out, top_k, -1)).narrow(-1, top_k - 1, 1);
    out.masked_fill_(out < kth, kNegInf);
  }
  if (top_p < 1.0) {
    auto [vals, idx] = torch::sort(out, /*stable=*/true, /*dim=*/-1,
                                   /*descending=*/true);
    const torch::Tensor probs = torch::softmax(vals.to(torch::kFloat32), -1);
    // Drop a token when the mass ranked above it already reaches top_p.
    torch::Tensor drop = (probs.cumsum(-1) - probs) >= top_p;
    drop.narrow(-1, 0, 1).fill_(false);
    out.masked_fill_(torch::zeros_like(drop).scatter(-1, idx, drop), kNegInf);
  }
  return out;
}

// ---- validation
// --------------------------------------------------------------------

absl::Status ValidateMixtralWeights(const MixtralConfig& c,
                                    const MixtralWeights& w) {
  const int64_t h = c.hidden_size, v = c.vocab_size, f = c.intermediate_size;
  const int64_t q = c.num_attention_heads * c.head_dim;
  const int64_t kv = c.num_key_value_heads * c.head_dim;
  SMOE_RETURN_IF_ERROR(
      CheckShape("model.embed_tokens.weight", w.embed_tokens, {v, h}));
  SMOE_RETURN_IF_ERROR(CheckShape("model.norm.weight", w.norm, {h}));
  SMOE_RETURN_IF_ERROR(CheckShape("lm_head.weight", w.lm_head, {v, h}));
  if (static_cast<int64_t>(w.layers.size()) != c.num_hidden_layers) {
    return absl::InvalidArgumentError(
        absl::StrCat("weights have ", w.layers.size(),
                     " layers but config.json says num_hidden_layers = ",
                     c.num_hidden_layers));
  }
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const MixtralLayerWeights& l = w.layers[i];
    const std::string p = absl::StrCat("model.layers.", i, ".");
    const int64_t local = l.w1.defined() ? l.w1.size(0) : 0;
    SMOE_RETURN_IF_ERROR(
        CheckShape(p + "input_layernorm.weight", l.input_layernorm, {h}));
    SMOE_RETURN_IF_ERROR(
        CheckShape(p + "self_attn.q_proj.weight", l.q_proj, {q, h}));
    SMOE_RETURN_IF_ERROR(
        CheckShape(p + "self_attn.k_proj.weight", l.k_proj, {kv, h}));
    SMOE_RETURN_IF_ERROR(
        CheckShape(p + "self_attn.v_proj.weight", l.v_proj, {kv, h}));
    SMOE_RETURN_IF_ERROR(
        CheckShape(p + "self_attn.o_proj.weight", l.o_proj, {h, q}));
    SMOE_RETURN_IF_ERROR(CheckShape(p + "post_attention_layernorm.weight",
                                    l.post_attention_layernorm, {h}));
    SMOE_RETURN_IF_ERROR(CheckShape(p + "block_sparse_moe.gate.weight", l.gate,
                                    {c.num_local_experts, h}));
    if (local < 1 || l.first_expert < 0 ||
        l.first_expert + local > c.num_local_experts) {
      return absl::InvalidArgumentError(absl::StrCat(
          p, "block_sparse_moe.experts: local experts [", l.first_expert, ", ",
          l.first_expert + local, ") outside 0..", c.num_local_experts));
    }
    SMOE_RETURN_IF_ERROR(CheckShape(p + "block_sparse_moe.experts.*.w1.weight",
                                    l.w1, {local, f, h}));
    SMOE_RETURN_IF_ERROR(CheckShape(p + "block_sparse_moe.experts.*.w3.weight",
                                    l.w3, {local, f, h}));
    SMOE_RETURN_IF_ERROR(CheckShape(p + "block_sparse_moe.experts.*.w2.weight",
                                    l.w2, {local, h, f}));
  }
  return absl::OkStatus();
}

// ---- the model
// -----------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<MixtralModel>> MixtralModel::Load(
    const std::string& dir, const MixtralLoadOptions& options) {
  SMOE_ASSIGN_OR_RETURN(MixtralConfig config,
                        ReadMixtralConfigFile(dir + "/config.json"));
  SMOE_ASSIGN_OR_RETURN(MixtralWeights weights,
                        LoadMixtralWeights(dir, config, options));
  return FromWeights(config, std::move(weights), options);
}

absl::StatusOr<std::unique_ptr<MixtralModel>> MixtralModel::FromWeights(
    const MixtralConfig& config, MixtralWeights weights,
    const MixtralLoadOptions& options) {
  SMOE_RETURN_IF_ERROR(ValidateMixtralConfig(config));
  SMOE_RETURN_IF_ERROR(ValidateMixtralWeights(config, weights));
  SMOE_ASSIGN_OR_RETURN(
      const MixtralExpertShard shard,
      MixtralExpertShardFor(config.num_local_experts, options.comm));
  for (size_t i = 0; i < weights.layers.size(); ++i) {
    const MixtralLayerWeights& l = weights.layers[i];
    if (l.first_expert != shard.first || l.w1.size(0) != shard.count) {
      return absl::InvalidArgumentError(
          absl::StrCat("model.layers.", i, ": holds experts [", l.first_expert,
                       ", ", l.first_expert + l.w1.size(0), ") but rank ",
                       options.comm ? options.comm->rank() : 0, " needs [",
                       shard.first, ", ", shard.first + shard.count, ")"));
    }
  }
  if (options.dtype != torch::kFloat32 && options.dtype != torch::kBFloat16 &&
      options.dtype != torch::kFloat16) {
    return absl::InvalidArgumentError(
        absl::StrCat("compute dtype ", c10::toString(options.dtype),
                     " is not supported (float32, bfloat16, float16)"));
  }
  std::unique_ptr<MixtralModel> m(new MixtralModel());
  m->config_ = config;
  m->options_ = options;
  m->experts_per_token_ = config.num_experts_per_tok;
  try {
    torch::NoGradGuard no_grad;
    const auto opts =
        torch::TensorOptions(options.dtype).device(options.device);
    auto conv = [&](torch::Tensor& t) { t = t.to(opts).contiguous(); };
    conv(weights.embed_tokens);
    conv(weights.norm);
    conv(weights.lm_head);
    for (MixtralLayerWeights& l : weights.layers) {
      for (torch::Tensor* t :
           {&l.input_layernorm, &l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj,
            &l.post_attention_layernorm, &l.gate, &l.w1, &l.w3, &l.w2}) {
        conv(*t);
      }
    }
  } catch (const std::exception& e) {
    return FromTorch("MixtralModel: moving weights", e);
  }
  m->weights_ = std::move(weights);
  return m;
}

absl::Status MixtralModel::SetExpertsPerToken(int64_t ept) {
  SMOE_ASSIGN_OR_RETURN(experts_per_token_, ResolveEpt(ept));
  return absl::OkStatus();
}

absl::StatusOr<int64_t> MixtralModel::ResolveEpt(
    std::optional<int64_t> ept) const {
  const int64_t k = ept.value_or(experts_per_token_);
  if (k < 1 || k > config_.num_local_experts) {
    return absl::InvalidArgumentError(
        absl::StrCat("experts_per_token ", k, " must be in 1..",
                     config_.num_local_experts, " (num_local_experts)"));
  }
  return k;
}

absl::StatusOr<MixtralKvCache> MixtralModel::NewCache(
    int64_t batch, int64_t capacity, const std::vector<int64_t>& pad) const {
  if (batch < 1 || capacity < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cache batch ", batch, " and capacity ", capacity, " must be >= 1"));
  }
  if (!pad.empty() && static_cast<int64_t>(pad.size()) != batch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cache pad has ", pad.size(), " entries for batch ", batch));
  }
  for (int64_t p : pad) {
    if (p < 0 || p >= capacity) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cache pad ", p, " must be in [0, capacity ", capacity, ")"));
    }
  }
  MixtralKvCache cache;
  try {
    // A batch-1 bf16 model on the CPU gets a float32 cache: its decode steps
    // run in the float32-activation loops of mixtral_decode_cpu.h, which
    // keep keys and values in float32 (why: that header). Everything else
    // caches in the model's dtype.
    const bool f32_cache = batch == 1 && options_.device.is_cpu() &&
                           options_.dtype == torch::kBFloat16;
    const auto opts =
        torch::TensorOptions(f32_cache ? torch::kFloat32 : options_.dtype)
            .device(options_.device);
    for (int64_t l = 0; l < config_.num_hidden_layers; ++l) {
      cache.k.push_back(torch::zeros(
          {batch, config_.num_key_value_heads, capacity, config_.head_dim},
          opts));
      cache.v.push_back(torch::zeros_like(cache.k.back()));
    }
    cache.pad = pad.empty() ? torch::zeros({batch}, torch::kInt64)
                            : torch::tensor(pad, torch::kInt64);
  } catch (const std::exception& e) {
    return FromTorch("MixtralModel::NewCache", e);
  }
  cache.capacity = capacity;
  return cache;
}

absl::StatusOr<torch::Tensor> MixtralModel::StepImpl(
    const torch::Tensor& tokens, MixtralKvCache* cache, int64_t ept) {
  const MixtralConfig& c = config_;
  const int64_t b = tokens.size(0), t = tokens.size(1);
  const int64_t s0 = cache->length, s = s0 + t;
  const int64_t heads = c.num_attention_heads, kv = c.num_key_value_heads;
  const int64_t rep = c.QueriesPerKvHead(), d = c.head_dim;
  const torch::Device dev = options_.device;
  const auto i64 = torch::TensorOptions(torch::kInt64);

  // Batch-1 decode on the CPU with float32 or bfloat16 weights (float32
  // activations and cache): matrix-vector kernels that stream each weight
  // once (mixtral_decode_cpu.h); everything else (CUDA included): LibTorch.
  // SMOE_MIXTRAL_DECODE_KERNELS=off keeps the LibTorch path (A/B benches).
  static const bool kernels_on = [] {
    const char* v = std::getenv("SMOE_MIXTRAL_DECODE_KERNELS");
    return v == nullptr || std::string(v) != "off";
  }();
  // The whole step in the decode loops (no LibTorch op per layer).
  if (kernels_on && b * t == 1 && options_.comm == nullptr &&
      DecodeStepApplies(c, weights_, *cache)) {
    const int64_t id = tokens.to(torch::kCPU, torch::kInt64).item<int64_t>();
    return DecodeStepCpu(c, weights_, cache, id, ept);
  }
  // Positions and the additive mask, built on the CPU then moved.
  const torch::Tensor pad = cache->pad.view({b, 1, 1});  // [B,1,1]
  const torch::Tensor qslot = torch::arange(s0, s, i64).view({1, t, 1});
  const torch::Tensor kslot = torch::arange(0, s, i64).view({1, 1, s});
  torch::Tensor allowed = (kslot <= qslot) & (kslot >= pad);
  if (c.sliding_window.has_value()) {
    allowed = allowed & (qslot - kslot < *c.sliding_window);
  }
  // NOTE: padding query rows see themselves so their softmax stays finite;
  // their outputs are never attended to.
  allowed = allowed | (kslot == qslot);
  const torch::Tensor mask =
      torch::zeros({b, t, s}, torch::kFloat32)
          .masked_fill(allowed.logical_not(),
                       -std::numeric_limits<float>::infinity())
          .to(torch::TensorOptions(options_.dtype).device(dev))
          .view({b, 1, 1, t, s});
  const torch::Tensor positions =
      (torch::arange(s0, s, i64).view({1, t}) - cache->pad.view({b, 1}))
          .clamp_min(0)
          .to(dev);

  const torch::Tensor ids = tokens.to(dev, torch::kInt64);
  torch::Tensor x = weights_.embed_tokens.index_select(0, ids.flatten())
                        .view({b, t, c.hidden_size});
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  // Kernels that do not cover the whole step (e.g. a cache in another
  // layout): the matrix-vector products alone.
  const bool gemv = kernels_on && b * t == 1 && options_.comm == nullptr &&
                    DecodeKernelsApply(x, weights_.lm_head);
  auto linear = [&](const torch::Tensor& in, const torch::Tensor& w) {
    return gemv ? MatVec(in, w).view({b, t, w.size(0)})
                : torch::matmul(in, w.t());
  };
  for (int64_t li = 0; li < c.num_hidden_layers; ++li) {
    const MixtralLayerWeights& l = weights_.layers[li];
    torch::Tensor hn = RmsNorm(x, l.input_layernorm, c.rms_norm_eps);
    torch::Tensor q =
        linear(hn, l.q_proj).view({b, t, heads, d}).transpose(1, 2);
    torch::Tensor k = linear(hn, l.k_proj).view({b, t, kv, d}).transpose(1, 2);
    torch::Tensor v = linear(hn, l.v_proj).view({b, t, kv, d}).transpose(1, 2);
    q = ApplyRope(q, positions, c.rope_theta);
    k = ApplyRope(k, positions, c.rope_theta);
    cache->k[li].narrow(2, s0, t).copy_(k);
    cache->v[li].narrow(2, s0, t).copy_(v);
    // (A float32 cache of a bf16 model, see NewCache: cast where used.)
    const torch::Tensor keys =
        cache->k[li].narrow(2, 0, s).unsqueeze(2).to(options_.dtype);
    const torch::Tensor vals =
        cache->v[li].narrow(2, 0, s).unsqueeze(2).to(options_.dtype);
    // Query head h = g * rep + r reads KV head g: [B, kv, rep, t, D].
    const torch::Tensor qg = q.reshape({b, kv, rep, t, d});
    torch::Tensor scores = torch::matmul(qg, keys.transpose(-1, -2)) * scale;
    scores = scores + mask;
    const torch::Tensor probs =
        torch::softmax(scores, -1, torch::kFloat32).to(options_.dtype);
    const torch::Tensor o = torch::matmul(probs, vals)
                                .reshape({b, heads, t, d})
                                .transpose(1, 2)
                                .reshape({b, t, heads * d});
    x = x + linear(o, l.o_proj);
    hn = RmsNorm(x, l.post_attention_layernorm, c.rms_norm_eps);
    if (gemv) {
      x = x + MoeDecode(hn, l.gate, l.w1, l.w3, l.w2, ept).view({b, t, -1});
      continue;
    }
    // With expert parallelism MoeForward is this rank's partial sum; the
    // all-reduce completes it (identically on every rank).
    SMOE_ASSIGN_OR_RETURN(
        const torch::Tensor moe,
        AllReduceMoePartial(
            MoeForward(hn.reshape({b * t, c.hidden_size}), l, ept),
            options_.comm, li));
    x = x + moe.view({b, t, c.hidden_size});
  }
  cache->length = s;
  x = RmsNorm(x, weights_.norm, c.rms_norm_eps);
  return linear(x, weights_.lm_head).to(torch::kFloat32);
}

absl::StatusOr<torch::Tensor> MixtralModel::Step(const torch::Tensor& tokens,
                                                 MixtralKvCache* cache,
                                                 std::optional<int64_t> ept) {
  SMOE_ASSIGN_OR_RETURN(const int64_t k, ResolveEpt(ept));
  if (tokens.dim() != 2 || tokens.size(1) < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("tokens must be [B, t] with t >= 1, got ",
                     ShapeString(tokens.sizes())));
  }
  if (cache == nullptr || cache->k.empty() ||
      tokens.size(0) != cache->k[0].size(0)) {
    return absl::InvalidArgumentError(
        "cache is missing or its batch differs from the tokens'");
  }
  if (cache->length + tokens.size(1) > cache->capacity) {
    return absl::InvalidArgumentError(
        absl::StrCat("KV cache overflow: ", cache->length, " + ",
                     tokens.size(1), " slots > capacity ", cache->capacity));
  }
  try {
    torch::NoGradGuard no_grad;
    const torch::Tensor ids = tokens.to(torch::kCPU, torch::kInt64);
    const int64_t lo = ids.min().item<int64_t>();
    const int64_t hi = ids.max().item<int64_t>();
    if (lo < 0 || hi >= config_.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "token id ", lo < 0 ? lo : hi, " outside the vocabulary [0, ",
          config_.vocab_size, ")"));
    }
    return StepImpl(tokens, cache, k);
  } catch (const std::exception& e) {
    return FromTorch("MixtralModel::Step", e);
  }
}

absl::StatusOr<torch::Tensor> MixtralModel::Forward(
    const torch::Tensor& tokens, std::optional<int64_t> ept) {
  if (tokens.dim() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tokens must be [B, T], got ", ShapeString(tokens.sizes())));
  }
  SMOE_ASSIGN_OR_RETURN(MixtralKvCache cache,
                        NewCache(tokens.size(0), tokens.size(1)));
  return Step(tokens, &cache, ept);
}

absl::StatusOr<std::vector<std::vector<int32_t>>> MixtralModel::Generate(
    const std::vector<std::vector<int32_t>>& prompts,
    const MixtralGenerationOptions& options) {
  SMOE_ASSIGN_OR_RETURN(const int64_t ept,
                        ResolveEpt(options.experts_per_token));
  if (prompts.empty()) return std::vector<std::vector<int32_t>>();
  if (options.max_new_tokens < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_new_tokens must be >= 0, got ", options.max_new_tokens));
  }
  if (!(options.temperature >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("temperature must be >= 0, got ", options.temperature));
  }
  if (options.top_k < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("top_k must be >= 0, got ", options.top_k));
  }
  if (!(options.top_p > 0 && options.top_p <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("top_p must be in (0, 1], got ", options.top_p));
  }
  const int64_t batch = static_cast<int64_t>(prompts.size());
  int64_t longest = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (prompts[i].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("prompt ", i, " is empty (it needs at least BOS)"));
    }
    for (int32_t id : prompts[i]) {
      if (id < 0 || id >= config_.vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat(
            "prompt ", i, ": token id ", id, " outside the vocabulary [0, ",
            config_.vocab_size, ")"));
      }
    }
    longest = std::max<int64_t>(longest, prompts[i].size());
  }
  if (longest + options.max_new_tokens > config_.max_position_embeddings) {
    return absl::InvalidArgumentError(absl::StrCat(
        "prompt length ", longest, " + max_new_tokens ", options.max_new_tokens,
        " exceeds max_position_embeddings ", config_.max_position_embeddings));
  }
  std::vector<std::vector<int32_t>> out(prompts.size());
  if (options.max_new_tokens == 0) return out;

  std::vector<int64_t> pad(batch);
  std::vector<int64_t> flat(batch * longest, config_.bos_token_id);
  for (int64_t i = 0; i < batch; ++i) {
    pad[i] = longest - static_cast<int64_t>(prompts[i].size());
    std::copy(prompts[i].begin(), prompts[i].end(),
              flat.begin() + i * longest + pad[i]);
  }
  const torch::Tensor tokens = torch::tensor(flat).view({batch, longest});
  SMOE_ASSIGN_OR_RETURN(MixtralKvCache cache,
                        NewCache(batch, longest + options.max_new_tokens, pad));
  try {
    torch::NoGradGuard no_grad;
    // Row i samples from its own stream (seed, i), so a row's sample does not
    // depend on the other rows of the batch.
    std::vector<at::Generator> gens;
    for (int64_t i = 0; i < batch; ++i) {
      gens.push_back(at::detail::createCPUGenerator(
          Rng::ForStream(options.seed,
                         {options.first_stream + static_cast<uint64_t>(i)})
              .Next64()));
    }
    std::vector<bool> done(batch, false);
    SMOE_ASSIGN_OR_RETURN(torch::Tensor logits, StepImpl(tokens, &cache, ept));
    logits = logits.select(1, longest - 1).to(torch::kCPU);
    for (int64_t step = 0; step < options.max_new_tokens; ++step) {
      torch::Tensor next;
      if (options.temperature == 0) {
        next = logits.argmax(-1);
      } else {
        const torch::Tensor filtered = FilterLogits(
            logits / options.temperature, options.top_k, options.top_p);
        const torch::Tensor probs = torch::softmax(filtered, -1);
        next = torch::empty({batch}, torch::kInt64);
        for (int64_t i = 0; i < batch; ++i) {
          next[i] =
              torch::multinomial(probs[i], 1, /*replacement=*/false, gens[i])
                  .item<int64_t>();
        }
      }
      bool all_done = true;
      for (int64_t i = 0; i < batch; ++i) {
        if (done[i]) continue;
        const int64_t id = next[i].item<int64_t>();
        if (options.stop_at_eos && id == config_.eos_token_id) {
          done[i] = true;
        } else {
          out[i].push_back(static_cast<int32_t>(id));
        }
        all_done = all_done && done[i];
      }
      if (all_done || step + 1 == options.max_new_tokens) break;
      for (int64_t i = 0; i < batch; ++i) {
        if (done[i]) next[i] = config_.eos_token_id;
      }
      SMOE_ASSIGN_OR_RETURN(logits,
                            StepImpl(next.view({batch, 1}), &cache, ept));
      logits = logits.select(1, 0).to(torch::kCPU);
    }
  } catch (const std::exception& e) {
    return FromTorch("MixtralModel::Generate", e);
  }
  return out;
}

}  // namespace smoe::model::mixtral
