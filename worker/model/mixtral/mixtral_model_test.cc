// Copyright 2026 SMoE Lab authors.
#include "worker/model/mixtral/mixtral_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <numeric>

#include "worker/model/mixtral/mixtral_checkpoint.h"
#include "worker/model/mixtral/mixtral_decode_cpu.h"

namespace smoe::model::mixtral {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
namespace F = torch::nn::functional;

// fp32 on the CPU: the runtime and the references below differ only in
// summation order, so agreement is expected to ~1e-6 relative; 1e-4 leaves
// room for the 2-layer depth and the logits' scale (|logit| up to ~10).
constexpr double kAtol = 1e-4;
constexpr double kRtol = 1e-4;

MixtralConfig TestConfig() {
  MixtralConfig c = MixtralConfig::Tiny();
  c.vocab_size = 320;
  c.max_position_embeddings = 64;
  return c;
}

// ---- independent references (per token, plain loops) ----------------------

torch::Tensor RefRmsNorm(const torch::Tensor& x, const torch::Tensor& w,
                         double eps) {
  return x / torch::sqrt(x.pow(2).mean(-1, true) + eps) * w;
}

torch::Tensor RefExpert(const MixtralLayerWeights& l, int64_t e,
                        const torch::Tensor& x) {
  return torch::mv(l.w2[e],
                   F::silu(torch::mv(l.w1[e], x)) * torch::mv(l.w3[e], x));
}

// Per-token MoE: softmax over all E (fp32), K largest with ties to the lower
// index (std::stable_sort), renormalised weights.
torch::Tensor RefMoe(const MixtralLayerWeights& l, const torch::Tensor& x,
                     int64_t k) {
  torch::Tensor y = torch::zeros_like(x);
  const int64_t experts = l.gate.size(0);
  for (int64_t n = 0; n < x.size(0); ++n) {
    const torch::Tensor p = torch::softmax(torch::mv(l.gate, x[n]), 0);
    std::vector<int64_t> order(experts);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return p[a].item<float>() > p[b].item<float>();
    });
    double total = 0;
    for (int64_t i = 0; i < k; ++i) total += p[order[i]].item<float>();
    for (int64_t i = 0; i < k; ++i) {
      y[n] +=
          RefExpert(l, order[i], x[n]) * (p[order[i]].item<float>() / total);
    }
  }
  return y;
}

// Rotates (x_i, x_{i+d/2}) by pos * theta^(-2i/d), one pair at a time.
torch::Tensor RefRope(const torch::Tensor& v, int64_t pos, double theta) {
  const int64_t d = v.size(0);
  torch::Tensor out = v.clone();
  for (int64_t i = 0; i < d / 2; ++i) {
    const double a = pos * std::pow(theta, -2.0 * i / d);
    const double x1 = v[i].item<double>(), x2 = v[i + d / 2].item<double>();
    out[i] = x1 * std::cos(a) - x2 * std::sin(a);
    out[i + d / 2] = x2 * std::cos(a) + x1 * std::sin(a);
  }
  return out;
}

// Whole-model reference for one unpadded sequence: logits [T, V].
torch::Tensor RefForward(const MixtralConfig& c, const MixtralWeights& w,
                         const std::vector<int64_t>& tokens, int64_t k) {
  const int64_t t_len = tokens.size(), d = c.head_dim;
  const int64_t rep = c.QueriesPerKvHead();
  torch::Tensor x = w.embed_tokens.index_select(0, torch::tensor(tokens));
  for (const MixtralLayerWeights& l : w.layers) {
    const torch::Tensor hn = RefRmsNorm(x, l.input_layernorm, c.rms_norm_eps);
    torch::Tensor q =
        torch::matmul(hn, l.q_proj.t()).view({t_len, c.num_attention_heads, d});
    torch::Tensor kk =
        torch::matmul(hn, l.k_proj.t()).view({t_len, c.num_key_value_heads, d});
    const torch::Tensor v =
        torch::matmul(hn, l.v_proj.t()).view({t_len, c.num_key_value_heads, d});
    for (int64_t i = 0; i < t_len; ++i) {
      for (int64_t h = 0; h < c.num_attention_heads; ++h) {
        q[i][h] = RefRope(q[i][h], i, c.rope_theta);
      }
      for (int64_t g = 0; g < c.num_key_value_heads; ++g) {
        kk[i][g] = RefRope(kk[i][g], i, c.rope_theta);
      }
    }
    torch::Tensor o = torch::zeros({t_len, c.num_attention_heads * d});
    for (int64_t i = 0; i < t_len; ++i) {
      for (int64_t h = 0; h < c.num_attention_heads; ++h) {
        const int64_t g = h / rep;
        std::vector<int64_t> keys;
        for (int64_t j = 0; j <= i; ++j) {
          if (!c.sliding_window || i - j < *c.sliding_window) keys.push_back(j);
        }
        torch::Tensor s = torch::empty({static_cast<int64_t>(keys.size())});
        for (size_t m = 0; m < keys.size(); ++m) {
          s[m] = torch::dot(q[i][h], kk[keys[m]][g]) / std::sqrt(double(d));
        }
        s = torch::softmax(s, 0);
        torch::Tensor acc = torch::zeros({d});
        for (size_t m = 0; m < keys.size(); ++m) acc += s[m] * v[keys[m]][g];
        o[i].narrow(0, h * d, d).copy_(acc);
      }
    }
    x = x + torch::matmul(o, l.o_proj.t());
    x = x +
        RefMoe(l, RefRmsNorm(x, l.post_attention_layernorm, c.rms_norm_eps), k);
  }
  return torch::matmul(RefRmsNorm(x, w.norm, c.rms_norm_eps), w.lm_head.t());
}

