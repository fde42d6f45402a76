// Copyright 2026 SMoE Lab authors.
#include "worker/model/mixtral/mixtral_decode_cpu.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "worker/model/cpu_math.h"

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
  // Router: E logits (one small matrix-vector product, one thread).
  const torch::Tensor xc = x.contiguous();
  const float* xp = xc.data_ptr<float>();
  std::vector<float> logits(e);
  MatVecRows(gate.data_ptr<float>(), xp, logits.data(), hdim, 0, e);
  // Top-k, ties to the lower expert index (stable order), then the softmax
  // over the chosen logits (== softmax over all, top-k, renormalise).
  std::vector<int64_t> order(e);
  for (int64_t i = 0; i < e; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  const float mx = logits[order[0]];
  std::vector<float> wts(top_k);
  float sum = 0;
  for (int64_t j = 0; j < top_k; ++j) {
    wts[j] = std::exp(logits[order[j]] - mx);
    sum += wts[j];
  }
  torch::Tensor y = torch::zeros({hdim}, gate.options());
  torch::Tensor h = torch::empty({f}, gate.options());
  float* yp = y.data_ptr<float>();
  float* hp = h.data_ptr<float>();
  for (int64_t j = 0; j < top_k; ++j) {
    const int64_t ex = order[j];
    const float* w1e = w1.data_ptr<float>() + ex * f * hdim;
    const float* w3e = w3.data_ptr<float>() + ex * f * hdim;
    const float* w2e = w2.data_ptr<float>() + ex * hdim * f;
    at::parallel_for(0, f, kRowGrain, [&](int64_t lo, int64_t hi) {
      GateUpRows(w1e, w3e, xp, hp, hdim, lo, hi);
    });
    const float s = wts[j] / sum;
    at::parallel_for(0, hdim, kRowGrain, [&](int64_t lo, int64_t hi) {
      MatVecAddRows(w2e, hp, s, yp, f, lo, hi);
    });
  }
  return y;
}

}  // namespace smoe::model::mixtral
