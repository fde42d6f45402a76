// Copyright 2026 SMoE Lab authors.
//
// Tests of worker/model/ops (CPU; label unit). Three families:
//  * forward of each op equals the kernels' CPU references (the float32 CPU
//    path calls them; the generic torch path, used for float64, must agree),
//    integer outputs exactly;
//  * gradients of the float64 path against central finite differences, and
//    the float32 reference backward against the float64 analytic gradient;
//  * the SMoE layer with Dispatch::kOps against Dispatch::kGather (outputs and
//    every parameter gradient), ties, zero-token experts and k = E.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kernels/grouped_gemm/grouped_gemm.h"
#include "kernels/router_topk/router_topk.h"
#include "worker/model/autocast.h"
#include "worker/model/model_config.h"
#include "worker/model/moe.h"
#include "worker/model/ops/moe_ops.h"

namespace smoe::model::ops {
namespace {

using kernels::RouterGating;

constexpr RouterGating kGatings[] = {RouterGating::kRenormalized,
                                     RouterGating::kNoRenorm};

torch::Tensor F64(const torch::Tensor& t) { return t.to(torch::kFloat64); }

// Max |a - b| (0 for empty tensors).
double MaxDiff(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.numel() == 0) return 0.0;
  return (F64(a) - F64(b)).abs().max().item<double>();
}

// Central finite differences of sum(f(inputs) * probe) w.r.t. inputs[i],
// compared with torch::autograd::grad. float64 throughout; h = 1e-6 gives
// O(h^2) ~ 1e-12 truncation and ~1e-10 rounding, so 1e-7 is a safe bound
// for O(1) values (a wrong formula is off by O(1)).
void ExpectGradsMatchFiniteDifferences(
    const std::function<torch::Tensor(const std::vector<torch::Tensor>&)>& f,
    std::vector<torch::Tensor> inputs, const std::string& what) {
  for (auto& t : inputs) t = t.detach().clone().set_requires_grad(true);
  torch::Tensor out = f(inputs);
  torch::Tensor probe = torch::randn(out.sizes(), out.options());
  std::vector<torch::Tensor> analytic =
      torch::autograd::grad({(out * probe).sum()}, inputs);
  const double h = 1e-6;
  for (size_t i = 0; i < inputs.size(); ++i) {
    torch::Tensor base = inputs[i].detach().clone();
    torch::Tensor flat = base.view({-1});
    for (int64_t j = 0; j < flat.numel(); ++j) {
      std::vector<torch::Tensor> in;
      for (auto& t : inputs) in.push_back(t.detach());
      const double v = flat[j].item<double>();
      torch::NoGradGuard ng;
      flat[j] = v + h;
      in[i] = base.clone();
      const double up = (f(in) * probe).sum().item<double>();
      flat[j] = v - h;
      in[i] = base.clone();
      const double down = (f(in) * probe).sum().item<double>();
      flat[j] = v;
      const double fd = (up - down) / (2 * h);
      EXPECT_NEAR(analytic[i].view({-1})[j].item<double>(), fd, 1e-7)
          << what << ": input " << i << " element " << j;
    }
  }
}

torch::Tensor Unwrap(absl::StatusOr<torch::Tensor> t) {
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : torch::Tensor();
}

// ---- Router -----------------------------------------------------------------

TEST(OpsRouterTest, ForwardEqualsReferenceAndGenericPath) {
  torch::manual_seed(1);
  for (int e : {1, 8}) {
    for (int k : {1, 2, e}) {
      if (k > e) continue;
      for (RouterGating g : kGatings) {
        torch::Tensor logits = torch::randn({37, e});
        auto f32 = RouterTopK(logits, k, g);
        auto f64 = RouterTopK(F64(logits), k, g);
        ASSERT_TRUE(f32.ok() && f64.ok());
        // Reference called directly.
        std::vector<int32_t> idx(37 * k), counts(e), offsets(e + 1);
        std::vector<float> w(37 * k);
        kernels::RouterTopKRef(logits.data_ptr<float>(), 37, e, k, g,
                               idx.data(), w.data(), counts.data(),
                               offsets.data());
        torch::Tensor ref_idx = torch::tensor(idx).view({37, k});
        EXPECT_TRUE(torch::equal(f32->topk_idx, ref_idx));
        EXPECT_TRUE(torch::equal(f64->topk_idx, ref_idx));
        EXPECT_TRUE(
            torch::equal(f64->num_tokens_per_expert, torch::tensor(counts)));
        EXPECT_TRUE(torch::equal(f64->expert_offsets, torch::tensor(offsets)));
        EXPECT_TRUE(
            torch::equal(f32->num_tokens_per_expert, torch::tensor(counts)));
        // Float outputs: the f32 path is the reference itself (exact); the
        // f64 path differs by the f32 rounding of exp/sum (~1e-7 relative).
        EXPECT_EQ(MaxDiff(f32->topk_weights, torch::tensor(w).view({37, k})),
                  0.0);
        EXPECT_LT(MaxDiff(f32->topk_weights, f64->topk_weights), 1e-6);
        // Same selection and gates as the plain torch expression (stable
        // descending sort; softmax over the chosen k or over all E).
        const torch::Tensor l64 = F64(logits);
        const torch::Tensor old_idx =
            std::get<1>(l64.sort(/*stable=*/true, /*dim=*/-1,
                                 /*descending=*/true))
                .narrow(-1, 0, k);
        const torch::Tensor old_gates =
            g == RouterGating::kRenormalized
                ? torch::softmax(l64.gather(-1, old_idx), -1)
                : torch::softmax(l64, -1).gather(-1, old_idx);
        EXPECT_TRUE(torch::equal(old_idx, f64->topk_idx.to(torch::kInt64)));
        EXPECT_LT(MaxDiff(old_gates, f64->topk_weights), 1e-15);
      }
    }
  }
}

TEST(OpsRouterTest, TiesRouteToLowerIndex) {
  // Rows: all equal; a tie between experts 1 and 2 at the top; a tie for the
  // second place between experts 0 and 3.
  torch::Tensor logits = torch::tensor(
      {{0.f, 0.f, 0.f, 0.f}, {1.f, 3.f, 3.f, 1.f}, {2.f, 5.f, 0.f, 2.f}});
  const std::vector<std::vector<int>> want3 = {{0, 1, 2}, {1, 2, 0}, {1, 0, 3}};
  for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
    auto r = RouterTopK(logits.to(dtype), 3, RouterGating::kRenormalized);
    ASSERT_TRUE(r.ok());
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) {
        EXPECT_EQ(r->topk_idx[i][j].item<int>(), want3[i][j])
            << "row " << i << " rank " << j << " dtype " << dtype;
      }
    }
  }
}

