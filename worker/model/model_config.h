// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/model_config.h
//
// Plain-C++ description of the SRAVEN SMoE transformer (docs/sraven.md
// sections 2, 3 and 5). No LibTorch here, so the trainer's TRIAL.json parser
// and other non-torch code can build and validate a config cheaply.
//
// Sizes follow the width multiplier w (docs/sraven.md 2.1):
//   D = 128w, H = 16w, qk_dim = v_dim = 64w (totals over heads, so the
//   per-head size is always 4), mlp = 256w.
// Fractional w is allowed as long as 16w is a positive integer (w = 1/16,
// 1/8, 0.25, 0.5, ...), which keeps every size integral; CPU tests use it.
//
// Thread safety: plain values.
#ifndef SMOE_WORKER_MODEL_MODEL_CONFIG_H_
#define SMOE_WORKER_MODEL_MODEL_CONFIG_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/router_topk/router_topk.h"

namespace smoe::model {

// Attention variants of docs/sraven.md section 3 (names in brackets are the
// strings ParseAttentionKind accepts).
enum class AttentionKind {
  kSoftmax,                 // [softmax] 3.1
  kLinear,                  // [linear] 3.2: no normalisation
  kHyla,                    // [hyla] 3.3: RMSHead + 2-layer ReLU value net
  kLinearRmsHead,           // [linear_rms_head] RMSHead + linear value net
  kHylaNoRmsHead,           // [hyla_no_rms_head] none + 2-layer ReLU
  kHylaMlpLinear,           // [hyla_mlp_linear] RMSHead + 2-layer identity
  kHylaMlpLinearNoRmsHead,  // [hyla_mlp_linear_no_rms_head] none + identity
  kSoftmaxHyla,             // [softmax_hyla] softmax over keys + 2-layer ReLU
};

// How the scores are normalised into the latent code a_{h,q,k}.
enum class ScoreNorm { kNone, kSoftmaxOverKeys, kRmsOverHeads };
// The per-(q,k) value network (docs/sraven.md 3, HYLA steps 3-5).
enum class ValueNet { kLinear, kTwoLayerRelu, kTwoLayerIdentity };

ScoreNorm ScoreNormOf(AttentionKind kind);
ValueNet ValueNetOf(AttentionKind kind);

// Feed-forward router (docs/sraven.md section 5; Soft MoE 5.1).
enum class RouterKind {
  kTopK,  // [topk] sparse top-k gating, no token dropping
  kSoft,  // [soft] Soft MoE; eval with top_k < E uses Algorithm 1
};

// Top-k gate values: the kernels' enum is the model's too (one gating
// vocabulary from the config string down to the CUDA kernel; kernels/ sits
// below worker/model, so this adds no dependency and needs no mapping):
//   kRenormalized [topk_then_softmax] softmax over the chosen k logits
//   kNoRenorm     [softmax_then_topk] softmax over all E, keep top k
using kernels::RouterGating;

// How tokens reach the experts (same math, different cost).
enum class Dispatch {
  kGather,  // [gather] sort tokens by expert, run each expert on its tokens
  kDense,   // [dense] run every expert on every token, mask by the gates
  kOps,     // [ops] worker/model/ops: router/permute/grouped-GEMM/combine
            // autograd ops over kernels/ (CUDA kernels on GPU, the CPU
            // references on CPU); gate weights applied in the combine
};

absl::StatusOr<AttentionKind> ParseAttentionKind(absl::string_view name);
absl::StatusOr<RouterKind> ParseRouterKind(absl::string_view name);
absl::StatusOr<RouterGating> ParseRouterGating(absl::string_view name);
absl::StatusOr<Dispatch> ParseDispatch(absl::string_view name);
const char* AttentionKindName(AttentionKind kind);
const char* RouterKindName(RouterKind kind);
const char* RouterGatingName(RouterGating gating);
const char* DispatchName(Dispatch dispatch);

struct ModelConfig {
  int num_features = 4;  // M: T = 9M tokens, loss on the last M
  int num_values = 8;    // F: one-hot input size and number of classes
  double width = 1.0;    // w (16w must be a positive integer)
  int depth = 4;         // L
  AttentionKind attention = AttentionKind::kSoftmax;
  double attention_dropout = 0.1;  // training only; one T x T mask per call
  int num_experts = 8;             // E; 1 = the dense model (no router)
  int top_k = 2;                   // k; for kSoft: experts kept at eval
  RouterKind router = RouterKind::kTopK;
  RouterGating gating = RouterGating::kRenormalized;
  // kOps: on CPU 1.2-2.4x faster per layer than kGather (bench/results/
  // moe-layer-cpu-2026-11-22.md), same math up to summation order; on CUDA
  // the project's kernels.
  Dispatch dispatch = Dispatch::kOps;
  int soft_slots_per_expert = 1;    // p (Algorithm 1 assumes p = 1)
  double load_balance_alpha = 0.0;  // Switch aux loss weight; 0 = off

  int seq_len() const { return 9 * num_features; }
  int model_dim() const { return Scaled(128); }
  int num_heads() const { return Scaled(16); }
  int qk_dim() const { return Scaled(64); }
  int v_dim() const { return Scaled(64); }
  int mlp_dim() const { return Scaled(256); }
  int head_dim() const { return qk_dim() / num_heads(); }  // = 4

 private:
  int Scaled(int base) const { return static_cast<int>(base * width + 0.5); }
};

// Checks every field; InvalidArgument naming the field and its value.
absl::Status ValidateModelConfig(const ModelConfig& config);

// One-sided T5 relative-position bucket (docs/sraven.md 2.2), in float32 like
// the original: n = max(query_pos - key_pos, 0); n < nb/2 -> n; otherwise
// min(nb/2 + floor(ln(n/(nb/2) + eps32) / ln(max_distance/(nb/2)) *
// (nb - nb/2)), nb - 1), with nb/2 integer division.
// REQUIRES: num_buckets >= 2, max_distance > num_buckets / 2.
int RelativePositionBucket(int query_pos, int key_pos, int num_buckets,
                           int max_distance);

}  // namespace smoe::model

#endif  // SMOE_WORKER_MODEL_MODEL_CONFIG_H_
