// Copyright 2026 SMoE Lab authors.
//
// kind "sraven": train an SMoE transformer on SRAVEN and evaluate it
// (docs/sraven.md). One line per parameter; the defaults are the reference
// setup (docs/sraven.md, "Training"), and ModelConfig / TrainConfig start
// from the same values (tests/trials/trial_params_test.cc).
//
// Where a bound is not the task's own:
//   num_experts, top_k <= 256: the CUDA router kernel's limit
//     (kernels::kMaxRouterExperts); the default dispatch `ops` runs it on
//     GPUs, so a larger E would pass here and fail at the first forward.
//   depth <= 256, width in [1/16, 256] with 16w an integer: the model's own
//     limits (model::ValidateModelConfig); every size is then integral.
//   ep_size <= 64: at most 64 ranks (resources.ep_size has the same bound).
//   counts (steps, warmup, cadences) <= 1e9 and num_eval <= 1e8: far past
//     any run, small enough that products like steps * batch_size stay
//     exact.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "trials/params.h"
#include "trials/sraven_rules.h"

namespace smoe::trials {

const TrialKind& SravenKind() {
  static const auto* kind = new TrialKind{
      "sraven",
      "train an SMoE transformer on SRAVEN, then evaluate it (test, OOD)",
      /*integral_floats=*/true,
      /*dotted_ranges=*/true,
      {
          // clang-format off
Int("M", 4, 1, 8, "task difficulty: features (rules) per panel; sequence length 9M"),
Int("num_rules", 8, 1, 8, "size of the rule pool"),
Number("frac_ood", 0.25, ClosedOpen(0, 1), "share of rule combinations held out for the OOD split"),
Bool("shared_stream", false, "test and OOD batches reuse the training stream (the reference's quirk)"),
Int("num_experts", 8, 1, 256, "experts per SMoE layer; 1 = the dense model"),
Int("top_k", 2, 1, 256, "experts per token (<= num_experts); soft router: experts kept at evaluation"),
Choice("router", "topk", {"topk", "soft"}, "topk: sparse top-k gating; soft: Soft MoE"),
Choice("gating", "topk_then_softmax", {"topk_then_softmax", "softmax_then_topk"}, "gate values: softmax over the chosen k, or top k of the softmax over all experts"),
Choice("dispatch", "ops", {"ops", "gather", "dense"}, "how tokens reach experts (same math): ops = router/permute/grouped-GEMM/combine kernels, gather = index_select/index_add, dense = all experts, masked"),
Int("soft_slots", 1, 1, 1024, "Soft MoE slots per expert"),
Number("load_balance_alpha", 0, Closed(0, 10), "Switch load-balancing loss weight; 0 = off"),
Choice("attention", "softmax", {"softmax", "linear", "hyla", "linear_rms_head", "hyla_no_rms_head", "hyla_mlp_linear", "hyla_mlp_linear_no_rms_head", "softmax_hyla"}, "attention variant (docs/sraven.md); hyla = HYLA"),
Number("attention_dropout", 0.1, ClosedOpen(0, 1), "dropout on the attention weights, training only"),
Number("width", 1, Closed(1.0 / 16, 256), "width multiplier w: D = 128w, H = 16w, MLP 256w").MultipleOf(1.0 / 16),
Int("depth", 4, 1, 256, "transformer blocks"),
Int("steps", 156250, 1, 1000000000, "training steps (20M problems at batch 128)"),
Int("batch_size", 128, 1, 65536, "problems per step, over all ranks"),
Number("lr", 1e-3, OpenClosed(0, 1), "peak AdamW learning rate"),
Number("weight_decay", 0.1, Closed(0, 10), "decoupled AdamW weight decay"),
Int("warmup", 1000, 0, 999999999, "linear warmup steps, < steps (left out: min(1000, steps/10)); then cosine decay to 0.1 lr"),
Int("eval_every", 10000, 1, 1000000000, "evaluate every this many steps (and at the end)"),
Int("eval_rungs_from", 0, 0, 1000000000, "also evaluate at eval_rungs_from * eval_rungs_eta^i (ASHA rungs; set by the coordinator for asha sweeps); 0 = off"),
Int("eval_rungs_eta", 3, 2, 1000, "the rungs' factor (ASHA's reduction)"),
Int("num_eval", 51200, 1, 100000000, "problems per evaluation split"),
Int("log_every", 1000, 1, 1000000000, "train/loss and progress every this many steps"),
Int("checkpoint_every", 5000, 1, 1000000000, "checkpoint every this many steps"),
Choice("device", "cpu", {"cpu", "cuda"}, "where the trial trains"),
Bool("bf16", false, "bfloat16 autocast (cpu or cuda)"),
Int("ep_size", 1, 1, 64, "expert-parallel ranks: divides num_experts and batch_size, router topk; 1 = as many as resources.ep_size started"),
          // clang-format on
      },
      // The view (KindView): the paper's question, OOD accuracy against
      // top_k, a line per M, a panel per attention; test accuracy charted
      // next to it; the E(k, N) theory over top_k x M; tuned on val_acc.
      {"top_k",
       "M",
       "attention",
       "ood_acc",
       {"ood_acc", "test_acc"},
       /*layout=*/"curves",
       /*theory_x=*/"top_k",
       /*theory_series=*/"M",
       /*select_by=*/"val_acc",
       /*reading_note=*/
       "(at M=1 the OOD split holds out whole rules, so OOD "
       "accuracy there stays near chance 1/8 by construction)"},
      &CheckSravenPointRules};
  return *kind;
}

double ApproxSravenModelParams(int64_t depth, double width,
                               int64_t num_experts) {
  return static_cast<double>(depth) * width * width *
         (32768.0 + 65536.0 * static_cast<double>(num_experts));
}

absl::Status CheckSravenModelSize(int64_t depth, double width,
                                  int64_t num_experts) {
  const double approx = ApproxSravenModelParams(depth, width, num_experts);
  // !(approx <= max) also refuses a NaN width.
  if (!(approx <= kMaxSravenModelParams)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "depth=%d, width=%g, num_experts=%d make a model of about %.3g "
        "parameters, more than %.0e (about 160 GB of fp32 weights and Adam "
        "state)",
        depth, width, num_experts, approx, kMaxSravenModelParams));
  }
  return absl::OkStatus();
}