TEST(OpsRouterTest, GradientsMatchFiniteDifferences) {
  torch::manual_seed(2);
  for (RouterGating g : kGatings) {
    for (int k : {1, 2, 5}) {
      torch::Tensor logits = torch::randn({4, 5}, torch::kFloat64);
      ExpectGradsMatchFiniteDifferences(
          [&](const std::vector<torch::Tensor>& in) {
            return RouterTopK(in[0], k, g)->topk_weights;
          },
          {logits}, "router k=" + std::to_string(k));
      // The f32 reference backward equals the f64 analytic gradient
      // (f32 rounding of O(1) values: 1e-6).
      torch::Tensor probe = torch::randn({4, k}, torch::kFloat64);
      torch::Tensor l64 = logits.clone().set_requires_grad(true);
      torch::Tensor l32 = logits.to(torch::kFloat32).set_requires_grad(true);
      auto g64 = torch::autograd::grad(
          {(RouterTopK(l64, k, g)->topk_weights * probe).sum()}, {l64});
      auto g32 = torch::autograd::grad(
          {(RouterTopK(l32, k, g)->topk_weights * probe.to(torch::kFloat32))
               .sum()},
          {l32});
      EXPECT_LT(MaxDiff(g64[0], g32[0]), 1e-6);
    }
  }
}

TEST(OpsRouterTest, BadInputNamesTheField) {
  auto r = RouterTopK(torch::randn({3, 4}), 5, RouterGating::kRenormalized);
  ASSERT_TRUE(absl::IsInvalidArgument(r.status()));
  EXPECT_NE(r.status().message().find("top_k"), std::string::npos);
  r = RouterTopK(torch::ones({3, 4}, torch::kInt32), 1,
                 RouterGating::kRenormalized);
  EXPECT_NE(r.status().message().find("logits"), std::string::npos);
}

// ---- Plan, permute, combine ------------------------------------------------

