// Copyright 2026 SMoE Lab authors.
#include "worker/model/fused_attention.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "worker/model/cpu_math.h"

namespace smoe::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kLanes = 16;  // row padding: one AVX-512 float vector
// Bias of the padding keys: exp(kPadBias - max) underflows to (almost) 0,
// and the padded value rows are zero, so padding never reaches an output.
constexpr double kPadBias = -1e30;

struct Dims {
  int64_t b, t, h, dk, dv, row;  // row: qkv's last dim
  int64_t tp;                    // t rounded up to kLanes
  int64_t q_off(int64_t head) const { return head * dk; }
  int64_t k_off(int64_t head) const { return h * dk + head * dk; }
  int64_t v_off(int64_t head) const { return 2 * h * dk + head * dv; }
};

// Loops over a padded row in blocks of kLanes: the inner loop has a constant
// trip count, so every clone vectorises it without a scalar epilogue.
#define SMOE_ROW_LOOP(j, tp)                          \
  for (int64_t j##0 = 0; j##0 < (tp); j##0 += kLanes) \
    for (int64_t j = j##0; j < j##0 + kLanes; ++j)

// Row reductions over a padded row, kLanes partial results each (the
// lane-wise form vectorises; the final fold is scalar).
template <typename T>
inline __attribute__((always_inline)) T RowMax(const T* __restrict x,
                                               int64_t tp) {
  T m[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) m[l] = x[l];
  for (int64_t j0 = kLanes; j0 < tp; j0 += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) {
      m[l] = x[j0 + l] > m[l] ? x[j0 + l] : m[l];
    }
  }
  T r = m[0];
  for (int64_t l = 1; l < kLanes; ++l) r = m[l] > r ? m[l] : r;
  return r;
}

template <typename T>
inline __attribute__((always_inline)) T RowDot(const T* __restrict x,
                                               const T* __restrict y,
                                               int64_t tp) {
  T m[kLanes] = {};
  for (int64_t j0 = 0; j0 < tp; j0 += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) m[l] += x[j0 + l] * y[j0 + l];
  }
  T r = 0;
  for (int64_t l = 0; l < kLanes; ++l) r += m[l];
  return r;
}

template <typename T>
inline __attribute__((always_inline)) T RowSum(const T* __restrict x,
                                               int64_t tp) {
  T m[kLanes] = {};
  for (int64_t j0 = 0; j0 < tp; j0 += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) m[l] += x[j0 + l];
  }
  T r = 0;
  for (int64_t l = 0; l < kLanes; ++l) r += m[l];
  return r;
}

// Copies head h's keys and values of one batch row into kt [dk][tp] and
// vt [dv][tp] (transposed; the padding columns stay zero).
template <typename T>
inline __attribute__((always_inline)) void LoadKv(const T* __restrict base,
                                                  const Dims& d, int64_t h,
                                                  T* __restrict kt,
                                                  T* __restrict vt) {
  for (int64_t j = 0; j < d.t; ++j) {
    const T* __restrict row = base + j * d.row;
    for (int64_t c = 0; c < d.dk; ++c) kt[c * d.tp + j] = row[d.k_off(h) + c];
    for (int64_t c = 0; c < d.dv; ++c) vt[c * d.tp + j] = row[d.v_off(h) + c];
  }
}

