// Copyright 2026 SMoE Lab authors.
#include "kernels/permute/permute_check.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/device_check.h"
#include "kernels/permute/permute.h"

namespace smoe::kernels {
namespace {

// Random top-k routing: k distinct experts per token (0..k-1 with
// `one_expert`).
std::vector<int32_t> RandomRouting(int64_t t, int e, int k, bool one_expert,
                                   std::mt19937& rng) {
  std::vector<int32_t> topk;
  std::vector<int> experts(e);
  for (int64_t r = 0; r < t; ++r) {
    for (int i = 0; i < e; ++i) experts[i] = i;
    std::shuffle(experts.begin(), experts.end(), rng);
    if (one_expert) std::sort(experts.begin(), experts.end());
    topk.insert(topk.end(), experts.begin(), experts.begin() + k);
  }
  return topk;
}

// bf16: permute copies exactly; combine rounds once at the end (bf16 has
// 8 mantissa bits: eps 2^-8 relative on the f32 result of bf16 inputs).
absl::Status CheckBf16(const std::vector<float>& x, const std::vector<float>& w,
                       const DeviceMem& d_w, int64_t t, int64_t hidden,
                       const PermutePlan& hp, const PermutePlan& dp,
                       DeviceComparisons& cmp) {
  const int64_t rows = hp.num_rows();
  const std::vector<__nv_bfloat16> xb = ToBf16(x);
  DeviceMem d_xb, d_pb, d_cb;
  SMOE_RETURN_IF_ERROR(Upload(xb, &d_xb));
  SMOE_RETURN_IF_ERROR(Poisoned<__nv_bfloat16>(rows * hidden, &d_pb));
  SMOE_RETURN_IF_ERROR(Poisoned<__nv_bfloat16>(t * hidden, &d_cb));
  SMOE_RETURN_IF_ERROR(
      Permute(d_xb.get(), DType::kBFloat16, hidden, dp, d_pb.get(), nullptr));
  SMOE_RETURN_IF_ERROR(Combine(d_pb.get(), d_w.as<float>(), DType::kBFloat16,
                               hidden, dp, d_cb.get(), nullptr));
  std::vector<float> xbf = FromBf16(xb), pref(rows * hidden), cref(t * hidden);
  PermuteRef(xbf.data(), hidden, hp, pref.data());
  CombineRef(pref.data(), w.data(), hidden, hp, cref.data());
  SMOE_RETURN_IF_ERROR(cmp.ExactBf16("permute bf16", pref, d_pb));
  return cmp.Close<__nv_bfloat16>("combine bf16", cref, d_cb, 1e-5, 1.0 / 256);
}

}  // namespace

absl::Status CheckPermute(const PermuteCheckCase& c, std::mt19937& rng,
                          bool inject_fault,
                          std::vector<KernelComparison>* out) {
  const int64_t t = c.tokens, hidden = c.hidden;
  const int e = c.experts, k = c.k;
  DeviceComparisons cmp(
      absl::StrCat("permute T=", t, " E=", e, " k=", k, " hidden=", hidden,
                   c.one_expert ? " one-expert" : "", ": "),
      inject_fault, out);
  const std::vector<int32_t> topk = RandomRouting(t, e, k, c.one_expert, rng);
  const int64_t rows = t * k;
  std::vector<int32_t> sorted(rows), dest(rows), off(e + 1);
  const PermutePlan hp{sorted.data(), dest.data(), off.data(), t, k, e};
  BuildPermutePlanRef(topk.data(), hp);

  DeviceMem d_topk, d_sorted, d_dest, d_off, d_cnt, d_ws;
  SMOE_RETURN_IF_ERROR(Upload(topk, &d_topk));
  SMOE_RETURN_IF_ERROR(Poisoned<int32_t>(rows, &d_sorted));
  SMOE_RETURN_IF_ERROR(Poisoned<int32_t>(rows, &d_dest));
  SMOE_RETURN_IF_ERROR(Poisoned<int32_t>(e + 1, &d_off));
  SMOE_RETURN_IF_ERROR(Poisoned<int32_t>(e, &d_cnt));
  SMOE_RETURN_IF_ERROR(d_ws.Alloc(PermutePlanWorkspaceBytes(t, k, e)));
  const PermutePlan dp{d_sorted.as<int32_t>(),
                       d_dest.as<int32_t>(),
                       d_off.as<int32_t>(),
                       t,
                       k,
                       e};
  SMOE_RETURN_IF_ERROR(BuildPermutePlan(
      d_topk.as<int32_t>(), dp, d_cnt.as<int32_t>(), d_ws.get(), nullptr));
  SMOE_RETURN_IF_ERROR(cmp.Exact("plan sorted_idx", sorted, d_sorted));
  SMOE_RETURN_IF_ERROR(cmp.Exact("plan dest_idx", dest, d_dest));
  SMOE_RETURN_IF_ERROR(cmp.Exact("plan expert_offsets", off, d_off));

  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(t * hidden), w(rows), y(rows * hidden), gout(t * hidden);
  for (float& v : x) v = u(rng);
  for (float& v : w) v = u(rng);
  for (float& v : y) v = u(rng);
  for (float& v : gout) v = u(rng);
  std::vector<float> perm(rows * hidden), unperm(rows * hidden), gx(t * hidden),
      comb(t * hidden), gy(rows * hidden), gw(rows);
  PermuteRef(x.data(), hidden, hp, perm.data());
  UnpermuteRef(perm.data(), hidden, hp, unperm.data());
  PermuteBackwardRef(y.data(), hidden, hp, gx.data());
  CombineRef(y.data(), w.data(), hidden, hp, comb.data());
  CombineBackwardRef(gout.data(), y.data(), w.data(), hidden, hp, gy.data(),
                     gw.data());

  DeviceMem d_x, d_w, d_y, d_gout, d_perm, d_unperm, d_gx, d_comb, d_gy, d_gw;
  SMOE_RETURN_IF_ERROR(Upload(x, &d_x));
  SMOE_RETURN_IF_ERROR(Upload(w, &d_w));
  SMOE_RETURN_IF_ERROR(Upload(y, &d_y));
  SMOE_RETURN_IF_ERROR(Upload(gout, &d_gout));
  SMOE_RETURN_IF_ERROR(Poisoned<float>(rows * hidden, &d_perm));
  SMOE_RETURN_IF_ERROR(Poisoned<float>(rows * hidden, &d_unperm));
  SMOE_RETURN_IF_ERROR(Poisoned<float>(t * hidden, &d_gx));
  SMOE_RETURN_IF_ERROR(Poisoned<float>(t * hidden, &d_comb));
  SMOE_RETURN_IF_ERROR(Poisoned<float>(rows * hidden, &d_gy));
  SMOE_RETURN_IF_ERROR(Poisoned<float>(rows, &d_gw));
  const DType f32 = DType::kFloat32;
  SMOE_RETURN_IF_ERROR(
      Permute(d_x.get(), f32, hidden, dp, d_perm.get(), nullptr));
  SMOE_RETURN_IF_ERROR(
      Unpermute(d_perm.get(), f32, hidden, dp, d_unperm.get(), nullptr));
  SMOE_RETURN_IF_ERROR(
      PermuteBackward(d_y.get(), f32, hidden, dp, d_gx.get(), nullptr));
  SMOE_RETURN_IF_ERROR(Combine(d_y.get(), d_w.as<float>(), f32, hidden, dp,
                               d_comb.get(), nullptr));
  SMOE_RETURN_IF_ERROR(CombineBackward(d_gout.get(), d_y.get(), d_w.as<float>(),
                                       f32, hidden, dp, d_gy.get(),
                                       d_gw.as<float>(), nullptr));
  // Copies are exact.
  SMOE_RETURN_IF_ERROR(cmp.Exact("permute f32", perm, d_perm));
  SMOE_RETURN_IF_ERROR(cmp.Exact("unpermute f32", unperm, d_unperm));
  // Tolerance: k-term sums in the same order; the device may contract
  // a + w * y into one FMA (one rounding fewer): <= k ulps of values <= k.
  SMOE_RETURN_IF_ERROR(cmp.Close("permute backward f32", gx, d_gx, 1e-5, 1e-5));
  SMOE_RETURN_IF_ERROR(cmp.Close("combine f32", comb, d_comb, 1e-5, 1e-5));
  SMOE_RETURN_IF_ERROR(
      cmp.Close("combine backward grad_out f32", gy, d_gy, 1e-6, 1e-5));
  // grad_topk_weights: a hidden-long dot product reduced as a tree.
  SMOE_RETURN_IF_ERROR(cmp.Close("combine backward grad_weights f32", gw, d_gw,
                                 1e-6 * static_cast<double>(hidden), 1e-5));
  if (!c.with_bf16) return absl::OkStatus();
  return CheckBf16(x, w, d_w, t, hidden, hp, dp, cmp);
}

}  // namespace smoe::kernels
