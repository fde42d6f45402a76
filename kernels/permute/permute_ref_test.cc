// Copyright 2026 SMoE Lab authors.
//
// CPU tests of the permute / combine references against brute force, the
// permute -> unpermute identity, finite differences for the backward, and the
// GPU row gather's vector-width choice.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "common/rng.h"
#include "gtest/gtest.h"
#include "kernels/common/compare.h"
#include "kernels/permute/gather_vector.h"
#include "kernels/permute/permute.h"

namespace smoe::kernels {
namespace {

// Owns the buffers of a host plan.
struct HostPlan {
  std::vector<int32_t> sorted, dest, offsets;
  PermutePlan plan;
  HostPlan(int64_t t, int k, int e)
      : sorted(t * k), dest(t * k), offsets(e + 1) {
    plan = {sorted.data(), dest.data(), offsets.data(), t, k, e};
  }
};

// Each token picks k distinct experts at random.
std::vector<int32_t> RandomTopk(int64_t t, int k, int e, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> idx;
  for (int64_t r = 0; r < t; ++r) {
    for (int x : rng.SampleWithoutReplacement(e, k)) idx.push_back(x);
  }
  return idx;
}

std::vector<float> RandomFloats(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(2.0 * rng.UniformDouble() - 1.0);
  return v;
}

void CheckPlanAgainstBruteForce(const std::vector<int32_t>& topk, int64_t t,
                                int k, int e) {
  SCOPED_TRACE(testing::Message() << "T=" << t << " E=" << e << " k=" << k);
  HostPlan hp(t, k, e);
  BuildPermutePlanRef(topk.data(), hp.plan);
  // Brute force: sort (expert, flat index) pairs.
  std::vector<std::pair<int32_t, int32_t>> pairs;
  for (int64_t f = 0; f < t * k; ++f) {
    pairs.push_back({topk[f], static_cast<int32_t>(f)});
  }
  std::sort(pairs.begin(), pairs.end());
  std::vector<int32_t> want_sorted, want_offsets(e + 1, 0);
  for (const auto& p : pairs) {
    want_sorted.push_back(p.second);
    ++want_offsets[p.first + 1];
  }
  std::partial_sum(want_offsets.begin(), want_offsets.end(),
                   want_offsets.begin());
  EXPECT_EQ(hp.sorted, want_sorted);
  EXPECT_EQ(hp.offsets, want_offsets);
  for (int64_t p = 0; p < t * k; ++p) {
    ASSERT_EQ(hp.dest[hp.sorted[p]], p);
  }
}

TEST(PermuteRefTest, PlanShapeGridMatchesBruteForce) {
  for (int64_t t : {0, 1, 7, 4096}) {
    for (int e : {1, 8, 64}) {
      for (int k : {1, 2, e}) {
        if (k > e) continue;
        CheckPlanAgainstBruteForce(RandomTopk(t, k, e, t * 131 + e * 7 + k), t,
                                   k, e);
      }
    }
  }
  // Every token routed to expert 3 (k = 1), and to experts {3, 0} (k = 2).
  CheckPlanAgainstBruteForce(std::vector<int32_t>(100, 3), 100, 1, 8);
  std::vector<int32_t> two;
  for (int i = 0; i < 50; ++i) two.insert(two.end(), {3, 0});
  CheckPlanAgainstBruteForce(two, 50, 2, 8);
}

TEST(PermuteRefTest, PermuteThenUnpermuteIsIdentityAndCombineMatches) {
  for (int64_t hidden : {1, 5, 130}) {
    for (int k : {1, 2, 8}) {
      const int64_t t = 37;
      const int e = 8;
      SCOPED_TRACE(testing::Message() << "hidden=" << hidden << " k=" << k);
      HostPlan hp(t, k, e);
      BuildPermutePlanRef(RandomTopk(t, k, e, hidden + k).data(), hp.plan);
      const std::vector<float> x = RandomFloats(t * hidden, 1);
      std::vector<float> perm(t * k * hidden), back(t * k * hidden);
      PermuteRef(x.data(), hidden, hp.plan, perm.data());
      UnpermuteRef(perm.data(), hidden, hp.plan, back.data());
      for (int64_t r = 0; r < t; ++r) {
        for (int j = 0; j < k; ++j) {
          for (int64_t c = 0; c < hidden; ++c) {
            ASSERT_EQ(back[(r * k + j) * hidden + c], x[r * hidden + c]);
          }
        }
      }
      // Combine of the permuted copy with weights summing to 1 gives x back
      // up to rounding; with arbitrary weights it matches a double sum.
      const std::vector<float> w = RandomFloats(t * k, 2);
      std::vector<float> out(t * hidden);
      CombineRef(perm.data(), w.data(), hidden, hp.plan, out.data());
      std::vector<double> want(t * hidden, 0.0), got(out.begin(), out.end());
      for (int64_t r = 0; r < t; ++r) {
        for (int j = 0; j < k; ++j) {
          for (int64_t c = 0; c < hidden; ++c) {
            want[r * hidden + c] += double{w[r * k + j]} * x[r * hidden + c];
          }
        }
      }
      // Tolerance: k <= 8 float products and sums of magnitude <= 8, each
      // rounding 6e-8 relative -> < 1e-6 absolute.
      const CompareResult cr =
          CompareClose(want.data(), got.data(), want.size(), 1e-6, 1e-6);
      EXPECT_TRUE(cr.ok) << cr.message;
    }
  }
}

// <f(x), g> for linear maps: the backward must be the adjoint, which finite
// differences of the scalar loss <f(x), g> measure exactly (f is linear).
TEST(PermuteRefTest, BackwardMatchesFiniteDifferences) {
  const int64_t t = 7, hidden = 3;
  const int e = 8;
  for (int k : {1, 2, 8}) {
    SCOPED_TRACE(testing::Message() << "k=" << k);
    HostPlan hp(t, k, e);
    BuildPermutePlanRef(RandomTopk(t, k, e, 40 + k).data(), hp.plan);
    const std::vector<float> x = RandomFloats(t * hidden, 3);
    const std::vector<float> y = RandomFloats(t * k * hidden, 4);  // experts
    const std::vector<float> w = RandomFloats(t * k, 5);
    const std::vector<float> g_perm = RandomFloats(t * k * hidden, 6);
    const std::vector<float> g_out = RandomFloats(t * hidden, 7);
    auto dot = [](const std::vector<float>& a, const std::vector<float>& b) {
      double s = 0.0;
      for (size_t i = 0; i < a.size(); ++i) s += double{a[i]} * b[i];
      return s;
    };
    auto permute_loss = [&](const std::vector<float>& xx) {
      std::vector<float> p(t * k * hidden);
      PermuteRef(xx.data(), hidden, hp.plan, p.data());
      return dot(p, g_perm);
    };
    auto combine_loss = [&](const std::vector<float>& yy,
                            const std::vector<float>& ww) {
      std::vector<float> o(t * hidden);
      CombineRef(yy.data(), ww.data(), hidden, hp.plan, o.data());
      return dot(o, g_out);
    };
    std::vector<float> gx(t * hidden), gy(t * k * hidden), gw(t * k);
    PermuteBackwardRef(g_perm.data(), hidden, hp.plan, gx.data());
    CombineBackwardRef(g_out.data(), y.data(), w.data(), hidden, hp.plan,
                       gy.data(), gw.data());
    const float h = 0.125f;  // exact in float; the losses are linear in it
    auto fd = [&](auto loss, std::vector<float> v, size_t i) {
      std::vector<float> p = v, m = v;
      p[i] += h;
      m[i] -= h;
      return (loss(p) - loss(m)) / (2.0 * h);
    };
    // Tolerance: the losses are linear in each input, so central differences
    // are exact up to float rounding of sums of <= 24 terms (~1e-6).
    const double atol = 1e-5, eps = 1e-5;
    for (size_t i = 0; i < gx.size(); ++i) {
      const double want = fd(permute_loss, x, i);
      EXPECT_NEAR(gx[i], want, atol + eps * std::abs(want)) << "grad_x " << i;
    }
    for (size_t i = 0; i < gy.size(); ++i) {
      const double want =
          fd([&](const std::vector<float>& v) { return combine_loss(v, w); }, y,
             i);
      EXPECT_NEAR(gy[i], want, atol + eps * std::abs(want)) << "grad_y " << i;
    }
    for (size_t i = 0; i < gw.size(); ++i) {
      const double want =
          fd([&](const std::vector<float>& v) { return combine_loss(y, v); }, w,
             i);
      EXPECT_NEAR(gw[i], want, atol + eps * std::abs(want)) << "grad_w " << i;
    }
  }
}

TEST(PermuteRefTest, ValidationNamesTheField) {
  EXPECT_TRUE(ValidatePermuteArgs(4, 8, 2, 16, true).ok());
  EXPECT_NE(ValidatePermuteArgs(4, 8, 2, 0, false).message().find("hidden"),
            std::string::npos);
  EXPECT_NE(
      ValidatePermuteArgs(4, 2000, 2, 1, true).message().find("num_experts"),
      std::string::npos);
  const std::vector<int32_t> bad = {0, 1, 8, 2};
  const absl::Status s = ValidateTopkIdx(bad.data(), 2, 2, 8);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("topk_idx[1, 0] = 8"), std::string::npos)
      << s.message();
}

TEST(PermuteRefTest, GatherVectorIsWidestAlignedDivisor) {
  const uintptr_t base = 0x10000;  // 16-byte aligned
  // f32 rows: 16 B when hidden % 4 == 0, else 4 B.
  EXPECT_EQ(GatherRowsVectorBytes(4 * 256, base, base), 16);
  EXPECT_EQ(GatherRowsVectorBytes(4 * 5, base, base), 4);
  // bf16 rows: 16 B when hidden % 8 == 0, 4 B when even, 2 B when odd (was
  // byte copies).
  EXPECT_EQ(GatherRowsVectorBytes(2 * 4096, base, base), 16);
  EXPECT_EQ(GatherRowsVectorBytes(2 * 6, base, base), 4);
  EXPECT_EQ(GatherRowsVectorBytes(2 * 5, base, base), 2);
  EXPECT_EQ(GatherRowsVectorBytes(2 * 4095, base, base), 2);
  // A pointer's alignment caps the width.
  EXPECT_EQ(GatherRowsVectorBytes(2 * 4096, base + 2, base), 2);
  EXPECT_EQ(GatherRowsVectorBytes(2 * 4096, base, base + 4), 4);
  EXPECT_EQ(GatherRowsVectorBytes(2 * 4096, base + 1, base), 1);
  // Odd byte counts (not a kernel dtype) take bytes.
  EXPECT_EQ(GatherRowsVectorBytes(7, base, base), 1);
  static_assert(GatherRowsVectorBytes(10, 0, 0) == 2);
}

}  // namespace
}  // namespace smoe::kernels