// Forward of heads [h0, h1) for all batch rows. bias [H, T, tp] (padding
// kPadBias), keep [T, tp] (padding 0) or null, p_out [B, H, T, tp].
// Scratch: (dk + dv + 2) * tp values, zeroed by the caller.
// TP, DK > 0: the padded row length and the head width (dk == dv) as
// compile-time constants (the spec model's heads are 4 wide), so the row
// loops unroll and rows stay in registers; 0: runtime values.
template <typename T, int TP = 0, int DK = 0>
inline __attribute__((always_inline)) void ForwardHeadsBody(
    const T* __restrict qkv, const T* __restrict bias, const T* __restrict keep,
    T scale, const Dims& d_in, T* __restrict p_out,
    T* __restrict y /*[B, T, H*dv]*/, int64_t h0, int64_t h1,
    T* __restrict scratch) {
  Dims d = d_in;
  if (TP > 0) d.tp = TP;
  if (DK > 0) d.dk = d.dv = DK;
  const int64_t t = d.t, tp = d.tp;
  T* __restrict kt = scratch;
  T* __restrict vt = kt + d.dk * tp;
  T* __restrict s = vt + d.dv * tp;
  T* __restrict a = s + tp;
  // Batch outer, heads inner: one batch row's q/k/v block ([T, row]) stays
  // in L1/L2 while its heads are done.
  for (int64_t b = 0; b < d.b; ++b) {
    const T* __restrict base = qkv + b * t * d.row;
    for (int64_t h = h0; h < h1; ++h) {
      LoadKv(base, d, h, kt, vt);
      const T* __restrict bh = bias + h * t * tp;
      T* __restrict pb = p_out + (b * d.h + h) * t * tp;
      for (int64_t i = 0; i < t; ++i) {
        const T* __restrict qi = base + i * d.row + d.q_off(h);
        SMOE_ROW_LOOP(j, tp) s[j] = T(0);
        for (int64_t c = 0; c < d.dk; ++c) {
          const T qc = qi[c];
          const T* __restrict kc = kt + c * tp;
          SMOE_ROW_LOOP(j, tp) s[j] += qc * kc[j];
        }
        const T* __restrict bi = bh + i * tp;
        SMOE_ROW_LOOP(j, tp) s[j] = s[j] * scale + bi[j];
        const T mx = RowMax(s, tp);
        SMOE_ROW_LOOP(j, tp) s[j] = ExpNonPositive(s[j] - mx);
        const T inv = T(1) / RowSum(s, tp);
        T* __restrict pi = pb + i * tp;
        SMOE_ROW_LOOP(j, tp) pi[j] = s[j] * inv;
        const T* __restrict ai = pi;
        if (keep != nullptr) {
          const T* __restrict ki = keep + i * tp;
          SMOE_ROW_LOOP(j, tp) a[j] = pi[j] * ki[j];
          ai = a;
        }
        T* __restrict yi = y + (b * t + i) * (d.h * d.dv) + h * d.dv;
        for (int64_t c = 0; c < d.dv; ++c) {
          yi[c] = RowDot(ai, vt + c * tp, tp);
        }
      }
    }
  }
}

