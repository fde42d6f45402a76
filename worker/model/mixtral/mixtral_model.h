// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/mixtral/mixtral_model.h
//
// Inference runtime for Mixtral-format sparse MoE language models
// (docs/skillmix.md sections 2.1-2.3), in LibTorch.
//
// Per layer:  h = x + o_proj(attn(rope(q), rope(k), v)),  x_in = RMSNorm(x)
//             out = h + MoE(RMSNorm(h))
// * RMSNorm in fp32: x * rsqrt(mean(x^2) + eps), cast back, times weight.
// * RoPE in HF's rotate_half ("NEOX") form, inv_freq_i = theta^(-2i/head_dim).
// * Grouped-query attention: query head h reads KV head h / (H / H_kv);
//   scale 1/sqrt(head_dim); causal; with config.sliding_window = W a query at
//   position i sees keys at positions i-W+1 .. i (HF's rule); softmax in fp32.
// * Sparse MoE (section 2.1): router logits -> softmax over all E experts in
//   fp32 -> the EPT largest (ties: the lower expert index wins) -> weights
//   renormalised to sum 1 -> cast to the activation dtype -> weighted sum of
//   SwiGLU experts w2(silu(w1 x) * w3 x).
//
// EPT (experts per token) is a runtime value in 1..num_local_experts: the
// model's current value (initially config.num_experts_per_tok) is changed by
// SetExpertsPerToken without reloading, and any call may override it.
//
// Experts are stored stacked per layer ([E_local, F, H]) together with the
// global index of the first local expert. Expert parallelism
// (mixtral_expert_parallel.h): with MixtralLoadOptions::comm set, rank r of W
// holds experts [r*E/W, (r+1)*E/W) and everything else replicated;
// MoeForward returns this rank's partial sum and one AllReduceSum per layer
// completes it, so every rank gets the same logits. All ranks must then make
// the same calls (Step/Forward/Generate) with the same arguments, in the same
// order; every collective is bounded by the communicator's deadline.
//
// Devices: fp32 on the CPU; bf16/fp16 on CUDA (same code; only the tensors'
// options differ). Batch-1 decode on the CPU runs in the loops of
// mixtral_decode_cpu.h for fp32 and bf16 weights. The KV cache is preallocated
// per generation call.
//
// Thread safety: a MixtralModel is not thread-safe (SetExpertsPerToken and
// the forward calls must not race); its weights are read-only after Load.
#ifndef SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_MODEL_H_
#define SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_MODEL_H_

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/model/mixtral/mixtral_config.h"
#include "worker/model/routing.h"

namespace smoe::kernels {
class Communicator;
}  // namespace smoe::kernels