TEST(OpsPermuteTest, PlanIsStableSortAndRejectsBadIndices) {
  torch::Tensor idx = torch::tensor({{2, 0}, {0, 2}, {2, 1}}, torch::kInt32);
  auto p = BuildPermutePlan(idx, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  // Expert 0: pairs 1, 2; expert 1: pair 5; expert 2: pairs 0, 3, 4;
  // expert 3: none (a zero-token expert).
  EXPECT_TRUE(torch::equal(p->sorted_idx,
                           torch::tensor({1, 2, 5, 0, 3, 4}, torch::kInt32)));
  EXPECT_TRUE(torch::equal(p->dest_idx,
                           torch::tensor({3, 0, 1, 4, 5, 2}, torch::kInt32)));
  EXPECT_EQ(p->host_offsets, (std::vector<int64_t>{0, 2, 3, 6, 6}));
  auto p64 = BuildPermutePlan(idx.to(torch::kInt64), 4);
  ASSERT_TRUE(p64.ok());
  EXPECT_TRUE(torch::equal(p64->sorted_idx, p->sorted_idx));
  auto bad = BuildPermutePlan(torch::tensor({{0, 4}}, torch::kInt32), 4);
  ASSERT_TRUE(absl::IsInvalidArgument(bad.status()));
  EXPECT_NE(bad.status().message().find("topk_idx[0, 1] = 4"),
            std::string::npos)
      << bad.status();
}

TEST(OpsPermuteTest, ForwardEqualsReferenceAndBruteForce) {
  torch::manual_seed(3);
  const int64_t n = 23, d = 7;
  const int e = 5, k = 3;
  auto r = RouterTopK(torch::randn({n, e}), k, RouterGating::kNoRenorm);
  ASSERT_TRUE(r.ok());
  auto plan = BuildPermutePlan(r->topk_idx, e);
  ASSERT_TRUE(plan.ok());
  torch::Tensor x = torch::randn({n, d});
  torch::Tensor buf32 = Unwrap(Permute(x, *plan));
  torch::Tensor buf64 = Unwrap(Permute(F64(x), *plan));
  // Copies are exact in both paths.
  for (int64_t p = 0; p < n * k; ++p) {
    const int64_t t = plan->sorted_idx[p].item<int>() / k;
    EXPECT_TRUE(torch::equal(buf32[p], x[t])) << p;
  }
  EXPECT_TRUE(torch::equal(F64(buf32), buf64));
  // Combine: brute force in f64 from the definition.
  torch::Tensor y = torch::randn({n * k, d});
  torch::Tensor w = r->topk_weights;
  torch::Tensor out32 = Unwrap(Combine(y, w, *plan));
  torch::Tensor out64 = Unwrap(Combine(F64(y), F64(w), *plan));
  torch::Tensor want = torch::zeros({n, d}, torch::kFloat64);
  for (int64_t t = 0; t < n; ++t) {
    for (int j = 0; j < k; ++j) {
      const int64_t row = plan->dest_idx[t * k + j].item<int>();
      want[t] += F64(w)[t][j] * F64(y)[row];
    }
  }
  EXPECT_LT(MaxDiff(out64, want), 1e-14);
  // f32 reference: k products of O(1) terms, f32 accumulation: 1e-6.
  EXPECT_LT(MaxDiff(out32, want), 1e-6);
}

TEST(OpsPermuteTest, GradientsMatchFiniteDifferences) {
  torch::manual_seed(4);
  const int64_t n = 5, d = 3;
  const int e = 4, k = 2;
  torch::Tensor idx = torch::tensor({{3, 0}, {3, 1}, {0, 3}, {1, 0}, {3, 0}},
                                    torch::kInt32);  // 2: empty
  auto plan = BuildPermutePlan(idx, e);
  ASSERT_TRUE(plan.ok());
  ExpectGradsMatchFiniteDifferences(
      [&](const std::vector<torch::Tensor>& in) {
        return Unwrap(Permute(in[0], *plan));
      },
      {torch::randn({n, d}, torch::kFloat64)}, "permute");
  ExpectGradsMatchFiniteDifferences(
      [&](const std::vector<torch::Tensor>& in) {
        return Unwrap(Combine(in[0], in[1], *plan));
      },
      {torch::randn({n * k, d}, torch::kFloat64),
       torch::rand({n, k}, torch::kFloat64)},
      "combine");
  // f32 references (PermuteBackwardRef, CombineBackwardRef) vs f64 analytic.
  torch::Tensor y = torch::randn({n * k, d}, torch::kFloat64);
  torch::Tensor w = torch::rand({n, k}, torch::kFloat64);
  torch::Tensor probe = torch::randn({n, d}, torch::kFloat64);
  auto grads = [&](torch::ScalarType dt) {
    torch::Tensor yy = y.to(dt).set_requires_grad(true);
    torch::Tensor ww = w.to(dt).set_requires_grad(true);
    torch::Tensor x = yy.narrow(0, 0, n);  // reuse as a permute input
    torch::Tensor out = Unwrap(Combine(yy, ww, *plan)) +
                        Unwrap(Permute(x, *plan)).narrow(0, 0, n);
    return torch::autograd::grad({(out * probe.to(dt)).sum()}, {yy, ww});
  };
  auto g32 = grads(torch::kFloat32);
  auto g64 = grads(torch::kFloat64);
  EXPECT_LT(MaxDiff(g32[0], g64[0]), 1e-6);
  EXPECT_LT(MaxDiff(g32[1], g64[1]), 1e-5);  // dot products over d
}

// ---- Grouped linear / expert MLP -------------------------------------------

TEST(OpsGroupedLinearTest, EqualsGroupedGemmReference) {
  torch::manual_seed(5);
  torch::Tensor idx = torch::tensor({{0}, {2}, {2}, {0}, {2}, {3}, {2}},
                                    torch::kInt32);  // expert 1 empty
  auto plan = BuildPermutePlan(idx, 4);
  ASSERT_TRUE(plan.ok());
  const int64_t rows = 7, kin = 6, nout = 5;
  torch::Tensor a = torch::randn({rows, kin}).set_requires_grad(true);
  torch::Tensor w = torch::randn({4, kin, nout}).set_requires_grad(true);
  torch::Tensor b = torch::randn({4, nout}).set_requires_grad(true);
  torch::Tensor out = Unwrap(GroupedLinear(a, w, b, *plan));
  torch::Tensor dc = torch::randn({rows, nout});
  auto g = torch::autograd::grad({(out * dc).sum()}, {a, w, b});
  // References (f32 loops): forward, dgrad (trans_b) and wgrad.
  std::vector<int64_t> off = plan->host_offsets;
  torch::Tensor ad = a.detach(), wd = w.detach();
  torch::Tensor c = torch::empty({rows, nout});
  kernels::GroupedGemmRef(ad.data_ptr<float>(), wd.data_ptr<float>(),
                          c.data_ptr<float>(), off.data(), 4, kin, nout,
                          /*trans_b=*/false);
  torch::Tensor expert = torch::tensor({0, 0, 2, 2, 2, 2, 3});
  c += b.detach().index_select(0, expert);
  torch::Tensor da = torch::empty({rows, kin});
  kernels::GroupedGemmRef(dc.data_ptr<float>(), wd.data_ptr<float>(),
                          da.data_ptr<float>(), off.data(), 4, nout, kin,
                          /*trans_b=*/true);
  torch::Tensor dw = torch::empty({4, kin, nout});
  kernels::GroupedGemmWeightGradRef(ad.data_ptr<float>(), dc.data_ptr<float>(),
                                    dw.data_ptr<float>(), off.data(), 4, kin,
                                    nout);
  // Sums of <= 6 f32 products of O(1) values, BLAS vs loop order: 1e-5.
  EXPECT_LT(MaxDiff(out, c), 1e-5);
  EXPECT_LT(MaxDiff(g[0], da), 1e-5);
  EXPECT_LT(MaxDiff(g[1], dw), 1e-5);
  EXPECT_EQ(g[1][1].abs().sum().item<float>(), 0.0f);  // empty expert
  EXPECT_EQ(g[2][1].abs().sum().item<float>(), 0.0f);
  EXPECT_LT(MaxDiff(g[2], torch::zeros({4, nout}).index_add(0, expert, dc)),
            1e-5);
}

TEST(OpsGroupedLinearTest, ExpertMlpGradientsMatchFiniteDifferences) {
  torch::manual_seed(6);
  torch::Tensor idx = torch::tensor({{1, 0}, {1, 2}, {0, 1}}, torch::kInt32);
  auto plan = BuildPermutePlan(idx, 4);  // expert 3 empty
  ASSERT_TRUE(plan.ok());
  const int64_t d = 3, mlp = 4;
  auto o = torch::kFloat64;
  ExpectGradsMatchFiniteDifferences(
      [&](const std::vector<torch::Tensor>& in) {
        return Unwrap(ExpertMlp(in[0], in[1], in[2], in[3], in[4], *plan));
      },
      {torch::randn({6, d}, o), torch::randn({4, d, mlp}, o),
       torch::randn({4, mlp}, o), torch::randn({4, mlp, d}, o),
       torch::randn({4, d}, o)},
      "expert mlp");
}

TEST(OpsGroupedLinearTest, FusedExpertMlpEqualsUnfusedOpsAndIsThreadInvariant) {
  // ExpertMlp's CPU op (expert by expert: addmm, GELU pass, addmm; backward
  // with the GELU gradient + b1 gradient in one pass over 256-row blocks)
  // against GroupedLinear, GeluTanh, GroupedLinear (unfused = true),
  // float64 and float32, 1 and 2 intra-op threads; experts of 0, 1 and
  // several row blocks; the output and every input's gradient.
  torch::manual_seed(8);
  const int64_t tokens = 700, k = 2, d = 24, mlp = 40;
  // Experts 0..2 random (two different ones per token), expert 3 empty,
  // expert 4 one row.
  torch::Tensor first = torch::randint(0, 3, {tokens});
  torch::Tensor idx =
      torch::stack({first, first.add(1).remainder(3)}, 1).to(torch::kInt32);
  idx[5][1] = 4;
  auto plan = BuildPermutePlan(idx, 5);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->host_offsets[4], plan->host_offsets[3]);  // expert 3 empty
  ASSERT_EQ(plan->host_offsets[5] - plan->host_offsets[4], 1);
  ASSERT_GT(plan->host_offsets[1] - plan->host_offsets[0], 256);
  const int threads_before = at::get_num_threads();
  for (torch::Dtype dtype : {torch::kFloat64, torch::kFloat32}) {
    const auto o = torch::TensorOptions(dtype);
    const std::vector<torch::Tensor> in0 = {
        torch::randn({tokens * k, d}, o), torch::randn({5, d, mlp}, o).div_(5),
        torch::randn({5, mlp}, o), torch::randn({5, mlp, d}, o).div_(6),
        torch::randn({5, d}, o)};
    torch::Tensor dy = torch::randn({tokens * k, d}, o);
    std::vector<torch::Tensor> fused_one_thread;
    for (int threads : {1, 2}) {
      at::set_num_threads(threads);
      std::vector<torch::Tensor> res[2];
      for (bool unfused : {false, true}) {
        std::vector<torch::Tensor> in;
        for (const auto& t : in0) in.push_back(t.clone().requires_grad_(true));
        torch::Tensor y = Unwrap(
            ExpertMlp(in[0], in[1], in[2], in[3], in[4], *plan, unfused));
        res[unfused] = torch::autograd::grad({(y * dy).sum()}, in);
        res[unfused].insert(res[unfused].begin(), y.detach());
      }
      SCOPED_TRACE(::testing::Message()
                   << "dtype " << dtype << " threads " << threads);
      const double tol = dtype == torch::kFloat64 ? 1e-12 : 2e-5;
      const char* names[] = {"y",       "grad x",  "grad w1",
                             "grad b1", "grad w2", "grad b2"};
      for (int i = 0; i < 6; ++i) {
        EXPECT_TRUE(torch::allclose(res[0][i], res[1][i], tol, tol))
            << names[i] << " " << MaxDiff(res[0][i], res[1][i]);
      }
      for (int i : {2, 3, 4, 5}) {  // the empty expert's gradients
        EXPECT_EQ(res[0][i][3].abs().sum().item<double>(), 0.0) << names[i];
      }
      if (threads == 1) {
        fused_one_thread = res[0];
      } else {
        // Fixed row blocks folded in order: nothing depends on the thread
        // count.
        for (int i : {0, 3, 5}) {
          EXPECT_TRUE(torch::equal(res[0][i], fused_one_thread[i])) << names[i];
        }
      }
    }
  }
  at::set_num_threads(threads_before);
}

