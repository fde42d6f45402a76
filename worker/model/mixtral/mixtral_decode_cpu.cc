// Copyright 2026 SMoE Lab authors.
#include "worker/model/mixtral/mixtral_decode_cpu.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "worker/model/cpu_math.h"
#include "worker/model/mixtral/mixtral_model.h"

namespace smoe::model::mixtral {
namespace {

constexpr int64_t kLanes = 16;
// Rows per parallel chunk: 64 rows of a 512-wide matrix = 128 KiB.
constexpr int64_t kRowGrain = 64;

// dot(w, x) over k values with kLanes partial sums (vectorises).
inline __attribute__((always_inline)) float Dot(const float* __restrict w,
                                                const float* __restrict x,
                                                int64_t k) {
  float acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= k; j += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) acc[l] += w[j + l] * x[j + l];
  }
  float r = 0;
  for (; j < k; ++j) r += w[j] * x[j];
  for (int64_t l = 0; l < kLanes; ++l) r += acc[l];
  return r;
}

// y[r] = w[r] . x, rows [lo, hi).
SMOE_CPU_CLONES void MatVecRows(const float* w, const float* x, float* y,
                                int64_t k, int64_t lo, int64_t hi) {
  for (int64_t r = lo; r < hi; ++r) y[r] = Dot(w + r * k, x, k);
}

// y[r] += s * (w[r] . x), rows [lo, hi).
SMOE_CPU_CLONES void MatVecAddRows(const float* w, const float* x, float s,
                                   float* y, int64_t k, int64_t lo,
                                   int64_t hi) {
  for (int64_t r = lo; r < hi; ++r) y[r] += s * Dot(w + r * k, x, k);
}

// h[r] = silu(w1[r] . x) * (w3[r] . x), rows [lo, hi): both rows streamed
// in one pass.
SMOE_CPU_CLONES void GateUpRows(const float* w1, const float* w3,
                                const float* x, float* h, int64_t k, int64_t lo,
                                int64_t hi) {
  for (int64_t r = lo; r < hi; ++r) {
    const float a = Dot(w1 + r * k, x, k);
    const float b = Dot(w3 + r * k, x, k);
    h[r] = a / (1.0f + std::exp(-a)) * b;
  }
}