namespace smoe::model::mixtral {

// One decoder layer's weights ([out, in] like HF; no biases anywhere).
struct MixtralLayerWeights {
  torch::Tensor input_layernorm;           // [H]
  torch::Tensor q_proj;                    // [num_heads * head_dim, H]
  torch::Tensor k_proj;                    // [num_kv_heads * head_dim, H]
  torch::Tensor v_proj;                    // [num_kv_heads * head_dim, H]
  torch::Tensor o_proj;                    // [H, num_heads * head_dim]
  torch::Tensor post_attention_layernorm;  // [H]
  torch::Tensor gate;                      // [E, H] router (all E experts)
  torch::Tensor w1;                        // [E_local, F, H] SiLU branch
  torch::Tensor w3;                        // [E_local, F, H] up branch
  torch::Tensor w2;                        // [E_local, H, F] down
  int64_t first_expert = 0;                // global index of w1[0]
};

struct MixtralWeights {
  torch::Tensor embed_tokens;  // [V, H]
  std::vector<MixtralLayerWeights> layers;
  torch::Tensor norm;     // [H]
  torch::Tensor lm_head;  // [V, H] (the embedding when tied)
};

// ---- building blocks (tensor level; REQUIRES are not re-checked)
// -------------

// HF MixtralRMSNorm: fp32 normalisation, cast back to x's dtype, * weight.
torch::Tensor RmsNorm(const torch::Tensor& x, const torch::Tensor& weight,
                      double eps);

// Applies rotary embeddings to x [B, heads, T, head_dim] at integer
// `positions` [B, T] (rotate_half form; cos/sin computed in fp32).
torch::Tensor ApplyRope(const torch::Tensor& x, const torch::Tensor& positions,
                        double theta);

// Mixtral routing of N tokens (section 2.1): the model's router
// (ops::RouterTopK, worker/model/routing.h) on the logits [N, E] (any float
// dtype; routed in fp32) with RouterGating::kRenormalized, i.e. HF's softmax
// over all E, top k, renormalised to sum 1: topk_idx [N, K] int32 by
// descending logit (ties -> lower index), topk_weights [N, K] f32.
// REQUIRES: 1 <= top_k <= E.
RouterOutput RouteMixtral(const torch::Tensor& router_logits, int64_t top_k);

// Sparse MoE block on x [N, H] (the post-attention RMSNorm output) at
// `top_k` experts per token, over the SRAVEN layer's permute plan
// (ops::BuildPermutePlan / Permute / Combine): computes only the layer's
// local experts [first_expert, first_expert + E_local) on their expert-major
// rows and returns their weighted sum [N, H] (the full output when
// E_local == E; other experts' weights are zero in the combine). f16 rows
// are permuted and combined in f32 (the ops' dtypes), the experts run in
// x's dtype. REQUIRES: 1 <= top_k <= E.
torch::Tensor MoeForward(const torch::Tensor& x,
                         const MixtralLayerWeights& layer, int64_t top_k);

// Sets logits [B, V] outside the top-k (k > 0; ties at the k-th value are
// kept) and then outside the nucleus (top_p < 1: the smallest set of highest
// probabilities whose mass reaches top_p; always at least one token) to
// -inf, HF's TopK-then-TopP order. Returns a new tensor.
// REQUIRES: top_k >= 0, 0 < top_p <= 1.
torch::Tensor FilterLogits(const torch::Tensor& logits, int64_t top_k,
                           double top_p);

// ---- the model
// ----------------------------------------------------------------

struct MixtralLoadOptions {
  torch::Device device = torch::kCPU;
  torch::Dtype dtype = torch::kFloat32;  // compute dtype (f32, bf16, f16)
  // Expert parallelism: null = one process holding all experts. Otherwise
  // the rank and world size come from `comm` (not owned; must outlive the
  // model) and this rank holds only its shard of the experts
  // (MixtralExpertShardFor). The partial sums travel on CommDevice(*comm,
  // device) (worker/model/device.h): a host communicator (local, gloo) works
  // with any device (they are copied to the CPU); a device one (nccl) takes
  // the model's own tensors, so pair it with the rank's GPU.
  kernels::Communicator* comm = nullptr;
};

// Per-batch preallocated key/value cache. `pad[b]` leading slots of row b
// are left padding (never attended to); positions are slot - pad[b].
struct MixtralKvCache {
  std::vector<torch::Tensor> k, v;  // per layer [B, kv_heads, capacity, D]
  torch::Tensor pad;                // [B] int64 (CPU)
  int64_t length = 0;               // slots filled
  int64_t capacity = 0;
};

struct MixtralGenerationOptions {
  int64_t max_new_tokens = 512;
  double temperature = 0.7;  // 0: greedy (argmax, ties -> lower token id)
  int64_t top_k = 0;         // 0: off
  double top_p = 1.0;        // 1: off
  // Row i samples with a torch CPU generator seeded from the stream
  // Rng::ForStream(seed, {first_stream + i}) (common/rng.h).
  uint64_t seed = 0;
  // Row i uses stream (seed, first_stream + i): a caller that splits one
  // logical batch into chunks keeps each row's stream.
  uint64_t first_stream = 0;
  std::optional<int64_t> experts_per_token;  // unset: the model's current
  bool stop_at_eos = true;
};

class MixtralModel {
 public:
  // Loads `dir` (config.json plus model.safetensors, or the shards named by
  // model.safetensors.index.json), in the classic per-expert HF layout or
  // the HF 5.x packed layout (mlp.experts.gate_up_proj / down_proj).
  // Errors name the file and tensor: NotFound (file or tensor missing),
  // DataLoss (corrupt file), InvalidArgument (shape differs from config.json,
  // unsupported dtype). With options.comm set, reads only this rank's
  // experts (by name from the mmapped shards, or a row range of the packed
  // tensors: the other experts are never materialised); InvalidArgument when
  // the world size exceeds num_local_experts.
  static absl::StatusOr<std::unique_ptr<MixtralModel>> Load(
      const std::string& dir, const MixtralLoadOptions& options = {});

