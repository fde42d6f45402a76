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

// SMOE_DECODE_PORTABLE_ONLY (the mixtral_model_portable_test build): the
// loops are compiled for baseline x86-64 only, i.e. the "default" version
// of target_clones, so that version is tested on a CPU that would never
// pick it.
#if defined(SMOE_DECODE_PORTABLE_ONLY)
#define SMOE_DECODE_CLONES
#else
#define SMOE_DECODE_CLONES SMOE_CPU_CLONES
#endif

namespace smoe::model::mixtral {
namespace {

constexpr int64_t kLanes = 16;
// Rows per parallel chunk: 64 rows of a 512-wide matrix = 128 KiB.
constexpr int64_t kRowGrain = 64;

// Weights are float (f32) or Bf16: bfloat16's raw bits (c10::BFloat16's
// storage), i.e. the top 16 bits of a float. Widen() makes the float in a
// register (a zero-extend and a 16-bit shift: vpmovzxwd + vpslld, exact),
// so a bf16 weight costs 2 bytes of memory traffic and the arithmetic stays
// float32.
using Bf16 = uint16_t;

inline __attribute__((always_inline)) float Widen(float v) { return v; }
inline __attribute__((always_inline)) float Widen(Bf16 h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// dot(w, x) over k values with kLanes partial sums (vectorises).
template <typename W>
inline __attribute__((always_inline)) float Dot(const W* __restrict w,
                                                const float* __restrict x,
                                                int64_t k) {
  float acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= k; j += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) acc[l] += Widen(w[j + l]) * x[j + l];
  }
  float r = 0;
  for (; j < k; ++j) r += Widen(w[j]) * x[j];
  for (int64_t l = 0; l < kLanes; ++l) r += acc[l];
  return r;
}

// y[r] = w[r] . x, rows [lo, hi).
template <typename W>
SMOE_DECODE_CLONES void MatVecRows(const W* w, const float* x, float* y,
                                   int64_t k, int64_t lo, int64_t hi) {
  for (int64_t r = lo; r < hi; ++r) y[r] = Dot(w + r * k, x, k);
}

// y[r] += s * (w[r] . x), rows [lo, hi).
template <typename W>
SMOE_DECODE_CLONES void MatVecAddRows(const W* w, const float* x, float s,
                                      float* y, int64_t k, int64_t lo,
                                      int64_t hi) {
  for (int64_t r = lo; r < hi; ++r) y[r] += s * Dot(w + r * k, x, k);
}

// h[r] = silu(w1[r] . x) * (w3[r] . x), rows [lo, hi): both rows streamed
// in one pass.
template <typename W>
SMOE_DECODE_CLONES void GateUpRows(const W* w1, const W* w3, const float* x,
                                   float* h, int64_t k, int64_t lo,
                                   int64_t hi) {
  for (int64_t r = lo; r < hi; ++r) {
    const float a = Dot(w1 + r * k, x, k);
    const float b = Dot(w3 + r * k, x, k);
    h[r] = a / (1.0f + std::exp(-a)) * b;
  }
}

// out = weight * (x * rsqrt(mean(x^2) + eps)), n values (HF's RMSNorm in
// float32).
template <typename W>
SMOE_DECODE_CLONES void RmsNormRow(const float* x, const W* weight, float eps,
                                   float* out, int64_t n) {
  const float ms = Dot(x, x, n) / static_cast<float>(n);
  const float r = 1.0f / std::sqrt(ms + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = Widen(weight[i]) * (x[i] * r);
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
template <typename W>
void MoeDecodeRaw(const float* xp, const W* gate, const W* w1, const W* w3,
                  const W* w2, int64_t e, int64_t hdim, int64_t f,
                  int64_t top_k, float* yp, float* logits, float* wts,
                  int64_t* order, float* hp) {
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
    const W* w1e = w1 + ex * f * hdim;
    const W* w3e = w3 + ex * f * hdim;
    const W* w2e = w2 + ex * hdim * f;
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

// A weight dtype the loops read: float32 or bfloat16.
bool KernelWeightDtype(torch::ScalarType t) {
  return t == torch::kFloat32 || t == torch::kBFloat16;
}

bool CpuOf(const torch::Tensor& t, torch::ScalarType dtype) {
  return t.defined() && t.is_cpu() && t.scalar_type() == dtype &&
         t.is_contiguous();
}

// The element pointer the loops take for a float32 or bfloat16 tensor.
template <typename W>
const W* Ptr(const torch::Tensor& t);
template <>
const float* Ptr<float>(const torch::Tensor& t) {
  return t.data_ptr<float>();
}
template <>
const Bf16* Ptr<Bf16>(const torch::Tensor& t) {
  static_assert(sizeof(c10::BFloat16) == sizeof(Bf16));
  return reinterpret_cast<const Bf16*>(t.data_ptr<c10::BFloat16>());
}

template <typename W>
void MatVecT(const torch::Tensor& w, const float* x, float* y) {
  const W* wp = Ptr<W>(w);
  const int64_t n = w.size(0), k = w.size(1);
  at::parallel_for(0, n, kRowGrain, [&](int64_t lo, int64_t hi) {
    MatVecRows(wp, x, y, k, lo, hi);
  });
}

template <typename W>
void MoeDecodeT(const float* xp, const torch::Tensor& gate,
                const torch::Tensor& w1, const torch::Tensor& w3,
                const torch::Tensor& w2, int64_t top_k, float* yp,
                float* logits, float* wts, int64_t* order, float* hp) {
  MoeDecodeRaw(xp, Ptr<W>(gate), Ptr<W>(w1), Ptr<W>(w3), Ptr<W>(w2),
               gate.size(0), gate.size(1), w1.size(1), top_k, yp, logits, wts,
               order, hp);
}

template <typename W>
torch::Tensor DecodeStepT(const MixtralConfig& c, const MixtralWeights& w,
                          MixtralKvCache* cache, int64_t token, int64_t ept) {
  const int64_t hd = c.hidden_size, heads = c.num_attention_heads;
  const int64_t kvh = c.num_key_value_heads, d = c.head_dim;
  const int64_t rep = heads / kvh, e = c.num_local_experts;
  const int64_t f = c.intermediate_size, vocab = w.lm_head.size(0);
  const int64_t cap = cache->capacity, s0 = cache->length;
  const float eps = static_cast<float>(c.rms_norm_eps);
  const float scale =
      static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
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
  {
    const W* row = Ptr<W>(w.embed_tokens) + token * hd;
    for (int64_t i = 0; i < hd; ++i) x[i] = Widen(row[i]);
  }
  for (int64_t li = 0; li < c.num_hidden_layers; ++li) {
    const MixtralLayerWeights& l = w.layers[li];
    RmsNormRow(x, Ptr<W>(l.input_layernorm), eps, hn, hd);
    MatVecT<W>(l.q_proj, hn, sc.q.data());
    MatVecT<W>(l.k_proj, hn, sc.k.data());
    MatVecT<W>(l.v_proj, hn, sc.v.data());
    RopeRows(sc.q.data(), sc.cos.data(), sc.sin.data(), heads, d);
    RopeRows(sc.k.data(), sc.cos.data(), sc.sin.data(), kvh, d);
    // The cache is [1, kv, capacity, d] float32 (for bf16 weights too: see
    // the header): write slot s0 of every KV head.
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
      const W* wp = Ptr<W>(l.o_proj);
      const int64_t k = l.o_proj.size(1);
      const float* in = sc.att.data();
      at::parallel_for(0, hd, kRowGrain, [&](int64_t a, int64_t b) {
        MatVecAddRows(wp, in, 1.0f, x, k, a, b);
      });
    }
    RmsNormRow(x, Ptr<W>(l.post_attention_layernorm), eps, hn, hd);
    std::fill(sc.y.begin(), sc.y.end(), 0.0f);
    MoeDecodeT<W>(hn, l.gate, l.w1, l.w3, l.w2, ept, sc.y.data(),
                  sc.logits.data(), sc.wts.data(), sc.order.data(),
                  sc.h.data());
    for (int64_t i = 0; i < hd; ++i) x[i] += sc.y[i];
  }
  cache->length = s0 + 1;
  RmsNormRow(x, Ptr<W>(w.norm), eps, hn, hd);
  torch::Tensor logits = torch::empty({1, 1, vocab}, torch::kFloat32);
  MatVecT<W>(w.lm_head, hn, logits.data_ptr<float>());
  return logits;
}

}  // namespace

const char* DecodeKernelsIsa() {
#if !defined(SMOE_DECODE_PORTABLE_ONLY) && defined(__x86_64__) && \
    defined(__GNUC__) && !defined(__clang__)
  // The predicates target_clones' resolver uses for these versions.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4")) return "x86-64-v4";
  if (__builtin_cpu_supports("x86-64-v3")) return "x86-64-v3";
#endif
  return "baseline";
}

bool DecodeKernelsApply(const torch::Tensor& x, const torch::Tensor& w) {
  return x.is_cpu() && w.is_cpu() && x.scalar_type() == torch::kFloat32 &&
         KernelWeightDtype(w.scalar_type()) && x.dim() >= 1 &&
         x.numel() == x.size(-1) && w.dim() == 2 && w.size(1) == x.size(-1) &&
         w.is_contiguous();
}

torch::Tensor MatVec(const torch::Tensor& x, const torch::Tensor& w) {
  TORCH_CHECK(DecodeKernelsApply(x, w), "MatVec: x ", x.sizes(), " ",
              x.scalar_type(), " w ", w.sizes(), " ", w.scalar_type(),
              " must be one float32 CPU row and a float32/bfloat16 matrix");
  const torch::Tensor xc = x.contiguous();
  torch::Tensor y = torch::empty({w.size(0)}, torch::kFloat32);
  if (w.scalar_type() == torch::kBFloat16) {
    MatVecT<Bf16>(w, xc.data_ptr<float>(), y.data_ptr<float>());
  } else {
    MatVecT<float>(w, xc.data_ptr<float>(), y.data_ptr<float>());
  }
  return y;
}

torch::Tensor MoeDecode(const torch::Tensor& x, const torch::Tensor& gate,
                        const torch::Tensor& w1, const torch::Tensor& w3,
                        const torch::Tensor& w2, int64_t top_k) {
  const int64_t e = gate.size(0), hdim = gate.size(1), f = w1.size(1);
  TORCH_CHECK(top_k >= 1 && top_k <= e, "MoeDecode: top_k ", top_k,
              " outside 1..", e);
  const torch::ScalarType wt = gate.scalar_type();
  TORCH_CHECK(
      x.is_cpu() && x.scalar_type() == torch::kFloat32 && x.numel() == hdim,
      "MoeDecode: x must be one float32 CPU row of ", hdim, " values");
  TORCH_CHECK(KernelWeightDtype(wt) && CpuOf(gate, wt) && CpuOf(w1, wt) &&
                  CpuOf(w3, wt) && CpuOf(w2, wt) && w1.size(0) == e,
              "MoeDecode: gate and expert weights must be contiguous CPU ",
              "tensors of one dtype (float32 or bfloat16; gate is ", wt,
              "), all E local");
  const torch::Tensor xc = x.contiguous();
  std::vector<float> logits(e), wts(e);
  std::vector<int64_t> order(e);
  torch::Tensor y = torch::zeros({hdim}, torch::kFloat32);
  torch::Tensor h = torch::empty({f}, torch::kFloat32);
  if (wt == torch::kBFloat16) {
    MoeDecodeT<Bf16>(xc.data_ptr<float>(), gate, w1, w3, w2, top_k,
                     y.data_ptr<float>(), logits.data(), wts.data(),
                     order.data(), h.data_ptr<float>());
  } else {
    MoeDecodeT<float>(xc.data_ptr<float>(), gate, w1, w3, w2, top_k,
                      y.data_ptr<float>(), logits.data(), wts.data(),
                      order.data(), h.data_ptr<float>());
  }
  return y;
}

bool DecodeStepApplies(const MixtralConfig& c, const MixtralWeights& w,
                       const MixtralKvCache& cache) {
  if (!w.embed_tokens.defined()) return false;
  const torch::ScalarType wt = w.embed_tokens.scalar_type();
  if (!KernelWeightDtype(wt) || !CpuOf(w.embed_tokens, wt) ||
      !CpuOf(w.norm, wt) || !CpuOf(w.lm_head, wt) ||
      static_cast<int64_t>(w.layers.size()) != c.num_hidden_layers ||
      static_cast<int64_t>(cache.k.size()) != c.num_hidden_layers ||
      static_cast<int64_t>(cache.v.size()) != c.num_hidden_layers ||
      c.head_dim % 2 != 0) {
    return false;
  }
  const torch::ScalarType f32 = torch::kFloat32;
  for (int64_t li = 0; li < c.num_hidden_layers; ++li) {
    const MixtralLayerWeights& l = w.layers[li];
    if (!CpuOf(l.input_layernorm, wt) || !CpuOf(l.q_proj, wt) ||
        !CpuOf(l.k_proj, wt) || !CpuOf(l.v_proj, wt) || !CpuOf(l.o_proj, wt) ||
        !CpuOf(l.post_attention_layernorm, wt) || !CpuOf(l.gate, wt) ||
        !CpuOf(l.w1, wt) || !CpuOf(l.w3, wt) || !CpuOf(l.w2, wt) ||
        l.w1.size(0) != c.num_local_experts || !CpuOf(cache.k[li], f32) ||
        !CpuOf(cache.v[li], f32) || cache.k[li].size(0) != 1) {
      return false;
    }
  }
  return true;
}

torch::Tensor DecodeStepCpu(const MixtralConfig& c, const MixtralWeights& w,
                            MixtralKvCache* cache, int64_t token, int64_t ept) {
  TORCH_CHECK(ept >= 1 && ept <= c.num_local_experts, "DecodeStepCpu: ept ",
              ept, " outside 1..", c.num_local_experts);
  if (w.embed_tokens.scalar_type() == torch::kBFloat16) {
    return DecodeStepT<Bf16>(c, w, cache, token, ept);
  }
  return DecodeStepT<float>(c, w, cache, token, ept);
}

}  // namespace smoe::model::mixtral