TEST(OpsGroupedLinearTest, FusedExpertMlpFallsBackOffCpuFloatAndNamesBadInput) {
  // bf16 (like CUDA tensors and autocast) takes GroupedLinear, GeluTanh,
  // GroupedLinear.
  torch::manual_seed(9);
  torch::Tensor idx = torch::tensor({{0}, {1}, {1}, {0}}, torch::kInt32);
  auto plan = BuildPermutePlan(idx, 2);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(FusedExpertMlpSupported(torch::randn({4, 3})));
  const auto bf = torch::TensorOptions(torch::kBFloat16);
  std::vector<torch::Tensor> in = {
      torch::randn({4, 3}, bf), torch::randn({2, 3, 5}, bf),
      torch::randn({2, 5}, bf), torch::randn({2, 5, 3}, bf),
      torch::randn({2, 3}, bf)};
  EXPECT_FALSE(FusedExpertMlpSupported(in[0]));
  torch::Tensor fused =
      Unwrap(ExpertMlp(in[0], in[1], in[2], in[3], in[4], *plan));
  torch::Tensor plain =
      Unwrap(ExpertMlp(in[0], in[1], in[2], in[3], in[4], *plan, true));
  EXPECT_EQ(fused.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(fused, plain));
  // Bad input on the fused path names the argument.
  auto bad = ExpertMlp(torch::randn({4, 3}), torch::randn({2, 3, 5}),
                       torch::randn({2, 5}), torch::randn({2, 4, 3}),
                       torch::randn({2, 3}), *plan);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("w2 must be"), std::string::npos)
      << bad.status();
  auto bad_b2 = ExpertMlp(torch::randn({4, 3}), torch::randn({2, 3, 5}),
                          torch::randn({2, 5}), torch::randn({2, 5, 3}),
                          torch::randn({3}), *plan);
  ASSERT_FALSE(bad_b2.ok());
  EXPECT_NE(bad_b2.status().message().find("b2 must have shape"),
            std::string::npos)
      << bad_b2.status();
}