// Backward of heads [h0, h1): writes dqkv's columns of these heads and
// gbias rows [h0, h1) ([H, T, tp], summed over the batch).
// Scratch: 2 * (dk + dv) * tp + 3 * tp values, zeroed by the caller.
template <typename T, int TP = 0, int DK = 0>
inline __attribute__((always_inline)) void BackwardHeadsBody(
    const T* __restrict qkv, const T* __restrict p, const T* __restrict keep,
    const T* __restrict gy /*[B, T, H*dv]*/, T scale, const Dims& d_in,
    T* __restrict gqkv, T* __restrict gbias, int64_t h0, int64_t h1,
    T* __restrict scratch) {
  Dims d = d_in;
  if (TP > 0) d.tp = TP;
  if (DK > 0) d.dk = d.dv = DK;
  const int64_t t = d.t, tp = d.tp;
  T* __restrict kt = scratch;
  T* __restrict vt = kt + d.dk * tp;
  T* __restrict gkt = vt + d.dv * tp;
  T* __restrict gvt = gkt + d.dk * tp;
  T* __restrict a = gvt + d.dv * tp;
  T* __restrict ga = a + tp;
  T* __restrict gs = ga + tp;
  for (int64_t j = h0 * t * tp; j < h1 * t * tp; ++j) gbias[j] = T(0);
  for (int64_t b = 0; b < d.b; ++b) {
    const T* __restrict base = qkv + b * t * d.row;
    T* __restrict gbase = gqkv + b * t * d.row;
    for (int64_t h = h0; h < h1; ++h) {
      LoadKv(base, d, h, kt, vt);
      for (int64_t j = 0; j < (d.dk + d.dv) * tp; ++j) gkt[j] = T(0);
      T* __restrict gb = gbias + h * t * tp;
      const T* __restrict pb = p + (b * d.h + h) * t * tp;
      for (int64_t i = 0; i < t; ++i) {
        const T* __restrict pi = pb + i * tp;
        const T* __restrict ki = keep != nullptr ? keep + i * tp : nullptr;
        const T* __restrict ai = pi;
        if (ki != nullptr) {
          SMOE_ROW_LOOP(j, tp) a[j] = pi[j] * ki[j];
          ai = a;
        }
        const T* __restrict gyi = gy + (b * t + i) * (d.h * d.dv) + h * d.dv;
        SMOE_ROW_LOOP(j, tp) ga[j] = T(0);
        for (int64_t c = 0; c < d.dv; ++c) {
          const T g = gyi[c];
          const T* __restrict vc = vt + c * tp;
          T* __restrict gvc = gvt + c * tp;
          SMOE_ROW_LOOP(j, tp) {
            ga[j] += g * vc[j];
            gvc[j] += ai[j] * g;
          }
        }
        if (ki != nullptr) {
          SMOE_ROW_LOOP(j, tp) ga[j] *= ki[j];
        }
        const T r = RowDot(pi, ga, tp);
        T* __restrict gbi = gb + i * tp;
        SMOE_ROW_LOOP(j, tp) {
          gs[j] = pi[j] * (ga[j] - r);
          gbi[j] += gs[j];
        }
        const T* __restrict qi = base + i * d.row + d.q_off(h);
        T* __restrict gqi = gbase + i * d.row + d.q_off(h);
        for (int64_t c = 0; c < d.dk; ++c) {
          gqi[c] = RowDot(gs, kt + c * tp, tp) * scale;
          const T qc = qi[c] * scale;
          T* __restrict gkc = gkt + c * tp;
          SMOE_ROW_LOOP(j, tp) gkc[j] += gs[j] * qc;
        }
      }
      for (int64_t j = 0; j < t; ++j) {
        T* __restrict row = gbase + j * d.row;
        for (int64_t c = 0; c < d.dk; ++c)
          row[d.k_off(h) + c] = gkt[c * tp + j];
        for (int64_t c = 0; c < d.dv; ++c)
          row[d.v_off(h) + c] = gvt[c * tp + j];
      }
    }
  }
}

#undef SMOE_ROW_LOOP

// The float32 kernels, compiled for AVX-512, AVX2+FMA and baseline x86-64
// and picked at load time by the CPU (GCC function multi-versioning); the
// double ones (gradient checks) plain.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SMOE_CPU_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SMOE_CPU_CLONES
#endif

// Width-4 heads at T = 9M (M = 1..8) pad to 16..80: constant-size
// versions for those, the runtime-size body otherwise.
#define SMOE_SPECIALISE(CALL)   \
  if (d.dk == 4 && d.dv == 4) { \
    switch (d.tp) {             \
      case 16:                  \
        CALL(16, 4);            \
        return;                 \
      case 32:                  \
        CALL(32, 4);            \
        return;                 \
      case 48:                  \
        CALL(48, 4);            \
        return;                 \
      case 64:                  \
        CALL(64, 4);            \
        return;                 \
      case 80:                  \
        CALL(80, 4);            \
        return;                 \
      default:                  \
        break;                  \
    }                           \
  }                             \
  CALL(0, 0)

SMOE_CPU_CLONES void ForwardHeadsF32(const float* qkv, const float* bias,
                                     const float* keep, float scale,
                                     const Dims& d, float* p_out, float* y,
                                     int64_t h0, int64_t h1, float* scratch) {
#define SMOE_FWD(TP, DK)                                                       \
  ForwardHeadsBody<float, TP, DK>(qkv, bias, keep, scale, d, p_out, y, h0, h1, \
                                  scratch)
  SMOE_SPECIALISE(SMOE_FWD);
#undef SMOE_FWD
}

