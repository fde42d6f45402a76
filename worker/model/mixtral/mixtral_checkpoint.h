// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/mixtral/mixtral_checkpoint.h
//
// Mixtral checkpoints on disk (HF layout, docs/skillmix.md 2.3):
//   DIR/config.json
//   DIR/model.safetensors                      one file, or
//   DIR/model-0000i-of-0000n.safetensors       shards listed in
//   DIR/model.safetensors.index.json           {"metadata": {"total_size"},
//                                               "weight_map": {name: file}}
//   DIR/tokenizer.model                        (see mixtral_tokenizer.h)
//
// Two expert layouts are read:
//   classic  model.layers.N.block_sparse_moe.gate.weight            [E, H]
//            model.layers.N.block_sparse_moe.experts.J.w{1,3}.weight [F, H]
//            model.layers.N.block_sparse_moe.experts.J.w2.weight     [H, F]
//   packed   model.layers.N.mlp.gate.weight                          [E, H]
//   (HF 5.x) model.layers.N.mlp.experts.gate_up_proj   [E, 2F, H] (w1 then w3)
//            model.layers.N.mlp.experts.down_proj      [E, H, F]
// The original Mistral `consolidated.*.pt` format is not read.
//
// The random-checkpoint writer streams tensor by tensor (one tensor in
// memory at a time), so the full 8x7B shape (93 GB in bf16) can be written.
//
// Thread safety: functions are independent; CheckpointTensors is immutable
// after Open.
#ifndef SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_CHECKPOINT_H_
#define SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_CHECKPOINT_H_

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/model/mixtral/mixtral_config.h"
#include "worker/model/mixtral/mixtral_model.h"
#include "worker/model/mixtral/safetensors.h"

namespace smoe::model::mixtral {

// The tensors of a checkpoint directory, across shards.
class CheckpointTensors {
 public:
  // Opens DIR/model.safetensors.index.json and every shard it names, else
  // DIR/model.safetensors. NotFound when neither exists; errors from the
  // index (bad JSON, a tensor mapped to a shard that lacks it) name the file.
  static absl::StatusOr<CheckpointTensors> Open(const std::string& dir);

  bool Contains(const std::string& name) const {
    return where_.count(name) != 0;
  }
  // Reads `name`, checking its stored shape against `shape` first:
  // InvalidArgument "FILE: tensor 'NAME' has shape [..] but config.json
  // implies [..]"; NotFound names the tensor and the directory.
  absl::StatusOr<torch::Tensor> Read(const std::string& name,
                                     const std::vector<int64_t>& shape,
                                     const torch::TensorOptions& options) const;
  // Reads rows [first, first + count) of `name`'s first dimension after the
  // same full-shape check (SafetensorsFile::ReadRows).
  absl::StatusOr<torch::Tensor> ReadRows(
      const std::string& name, const std::vector<int64_t>& shape, int64_t first,
      int64_t count, const torch::TensorOptions& options) const;

 private:
  // The file holding `name` after checking its shape against `shape`.
  absl::StatusOr<const SafetensorsFile*> Find(
      const std::string& name, const std::vector<int64_t>& shape) const;

  std::string dir_;
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsFile*> where_;
};

// Reads the weights of `config` from `dir` (either expert layout),
// converted to options.dtype on options.device: every non-expert tensor and
// the experts of options.comm's shard (MixtralExpertShardFor; all E when
// options.comm is null). Other experts are never read.
absl::StatusOr<MixtralWeights> LoadMixtralWeights(
    const std::string& dir, const MixtralConfig& config,
    const MixtralLoadOptions& options);

enum class ExpertLayout { kClassic, kPacked };

struct RandomCheckpointOptions {
  uint64_t seed = 0;
  torch::Dtype dtype = torch::kFloat32;  // on-disk dtype (BF16, F16, F32)
  // Shards hold at most this many bytes of data (a single tensor larger than
  // this gets a shard of its own); one shard -> model.safetensors, no index.
  uint64_t max_shard_bytes = 5'000'000'000;
  ExpertLayout layout = ExpertLayout::kClassic;
};

// The tensor list (HF names, shapes, `dtype`) of a checkpoint of `config`,
// in file order.
std::vector<SafetensorsWriter::Spec> MixtralTensorSpecs(
    const MixtralConfig& config, torch::Dtype dtype, ExpertLayout layout);

// Deterministic random values for tensor `spec` of a random checkpoint:
// 1-D norm weights 1 + 0.1 N(0,1); the embedding N(0,1); matrices
// N(0, 1/fan_in) with fan_in the last dimension. The values depend only on
// (seed, spec.name, spec.shape), never on sharding. Returned as float32.
torch::Tensor RandomMixtralTensor(const SafetensorsWriter::Spec& spec,
                                  uint64_t seed);

// Writes config.json and the weights of a random checkpoint of `config`
// into `dir` (created if needed), streaming tensor by tensor. Does not write
// tokenizer.model (TrainMixtralTokenizer does).
absl::Status WriteRandomMixtralCheckpoint(
    const std::string& dir, const MixtralConfig& config,
    const RandomCheckpointOptions& options);

}  // namespace smoe::model::mixtral

#endif  // SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_CHECKPOINT_H_