// out = weight * (x * rsqrt(mean(x^2) + eps)), n values (HF's RMSNorm in
// float32).
SMOE_CPU_CLONES void RmsNormRow(const float* x, const float* weight, float eps,
                                float* out, int64_t n) {
  const float ms = Dot(x, x, n) / static_cast<float>(n);
  const float r = 1.0f / std::sqrt(ms + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = weight[i] * (x[i] * r);
}

// Rotary embedding of `heads` rows of width d in place (rotate_half form):
// cos/sin hold d/2 values (the two halves share them).
void RopeRows(float* x, const float* cos, const float* sin, int64_t heads,
              int64_t d) {
  const int64_t half = d / 2;
  for (int64_t h = 0; h < heads; ++h) {
    float* r = x + h * d;
    for (int64_t i = 0; i < half; ++i) {
      const float a = r[i], b = r[i + half];
      r[i] = a * cos[i] - b * sin[i];
      r[i + half] = b * cos[i] + a * sin[i];
    }
  }
}

// Router, top-k and the chosen experts of one token: y [hdim] (zeroed by the
// caller) += sum over the top_k experts of gate_j * w2 (silu(w1 x) * w3 x).
// Scratch: logits [e], wts [e], order [e], h [f].
void MoeDecodeRaw(const float* xp, const float* gate, const float* w1,
                  const float* w3, const float* w2, int64_t e, int64_t hdim,
                  int64_t f, int64_t top_k, float* yp, float* logits,
                  float* wts, int64_t* order, float* hp) {
  MatVecRows(gate, xp, logits, hdim, 0, e);
  // Top-k, ties to the lower expert index (stable order), then the softmax
  // over the chosen logits (== softmax over all, top-k, renormalise).
  for (int64_t i = 0; i < e; ++i) order[i] = i;
  std::stable_sort(order, order + e,
                   [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  const float mx = logits[order[0]];
  float sum = 0;
  for (int64_t j = 0; j < top_k; ++j) {
    wts[j] = std::exp(logits[order[j]] - mx);
    sum += wts[j];
  }
  for (int64_t j = 0; j < top_k; ++j) {
    const int64_t ex = order[j];
    const float* w1e = w1 + ex * f * hdim;
    const float* w3e = w3 + ex * f * hdim;
    const float* w2e = w2 + ex * hdim * f;
    at::parallel_for(0, f, kRowGrain, [&](int64_t lo, int64_t hi) {
      GateUpRows(w1e, w3e, xp, hp, hdim, lo, hi);
    });
    const float s = wts[j] / sum;
    at::parallel_for(0, hdim, kRowGrain, [&](int64_t lo, int64_t hi) {
      MatVecAddRows(w2e, hp, s, yp, f, lo, hi);
    });
  }
}

// One query head against the cached slots [lo, hi] of its KV head: o [d] =
// softmax_j(scale q.k_j) v_j. scores: hi - lo + 1 floats of scratch.
void AttendOne(const float* q, const float* keys, const float* vals, int64_t d,
               int64_t lo, int64_t hi, float scale, float* scores, float* o) {
  const int64_t n = hi - lo + 1;
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) {
    scores[j] = Dot(q, keys + (lo + j) * d, d) * scale;
    mx = std::max(mx, scores[j]);
  }
  float sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    scores[j] = std::exp(scores[j] - mx);
    sum += scores[j];
  }
  const float inv = 1.0f / sum;
  for (int64_t c = 0; c < d; ++c) o[c] = 0;
  for (int64_t j = 0; j < n; ++j) {
    const float p = scores[j] * inv;
    const float* v = vals + (lo + j) * d;
    for (int64_t c = 0; c < d; ++c) o[c] += p * v[c];
  }
}

// Per-thread scratch rows of DecodeStepCpu, grown once and reused.
struct DecodeScratch {
  std::vector<float> x, hn, q, k, v, att, y, h, logits, wts, scores, cos, sin;
  std::vector<int64_t> order;
};

bool F32Cpu(const torch::Tensor& t) {
  return t.defined() && t.is_cpu() && t.scalar_type() == torch::kFloat32 &&
         t.is_contiguous();
}

}  // namespace

bool DecodeKernelsApply(const torch::Tensor& x, const torch::Tensor& w) {
  return x.is_cpu() && w.is_cpu() && x.scalar_type() == torch::kFloat32 &&
         w.scalar_type() == torch::kFloat32 && x.dim() >= 1 &&
         x.numel() == x.size(-1) && w.dim() == 2 && w.size(1) == x.size(-1) &&
         w.is_contiguous();
}

torch::Tensor MatVec(const torch::Tensor& x, const torch::Tensor& w) {
  TORCH_CHECK(DecodeKernelsApply(x, w), "MatVec: x ", x.sizes(), " w ",
              w.sizes(), " must be one float32 CPU row and a matrix");
  const torch::Tensor xc = x.contiguous();
  const int64_t n = w.size(0), k = w.size(1);
  torch::Tensor y = torch::empty({n}, w.options());
  const float* wp = w.data_ptr<float>();
  const float* xp = xc.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  at::parallel_for(0, n, kRowGrain, [&](int64_t lo, int64_t hi) {
    MatVecRows(wp, xp, yp, k, lo, hi);
  });
  return y;
}

