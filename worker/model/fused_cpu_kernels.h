// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/fused_cpu_kernels.h
//
// The loops of the CPU fused ops on raw arrays, without LibTorch: the short
// sequence softmax attention's forward/backward per head range
// (fused_ops.cc is their autograd glue) and the tanh GELU and its
// gradient, the residual add + LayerNorm forward/backward and AdamW's
// per-parameter update. float32 is compiled for AVX-512, AVX2+FMA and
// baseline x86-64 and picked at load time; float64 (gradient checks) plain.
#ifndef SMOE_WORKER_MODEL_FUSED_CPU_KERNELS_H_
#define SMOE_WORKER_MODEL_FUSED_CPU_KERNELS_H_

#include <cstdint>

namespace smoe::model::cpu {

// The query rows are padded to a multiple of this (one AVX-512 float vector
// of query lanes; fused_cpu_kernels.cc runs kAttentionLanes queries at once).
constexpr int64_t kAttentionLanes = 16;

// qkv is [B, T, row] with row = H * (2 dk + dv): the queries of head h at
// columns [h dk, (h+1) dk), its keys at H dk + h dk, its values at
// 2 H dk + h dv. tp: T rounded up to kAttentionLanes.
//
// The per-(query, key) arrays are key-major with the queries padded:
// element (query i, key j) at j * tp + i ("[T, tp]"), so a block of
// queries of one key is contiguous.
struct AttentionDims {
  int64_t b, t, h, dk, dv, row;
  int64_t tp;
  int64_t q_off(int64_t head) const { return head * dk; }
  int64_t k_off(int64_t head) const { return h * dk + head * dk; }
  int64_t v_off(int64_t head) const { return 2 * h * dk + head * dv; }
};

AttentionDims MakeAttentionDims(int64_t b, int64_t t, int64_t h, int64_t dk,
                                int64_t dv, int64_t row);

// Forward of heads [h0, h1) for all batch rows. bias [H, T, tp] (key-major;
// finite padding, e.g. 0), keep [T, tp] (key-major, the dropout mask times
// 1 / (1 - p); padding 0) or null (no dropout), p_out [B, H, T, tp] (the
// softmax, key-major, saved for the backward; its padding queries hold
// finite values that the backward ignores), y [B, T, H*dv].
void AttentionForwardHeads(const float* qkv, const float* bias,
                           const float* keep, float scale,
                           const AttentionDims& d, float* p_out, float* y,
                           int64_t h0, int64_t h1);
void AttentionForwardHeads(const double* qkv, const double* bias,
                           const double* keep, double scale,
                           const AttentionDims& d, double* p_out, double* y,
                           int64_t h0, int64_t h1);

// Backward of heads [h0, h1): writes gqkv's columns of these heads and gbias
// rows [h0, h1) ([H, T, tp], key-major, summed over the batch; padding
// queries 0). gy is [B, T, H*dv].
void AttentionBackwardHeads(const float* qkv, const float* p, const float* keep,
                            const float* gy, float scale,
                            const AttentionDims& d, float* gqkv, float* gbias,
                            int64_t h0, int64_t h1);
void AttentionBackwardHeads(const double* qkv, const double* p,
                            const double* keep, const double* gy, double scale,
                            const AttentionDims& d, double* gqkv, double* gbias,
                            int64_t h0, int64_t h1);

// y[i] = gelu_tanh(x[i]) and gx[i] = g[i] * gelu_tanh'(x[i]) for i < n.
void GeluTanhRange(const float* x, float* y, int64_t n);
void GeluTanhRange(const double* x, double* y, int64_t n);
void GeluTanhGradRange(const float* g, const float* x, float* gx, int64_t n);
void GeluTanhGradRange(const double* g, const double* x, double* gx, int64_t n);

// The expert MLP's first layer backward over rows [0, rows) of width n (one
// expert's slice of the permuted buffer; h the saved pre-activation):
// gh = g * gelu_tanh'(h), and gb = the column sums of gh over these rows in
// row order (written, not accumulated; gb null: none).
void GeluGradBiasRows(const float* g, const float* h, float* gh, float* gb,
                      int64_t n, int64_t rows);
void GeluGradBiasRows(const double* g, const double* h, double* gh, double* gb,
                      int64_t n, int64_t rows);

// gb = the column sums of g [rows, n] in row order (written).
void ColumnSums(const float* g, float* gb, int64_t n, int64_t rows);
void ColumnSums(const double* g, double* gb, int64_t n, int64_t rows);

// One AdamW update of n elements in place, the operation order of the
// LibTorch ops it replaces (worker/trainer): m = b1 m + (1 - b1) g;
// v = b2 v + (1 - b2) g g; u = (m / bc1) / (sqrt(v / bc2) + eps);
// u += wd p (wd 0: none); p += -lr u. g null: a zero gradient. The
// scalars are rounded to the element type first, as LibTorch does.
struct AdamWScalars {
  double lr, b1, b2, bc1, bc2, eps, wd;
};
void AdamWRange(float* p, const float* g, float* m, float* v,
                const AdamWScalars& s, int64_t n);
void AdamWRange(double* p, const double* g, double* m, double* v,
                const AdamWScalars& s, int64_t n);

// Residual add + LayerNorm over rows [r0, r1) of width dm: s = x + y
// (written), n = (s - mean) * rstd * w + b with the biased variance and
// rstd = 1 / sqrt(var + eps); mean and rstd [rows] are saved for the
// backward.
void AddLayerNormRows(const float* x, const float* y, const float* w,
                      const float* b, double eps, int64_t dm, float* s,
                      float* n, float* mean, float* rstd, int64_t r0,
                      int64_t r1);
void AddLayerNormRows(const double* x, const double* y, const double* w,
                      const double* b, double eps, int64_t dm, double* s,
                      double* n, double* mean, double* rstd, int64_t r0,
                      int64_t r1);

// Its backward over rows [r0, r1): with g = gn * w and xhat = (s - mean) *
// rstd, gx = gs + rstd * (g - mean(g) - xhat * mean(g * xhat)) (the
// gradient of x and of y alike; gs null: none reached s directly);
// gw = sum over the rows of gn * xhat, gb = sum of gn (written, not
// accumulated: the caller sums the row blocks in a fixed order).
void AddLayerNormBackwardRows(const float* s, const float* mean,
                              const float* rstd, const float* w,
                              const float* gn, const float* gs, int64_t dm,
                              float* gx, float* gw, float* gb, int64_t r0,
                              int64_t r1);
void AddLayerNormBackwardRows(const double* s, const double* mean,
                              const double* rstd, const double* w,
                              const double* gn, const double* gs, int64_t dm,
                              double* gx, double* gw, double* gb, int64_t r0,
                              int64_t r1);

}  // namespace smoe::model::cpu

#endif  // SMOE_WORKER_MODEL_FUSED_CPU_KERNELS_H_
