// Copyright 2026 SMoE Lab authors.
//
// CPU tests of the router reference against brute force and finite
// differences (the docs/kernels.md 3 grid).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "common/rng.h"
#include "gtest/gtest.h"
#include "kernels/common/compare.h"
#include "kernels/router_topk/router_topk.h"

namespace smoe::kernels {
namespace {

// Logits on a coarse grid (multiples of 0.5 in [-2, 2]) so rows have ties.
std::vector<float> TiedLogits(int64_t t, int e, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(t * e);
  for (float& x : v) x = 0.5f * static_cast<float>(rng.UniformRange(-4, 4));
  return v;
}

struct Brute {
  std::vector<int32_t> idx;
  std::vector<double> w;
  std::vector<int32_t> counts, offsets;
};

Brute BruteForce(const std::vector<float>& logits, int64_t t, int e, int k,
                 RouterGating g) {
  Brute b;
  b.counts.assign(e, 0);
  for (int64_t r = 0; r < t; ++r) {
    const float* row = logits.data() + r * e;
    std::vector<int32_t> order(e);
    std::iota(order.begin(), order.end(), 0);
    // Stable sort by descending logit: equal logits keep ascending index.
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t c) { return row[a] > row[c]; });
    double all = 0.0, sel = 0.0;
    for (int i = 0; i < e; ++i) all += std::exp(double{row[i]});
    for (int j = 0; j < k; ++j) sel += std::exp(double{row[order[j]]});
    for (int j = 0; j < k; ++j) {
      b.idx.push_back(order[j]);
      ++b.counts[order[j]];
      b.w.push_back(std::exp(double{row[order[j]]}) /
                    (g == RouterGating::kRenormalized ? sel : all));
    }
  }
  b.offsets.assign(e + 1, 0);
  for (int i = 0; i < e; ++i) b.offsets[i + 1] = b.offsets[i] + b.counts[i];
  return b;
}