// ---- fixture: one random checkpoint per suite
// -----------------------------------

class MixtralModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    torch::set_num_threads(1);
    dir_ = new fs::path(fs::temp_directory_path() /
                        ("smoe_mixtral_" + std::to_string(::getpid())));
    RandomCheckpointOptions o;
    o.seed = 11;
    ASSERT_TRUE(WriteRandomMixtralCheckpoint((*dir_ / "single").string(),
                                             TestConfig(), o)
                    .ok());
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::unique_ptr<MixtralModel> LoadOrDie(const std::string& sub) {
    auto m = MixtralModel::Load((*dir_ / sub).string());
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? std::move(*m) : nullptr;
  }
  static fs::path* dir_;
};
fs::path* MixtralModelTest::dir_ = nullptr;

TEST(MixtralRoutingTest, TiesGoToLowerIndexAndWeightsRenormalise) {
  const torch::Tensor logits =
      torch::tensor({{0.f, 1.f, 1.f, 0.f}, {2.f, 2.f, 2.f, 2.f}});
  const RouterOutput r = RouteMixtral(logits, 2);
  EXPECT_TRUE(
      torch::equal(r.topk_idx, torch::tensor({{1, 2}, {0, 1}}, torch::kInt32)));
  EXPECT_TRUE(torch::allclose(r.topk_weights, torch::full({2, 2}, 0.5)));
  const RouterOutput one = RouteMixtral(logits, 1);
  EXPECT_TRUE(torch::equal(one.topk_weights, torch::ones({2, 1})));
  EXPECT_EQ(r.topk_weights.scalar_type(), torch::kFloat32);
  // bf16 logits are routed in fp32.
  EXPECT_EQ(
      RouteMixtral(logits.to(torch::kBFloat16), 2).topk_weights.scalar_type(),
      torch::kFloat32);
}

TEST_F(MixtralModelTest, MoeAtAllExpertsEqualsDenseSoftmaxMixture) {
  auto m = LoadOrDie("single");
  ASSERT_NE(m, nullptr);
  const MixtralLayerWeights& l = m->weights().layers[1];
  torch::manual_seed(5);
  const torch::Tensor x = torch::randn({9, m->config().hidden_size});
  const torch::Tensor p = torch::softmax(torch::matmul(x, l.gate.t()), -1);
  torch::Tensor dense = torch::zeros_like(x);
  for (int64_t e = 0; e < 8; ++e) {
    const torch::Tensor h =
        F::silu(torch::matmul(x, l.w1[e].t())) * torch::matmul(x, l.w3[e].t());
    dense += p.select(1, e).unsqueeze(1) * torch::matmul(h, l.w2[e].t());
  }
  EXPECT_TRUE(torch::allclose(MoeForward(x, l, 8), dense, 1e-5, 1e-5));
  // Fewer experts really changes the output (the test is not vacuous).
  EXPECT_FALSE(torch::allclose(MoeForward(x, l, 2), dense, 1e-3, 1e-3));
}

TEST_F(MixtralModelTest, MoeMatchesPerTokenBruteForceAtEveryEpt) {
  auto m = LoadOrDie("single");
  ASSERT_NE(m, nullptr);
  const MixtralLayerWeights& l = m->weights().layers[0];
  torch::manual_seed(6);
  const torch::Tensor x = torch::randn({7, m->config().hidden_size});
  for (int64_t k : {1, 2, 3, 8}) {
    EXPECT_TRUE(
        torch::allclose(MoeForward(x, l, k), RefMoe(l, x, k), 1e-5, 1e-5))
        << "EPT " << k;
  }
  // EPT 1: exactly one expert with weight 1.
  const torch::Tensor e0 = torch::softmax(torch::mv(l.gate, x[0]), 0).argmax();
  EXPECT_TRUE(torch::allclose(MoeForward(x, l, 1)[0],
                              RefExpert(l, e0.item<int64_t>(), x[0]), 1e-5,
                              1e-5));
}

