// Copyright 2026 SMoE Lab authors.
//
// GPU tests of worker/model/ops (label gpu): the ops on CUDA tensors (the
// kernels) against the same ops on the CPU (the references). Skip without a
// device or when this LibTorch has no CUDA (then the kernels are not called).
// Not yet run: no GPU was lent to the session that wrote them.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "worker/model/model_config.h"
#include "worker/model/moe.h"
#include "worker/model/ops/moe_ops.h"

namespace smoe::model::ops {
namespace {

bool HaveGpuKernels() { return KernelsOnCuda() && torch::cuda::is_available(); }

double MaxDiff(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.numel() == 0) return 0.0;
  return (a.cpu().to(torch::kFloat64) - b.cpu().to(torch::kFloat64))
      .abs()
      .max()
      .item<double>();
}

TEST(OpsGpuTest, RouterAndPlanMatchCpuExactly) {
  if (!HaveGpuKernels()) GTEST_SKIP() << "no CUDA device / CUDA LibTorch";
  torch::manual_seed(1);
  for (int64_t n : {0, 1, 7, 4096}) {
    for (int k : {1, 2, 8}) {
      torch::Tensor logits = torch::randn({n, 8});
      for (auto g : {kernels::RouterGating::kRenormalized,
                     kernels::RouterGating::kNoRenorm}) {
        auto cpu = RouterTopK(logits, k, g);
        auto gpu = RouterTopK(logits.cuda(), k, g);
        ASSERT_TRUE(cpu.ok() && gpu.ok()) << gpu.status();
        EXPECT_TRUE(torch::equal(cpu->topk_idx, gpu->topk_idx.cpu()));
        EXPECT_TRUE(
            torch::equal(cpu->expert_offsets, gpu->expert_offsets.cpu()));
        // Device expf vs host expf, different sum order: 1e-6.
        EXPECT_LT(MaxDiff(cpu->topk_weights, gpu->topk_weights), 1e-6);
        auto pc = BuildPermutePlan(cpu->topk_idx, 8);
        auto pg = BuildPermutePlan(gpu->topk_idx, 8);
        ASSERT_TRUE(pc.ok() && pg.ok()) << pg.status();
        EXPECT_TRUE(torch::equal(pc->sorted_idx, pg->sorted_idx.cpu()));
        EXPECT_EQ(pc->host_offsets, pg->host_offsets);
      }
    }
  }
}

// The layer on the GPU (ops) vs the CPU (ops = references): f32 outputs and
// gradients; cuBLAS vs OpenBLAS summation order over D = 64 and mlp = 128
// terms, then the backward's sums over tokens: 1e-4 absolute on O(1)-O(10)
// values.
TEST(OpsGpuTest, LayerForwardBackwardMatchesCpu) {
  if (!HaveGpuKernels()) GTEST_SKIP() << "no CUDA device / CUDA LibTorch";
  for (int k : {1, 2, 8}) {
    torch::manual_seed(2);
    ModelConfig c;
    c.num_features = 1;
    c.width = 0.5;  // D = 64, mlp = 128
    c.num_experts = 8;
    c.top_k = k;
    c.dispatch = Dispatch::kOps;
    SmoeLayer cpu(c), gpu(c);
    {
      torch::NoGradGuard ng;
      auto src = cpu->parameters(), dst = gpu->parameters();
      for (size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
    }
    gpu->to(torch::kCUDA);
    torch::Tensor x = torch::randn({16, 9, 64});
    torch::Tensor xc = x.clone().set_requires_grad(true);
    torch::Tensor xg = x.cuda().set_requires_grad(true);
    torch::Tensor yc = cpu->forward(xc, nullptr, nullptr);
    torch::Tensor yg = gpu->forward(xg, nullptr, nullptr);
    EXPECT_LT(MaxDiff(yc, yg), 1e-4) << "k=" << k;
    torch::Tensor probe = torch::randn(yc.sizes());
    (yc * probe).sum().backward();
    (yg * probe.cuda()).sum().backward();
    EXPECT_LT(MaxDiff(xc.grad(), xg.grad()), 1e-4) << "k=" << k;
    auto pc = cpu->parameters(), pg = gpu->parameters();
    for (size_t i = 0; i < pc.size(); ++i) {
      EXPECT_LT(MaxDiff(pc[i].grad(), pg[i].grad()), 1e-4)
          << "k=" << k << " parameter " << i;
    }
  }
}

}  // namespace
}  // namespace smoe::model::ops