// ---- The SMoE layer --------------------------------------------------------

ModelConfig TinyLayer(int experts, int k, RouterGating g) {
  ModelConfig c;
  c.num_features = 1;  // T = 9
  c.width = 0.125;     // D = 16, mlp = 32
  c.depth = 1;
  c.num_experts = experts;
  c.top_k = k;
  c.gating = g;
  c.load_balance_alpha = 0.01;
  return c;
}

struct LayerRun {
  torch::Tensor y, aux;
  std::vector<torch::Tensor> grads;
  RouterStats stats;
};

LayerRun RunLayer(SmoeLayer& layer, Dispatch d, const torch::Tensor& x) {
  layer->set_dispatch(d);
  layer->zero_grad();
  LayerRun r;
  torch::Tensor xx = x.clone().set_requires_grad(true);
  r.y = layer->forward(xx, &r.aux, &r.stats);
  torch::Tensor probe =
      torch::cos(torch::arange(r.y.numel(), r.y.options())).view(r.y.sizes());
  ((r.y * probe).sum() + 3.0 * r.aux).backward();
  r.grads.push_back(xx.grad().clone());
  for (const auto& p : layer->parameters()) r.grads.push_back(p.grad().clone());
  return r;
}

// float64: the two paths differ only in summation order (combine sums over j
// vs index_add in expert order; router softmax over k vs E), so 1e-12 on O(1)
// values; float32: the same reorderings at f32 rounding (~1e-7 relative per
// op, a few ops deep), so 2e-5.
TEST(OpsLayerTest, OpsDispatchEqualsGatherOutputsAndGradients) {
  for (auto dtype : {torch::kFloat64, torch::kFloat32}) {
    const double tol = dtype == torch::kFloat64 ? 1e-12 : 2e-5;
    for (RouterGating g :
         {RouterGating::kRenormalized, RouterGating::kNoRenorm}) {
      for (int k : {1, 2, 3, 8}) {
        torch::manual_seed(10 + k);
        SmoeLayer layer(TinyLayer(8, k, g));
        layer->to(dtype);
        torch::Tensor x = torch::randn({3, 9, 16}, dtype);
        LayerRun a = RunLayer(layer, Dispatch::kGather, x);
        LayerRun b = RunLayer(layer, Dispatch::kOps, x);
        const std::string what = std::string(c10::toString(dtype)) + " " +
                                 RouterGatingName(g) +
                                 " k=" + std::to_string(k);
        EXPECT_LT(MaxDiff(a.y, b.y), tol) << what;
        EXPECT_LT(MaxDiff(a.aux, b.aux), tol) << what;
        EXPECT_EQ(a.stats.expert_fraction, b.stats.expert_fraction) << what;
        EXPECT_NEAR(a.stats.entropy, b.stats.entropy, tol) << what;
        ASSERT_EQ(a.grads.size(), b.grads.size());
        for (size_t i = 0; i < a.grads.size(); ++i) {
          EXPECT_LT(MaxDiff(a.grads[i], b.grads[i]), tol)
              << what << " grad " << i;
        }
      }
    }
  }
}