TEST_F(MixtralModelTest, ForwardMatchesReferenceAndIsDeterministic) {
  auto m = LoadOrDie("single");
  ASSERT_NE(m, nullptr);
  const std::vector<int64_t> ids = {1, 17, 250, 3, 99, 42, 7, 311, 5};
  const torch::Tensor tokens = torch::tensor(ids).view({1, -1});
  for (int64_t k : {1, 2, 8}) {
    auto a = m->Forward(tokens, k);
    auto b = m->Forward(tokens, k);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_TRUE(torch::equal(*a, *b));
    EXPECT_TRUE(torch::allclose(
        (*a)[0], RefForward(m->config(), m->weights(), ids, k), kRtol, kAtol))
        << "EPT " << k;
  }
  // SetExpertsPerToken changes the default without a reload.
  ASSERT_TRUE(m->SetExpertsPerToken(8).ok());
  EXPECT_TRUE(torch::equal(*m->Forward(tokens), *m->Forward(tokens, 8)));
  EXPECT_FALSE(torch::equal(*m->Forward(tokens), *m->Forward(tokens, 1)));
  EXPECT_THAT(m->SetExpertsPerToken(9).message(), HasSubstr("1..8"));
  EXPECT_EQ(m->Forward(tokens, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m->Forward(torch::tensor({{1, 320}})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The bf16 path a GPU Skill-Mix run takes (MixtralLoadOptions::dtype bf16:
// bf16 weights and activations, RMSNorm/softmax/RoPE/router in f32) runs on
// the CPU the same way. bf16 keeps 8 significant bits; over two layers the
// logits stay within 5% (relative L2) of the f32 model's, and the top token
// agrees where f32's margin is clear.
TEST_F(MixtralModelTest, Bf16OnCpuTracksFloat32) {
  MixtralLoadOptions o;
  o.dtype = torch::kBFloat16;
  auto low = MixtralModel::Load((*dir_ / "single").string(), o);
  ASSERT_TRUE(low.ok()) << low.status();
  auto ref = LoadOrDie("single");
  ASSERT_NE(ref, nullptr);
  const torch::Tensor tokens =
      torch::tensor(std::vector<int64_t>{1, 17, 250, 3, 99, 42, 7, 311, 5})
          .view({1, -1});
  for (int64_t k : {1, 2, 8}) {
    auto a = (*low)->Forward(tokens, k);
    auto b = ref->Forward(tokens, k);
    ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
    torch::Tensor a64 = a->to(torch::kFloat64), b64 = b->to(torch::kFloat64);
    const double rel = ((a64 - b64).norm() / b64.norm()).item<double>();
    EXPECT_LT(rel, 5e-2) << "EPT " << k;
    EXPECT_GT(rel, 0.0) << "EPT " << k << ": bf16 identical to f32";
  }
}

TEST_F(MixtralModelTest, SlidingWindowMatchesMaskedBruteForce) {
  MixtralConfig c = TestConfig();
  c.sliding_window = 3;
  auto base = LoadOrDie("single");
  ASSERT_NE(base, nullptr);
  auto m = MixtralModel::FromWeights(c, base->weights());
  ASSERT_TRUE(m.ok()) << m.status();
  const std::vector<int64_t> ids = {1, 40, 41, 42, 43, 44, 45, 46};
  auto logits = (*m)->Forward(torch::tensor(ids).view({1, -1}));
  ASSERT_TRUE(logits.ok());
  EXPECT_TRUE(torch::allclose(
      (*logits)[0], RefForward(c, base->weights(), ids, 2), kRtol, kAtol));
  // Positions inside the window agree with full attention; later ones not.
  auto full = base->Forward(torch::tensor(ids).view({1, -1}));
  EXPECT_TRUE(torch::allclose((*logits)[0].narrow(0, 0, 3),
                              (*full)[0].narrow(0, 0, 3), 1e-5, 1e-5));
  EXPECT_FALSE(torch::allclose((*logits)[0][7], (*full)[0][7], 1e-3, 1e-3));
}

TEST_F(MixtralModelTest, KvCacheDecodeEqualsFullRecompute) {
  auto m = LoadOrDie("single");
  ASSERT_NE(m, nullptr);
  torch::manual_seed(8);
  const torch::Tensor tokens = torch::randint(0, 320, {2, 11});
  auto full = m->Forward(tokens);
  ASSERT_TRUE(full.ok());
  auto cache = m->NewCache(2, 11);
  ASSERT_TRUE(cache.ok());
  auto pre = m->Step(tokens.narrow(1, 0, 5), &*cache);
  ASSERT_TRUE(pre.ok());
  std::vector<torch::Tensor> parts = {*pre};
  for (int64_t t = 5; t < 11; ++t) {
    auto step = m->Step(tokens.narrow(1, t, 1), &*cache);
    ASSERT_TRUE(step.ok());
    parts.push_back(*step);
  }
  EXPECT_TRUE(torch::allclose(torch::cat(parts, 1), *full, 1e-5, 1e-5));
  EXPECT_THAT(m->Step(tokens.narrow(1, 0, 1), &*cache).status().message(),
              HasSubstr("overflow"));
}

// Batch-1 decode takes the CPU matrix-vector kernels (mixtral_decode_cpu.h:
// streamed projections, router + chosen experts only); it must equal the
// LibTorch path of the full-sequence forward at every EPT.
TEST_F(MixtralModelTest, BatchOneDecodeKernelsEqualFullRecompute) {
  auto m = LoadOrDie("single");
  ASSERT_NE(m, nullptr);
  torch::manual_seed(9);
  const torch::Tensor tokens = torch::randint(0, 320, {1, 9});
  for (int64_t ept : {int64_t{1}, int64_t{2}, m->config().num_local_experts}) {
    auto full = m->Forward(tokens, ept);
    ASSERT_TRUE(full.ok());
    auto cache = m->NewCache(1, 9);
    ASSERT_TRUE(cache.ok());
    std::vector<torch::Tensor> parts;
    for (int64_t t = 0; t < 9; ++t) {
      auto step = m->Step(tokens.narrow(1, t, 1), &*cache, ept);
      ASSERT_TRUE(step.ok());
      parts.push_back(*step);
    }
    const torch::Tensor got = torch::cat(parts, 1);
    EXPECT_TRUE(torch::allclose(got, *full, 1e-5, 1e-5))
        << "ept " << ept << " max diff "
        << (got - *full).abs().max().item<double>();
  }
}

// The whole-step decode loops (DecodeStepCpu) on a left-padded cache and
// with a sliding window: the padding slots are never attended to and the
// window limits the slots, as the full-sequence LibTorch forward does.
// With 2 intra-op threads too (the loop splits heads and rows over them).
TEST_F(MixtralModelTest, BatchOneDecodeStepHonoursPaddingAndSlidingWindow) {
  auto base = LoadOrDie("single");
  ASSERT_NE(base, nullptr);
  for (int threads : {1, 2}) {
    torch::set_num_threads(threads);
    for (std::optional<int64_t> window :
         {std::optional<int64_t>(), std::optional<int64_t>(3)}) {
      MixtralConfig c = TestConfig();
      c.sliding_window = window;
      auto m = MixtralModel::FromWeights(c, base->weights());
      ASSERT_TRUE(m.ok()) << m.status();
      torch::manual_seed(12);
      const torch::Tensor tokens = torch::randint(0, 320, {1, 8});
      auto full = (*m)->Forward(tokens, 2);
      ASSERT_TRUE(full.ok());
      const int64_t pad = 3;
      auto cache = (*m)->NewCache(1, pad + 8, {pad});
      ASSERT_TRUE(cache.ok());
      // Padding slots (any ids), then the first token as a 2-token prefill
      // would be batch * t > 1: keep the padding alone in the prefill.
      ASSERT_TRUE(
          (*m)->Step(torch::full({1, pad}, 7, torch::kInt64), &*cache, 2).ok());
      std::vector<torch::Tensor> parts;
      for (int64_t t = 0; t < 8; ++t) {
        auto step = (*m)->Step(tokens.narrow(1, t, 1), &*cache, 2);
        ASSERT_TRUE(step.ok());
        parts.push_back(*step);
      }
      const torch::Tensor got = torch::cat(parts, 1);
      EXPECT_TRUE(torch::allclose(got, *full, 1e-5, 1e-5))
          << "threads " << threads << " window " << window.value_or(0)
          << " max diff " << (got - *full).abs().max().item<double>();
    }
  }
  torch::set_num_threads(1);
}

// ---- bf16 weights in the batch-1 decode loops (issue 19) -------------------

// `w` with every tensor rounded to bfloat16 and widened back to float32.
MixtralWeights RoundedToBf16(const MixtralWeights& w) {
  auto r = [](const torch::Tensor& t) {
    return t.to(torch::kBFloat16).to(torch::kFloat32);
  };
  MixtralWeights out = w;
  out.embed_tokens = r(w.embed_tokens);
  out.norm = r(w.norm);
  out.lm_head = r(w.lm_head);
  for (MixtralLayerWeights& l : out.layers) {
    for (torch::Tensor* t :
         {&l.input_layernorm, &l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj,
          &l.post_attention_layernorm, &l.gate, &l.w1, &l.w3, &l.w2}) {
      *t = r(*t);
    }
  }
  return out;
}

// mixtral_model_portable_test builds this file with the decode loops for
// baseline x86-64 only (SMOE_DECODE_PORTABLE_ONLY); the plain test runs the
// version target_clones picks for this CPU.
TEST(MixtralDecodeIsaTest, ReportsTheLoopsVersion) {
  const std::string isa = DecodeKernelsIsa();
#ifdef SMOE_DECODE_PORTABLE_ONLY
  EXPECT_EQ(isa, "baseline");
#else
  EXPECT_TRUE(isa == "x86-64-v4" || isa == "x86-64-v3" || isa == "baseline")
      << isa;
#endif
  std::cout << "decode loops: " << isa << "\n";
}

// The bf16 loops widen each weight exactly and then do the float32 loops'
// arithmetic, so a bf16 model's decode step equals the float32 step of the
// same weights rounded to bf16 up to summation order (the lane-wise sums of
// each target_clones version): ~1e-7 relative. 1e-5 (the f32 decode tests'
// tolerance) is tight: rounding the weights to bf16 moves the logits by
// ~1e-2, three orders more, which the last check confirms.
TEST_F(MixtralModelTest, Bf16KernelsEqualFloat32KernelsOnRoundedWeights) {
  auto base = LoadOrDie("single");
  ASSERT_NE(base, nullptr);
  const MixtralWeights rw = RoundedToBf16(base->weights());
  const MixtralLayerWeights& l = rw.layers[1];
  auto bf = [](const torch::Tensor& t) { return t.to(torch::kBFloat16); };
  torch::manual_seed(21);
  const torch::Tensor x = torch::randn({1, TestConfig().hidden_size});
  for (int threads : {1, 2}) {
    torch::set_num_threads(threads);
    const torch::Tensor y16 = MatVec(x, bf(rw.lm_head));
    const torch::Tensor y32 = MatVec(x, rw.lm_head);
    EXPECT_EQ(y16.scalar_type(), torch::kFloat32);
    EXPECT_TRUE(torch::allclose(y16, y32, 1e-5, 1e-5)) << threads;
    EXPECT_TRUE(torch::allclose(y16, torch::mv(rw.lm_head, x[0]), 1e-5, 1e-5));
    for (int64_t k : {int64_t{1}, int64_t{2}, l.gate.size(0)}) {
      const torch::Tensor m16 =
          MoeDecode(x, bf(l.gate), bf(l.w1), bf(l.w3), bf(l.w2), k);
      const torch::Tensor m32 = MoeDecode(x, l.gate, l.w1, l.w3, l.w2, k);
      EXPECT_TRUE(torch::allclose(m16, m32, 1e-5, 1e-5))
          << "threads " << threads << " k " << k;
      EXPECT_TRUE(torch::allclose(m16, RefMoe(l, x, k)[0], 1e-5, 1e-5))
          << "threads " << threads << " k " << k;
    }
  }
  torch::set_num_threads(1);
  // Mixed weight dtypes are refused, not misread.
  EXPECT_ANY_THROW(MoeDecode(x, bf(l.gate), l.w1, bf(l.w3), bf(l.w2), 2));
  EXPECT_FALSE(DecodeKernelsApply(x, l.gate.to(torch::kFloat16)));
  EXPECT_FALSE(DecodeKernelsApply(x.to(torch::kBFloat16), bf(l.gate)));
}

TEST_F(MixtralModelTest, Bf16DecodeStepEqualsFloat32StepOfRoundedWeights) {
  auto base = LoadOrDie("single");
  ASSERT_NE(base, nullptr);
  const MixtralWeights rw = RoundedToBf16(base->weights());
  MixtralLoadOptions bf16;
  bf16.dtype = torch::kBFloat16;
  for (int threads : {1, 2}) {
    torch::set_num_threads(threads);
    for (std::optional<int64_t> window :
         {std::optional<int64_t>(), std::optional<int64_t>(3)}) {
      for (int64_t pad : {int64_t{0}, int64_t{3}}) {
        MixtralConfig c = TestConfig();
        c.sliding_window = window;
        auto low = MixtralModel::FromWeights(c, rw, bf16);
        auto ref = MixtralModel::FromWeights(c, rw);
        auto raw = MixtralModel::FromWeights(c, base->weights());
        ASSERT_TRUE(low.ok() && ref.ok() && raw.ok()) << low.status();
        ASSERT_EQ((*low)->weights().layers[0].w1.scalar_type(),
                  torch::kBFloat16);
        torch::manual_seed(13);
        const torch::Tensor tokens = torch::randint(0, 320, {1, 8});
        std::vector<torch::Tensor> got, want, unrounded;
        for (auto [m, out] :
             {std::pair{low->get(), &got}, std::pair{ref->get(), &want},
              std::pair{raw->get(), &unrounded}}) {
          auto cache = m->NewCache(1, pad + 8, {pad});
          ASSERT_TRUE(cache.ok());
          ASSERT_EQ(cache->k[0].scalar_type(), torch::kFloat32);
          ASSERT_TRUE(DecodeStepApplies(c, m->weights(), *cache));
          if (pad > 0) {  // padding slots: a LibTorch prefill (t > 1)
            ASSERT_TRUE(
                m->Step(torch::full({1, pad}, 7, torch::kInt64), &*cache, 2)
                    .ok());
          }
          for (int64_t t = 0; t < 8; ++t) {
            auto step = m->Step(tokens.narrow(1, t, 1), &*cache, 2);
            ASSERT_TRUE(step.ok());
            ASSERT_EQ(step->scalar_type(), torch::kFloat32);
            out->push_back(*step);
          }
        }
        const torch::Tensor a = torch::cat(got, 1), b = torch::cat(want, 1);
        const torch::Tensor u = torch::cat(unrounded, 1);
        const std::string where =
            "threads " + std::to_string(threads) + " window " +
            std::to_string(window.value_or(0)) + " pad " + std::to_string(pad);
        EXPECT_TRUE(torch::allclose(a, b, 1e-5, 1e-5))
            << where << " max diff " << (a - b).abs().max().item<double>();
        // Observed sizes (in --gtest_output=xml): the gap to the rounded
        // f32 model vs the gap to the unrounded one.
        RecordProperty("max_diff_rounded " + where,
                       std::to_string((a - b).abs().max().item<double>()));
        RecordProperty("max_diff_unrounded " + where,
                       std::to_string((a - u).abs().max().item<double>()));
        // The tolerance separates: unrounded f32 weights are far outside it.
        EXPECT_GT((a - u).abs().max().item<double>(), 1e-3) << where;
      }
    }
  }
  torch::set_num_threads(1);
}

// Greedy decoding from a one-token prompt runs every step in the decode
// loops: the bf16 model picks the same tokens as the rounded f32 model.
TEST_F(MixtralModelTest, Bf16GreedyTokensEqualRoundedFloat32) {
  auto base = LoadOrDie("single");
  ASSERT_NE(base, nullptr);
  const MixtralWeights rw = RoundedToBf16(base->weights());
  MixtralLoadOptions bf16;
  bf16.dtype = torch::kBFloat16;
  auto low = MixtralModel::FromWeights(TestConfig(), rw, bf16);
  auto ref = MixtralModel::FromWeights(TestConfig(), rw);
  ASSERT_TRUE(low.ok() && ref.ok());
  MixtralGenerationOptions o;
  o.temperature = 0;
  o.max_new_tokens = 8;
  o.stop_at_eos = false;
  for (int threads : {1, 2}) {
    torch::set_num_threads(threads);
    for (int32_t first : {1, 77, 250}) {
      for (int64_t ept : {1, 2}) {
        o.experts_per_token = ept;
        auto a = (*low)->Generate({{first}}, o);
        auto b = (*ref)->Generate({{first}}, o);
        ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
        ASSERT_EQ((*a)[0].size(), 8u);
        EXPECT_EQ((*a)[0], (*b)[0]) << "first " << first << " ept " << ept;
      }
    }
  }
  torch::set_num_threads(1);
}

// Which models and caches take the loops: f32 and bf16 CPU weights with a
// float32 batch-1 cache; not f16, not mixed weight dtypes, not a bf16 cache
// (the model's batch > 1 caches), not batch 2. The bf16 model's LibTorch
// path (a multi-token prefill, batch 2) works on its float32 cache and the
// decode loops continue from it, tracking the bf16 full forward.
TEST_F(MixtralModelTest, DecodeStepAppliesToF32AndBf16CpuWeightsOnly) {
  auto base = LoadOrDie("single");
  ASSERT_NE(base, nullptr);
  const MixtralConfig c = TestConfig();
  MixtralLoadOptions o;
  o.dtype = torch::kBFloat16;
  auto low = MixtralModel::FromWeights(c, base->weights(), o);
  o.dtype = torch::kFloat16;
  auto half = MixtralModel::FromWeights(c, base->weights(), o);
  ASSERT_TRUE(low.ok() && half.ok());
  auto one = (*low)->NewCache(1, 12);
  auto two = (*low)->NewCache(2, 12);
  auto half_cache = (*half)->NewCache(1, 12);
  auto f32_cache = base->NewCache(1, 12);
  ASSERT_TRUE(one.ok() && two.ok() && half_cache.ok() && f32_cache.ok());
  EXPECT_EQ(one->k[0].scalar_type(), torch::kFloat32);
  EXPECT_EQ(two->k[0].scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(DecodeStepApplies(c, base->weights(), *f32_cache));
  EXPECT_TRUE(DecodeStepApplies(c, (*low)->weights(), *one));
  EXPECT_FALSE(DecodeStepApplies(c, (*low)->weights(), *two));
  EXPECT_FALSE(DecodeStepApplies(c, (*half)->weights(), *half_cache));
  MixtralKvCache bf16_cache = *one;
  for (auto* kv : {&bf16_cache.k, &bf16_cache.v}) {
    for (torch::Tensor& t : *kv) t = t.to(torch::kBFloat16);
  }
  EXPECT_FALSE(DecodeStepApplies(c, (*low)->weights(), bf16_cache));
  MixtralWeights mixed = (*low)->weights();
  mixed.layers[1].w2 = mixed.layers[1].w2.to(torch::kFloat32);
  EXPECT_FALSE(DecodeStepApplies(c, mixed, *one));

  torch::manual_seed(14);
  const torch::Tensor tokens = torch::randint(0, 320, {2, 9});
  auto full = (*low)->Forward(tokens.narrow(0, 0, 1), 2);
  auto full32 = base->Forward(tokens.narrow(0, 0, 1), 2);
  ASSERT_TRUE(full.ok() && full32.ok());
  auto pre = (*low)->Step(tokens.narrow(0, 0, 1).narrow(1, 0, 5), &*one, 2);
  ASSERT_TRUE(pre.ok()) << pre.status();
  std::vector<torch::Tensor> parts = {*pre};
  for (int64_t t = 5; t < 9; ++t) {
    auto step = (*low)->Step(tokens.narrow(0, 0, 1).narrow(1, t, 1), &*one, 2);
    ASSERT_TRUE(step.ok());
    parts.push_back(*step);
  }
  auto rel = [](const torch::Tensor& a, const torch::Tensor& b) {
    const torch::Tensor a64 = a.to(torch::kFloat64),
                        b64 = b.to(torch::kFloat64);
    return ((a64 - b64).norm() / b64.norm()).item<double>();
  };
  const torch::Tensor got = torch::cat(parts, 1);
  EXPECT_LT(rel(got, *full), 5e-2);
  EXPECT_LT(rel(got.narrow(1, 5, 4), full32->narrow(1, 5, 4)), 5e-2);
  // Batch 2 stays on the LibTorch path with its bf16 cache.
  auto step2 = (*low)->Step(tokens.narrow(1, 0, 3), &*two, 2);
  ASSERT_TRUE(step2.ok()) << step2.status();
  EXPECT_LT(rel((*step2)[0], (*full)[0].narrow(0, 0, 3)), 5e-2);
}

TEST_F(MixtralModelTest, ShardedAndPackedCheckpointsLoadTheSameModel) {
  RandomCheckpointOptions o;
  o.seed = 11;
  o.max_shard_bytes = 300'000;
  const std::string sharded = (*dir_ / "sharded").string();
  ASSERT_TRUE(WriteRandomMixtralCheckpoint(sharded, TestConfig(), o).ok());
  ASSERT_TRUE(fs::exists(sharded + "/model.safetensors.index.json"));
  ASSERT_FALSE(fs::exists(sharded + "/model.safetensors"));
  int shards = 0;
  for (const auto& entry : fs::directory_iterator(sharded)) {
    shards += entry.path().extension() == ".safetensors";
  }
  EXPECT_GE(shards, 3);
  auto a = LoadOrDie("single");
  auto b = LoadOrDie("sharded");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const torch::Tensor tokens = torch::tensor({{1, 5, 9, 200}});
  EXPECT_TRUE(torch::equal(*a->Forward(tokens), *b->Forward(tokens)));

  // Packed (HF 5.x) layout written from the same weights.
  const std::string packed = (*dir_ / "packed").string();
  fs::create_directories(packed);
  fs::copy_file((*dir_ / "single" / "config.json"), packed + "/config.json");
  const MixtralWeights& w = a->weights();
  std::vector<std::pair<std::string, torch::Tensor>> t = {
      {"model.embed_tokens.weight", w.embed_tokens},
      {"model.norm.weight", w.norm},
      {"lm_head.weight", w.lm_head}};
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const MixtralLayerWeights& l = w.layers[i];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    t.push_back({p + "input_layernorm.weight", l.input_layernorm});
    t.push_back(
        {p + "post_attention_layernorm.weight", l.post_attention_layernorm});
    t.push_back({p + "self_attn.q_proj.weight", l.q_proj});
    t.push_back({p + "self_attn.k_proj.weight", l.k_proj});
    t.push_back({p + "self_attn.v_proj.weight", l.v_proj});
    t.push_back({p + "self_attn.o_proj.weight", l.o_proj});
    t.push_back({p + "mlp.gate.weight", l.gate});
    t.push_back({p + "mlp.experts.gate_up_proj", torch::cat({l.w1, l.w3}, 1)});
    t.push_back({p + "mlp.experts.down_proj", l.w2});
  }
  ASSERT_TRUE(WriteSafetensors(packed + "/model.safetensors", t).ok());
  auto c = LoadOrDie("packed");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(torch::equal(*a->Forward(tokens), *c->Forward(tokens)));
}

TEST_F(MixtralModelTest, LoadErrorsNameTensorAndShape) {
  const std::string bad = (*dir_ / "bad").string();
  fs::create_directories(bad);
  fs::copy_file((*dir_ / "single" / "config.json"), bad + "/config.json");
  // A missing tensor and a wrong shape.
  auto m = MixtralModel::Load(bad);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(
      WriteSafetensors(bad + "/model.safetensors",
                       {{"model.embed_tokens.weight", torch::zeros({320, 32})}})
          .ok());
  m = MixtralModel::Load(bad);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(),
              HasSubstr("'model.embed_tokens.weight' has shape [320, 32] but "
                        "config.json implies [320, 64]"));
  ASSERT_TRUE(
      WriteSafetensors(bad + "/model.safetensors",
                       {{"model.embed_tokens.weight", torch::zeros({320, 64})}})
          .ok());
  m = MixtralModel::Load(bad);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(m.status().message(),
              HasSubstr("missing tensor 'model.norm.weight'"));
}

TEST(FilterLogitsTest, TopKAndTopPOnHandMadeDistributions) {
  const torch::Tensor p = torch::tensor({{0.5f, 0.2f, 0.15f, 0.1f, 0.05f}});
  const torch::Tensor logits = p.log();
  auto kept = [](const torch::Tensor& f) {
    std::vector<int64_t> out;
    for (int64_t i = 0; i < f.size(1); ++i) {
      if (std::isfinite(f[0][i].item<float>())) out.push_back(i);
    }
    return out;
  };
  using V = std::vector<int64_t>;
  EXPECT_EQ(kept(FilterLogits(logits, 0, 1.0)), V({0, 1, 2, 3, 4}));
  EXPECT_EQ(kept(FilterLogits(logits, 2, 1.0)), V({0, 1}));
  EXPECT_EQ(kept(FilterLogits(logits, 0, 0.45)), V({0}));
  EXPECT_EQ(kept(FilterLogits(logits, 0, 0.6)), V({0, 1}));
  EXPECT_EQ(kept(FilterLogits(logits, 0, 0.8)), V({0, 1, 2}));
  EXPECT_EQ(kept(FilterLogits(logits, 0, 0.99)), V({0, 1, 2, 3, 4}));
  // top-k first, then top-p on the renormalised survivors (.59, .24, .18).
  EXPECT_EQ(kept(FilterLogits(logits, 3, 0.65)), V({0, 1}));
  // Ties at the k-th value are kept; the nucleus always keeps one token.
  const torch::Tensor ties = torch::tensor({{1.f, 2.f, 2.f, 0.f}});
  EXPECT_EQ(kept(FilterLogits(ties, 1, 1.0)), V({1, 2}));
  EXPECT_EQ(kept(FilterLogits(ties, 0, 1e-6)), V({1}));
  // Surviving logits are unchanged.
  EXPECT_TRUE(torch::equal(FilterLogits(logits, 2, 1.0)[0].narrow(0, 0, 2),
                           logits[0].narrow(0, 0, 2)));
}

TEST_F(MixtralModelTest, GreedyIsArgmaxAndLeftPaddingIsInvisible) {
  auto m = LoadOrDie("single");
  ASSERT_NE(m, nullptr);
  MixtralGenerationOptions o;
  o.temperature = 0;
  o.max_new_tokens = 6;
  o.stop_at_eos = false;
  const std::vector<int32_t> a = {1, 30, 31, 32, 33, 34, 35};
  const std::vector<int32_t> b = {1, 200};
  auto batch = m->Generate({a, b}, o);
  ASSERT_TRUE(batch.ok()) << batch.status();
  // Greedy = argmax of a full recompute at every step.
  for (const auto& [prompt, got] :
       {std::pair{a, (*batch)[0]}, std::pair{b, (*batch)[1]}}) {
    std::vector<int64_t> seq(prompt.begin(), prompt.end());
    ASSERT_EQ(got.size(), 6u);
    for (int32_t next : got) {
      auto logits = m->Forward(torch::tensor(seq).view({1, -1}));
      ASSERT_TRUE(logits.ok());
      EXPECT_EQ((*logits)[0][-1].argmax().item<int64_t>(), next);
      seq.push_back(next);
    }
    auto alone = m->Generate({prompt}, o);
    ASSERT_TRUE(alone.ok());
    EXPECT_EQ((*alone)[0], got);
  }
}

TEST_F(MixtralModelTest, SamplingIsDeterministicPerSeedAndStopsAtEos) {
  auto m = LoadOrDie("single");
  ASSERT_NE(m, nullptr);
  MixtralGenerationOptions o;
  o.temperature = 1.0;
  o.top_k = 50;
  o.top_p = 0.95;
  o.max_new_tokens = 12;
  o.stop_at_eos = false;
  const std::vector<std::vector<int32_t>> prompts = {{1, 7, 8}, {1, 9}};
  o.seed = 7;
  auto x = m->Generate(prompts, o);
  auto y = m->Generate(prompts, o);
  o.seed = 8;
  auto z = m->Generate(prompts, o);
  ASSERT_TRUE(x.ok() && y.ok() && z.ok());
  EXPECT_EQ(*x, *y);
  EXPECT_NE(*x, *z);
  // All logits equal and EOS = 0: greedy (ties -> lowest id) picks EOS at
  // once, so the output is empty.
  MixtralConfig c = TestConfig();
  c.eos_token_id = 0;
  MixtralWeights w = m->weights();
  w.lm_head = torch::zeros_like(w.lm_head);
  auto eos_model = MixtralModel::FromWeights(c, w);
  ASSERT_TRUE(eos_model.ok());
  o.stop_at_eos = true;
  o.temperature = 0;
  auto e = (*eos_model)->Generate(prompts, o);
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE((*e)[0].empty() && (*e)[1].empty());
  o.max_new_tokens = 100;
  EXPECT_THAT(m->Generate(prompts, o).status().message(),
              HasSubstr("max_position_embeddings"));
}

}  // namespace
}  // namespace smoe::model::mixtral