torch::Tensor MoeDecode(const torch::Tensor& x, const torch::Tensor& gate,
                        const torch::Tensor& w1, const torch::Tensor& w3,
                        const torch::Tensor& w2, int64_t top_k) {
  const int64_t e = gate.size(0), hdim = gate.size(1), f = w1.size(1);
  TORCH_CHECK(top_k >= 1 && top_k <= e, "MoeDecode: top_k ", top_k,
              " outside 1..", e);
  TORCH_CHECK(w1.is_contiguous() && w3.is_contiguous() && w2.is_contiguous() &&
                  w1.size(0) == e,
              "MoeDecode: expert weights must be contiguous, all E local");
  const torch::Tensor xc = x.contiguous();
  std::vector<float> logits(e), wts(e);
  std::vector<int64_t> order(e);
  torch::Tensor y = torch::zeros({hdim}, gate.options());
  torch::Tensor h = torch::empty({f}, gate.options());
  MoeDecodeRaw(xc.data_ptr<float>(), gate.data_ptr<float>(),
               w1.data_ptr<float>(), w3.data_ptr<float>(), w2.data_ptr<float>(),
               e, hdim, f, top_k, y.data_ptr<float>(), logits.data(),
               wts.data(), order.data(), h.data_ptr<float>());
  return y;
}

bool DecodeStepApplies(const MixtralConfig& c, const MixtralWeights& w,
                       const MixtralKvCache& cache) {
  if (!F32Cpu(w.embed_tokens) || !F32Cpu(w.norm) || !F32Cpu(w.lm_head) ||
      static_cast<int64_t>(w.layers.size()) != c.num_hidden_layers ||
      static_cast<int64_t>(cache.k.size()) != c.num_hidden_layers ||
      c.head_dim % 2 != 0) {
    return false;
  }
  for (int64_t li = 0; li < c.num_hidden_layers; ++li) {
    const MixtralLayerWeights& l = w.layers[li];
    if (!F32Cpu(l.input_layernorm) || !F32Cpu(l.q_proj) || !F32Cpu(l.k_proj) ||
        !F32Cpu(l.v_proj) || !F32Cpu(l.o_proj) ||
        !F32Cpu(l.post_attention_layernorm) || !F32Cpu(l.gate) ||
        !F32Cpu(l.w1) || !F32Cpu(l.w3) || !F32Cpu(l.w2) ||
        l.w1.size(0) != c.num_local_experts || !F32Cpu(cache.k[li]) ||
        !F32Cpu(cache.v[li]) || cache.k[li].size(0) != 1) {
      return false;
    }
  }
  return true;
}