TEST(OpsLayerTest, ZeroTokenExpertsAndAllTokensToOneExpert) {
  torch::manual_seed(20);
  SmoeLayer layer(TinyLayer(4, 1, RouterGating::kRenormalized));
  layer->to(torch::kFloat64);
  {
    // Router column 2 dominates: every token goes to expert 2.
    torch::NoGradGuard ng;
    layer->router_w.zero_();
    layer->router_w.select(1, 2).fill_(1.0);
  }
  torch::Tensor x = torch::rand({2, 9, 16}, torch::kFloat64) + 0.1;
  LayerRun a = RunLayer(layer, Dispatch::kGather, x);
  LayerRun b = RunLayer(layer, Dispatch::kOps, x);
  EXPECT_EQ(b.stats.expert_fraction, (std::vector<double>{0, 0, 1, 0}));
  EXPECT_LT(MaxDiff(a.y, b.y), 1e-12);
  // expert_w1 is parameter 0 (grads[1]): experts 0, 1, 3 got no tokens.
  for (int e : {0, 1, 3}) {
    EXPECT_EQ(b.grads[1][e].abs().sum().item<double>(), 0.0) << e;
  }
  for (size_t i = 0; i < a.grads.size(); ++i) {
    EXPECT_LT(MaxDiff(a.grads[i], b.grads[i]), 1e-12) << i;
  }
}

