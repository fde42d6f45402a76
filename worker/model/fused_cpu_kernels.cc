// Copyright 2026 SMoE Lab authors.
//
// The CPU fused ops' loops (fused_cpu_kernels.h), without LibTorch: this
// unit has its own flags (-O3 and reassociation; worker/model/CMakeLists.txt)
// and parses no torch header, so it compiles in seconds; the autograd glue
// (fused_ops.cc) uses the shared PCH.
#include "worker/model/fused_cpu_kernels.h"

#include <cstdint>
#include <type_traits>
#include <vector>

#include "worker/model/cpu_math.h"

namespace smoe::model::cpu {
namespace {

constexpr int64_t kLanes = kAttentionLanes;

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
                                                  const AttentionDims& d,
                                                  int64_t h, T* __restrict kt,
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
    T scale, const AttentionDims& d_in, T* __restrict p_out,
    T* __restrict y /*[B, T, H*dv]*/, int64_t h0, int64_t h1,
    T* __restrict scratch) {
  AttentionDims d = d_in;
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
    const T* __restrict gy /*[B, T, H*dv]*/, T scale, const AttentionDims& d_in,
    T* __restrict gqkv, T* __restrict gbias, int64_t h0, int64_t h1,
    T* __restrict scratch) {
  AttentionDims d = d_in;
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

// The float32 kernels are multi-versioned (SMOE_CPU_CLONES, cpu_math.h);
// the double ones (gradient checks) plain.

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
                                     const AttentionDims& d, float* p_out,
                                     float* y, int64_t h0, int64_t h1,
                                     float* scratch) {
#define SMOE_FWD(TP, DK)                                                       \
  ForwardHeadsBody<float, TP, DK>(qkv, bias, keep, scale, d, p_out, y, h0, h1, \
                                  scratch)
  SMOE_SPECIALISE(SMOE_FWD);
#undef SMOE_FWD
}

SMOE_CPU_CLONES void BackwardHeadsF32(const float* qkv, const float* p,
                                      const float* keep, const float* gy,
                                      float scale, const AttentionDims& d,
                                      float* gqkv, float* gbias, int64_t h0,
                                      int64_t h1, float* scratch) {
#define SMOE_BWD(TP, DK)                                                    \
  BackwardHeadsBody<float, TP, DK>(qkv, p, keep, gy, scale, d, gqkv, gbias, \
                                   h0, h1, scratch)
  SMOE_SPECIALISE(SMOE_BWD);
#undef SMOE_BWD
}
#undef SMOE_SPECIALISE

template <typename T>
void ForwardHeadsImpl(const T* qkv, const T* bias, const T* keep, T scale,
                      const AttentionDims& d, T* p_out, T* y, int64_t h0,
                      int64_t h1) {
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
void BackwardHeadsImpl(const T* qkv, const T* p, const T* keep, const T* gy,
                       T scale, const AttentionDims& d, T* gqkv, T* gbias,
                       int64_t h0, int64_t h1) {
  std::vector<T> scratch((2 * (d.dk + d.dv) + 3) * d.tp);
  if constexpr (std::is_same_v<T, float>) {
    BackwardHeadsF32(qkv, p, keep, gy, scale, d, gqkv, gbias, h0, h1,
                     scratch.data());
  } else {
    BackwardHeadsBody<T>(qkv, p, keep, gy, scale, d, gqkv, gbias, h0, h1,
                         scratch.data());
  }
}

constexpr double kBeta = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kKappa = 0.044715;

template <typename T>
inline __attribute__((always_inline)) void GeluBody(const T* __restrict x,
                                                    T* __restrict y,
                                                    int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i];
    const T inner = T(kBeta) * (v + T(kKappa) * v * v * v);
    y[i] = T(0.5) * v * (T(1) + TanhViaExp(inner));
  }
}

template <typename T>
inline __attribute__((always_inline)) void GeluGradBody(const T* __restrict g,
                                                        const T* __restrict x,
                                                        T* __restrict gx,
                                                        int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i];
    const T v2 = v * v;
    const T t = TanhViaExp(T(kBeta) * (v + T(kKappa) * v2 * v));
    const T left = T(0.5) * (T(1) + t);
    const T right =
        T(0.5) * v * (T(1) - t * t) * T(kBeta) * (T(1) + T(3 * kKappa) * v2);
    gx[i] = g[i] * (left + right);
  }
}

SMOE_CPU_CLONES void GeluF32(const float* x, float* y, int64_t n) {
  GeluBody<float>(x, y, n);
}

SMOE_CPU_CLONES void GeluGradF32(const float* g, const float* x, float* gx,
                                 int64_t n) {
  GeluGradBody<float>(g, x, gx, n);
}