torch::Tensor DecodeStepCpu(const MixtralConfig& c, const MixtralWeights& w,
                            MixtralKvCache* cache, int64_t token, int64_t ept) {
  const int64_t hd = c.hidden_size, heads = c.num_attention_heads;
  const int64_t kvh = c.num_key_value_heads, d = c.head_dim;
  const int64_t rep = heads / kvh, e = c.num_local_experts;
  const int64_t f = c.intermediate_size, vocab = w.lm_head.size(0);
  const int64_t cap = cache->capacity, s0 = cache->length;
  const float eps = static_cast<float>(c.rms_norm_eps);
  const float scale =
      static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  TORCH_CHECK(ept >= 1 && ept <= e, "DecodeStepCpu: ept ", ept, " outside 1..",
              e);
  thread_local DecodeScratch sc;
  sc.x.resize(hd);
  sc.hn.resize(hd);
  sc.y.resize(hd);
  sc.q.resize(heads * d);
  sc.att.resize(heads * d);
  sc.k.resize(kvh * d);
  sc.v.resize(kvh * d);
  sc.h.resize(f);
  sc.logits.resize(e);
  sc.wts.resize(e);
  sc.order.resize(e);
  if (static_cast<int64_t>(sc.scores.size()) < heads * (s0 + 1)) {
    sc.scores.resize(heads * std::max<int64_t>(s0 + 1, 256));
  }
  sc.cos.resize(d / 2);
  sc.sin.resize(d / 2);

  // Slot range the query attends to (the mask of the LibTorch path: keys at
  // [pad, s0], within the sliding window; at least the query's own slot).
  const int64_t pad = cache->pad.data_ptr<int64_t>()[0];
  int64_t lo = pad;
  if (c.sliding_window.has_value()) {
    lo = std::max(lo, s0 - *c.sliding_window + 1);
  }
  if (lo > s0) lo = s0;
  // RoPE angles at this position, as ApplyRope computes them in float32.
  const float pos = static_cast<float>(std::max<int64_t>(s0 - pad, 0));
  const float theta = static_cast<float>(c.rope_theta);
  for (int64_t i = 0; i < d / 2; ++i) {
    const float ex = static_cast<float>(2 * i) / static_cast<float>(d);
    const float inv_freq = 1.0f / std::pow(theta, ex);
    const float a = pos * inv_freq;
    sc.cos[i] = std::cos(a);
    sc.sin[i] = std::sin(a);
  }

  float* x = sc.x.data();
  float* hn = sc.hn.data();
  std::memcpy(x, w.embed_tokens.data_ptr<float>() + token * hd,
              hd * sizeof(float));
  auto matvec = [](const torch::Tensor& wt, const float* in, float* out) {
    const float* wp = wt.data_ptr<float>();
    const int64_t n = wt.size(0), k = wt.size(1);
    at::parallel_for(0, n, kRowGrain, [&](int64_t a, int64_t b) {
      MatVecRows(wp, in, out, k, a, b);
    });
  };
  for (int64_t li = 0; li < c.num_hidden_layers; ++li) {
    const MixtralLayerWeights& l = w.layers[li];
    RmsNormRow(x, l.input_layernorm.data_ptr<float>(), eps, hn, hd);
    matvec(l.q_proj, hn, sc.q.data());
    matvec(l.k_proj, hn, sc.k.data());
    matvec(l.v_proj, hn, sc.v.data());
    RopeRows(sc.q.data(), sc.cos.data(), sc.sin.data(), heads, d);
    RopeRows(sc.k.data(), sc.cos.data(), sc.sin.data(), kvh, d);
    // The cache is [1, kv, capacity, d]: write slot s0 of every KV head.
    float* kc = cache->k[li].data_ptr<float>();
    float* vc = cache->v[li].data_ptr<float>();
    for (int64_t g = 0; g < kvh; ++g) {
      std::memcpy(kc + (g * cap + s0) * d, sc.k.data() + g * d,
                  d * sizeof(float));
      std::memcpy(vc + (g * cap + s0) * d, sc.v.data() + g * d,
                  d * sizeof(float));
    }
    // NOTE: `sc` is thread_local: the worker threads must get this
    // thread's rows as pointers, never name `sc` themselves.
    const float* qrows = sc.q.data();
    float* scores = sc.scores.data();
    float* att = sc.att.data();
    at::parallel_for(0, heads, 1, [&](int64_t a, int64_t b) {
      for (int64_t hq = a; hq < b; ++hq) {
        const int64_t g = hq / rep;
        AttendOne(qrows + hq * d, kc + g * cap * d, vc + g * cap * d, d, lo, s0,
                  scale, scores + hq * (s0 + 1), att + hq * d);
      }
    });
    // x += o_proj att (the residual add fused into the product).
    {
      const float* wp = l.o_proj.data_ptr<float>();
      const int64_t k = l.o_proj.size(1);
      const float* in = sc.att.data();
      at::parallel_for(0, hd, kRowGrain, [&](int64_t a, int64_t b) {
        MatVecAddRows(wp, in, 1.0f, x, k, a, b);
      });
    }
    RmsNormRow(x, l.post_attention_layernorm.data_ptr<float>(), eps, hn, hd);
    std::fill(sc.y.begin(), sc.y.end(), 0.0f);
    MoeDecodeRaw(hn, l.gate.data_ptr<float>(), l.w1.data_ptr<float>(),
                 l.w3.data_ptr<float>(), l.w2.data_ptr<float>(), e, hd, f, ept,
                 sc.y.data(), sc.logits.data(), sc.wts.data(), sc.order.data(),
                 sc.h.data());
    for (int64_t i = 0; i < hd; ++i) x[i] += sc.y[i];
  }
  cache->length = s0 + 1;
  RmsNormRow(x, w.norm.data_ptr<float>(), eps, hn, hd);
  torch::Tensor logits = torch::empty({1, 1, vocab}, w.lm_head.options());
  matvec(w.lm_head, hn, logits.data_ptr<float>());
  return logits;
}

}  // namespace smoe::model::mixtral
