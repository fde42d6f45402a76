// Copyright 2026 SMoE Lab authors.
#include "worker/model/mixtral/mixtral_expert_parallel.h"

#include <torch/torch.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace smoe::model::mixtral {

absl::StatusOr<MixtralExpertShard> MixtralExpertShardFor(int64_t num_experts,
                                                         int rank, int world) {
  if (world < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expert parallelism: world size ", world, " must be >= 1"));
  }
  if (rank < 0 || rank >= world) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expert parallelism: rank ", rank, " outside [0, ", world, ")"));
  }
  if (world > num_experts) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expert parallelism: world size ", world, " exceeds num_local_experts ",
        num_experts, " (every rank needs at least one expert)"));
  }
  MixtralExpertShard s;
  s.first = rank * num_experts / world;
  s.count = (rank + 1) * num_experts / world - s.first;
  return s;
}

absl::StatusOr<MixtralExpertShard> MixtralExpertShardFor(
    int64_t num_experts, const kernels::Communicator* comm) {
  if (comm == nullptr) return MixtralExpertShardFor(num_experts, 0, 1);
  return MixtralExpertShardFor(num_experts, comm->rank(), comm->world_size());
}

MixtralWeights SliceMixtralExperts(const MixtralWeights& weights,
                                   const MixtralExpertShard& shard) {
  torch::NoGradGuard no_grad;
  MixtralWeights out = weights;
  for (MixtralLayerWeights& l : out.layers) {
    const int64_t begin = shard.first - l.first_expert;
    l.w1 = l.w1.narrow(0, begin, shard.count).contiguous();
    l.w3 = l.w3.narrow(0, begin, shard.count).contiguous();
    l.w2 = l.w2.narrow(0, begin, shard.count).contiguous();
    l.first_expert = shard.first;
  }
  return out;
}

absl::StatusOr<torch::Tensor> AllReduceMoePartial(const torch::Tensor& partial,
                                                  kernels::Communicator* comm,
                                                  int64_t layer) {
  if (comm == nullptr || comm->world_size() == 1) return partial;
  const bool host = comm->memory_space() == kernels::MemorySpace::kHost;
  if (!host && !partial.is_cuda()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "expert parallelism: communicator '", comm->name(),
        "' needs CUDA tensors, the model runs on ", partial.device().str()));
  }
  // NOTE: a fresh fp32 buffer (copy=true) so the in-place reduction never
  // writes through a tensor the caller still holds.
  torch::Tensor buf =
      partial
          .to(host ? torch::Device(torch::kCPU) : partial.device(),
              torch::kFloat32, /*non_blocking=*/false, /*copy=*/true)
          .contiguous();
  const absl::Status s = comm->AllReduceSum(buf.data_ptr(), buf.numel(),
                                            kernels::DataType::kFloat32);
  if (!s.ok()) {
    return absl::Status(
        s.code(), absl::StrCat("expert-parallel all-reduce of layer ", layer,
                               " over ", comm->name(), ": ", s.message()));
  }
  return buf.to(partial.device(), partial.scalar_type());
}

}  // namespace smoe::model::mixtral