void GeluRangeImpl(const float* x, float* y, int64_t n) { GeluF32(x, y, n); }
void GeluRangeImpl(const double* x, double* y, int64_t n) {
  GeluBody<double>(x, y, n);
}
void GeluGradRangeImpl(const float* g, const float* x, float* gx, int64_t n) {
  GeluGradF32(g, x, gx, n);
}
void GeluGradRangeImpl(const double* g, const double* x, double* gx,
                       int64_t n) {
  GeluGradBody<double>(g, x, gx, n);
}

}  // namespace

AttentionDims MakeAttentionDims(int64_t b, int64_t t, int64_t h, int64_t dk,
                                int64_t dv, int64_t row) {
  return AttentionDims{
      b,
      t,
      h,
      dk,
      dv,
      row,
      (t + kAttentionLanes - 1) / kAttentionLanes * kAttentionLanes};
}

void AttentionForwardHeads(const float* qkv, const float* bias,
                           const float* keep, float scale,
                           const AttentionDims& d, float* p_out, float* y,
                           int64_t h0, int64_t h1) {
  ForwardHeadsImpl(qkv, bias, keep, scale, d, p_out, y, h0, h1);
}
void AttentionForwardHeads(const double* qkv, const double* bias,
                           const double* keep, double scale,
                           const AttentionDims& d, double* p_out, double* y,
                           int64_t h0, int64_t h1) {
  ForwardHeadsImpl(qkv, bias, keep, scale, d, p_out, y, h0, h1);
}
void AttentionBackwardHeads(const float* qkv, const float* p, const float* keep,
                            const float* gy, float scale,
                            const AttentionDims& d, float* gqkv, float* gbias,
                            int64_t h0, int64_t h1) {
  BackwardHeadsImpl(qkv, p, keep, gy, scale, d, gqkv, gbias, h0, h1);
}
void AttentionBackwardHeads(const double* qkv, const double* p,
                            const double* keep, const double* gy, double scale,
                            const AttentionDims& d, double* gqkv, double* gbias,
                            int64_t h0, int64_t h1) {
  BackwardHeadsImpl(qkv, p, keep, gy, scale, d, gqkv, gbias, h0, h1);
}

void GeluTanhRange(const float* x, float* y, int64_t n) {
  GeluRangeImpl(x, y, n);
}
void GeluTanhRange(const double* x, double* y, int64_t n) {
  GeluRangeImpl(x, y, n);
}
void GeluTanhGradRange(const float* g, const float* x, float* gx, int64_t n) {
  GeluGradRangeImpl(g, x, gx, n);
}
void GeluTanhGradRange(const double* g, const double* x, double* gx,
                       int64_t n) {
  GeluGradRangeImpl(g, x, gx, n);
}

namespace {

template <typename T>
inline __attribute__((always_inline)) void AdamWLoop(
    T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v,
    const AdamWScalars& s, int64_t n) {
  const T b1 = static_cast<T>(s.b1), c1 = static_cast<T>(1.0 - s.b1);
  const T b2 = static_cast<T>(s.b2), c2 = static_cast<T>(1.0 - s.b2);
  const T bc1 = static_cast<T>(s.bc1), bc2 = static_cast<T>(s.bc2);
  const T eps = static_cast<T>(s.eps), wd = static_cast<T>(s.wd);
  const T nlr = static_cast<T>(-s.lr);
  for (int64_t i = 0; i < n; ++i) {
    const T gi = g != nullptr ? g[i] : T(0);
    const T mi = m[i] * b1 + c1 * gi;
    const T vi = v[i] * b2 + c2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    T u = (mi / bc1) / (std::sqrt(vi / bc2) + eps);
    u = u + wd * p[i];
    p[i] = p[i] + nlr * u;
  }
}

SMOE_CPU_CLONES void AdamWF32(float* p, const float* g, float* m, float* v,
                              const AdamWScalars& s, int64_t n) {
  if (g != nullptr) {
    AdamWLoop(p, g, m, v, s, n);
  } else {
    AdamWLoop<float>(p, nullptr, m, v, s, n);
  }
}

}  // namespace

void AdamWRange(float* p, const float* g, float* m, float* v,
                const AdamWScalars& s, int64_t n) {
  AdamWF32(p, g, m, v, s, n);
}

void AdamWRange(double* p, const double* g, double* m, double* v,
                const AdamWScalars& s, int64_t n) {
  AdamWLoop(p, g, m, v, s, n);
}

