// Copyright 2026 SMoE Lab authors.
#include "worker/model/fast_gelu.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace smoe::model {
namespace {

// Error of y against ref relative to the float rounding scale of GELU at x,
// eps * (1 + |x|) (1 + tanh and 1 - tanh^2 cancel for large |x|, so no
// implementation is accurate to a few ulps of y there; LibTorch's isn't).
double WorstScaledError(const torch::Tensor& y, const torch::Tensor& ref,
                        const torch::Tensor& x, double eps) {
  return ((y.to(torch::kFloat64) - ref).abs() /
          (eps * (1 + x.to(torch::kFloat64).abs().pow(3))))
      .max()
      .item<double>();
}

TEST(FastGeluTest, AsAccurateAsTorchGeluTanhAndItsGradient) {
  torch::manual_seed(7);
  for (torch::Dtype dtype : {torch::kFloat32, torch::kFloat64}) {
    // Normal values, the extremes and exact zeros (tanh's small-|u| end).
    torch::Tensor x = torch::cat(
        {torch::randn({70000}, dtype) * 3,
         torch::linspace(-30, 30, 2001, dtype), torch::zeros({5}, dtype),
         torch::tensor({1e-30, -1e-30, 1e-8, -1e-8, 200.0, -200.0}, dtype)});
    torch::Tensor a = x.clone().requires_grad_(true);
    torch::Tensor b = x.clone().requires_grad_(true);
    torch::Tensor r = x.to(torch::kFloat64).requires_grad_(true);
    torch::Tensor ya = GeluTanh(a);
    torch::Tensor yb = torch::gelu(b, "tanh");
    torch::Tensor yr = torch::gelu(r, "tanh");
    torch::Tensor g = torch::randn_like(ya);
    (ya * g).sum().backward();
    (yb * g).sum().backward();
    (yr * g.to(torch::kFloat64)).sum().backward();
    const double eps = dtype == torch::kFloat32 ? 0x1p-24 : 0x1p-53;
    const double ours_y = WorstScaledError(ya, yr, x, eps);
    const double torch_y = WorstScaledError(yb, yr, x, eps);
    const double ours_g = WorstScaledError(a.grad(), r.grad(), x, eps);
    const double torch_g = WorstScaledError(b.grad(), r.grad(), x, eps);
    SCOPED_TRACE(::testing::Message()
                 << dtype << ": worst error / (eps (1 + |x|^3)): ours y "
                 << ours_y << " grad " << ours_g << "; torch::gelu y "
                 << torch_y << " grad " << torch_g);
    EXPECT_LE(ours_y, std::max(16.0, 2 * torch_y));
    EXPECT_LE(ours_g, std::max(16.0, 2 * torch_g));
    // And plain closeness where y is not tiny (|x| <= 3: the bulk).
    torch::Tensor bulk = x.abs() <= 3;
    EXPECT_TRUE(torch::allclose(ya.masked_select(bulk), yb.masked_select(bulk),
                                1e-5, 1e-6));
  }
}

TEST(FastGeluTest, PropagatesNanAndFallsBackOffCpuFloat) {
  torch::Tensor y = GeluTanh(torch::tensor({NAN, 1.0f}));
  EXPECT_TRUE(std::isnan(y[0].item<float>()));
  torch::Tensor h = torch::randn({8}).to(torch::kBFloat16);
  EXPECT_FALSE(FastGeluSupported(h));
  EXPECT_TRUE(torch::equal(GeluTanh(h), torch::gelu(h, "tanh")));
}

}  // namespace
}  // namespace smoe::model
