// Copyright 2026 SMoE Lab authors.
#include "worker/model/fast_gelu.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace smoe::model {
namespace {

TEST(FastGeluTest, MatchesTorchGeluTanhAndItsGradient) {
  torch::manual_seed(7);
  for (torch::Dtype dtype : {torch::kFloat32, torch::kFloat64}) {
    // Normal values, the extremes and exact zeros (tanh's small-|u| end).
    torch::Tensor x = torch::cat(
        {torch::randn({70000}, dtype) * 3,
         torch::linspace(-30, 30, 2001, dtype), torch::zeros({5}, dtype),
         torch::tensor({1e-30, -1e-30, 1e-8, -1e-8, 200.0, -200.0}, dtype)});
    torch::Tensor a = x.clone().requires_grad_(true);
    torch::Tensor b = x.clone().requires_grad_(true);
    torch::Tensor ya = GeluTanh(a);
    torch::Tensor yb = torch::gelu(b, "tanh");
    torch::Tensor g = torch::randn_like(ya);
    (ya * g).sum().backward();
    (yb * g).sum().backward();
    const double rtol = dtype == torch::kFloat32 ? 2e-6 : 1e-14;
    const double atol = dtype == torch::kFloat32 ? 1e-7 : 1e-15;
    EXPECT_TRUE(torch::allclose(ya, yb, rtol, atol))
        << dtype << " " << (ya - yb).abs().max().item<double>();
    EXPECT_TRUE(torch::allclose(a.grad(), b.grad(), rtol, atol))
        << dtype << " " << (a.grad() - b.grad()).abs().max().item<double>();
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