namespace {

template <typename T>
inline __attribute__((always_inline)) void AddLayerNormBody(
    const T* __restrict x, const T* __restrict y, const T* __restrict w,
    const T* __restrict b, T eps, int64_t dm, T* __restrict s, T* __restrict n,
    T* __restrict mean, T* __restrict rstd, int64_t r0, int64_t r1) {
  const T inv_dm = T(1) / static_cast<T>(dm);
  for (int64_t r = r0; r < r1; ++r) {
    const T* __restrict xr = x + r * dm;
    const T* __restrict yr = y + r * dm;
    T* __restrict sr = s + r * dm;
    T* __restrict nr = n + r * dm;
    T sum = 0;
    for (int64_t c = 0; c < dm; ++c) {
      sr[c] = xr[c] + yr[c];
      sum += sr[c];
    }
    const T mu = sum * inv_dm;
    T sq = 0;
    for (int64_t c = 0; c < dm; ++c) sq += (sr[c] - mu) * (sr[c] - mu);
    const T rs = T(1) / std::sqrt(sq * inv_dm + eps);
    mean[r] = mu;
    rstd[r] = rs;
    for (int64_t c = 0; c < dm; ++c) nr[c] = (sr[c] - mu) * rs * w[c] + b[c];
  }
}

template <typename T>
inline __attribute__((always_inline)) void AddLayerNormBackwardBody(
    const T* __restrict s, const T* __restrict mean, const T* __restrict rstd,
    const T* __restrict w, const T* __restrict gn, const T* __restrict gs,
    int64_t dm, T* __restrict gx, T* __restrict gw, T* __restrict gb,
    int64_t r0, int64_t r1) {
  const T inv_dm = T(1) / static_cast<T>(dm);
  for (int64_t c = 0; c < dm; ++c) gw[c] = gb[c] = T(0);
  for (int64_t r = r0; r < r1; ++r) {
    const T* __restrict sr = s + r * dm;
    const T* __restrict gr = gn + r * dm;
    T* __restrict gxr = gx + r * dm;
    const T mu = mean[r], rs = rstd[r];
    T sg = 0, sgx = 0;
    for (int64_t c = 0; c < dm; ++c) {
      const T xh = (sr[c] - mu) * rs;
      const T g = gr[c] * w[c];
      sg += g;
      sgx += g * xh;
      gw[c] += gr[c] * xh;
      gb[c] += gr[c];
    }
    const T mg = sg * inv_dm, mgx = sgx * inv_dm;
    if (gs != nullptr) {
      const T* __restrict gsr = gs + r * dm;
      for (int64_t c = 0; c < dm; ++c) {
        const T xh = (sr[c] - mu) * rs;
        gxr[c] = gsr[c] + rs * (gr[c] * w[c] - mg - xh * mgx);
      }
    } else {
      for (int64_t c = 0; c < dm; ++c) {
        const T xh = (sr[c] - mu) * rs;
        gxr[c] = rs * (gr[c] * w[c] - mg - xh * mgx);
      }
    }
  }
}

SMOE_CPU_CLONES void AddLayerNormF32(const float* x, const float* y,
                                     const float* w, const float* b, float eps,
                                     int64_t dm, float* s, float* n,
                                     float* mean, float* rstd, int64_t r0,
                                     int64_t r1) {
  AddLayerNormBody(x, y, w, b, eps, dm, s, n, mean, rstd, r0, r1);
}

SMOE_CPU_CLONES void AddLayerNormBackwardF32(const float* s, const float* mean,
                                             const float* rstd, const float* w,
                                             const float* gn, const float* gs,
                                             int64_t dm, float* gx, float* gw,
                                             float* gb, int64_t r0,
                                             int64_t r1) {
  AddLayerNormBackwardBody(s, mean, rstd, w, gn, gs, dm, gx, gw, gb, r0, r1);
}

}  // namespace

void AddLayerNormRows(const float* x, const float* y, const float* w,
                      const float* b, double eps, int64_t dm, float* s,
                      float* n, float* mean, float* rstd, int64_t r0,
                      int64_t r1) {
  AddLayerNormF32(x, y, w, b, static_cast<float>(eps), dm, s, n, mean, rstd, r0,
                  r1);
}

void AddLayerNormRows(const double* x, const double* y, const double* w,
                      const double* b, double eps, int64_t dm, double* s,
                      double* n, double* mean, double* rstd, int64_t r0,
                      int64_t r1) {
  AddLayerNormBody(x, y, w, b, eps, dm, s, n, mean, rstd, r0, r1);
}

void AddLayerNormBackwardRows(const float* s, const float* mean,
                              const float* rstd, const float* w,
                              const float* gn, const float* gs, int64_t dm,
                              float* gx, float* gw, float* gb, int64_t r0,
                              int64_t r1) {
  AddLayerNormBackwardF32(s, mean, rstd, w, gn, gs, dm, gx, gw, gb, r0, r1);
}

void AddLayerNormBackwardRows(const double* s, const double* mean,
                              const double* rstd, const double* w,
                              const double* gn, const double* gs, int64_t dm,
                              double* gx, double* gw, double* gb, int64_t r0,
                              int64_t r1) {
  AddLayerNormBackwardBody(s, mean, rstd, w, gn, gs, dm, gx, gw, gb, r0, r1);
}

}  // namespace smoe::model::cpu