SMOE_CPU_CLONES void BackwardHeadsF32(const float* qkv, const float* p,
                                      const float* keep, const float* gy,
                                      float scale, const Dims& d, float* gqkv,
                                      float* gbias, int64_t h0, int64_t h1,
                                      float* scratch) {
#define SMOE_BWD(TP, DK)                                                    \
  BackwardHeadsBody<float, TP, DK>(qkv, p, keep, gy, scale, d, gqkv, gbias, \
                                   h0, h1, scratch)
  SMOE_SPECIALISE(SMOE_BWD);
#undef SMOE_BWD
}
#undef SMOE_SPECIALISE

template <typename T>
void ForwardHeads(const T* qkv, const T* bias, const T* keep, T scale,
                  const Dims& d, T* p_out, T* y, int64_t h0, int64_t h1) {
  std::vector<T> scratch((d.dk + d.dv + 2) * d.tp);
  if constexpr (std::is_same_v<T, float>) {
    ForwardHeadsF32(qkv, bias, keep, scale, d, p_out, y, h0, h1,
                    scratch.data());
  } else {
    ForwardHeadsBody<T>(qkv, bias, keep, scale, d, p_out, y, h0, h1,
                        scratch.data());
  }
}

template <typename T>
void BackwardHeads(const T* qkv, const T* p, const T* keep, const T* gy,
                   T scale, const Dims& d, T* gqkv, T* gbias, int64_t h0,
                   int64_t h1) {
  std::vector<T> scratch((2 * (d.dk + d.dv) + 3) * d.tp);
  if constexpr (std::is_same_v<T, float>) {
    BackwardHeadsF32(qkv, p, keep, gy, scale, d, gqkv, gbias, h0, h1,
                     scratch.data());
  } else {
    BackwardHeadsBody<T>(qkv, p, keep, gy, scale, d, gqkv, gbias, h0, h1,
                         scratch.data());
  }
}

Dims DimsOf(const torch::Tensor& qkv, int64_t heads, int64_t dk, int64_t dv) {
  const int64_t t = qkv.size(1);
  return Dims{qkv.size(0),
              t,
              heads,
              dk,
              dv,
              qkv.size(2),
              (t + kLanes - 1) / kLanes * kLanes};
}

