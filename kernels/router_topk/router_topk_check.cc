// Copyright 2026 SMoE Lab authors.
#include "kernels/router_topk/router_topk_check.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/device_check.h"

namespace smoe::kernels {

absl::Status CheckRouterTopK(const RouterTopKCheckCase& c, std::mt19937& rng,
                             bool inject_fault,
                             std::vector<KernelComparison>* out) {
  const int64_t t = c.tokens;
  const int e = c.experts, k = c.k;
  const RouterGating g = c.gating;
  DeviceComparisons cmp(
      absl::StrCat("router T=", t, " E=", e, " k=", k,
                   g == RouterGating::kRenormalized ? " renorm" : " norenorm",
                   c.tied ? " tied" : "", ": "),
      inject_fault, out);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::uniform_int_distribution<int> ui(-4, 4);
  std::vector<float> logits(t * e);
  for (float& x : logits) x = c.tied ? 0.5f * ui(rng) : u(rng);
  std::vector<int32_t> idx(t * k), cnt(e), off(e + 1);
  std::vector<float> w(t * k);
  RouterTopKRef(logits.data(), t, e, k, g, idx.data(), w.data(), cnt.data(),
                off.data());
  DeviceMem d_logits, d_w, d_idx, d_cnt, d_off;
  SMOE_RETURN_IF_ERROR(Upload(logits, &d_logits));
  SMOE_RETURN_IF_ERROR(Poisoned<float>(t * k, &d_w));
  SMOE_RETURN_IF_ERROR(Poisoned<int32_t>(t * k, &d_idx));
  SMOE_RETURN_IF_ERROR(Poisoned<int32_t>(e, &d_cnt));
  SMOE_RETURN_IF_ERROR(Poisoned<int32_t>(e + 1, &d_off));
  SMOE_RETURN_IF_ERROR(RouterTopK(
      d_logits.as<float>(), t, e, k, g, d_idx.as<int32_t>(), d_w.as<float>(),
      d_cnt.as<int32_t>(), d_off.as<int32_t>(), nullptr));
  SMOE_RETURN_IF_ERROR(cmp.Exact("topk_idx", idx, d_idx));
  SMOE_RETURN_IF_ERROR(cmp.Exact("num_tokens_per_expert", cnt, d_cnt));
  SMOE_RETURN_IF_ERROR(cmp.Exact("expert_offsets", off, d_off));
  // Tolerance: device expf is within 2 ulp and the full-softmax sum is a
  // tree instead of a left fold: a few float ulps of a value <= 1.
  SMOE_RETURN_IF_ERROR(cmp.Close("topk_weights", w, d_w, 1e-6, 1e-5));

  // Backward on random upstream gradients.
  std::vector<float> gup(t * k), gl(t * e);
  for (float& x : gup) x = u(rng);
  RouterTopKBackwardRef(logits.data(), idx.data(), w.data(), gup.data(), t, e,
                        k, g, gl.data());
  DeviceMem d_gup, d_gl;
  SMOE_RETURN_IF_ERROR(Upload(gup, &d_gup));
  SMOE_RETURN_IF_ERROR(Poisoned<float>(t * e, &d_gl));
  // The backward reads the device forward's idx/weights (checked above).
  SMOE_RETURN_IF_ERROR(RouterTopKBackward(
      d_logits.as<float>(), d_idx.as<int32_t>(), d_w.as<float>(),
      d_gup.as<float>(), t, e, k, g, d_gl.as<float>(), nullptr));
  // Tolerance: products of values <= 3 with weights <= 1 and a k-term sum.
  return cmp.Close("grad_logits", gl, d_gl, 1e-5, 1e-4);
}

}  // namespace smoe::kernels