TEST(OpsLayerTest, KEqualsEIsTheDenseSoftmaxMixture) {
  torch::manual_seed(21);
  ModelConfig c = TinyLayer(4, 4, RouterGating::kRenormalized);
  SmoeLayer layer(c);
  layer->to(torch::kFloat64);
  layer->set_dispatch(Dispatch::kOps);
  torch::Tensor x = torch::randn({2, 9, 16}, torch::kFloat64);
  torch::NoGradGuard ng;
  torch::Tensor flat = x.reshape({-1, 16});
  torch::Tensor p = torch::softmax(layer->RouterLogits(flat), -1);
  torch::Tensor want = torch::zeros_like(flat);
  for (int e = 0; e < 4; ++e) {
    want += p.select(1, e).unsqueeze(1) * layer->Expert(e, flat);
  }
  torch::Tensor got = layer->forward(x, nullptr, nullptr).reshape({-1, 16});
  EXPECT_LT(MaxDiff(got, want), 1e-12);
}

TEST(OpsLayerTest, NoTokens) {
  torch::manual_seed(22);
  auto o = torch::kFloat32;
  torch::Tensor w1 = torch::randn({4, 16, 32}, o).set_requires_grad(true);
  torch::Tensor b1 = torch::zeros({4, 32}, o),
                w2 = torch::randn({4, 32, 16}, o);
  torch::Tensor b2 = torch::zeros({4, 16}, o);
  torch::Tensor x = torch::zeros({0, 16}, o).set_requires_grad(true);
  torch::Tensor logits = torch::zeros({0, 4}, o);
  RouterOutput r;
  auto y =
      MoeForward(x, logits, 2, RouterGating::kRenormalized, w1, b1, w2, b2, &r);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->sizes(), x.sizes());
  EXPECT_TRUE(torch::equal(r.expert_offsets, torch::zeros({5}, torch::kInt32)));
  auto g = torch::autograd::grad({y->sum()}, {w1});
  EXPECT_EQ(g[0].abs().sum().item<float>(), 0.0f);
}

// ---- bf16 and autocast (the GPU's mixed precision, run on the CPU) --------

// bf16 permute/combine on the CPU: the float32 reference on upcast inputs,
// rounded once at the store -- the GPU kernels' numerics, checked exactly.
TEST(OpsBf16Test, PermuteAndCombineRoundOnceLikeTheKernels) {
  torch::manual_seed(30);
  const int64_t n = 19, d = 6;
  const int e = 4, k = 2;
  auto r = RouterTopK(torch::randn({n, e}), k, RouterGating::kRenormalized);
  ASSERT_TRUE(r.ok());
  auto plan = BuildPermutePlan(r->topk_idx, e);
  ASSERT_TRUE(plan.ok());
  torch::Tensor x = torch::randn({n, d}).to(torch::kBFloat16);
  torch::Tensor buf = Unwrap(Permute(x, *plan));
  EXPECT_EQ(buf.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(
      buf, Unwrap(Permute(x.to(torch::kFloat32), *plan)).to(torch::kBFloat16)));
  torch::Tensor y = torch::randn({n * k, d}).to(torch::kBFloat16);
  torch::Tensor w = r->topk_weights;  // float32 gates next to bf16 rows
  torch::Tensor out = Unwrap(Combine(y, w, *plan));
  EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
  torch::Tensor want =
      Unwrap(Combine(y.to(torch::kFloat32), w, *plan)).to(torch::kBFloat16);
  EXPECT_TRUE(torch::equal(out, want));
}