void CheckAgainstBruteForce(const std::vector<float>& logits, int64_t t, int e,
                            int k, RouterGating g) {
  SCOPED_TRACE(testing::Message() << "T=" << t << " E=" << e << " k=" << k
                                  << " gating=" << static_cast<int>(g));
  std::vector<int32_t> idx(t * k), counts(e), offsets(e + 1);
  std::vector<float> w(t * k);
  RouterTopKRef(logits.data(), t, e, k, g, idx.data(), w.data(), counts.data(),
                offsets.data());
  const Brute b = BruteForce(logits, t, e, k, g);
  EXPECT_EQ(idx, b.idx);
  EXPECT_EQ(counts, b.counts);
  EXPECT_EQ(offsets, b.offsets);
  std::vector<double> got(w.begin(), w.end());
  // Tolerance: float exp and a float sum of <= 64 terms in [0, 1], each
  // rounding ~6e-8 relative: 64 * 6e-8 ~ 4e-6 relative; atol for tiny
  // weights.
  const CompareResult r =
      CompareClose(b.w.data(), got.data(), got.size(), 1e-7, 1e-5);
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(RouterTopKRefTest, ShapeGridMatchesBruteForceWithTies) {
  for (int64_t t : {0, 1, 7, 4096}) {
    for (int e : {1, 8, 64}) {
      for (int k : {1, 2, e}) {
        if (k > e) continue;
        for (RouterGating g :
             {RouterGating::kRenormalized, RouterGating::kNoRenorm}) {
          CheckAgainstBruteForce(TiedLogits(t, e, 100 * t + e + k), t, e, k, g);
        }
      }
    }
  }
}

TEST(RouterTopKRefTest, AllTokensToOneExpertAndAllTied) {
  const int64_t t = 33;
  const int e = 8;
  std::vector<float> logits(t * e, 0.0f);
  // Every logit equal: the tie rule picks experts 0..k-1 in order.
  CheckAgainstBruteForce(logits, t, e, 3, RouterGating::kRenormalized);
  std::vector<int32_t> idx(t * 3), counts(e), offsets(e + 1);
  std::vector<float> w(t * 3);
  RouterTopKRef(logits.data(), t, e, 3, RouterGating::kRenormalized, idx.data(),
                w.data(), counts.data(), offsets.data());
  for (int64_t r = 0; r < t; ++r) {
    EXPECT_EQ(idx[r * 3 + 0], 0);
    EXPECT_EQ(idx[r * 3 + 2], 2);
  }
  // Expert 5 dominates every row.
  for (int64_t r = 0; r < t; ++r) logits[r * e + 5] = 9.0f;
  RouterTopKRef(logits.data(), t, e, 1, RouterGating::kNoRenorm, idx.data(),
                w.data(), counts.data(), offsets.data());
  EXPECT_EQ(counts[5], t);
  EXPECT_EQ(offsets[5], 0);
  EXPECT_EQ(offsets[6], t);
  CheckAgainstBruteForce(logits, t, e, 1, RouterGating::kNoRenorm);
}

TEST(RouterTopKRefTest, BackwardMatchesFiniteDifferences) {
  const int64_t t = 7;
  for (int e : {1, 8}) {
    for (int k : {1, 2, e}) {
      if (k > e) continue;
      for (RouterGating g :
           {RouterGating::kRenormalized, RouterGating::kNoRenorm}) {
        SCOPED_TRACE(testing::Message() << "E=" << e << " k=" << k
                                        << " g=" << static_cast<int>(g));
        // Distinct logits spaced 0.25 apart: a step h = 1e-2 never changes
        // the selection, so the loss is smooth around the point.
        Rng rng(e * 10 + k);
        std::vector<float> logits(t * e);
        for (int64_t r = 0; r < t; ++r) {
          std::vector<int> perm = rng.Permutation(e);
          for (int i = 0; i < e; ++i) logits[r * e + i] = 0.25f * perm[i];
        }
        std::vector<float> c(t * k);
        for (float& x : c) x = static_cast<float>(rng.UniformDouble() - 0.5);
        auto loss = [&](const std::vector<float>& l) {
          std::vector<int32_t> idx(t * k);
          std::vector<float> w(t * k);
          RouterTopKRef(l.data(), t, e, k, g, idx.data(), w.data(), nullptr,
                        nullptr);
          double s = 0.0;
          for (int64_t i = 0; i < t * k; ++i) s += double{c[i]} * w[i];
          return s;
        };
        std::vector<int32_t> idx(t * k);
        std::vector<float> w(t * k), grad(t * e);
        RouterTopKRef(logits.data(), t, e, k, g, idx.data(), w.data(), nullptr,
                      nullptr);
        RouterTopKBackwardRef(logits.data(), idx.data(), w.data(), c.data(), t,
                              e, k, g, grad.data());
        const float h = 1e-2f;
        std::vector<double> fd(t * e), got(grad.begin(), grad.end());
        for (int64_t i = 0; i < t * e; ++i) {
          std::vector<float> p = logits, m = logits;
          p[i] += h;
          m[i] -= h;
          fd[i] = (loss(p) - loss(m)) / (2.0 * h);
        }
        // Tolerance: central differences err by O(h^2) ~ 1e-4 times the third
        // derivative (< 1 for softmax), float rounding of the loss ~1e-7 / h.
        const CompareResult r =
            CompareClose(fd.data(), got.data(), fd.size(), 5e-4, 1e-3);
        EXPECT_TRUE(r.ok) << r.message;
      }
    }
  }
}

TEST(RouterTopKRefTest, ValidationNamesTheField) {
  EXPECT_TRUE(ValidateRouterArgs(5, 8, 2, true).ok());
  absl::Status s = ValidateRouterArgs(5, 8, 9, false);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("top_k"), std::string::npos);
  s = ValidateRouterArgs(5, 300, 2, true);
  EXPECT_NE(s.message().find("num_experts"), std::string::npos);
  EXPECT_TRUE(ValidateRouterArgs(5, 300, 2, false).ok());
  EXPECT_FALSE(ValidateRouterArgs(-1, 8, 2, false).ok());
}

}  // namespace
}  // namespace smoe::kernels