absl::Status CheckSravenRules(const SravenShape& s) {
  // An explicit warmup must end before the run does (issue 31 item 1).
  if (s.warmup.has_value() && *s.warmup >= s.steps) {
    return absl::InvalidArgumentError(absl::StrCat(
        "warmup=", *s.warmup, " must be smaller than steps=", s.steps,
        " (the learning rate would never reach lr; leave warmup out for a "
        "tenth of the run, at most 1000)"));
  }
  if (s.top_k > s.num_experts) {
    return absl::InvalidArgumentError(absl::StrCat(
        "top_k=", s.top_k, " is larger than num_experts=", s.num_experts));
  }
  SMOE_RETURN_IF_ERROR(CheckSravenModelSize(s.depth, s.width, s.num_experts));
  if (s.ep_size > 1) {
    if (s.num_experts % s.ep_size != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("ep_size=", s.ep_size,
                       " does not divide num_experts=", s.num_experts));
    }
    if (s.batch_size % s.ep_size != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ep_size=", s.ep_size, " does not divide batch_size=", s.batch_size));
    }
    if (s.router != "topk") {
      return absl::InvalidArgumentError(
          absl::StrCat("ep_size=", s.ep_size,
                       " needs router: topk (got router: ", s.router, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSravenPointRules(const nlohmann::json& point) {
  const TrialKind& kind = SravenKind();
  // The value of a param, else its default.
  auto get = [&](const char* name) {
    return point.value(name, kind.Find(name)->default_value.get<int64_t>());
  };
  SravenShape shape;
  shape.steps = get("steps");
  if (point.contains("warmup")) shape.warmup = get("warmup");
  shape.num_experts = get("num_experts");
  shape.top_k = get("top_k");
  shape.depth = get("depth");
  shape.width =
      point.value("width", kind.Find("width")->default_value.get<double>());
  shape.ep_size = get("ep_size");
  shape.batch_size = get("batch_size");
  shape.router = point.value("router", kind.Find("router")->default_value)
                     .get<std::string>();
  return CheckSravenRules(shape);
}

}  // namespace smoe::trials