  // Wraps in-memory weights (tests, random models). Shapes are validated
  // against `config`; tensors are converted to `options`. Every layer must
  // hold exactly the experts of options.comm's shard (all E without a
  // communicator; see SliceMixtralExperts), else InvalidArgument.
  static absl::StatusOr<std::unique_ptr<MixtralModel>> FromWeights(
      const MixtralConfig& config, MixtralWeights weights,
      const MixtralLoadOptions& options = {});

  const MixtralConfig& config() const { return config_; }
  const MixtralWeights& weights() const { return weights_; }
  const MixtralLoadOptions& options() const { return options_; }

  int64_t experts_per_token() const { return experts_per_token_; }
  // Sets the EPT used by later calls. InvalidArgument outside 1..E.
  absl::Status SetExpertsPerToken(int64_t ept);

  // Returns an empty cache for `batch` rows of up to `capacity` slots with
  // `pad[b]` leading padding slots per row (empty: no padding). Keys and
  // values are in the model's dtype, except for a bf16 model on the CPU at
  // batch 1: float32, the batch-1 decode loops' cache (mixtral_decode_cpu.h).
  absl::StatusOr<MixtralKvCache> NewCache(
      int64_t batch, int64_t capacity,
      const std::vector<int64_t>& pad = {}) const;

  // Runs tokens [B, t] (int64, CPU or device) as the next t slots of
  // `cache`, appends their keys/values and returns logits [B, t, V] f32.
  // InvalidArgument when the cache would overflow or a token id is out of
  // range.
  absl::StatusOr<torch::Tensor> Step(const torch::Tensor& tokens,
                                     MixtralKvCache* cache,
                                     std::optional<int64_t> ept = {});

  // Full-sequence logits [B, T, V] f32 for tokens [B, T] without padding.
  absl::StatusOr<torch::Tensor> Forward(const torch::Tensor& tokens,
                                        std::optional<int64_t> ept = {});

  // Generates continuations of `prompts` (token ids, BOS included by the
  // caller) as one left-padded batch: prefill, then one decode step per new
  // token. Row b stops at EOS (not returned) or after max_new_tokens. The
  // result is deterministic for a given (prompts, options) on one device.
  absl::StatusOr<std::vector<std::vector<int32_t>>> Generate(
      const std::vector<std::vector<int32_t>>& prompts,
      const MixtralGenerationOptions& options);

 private:
  MixtralModel() = default;
  absl::StatusOr<int64_t> ResolveEpt(std::optional<int64_t> ept) const;
  absl::StatusOr<torch::Tensor> StepImpl(const torch::Tensor& tokens,
                                         MixtralKvCache* cache, int64_t ept);

  MixtralConfig config_;
  MixtralWeights weights_;
  MixtralLoadOptions options_;
  int64_t experts_per_token_ = 2;
};

// Checks that `weights` have the shapes `config` implies; InvalidArgument
// names the tensor (HF name) and both shapes.
absl::Status ValidateMixtralWeights(const MixtralConfig& config,
                                    const MixtralWeights& weights);

}  // namespace smoe::model::mixtral

#endif  // SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_MODEL_H_