class FusedAttentionFn : public torch::autograd::Function<FusedAttentionFn> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor qkv,
                               torch::Tensor rel_bias, torch::Tensor bucket,
                               torch::Tensor keep, int64_t heads, int64_t dk,
                               int64_t dv, double scale) {
    qkv = qkv.contiguous();
    const Dims d = DimsOf(qkv, heads, dk, dv);
    // [H, T, tp]: the bias of every (query, key) pair, gathered once, the
    // padding keys at kPadBias.
    torch::Tensor bias = torch::constant_pad_nd(
        rel_bias.detach().index_select(1, bucket).view({d.h, d.t, d.t}),
        {0, d.tp - d.t}, kPadBias);
    torch::Tensor p = torch::empty({d.b, d.h, d.t, d.tp}, qkv.options());
    torch::Tensor y = torch::empty({d.b, d.t, d.h * d.dv}, qkv.options());
    // keep: [T, T] -> [T, tp] padded with 0, or empty (no dropout; autograd
    // takes no undefined inputs).
    torch::Tensor kp =
        keep.numel() > 0
            ? torch::constant_pad_nd(keep.view({d.t, d.t}), {0, d.tp - d.t}, 0)
            : keep;
    AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "fused_attention_fwd", [&] {
      const scalar_t* kptr = kp.numel() > 0 ? kp.data_ptr<scalar_t>() : nullptr;
      at::parallel_for(0, d.h, 1, [&](int64_t h0, int64_t h1) {
        ForwardHeads<scalar_t>(
            qkv.data_ptr<scalar_t>(), bias.data_ptr<scalar_t>(), kptr,
            static_cast<scalar_t>(scale), d, p.data_ptr<scalar_t>(),
            y.data_ptr<scalar_t>(), h0, h1);
      });
    });
    ctx->save_for_backward({qkv, p, bucket, kp});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["dk"] = dk;
    ctx->saved_data["dv"] = dv;
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["nb"] = rel_bias.size(1);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor& qkv = saved[0];
    const torch::Tensor& p = saved[1];
    const torch::Tensor& bucket = saved[2];
    const torch::Tensor& keep = saved[3];
    const Dims d =
        DimsOf(qkv, ctx->saved_data["heads"].toInt(),
               ctx->saved_data["dk"].toInt(), ctx->saved_data["dv"].toInt());
    const double scale = ctx->saved_data["scale"].toDouble();
    const int64_t nb = ctx->saved_data["nb"].toInt();
    torch::Tensor gqkv, grel;
    if (grads[0].defined()) {
      torch::Tensor gy = grads[0].contiguous();
      gqkv = torch::empty_like(qkv);
      torch::Tensor gbias = torch::empty({d.h, d.t, d.tp}, qkv.options());
      AT_DISPATCH_FLOATING_TYPES(qkv.scalar_type(), "fused_attention_bwd", [&] {
        const scalar_t* kptr =
            keep.numel() > 0 ? keep.data_ptr<scalar_t>() : nullptr;
        at::parallel_for(0, d.h, 1, [&](int64_t h0, int64_t h1) {
          BackwardHeads<scalar_t>(
              qkv.data_ptr<scalar_t>(), p.data_ptr<scalar_t>(), kptr,
              gy.data_ptr<scalar_t>(), static_cast<scalar_t>(scale), d,
              gqkv.data_ptr<scalar_t>(), gbias.data_ptr<scalar_t>(), h0, h1);
        });
      });
      grel = torch::zeros({d.h, nb}, qkv.options())
                 .index_add_(1, bucket,
                             gbias.narrow(2, 0, d.t).reshape({d.h, -1}));
    }
    return {gqkv,
            grel,
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor()};
  }
};

}  // namespace

bool FusedAttentionSupported(const torch::Tensor& qkv) {
  return qkv.is_cpu() && (qkv.scalar_type() == torch::kFloat32 ||
                          qkv.scalar_type() == torch::kFloat64);
}

torch::Tensor FusedSoftmaxAttention(const torch::Tensor& qkv,
                                    const torch::Tensor& rel_bias,
                                    const torch::Tensor& bucket,
                                    const torch::Tensor& keep, int64_t heads,
                                    int64_t dk, int64_t dv, double scale) {
  TORCH_CHECK(FusedAttentionSupported(qkv),
              "fused attention: qkv must be a CPU float32/float64 tensor");
  TORCH_CHECK(qkv.dim() == 3 && qkv.size(2) == heads * (2 * dk + dv),
              "fused attention: qkv must be [B, T, H*(2dk+dv)=",
              heads * (2 * dk + dv), "], got ", qkv.sizes());
  const int64_t t = qkv.size(1);
  TORCH_CHECK(rel_bias.dim() == 2 && rel_bias.size(0) == heads,
              "fused attention: rel_bias must be [H=", heads, ", NB], got ",
              rel_bias.sizes());
  TORCH_CHECK(bucket.numel() == t * t && bucket.scalar_type() == torch::kInt64,
              "fused attention: bucket must be int64 [T*T=", t * t, "]");
  TORCH_CHECK(!keep.defined() || keep.numel() == t * t,
              "fused attention: keep must be [T, T]");
  torch::Tensor k = keep.defined() ? keep.to(qkv.scalar_type())
                                   : torch::empty({0}, qkv.options());
  return FusedAttentionFn::apply(qkv, rel_bias.to(qkv.scalar_type()),
                                 bucket.reshape({-1}), k, heads, dk, dv, scale);
}

}  // namespace smoe::model