// A10: the bias gradient is a per-expert sum in float32 in row order (no
// atomics): equal to the float32 sum rounded once, and run to run identical.
TEST(OpsBf16Test, BiasGradIsAFloat32PerExpertSumRoundedOnce) {
  torch::manual_seed(31);
  torch::Tensor idx =
      torch::randint(0, 3, {200, 1}, torch::kInt32);  // expert 3 empty
  auto plan = BuildPermutePlan(idx, 4);
  ASSERT_TRUE(plan.ok());
  auto o = torch::TensorOptions().dtype(torch::kBFloat16);
  torch::Tensor a = torch::randn({200, 5}).to(torch::kBFloat16);
  torch::Tensor w = torch::randn({4, 5, 3}).to(torch::kBFloat16);
  torch::Tensor b = torch::zeros({4, 3}, o).set_requires_grad(true);
  torch::Tensor g = torch::randn({200, 3}).to(torch::kBFloat16);
  auto grad_b = [&] {
    torch::Tensor out = Unwrap(GroupedLinear(a, w, b, *plan));
    return torch::autograd::grad({out}, {b}, {g})[0];
  };
  torch::Tensor gb = grad_b();
  EXPECT_EQ(gb.scalar_type(), torch::kBFloat16);
  torch::Tensor want = torch::zeros({4, 3});
  torch::Tensor g32 = g.to(torch::kFloat32);
  for (int e = 0; e < 4; ++e) {
    const int64_t lo = plan->host_offsets[e];
    const int64_t rows = plan->host_offsets[e + 1] - lo;
    if (rows > 0) want[e] = g32.narrow(0, lo, rows).sum(0);
  }
  EXPECT_TRUE(torch::equal(gb, want.to(torch::kBFloat16)));
  EXPECT_TRUE(torch::equal(gb, grad_b()));
}

// A3: under autocast the router logits are bf16. The router computes in
// float32 (the old generic path crashed in backward: scatter of a float32
// source into bf16), and the expert GEMMs really run in bf16 (the custom
// Functions are not autocast-aware; MoeForward casts), on the CPU exactly as
// on CUDA. Gradients stay within bf16 tolerance of the float32 layer's.
TEST(OpsBf16Test, SmoeLayerUnderAutocastRunsExpertsInBf16AndTracksFloat32) {
  for (RouterGating g :
       {RouterGating::kRenormalized, RouterGating::kNoRenorm}) {
    for (int k : {1, 2, 8}) {
      torch::manual_seed(40 + k);
      SmoeLayer layer(TinyLayer(8, k, g));
      layer->set_dispatch(Dispatch::kOps);
      torch::Tensor x = torch::randn({3, 9, 16});
      const std::string what =
          std::string(RouterGatingName(g)) + " k=" + std::to_string(k);
      // float32 reference.
      LayerRun ref = RunLayer(layer, Dispatch::kOps, x);
      // bf16 autocast: the router's matmul yields bf16 logits.
      LayerRun low;
      {
        AutocastGuard autocast(x.device(), true);
        ASSERT_EQ(layer->RouterLogits(x.reshape({-1, 16})).scalar_type(),
                  torch::kBFloat16)
            << "CPU autocast did not lower the router matmul";
        layer->zero_grad();
        torch::Tensor xx = x.clone().set_requires_grad(true);
        low.y = layer->forward(xx, &low.aux, &low.stats);
        // The expert path's output dtype: combine returns the experts'
        // dtype, so bf16 here means both expert GEMMs ran in bf16.
        EXPECT_EQ(low.y.scalar_type(), torch::kBFloat16) << what;
        torch::Tensor probe =
            torch::cos(torch::arange(low.y.numel(), x.options()))
                .view(low.y.sizes());
        ((low.y.to(torch::kFloat32) * probe).sum() + 3.0 * low.aux).backward();
        low.grads.push_back(xx.grad().clone());
        for (const auto& p : layer->parameters()) {
          low.grads.push_back(p.grad().clone());
        }
      }
      // Same routing unless two logits are within bf16 rounding of each
      // other; compare outputs and gradients in relative L2 norm. bf16
      // carries 8 significant bits (2^-9 relative rounding), a few roundings
      // deep: 3e-2 separates rounding from a wrong formula (O(1)).
      auto rel = [](const torch::Tensor& a, const torch::Tensor& b) {
        torch::Tensor a64 = a.to(torch::kFloat64), b64 = b.to(torch::kFloat64);
        return ((a64 - b64).norm() / b64.norm().clamp_min(1e-30))
            .item<double>();
      };
      EXPECT_LT(rel(low.y, ref.y), 3e-2) << what;
      ASSERT_EQ(low.grads.size(), ref.grads.size());
      for (size_t i = 0; i < ref.grads.size(); ++i) {
        EXPECT_EQ(low.grads[i].scalar_type(), ref.grads[i].scalar_type());
        if (ref.grads[i].abs().sum().item<double>() == 0) continue;
        EXPECT_LT(rel(low.grads[i], ref.grads[i]), 3e-2)
            << what << " grad " << i;
      }
    }
  }
}

}  // namespace
}  // namespace smoe::model::ops
