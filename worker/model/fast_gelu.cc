// Copyright 2026 SMoE Lab authors.
#include "worker/model/fast_gelu.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cstdint>

#include "worker/model/cpu_math.h"

namespace smoe::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr double kBeta = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kKappa = 0.044715;
constexpr int64_t kGrain = 1 << 14;

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

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SMOE_CPU_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SMOE_CPU_CLONES
#endif

SMOE_CPU_CLONES void GeluF32(const float* x, float* y, int64_t n) {
  GeluBody<float>(x, y, n);
}

SMOE_CPU_CLONES void GeluGradF32(const float* g, const float* x, float* gx,
                                 int64_t n) {
  GeluGradBody<float>(g, x, gx, n);
}

void GeluRange(const float* x, float* y, int64_t n) { GeluF32(x, y, n); }
void GeluRange(const double* x, double* y, int64_t n) {
  GeluBody<double>(x, y, n);
}
void GeluGradRange(const float* g, const float* x, float* gx, int64_t n) {
  GeluGradF32(g, x, gx, n);
}
void GeluGradRange(const double* g, const double* x, double* gx, int64_t n) {
  GeluGradBody<double>(g, x, gx, n);
}

class GeluTanhFn : public torch::autograd::Function<GeluTanhFn> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x) {
    x = x.contiguous();
    torch::Tensor y = torch::empty_like(x);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "gelu_tanh_fwd", [&] {
      const scalar_t* xp = x.data_ptr<scalar_t>();
      scalar_t* yp = y.data_ptr<scalar_t>();
      at::parallel_for(0, x.numel(), kGrain, [&](int64_t lo, int64_t hi) {
        GeluRange(xp + lo, yp + lo, hi - lo);
      });
    });
    ctx->save_for_backward({x});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const torch::Tensor x = ctx->get_saved_variables()[0];
    if (!grads[0].defined()) return {torch::Tensor()};
    torch::Tensor g = grads[0].contiguous();
    torch::Tensor gx = torch::empty_like(x);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "gelu_tanh_bwd", [&] {
      const scalar_t* gp = g.data_ptr<scalar_t>();
      const scalar_t* xp = x.data_ptr<scalar_t>();
      scalar_t* op = gx.data_ptr<scalar_t>();
      at::parallel_for(0, x.numel(), kGrain, [&](int64_t lo, int64_t hi) {
        GeluGradRange(gp + lo, xp + lo, op + lo, hi - lo);
      });
    });
    return {gx};
  }
};

}  // namespace

bool FastGeluSupported(const torch::Tensor& x) {
  return x.is_cpu() && (x.scalar_type() == torch::kFloat32 ||
                        x.scalar_type() == torch::kFloat64);
}

torch::Tensor GeluTanh(const torch::Tensor& x) {
  if (!FastGeluSupported(x)) return torch::gelu(x, "tanh");
  return GeluTanhFn::apply(x);
}

}  // namespace smoe::model
