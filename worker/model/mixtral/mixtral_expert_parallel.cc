// Copyright 2026 SMoE Lab authors.
#include "worker/model/mixtral/mixtral_expert_parallel.h"

#include <torch/torch.h>

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/model/device.h"

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
  // NOTE: a fresh fp32 buffer (copy=true) so the in-place reduction never
  // writes through a tensor the caller still holds.
  torch::Tensor buf = partial
                          .to(CommDevice(*comm, partial.device()),
                              torch::kFloat32, /*non_blocking=*/false,
                              /*copy=*/true)
                          .contiguous();
  const absl::Status s =
      comm->AllReduceSum(buf.data_ptr(), buf.numel(), kernels::DType::kFloat32);
  if (!s.ok()) {
    return absl::Status(
        s.code(), absl::StrCat("expert-parallel all-reduce of layer ", layer,
                               " over ", comm->name(), ": ", s.message()));
  }
  return buf.to(partial.device(), partial.scalar_type());
}

// ---- leader / follower generation
// ----------------------------------------------------------

namespace {

// Header of one leader -> followers message (int64 slots).
enum HeaderSlot {
  kOp,  // kOpGenerate or kOpStop
  kRows,
  kTotalTokens,
  kMaxNewTokens,
  kTopK,
  kEpt,  // 0: unset
  kSeed,
  kFirstStream,
  kTemperatureBits,
  kTopPBits,
  kStopAtEos,
  kModel,  // index into the followers' model list
  kHeaderSize
};
constexpr int64_t kOpGenerate = 1;
constexpr int64_t kOpStop = 2;

template <typename T>
int64_t Bits(T v) {
  static_assert(sizeof(T) == sizeof(int64_t));
  int64_t out;
  std::memcpy(&out, &v, sizeof(out));
  return out;
}

template <typename T>
T FromBits(int64_t v) {
  static_assert(sizeof(T) == sizeof(int64_t));
  T out;
  std::memcpy(&out, &v, sizeof(out));
  return out;
}

// Broadcast from rank 0: every rank passes `values` of the same size; the
// followers' are zeros, so the sum is rank 0's values, bit for bit.
// `device`: the model's device (the buffer lives on CommDevice of it).
absl::Status BroadcastFromLeader(std::vector<int64_t>* values,
                                 kernels::Communicator* comm,
                                 torch::Device device) {
  if (values->empty()) return absl::OkStatus();
  const int64_t n = static_cast<int64_t>(values->size());
  torch::Tensor t = torch::from_blob(values->data(), {n}, torch::kInt64)
                        .to(CommDevice(*comm, device), torch::kInt64,
                            /*non_blocking=*/false, /*copy=*/true);
  const absl::Status s =
      comm->AllReduceSum(t.data_ptr(), n, kernels::DType::kInt64);
  if (!s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("expert-parallel generate broadcast over ",
                                     comm->name(), ": ", s.message()));
  }
  t = t.to(torch::kCPU).contiguous();
  std::memcpy(values->data(), t.data_ptr<int64_t>(), n * sizeof(int64_t));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::vector<int32_t>>> LeadMixtralGenerate(
    MixtralModel* model, kernels::Communicator* comm,
    const std::vector<std::vector<int32_t>>& prompts,
    const MixtralGenerationOptions& options, int model_index) {
  if (comm != nullptr && comm->world_size() > 1) {
    const torch::Device device = model->options().device;
    try {
      std::vector<int64_t> header(kHeaderSize, 0);
      int64_t total = 0;
      for (const auto& p : prompts) total += static_cast<int64_t>(p.size());
      header[kOp] = kOpGenerate;
      header[kRows] = static_cast<int64_t>(prompts.size());
      header[kTotalTokens] = total;
      header[kMaxNewTokens] = options.max_new_tokens;
      header[kTopK] = options.top_k;
      // The leader's resolved EPT: the followers' current value may differ.
      header[kEpt] =
          options.experts_per_token.value_or(model->experts_per_token());
      header[kSeed] = Bits(options.seed);
      header[kFirstStream] = Bits(options.first_stream);
      header[kTemperatureBits] = Bits(options.temperature);
      header[kTopPBits] = Bits(options.top_p);
      header[kStopAtEos] = options.stop_at_eos ? 1 : 0;
      header[kModel] = model_index;
      SMOE_RETURN_IF_ERROR(BroadcastFromLeader(&header, comm, device));
      std::vector<int64_t> body;
      body.reserve(prompts.size() + total);
      for (const auto& p : prompts) body.push_back(p.size());
      for (const auto& p : prompts) body.insert(body.end(), p.begin(), p.end());
      SMOE_RETURN_IF_ERROR(BroadcastFromLeader(&body, comm, device));
    } catch (const std::exception& e) {
      return absl::InternalError(
          absl::StrCat("LeadMixtralGenerate: ", e.what()));
    }
  }
  return model->Generate(prompts, options);
}

absl::Status StopMixtralFollowers(kernels::Communicator* comm,
                                  torch::Device device) {
  if (comm == nullptr || comm->world_size() == 1) return absl::OkStatus();
  std::vector<int64_t> header(kHeaderSize, 0);
  header[kOp] = kOpStop;
  try {
    return BroadcastFromLeader(&header, comm, device);
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("StopMixtralFollowers: ", e.what()));
  }
}

absl::Status FollowMixtralGenerate(MixtralModel* model,
                                   kernels::Communicator* comm) {
  return FollowMixtralGenerate(std::vector<MixtralModel*>{model}, comm);
}

absl::Status FollowMixtralGenerate(const std::vector<MixtralModel*>& models,
                                   kernels::Communicator* comm,
                                   int64_t* calls_served) {
  if (models.empty()) {
    return absl::InvalidArgumentError("FollowMixtralGenerate: no models");
  }
  if (comm == nullptr || comm->rank() == 0) {
    return absl::FailedPreconditionError(
        "FollowMixtralGenerate: needs a communicator rank > 0");
  }
  try {
    for (;;) {
      std::vector<int64_t> header(kHeaderSize, 0);
      // Every served model is on the same device (one GPU per rank).
      SMOE_RETURN_IF_ERROR(
          BroadcastFromLeader(&header, comm, models[0]->options().device));
      if (header[kOp] == kOpStop) return absl::OkStatus();
      if (header[kOp] != kOpGenerate || header[kRows] < 0 ||
          header[kTotalTokens] < 0) {
        return absl::DataLossError(absl::StrCat(
            "FollowMixtralGenerate: malformed message (op ", header[kOp],
            ", rows ", header[kRows], ", tokens ", header[kTotalTokens], ")"));
      }
      if (header[kModel] < 0 ||
          header[kModel] >= static_cast<int64_t>(models.size())) {
        return absl::DataLossError(absl::StrCat(
            "FollowMixtralGenerate: the leader named model ", header[kModel],
            " but this rank serves ", models.size(), " model(s)"));
      }
      MixtralModel* model = models[header[kModel]];
      std::vector<int64_t> body(header[kRows] + header[kTotalTokens], 0);
      SMOE_RETURN_IF_ERROR(
          BroadcastFromLeader(&body, comm, model->options().device));
      std::vector<std::vector<int32_t>> prompts(header[kRows]);
      size_t at = prompts.size();
      for (size_t i = 0; i < prompts.size(); ++i) {
        const int64_t len = body[i];
        if (len < 0 || at + len > body.size()) {
          return absl::DataLossError(absl::StrCat(
              "FollowMixtralGenerate: row ", i, " length ", len,
              " overruns the ", header[kTotalTokens], " tokens sent"));
        }
        prompts[i].assign(body.begin() + at, body.begin() + at + len);
        at += len;
      }
      MixtralGenerationOptions o;
      o.max_new_tokens = header[kMaxNewTokens];
      o.top_k = header[kTopK];
      if (header[kEpt] != 0) o.experts_per_token = header[kEpt];
      o.seed = FromBits<uint64_t>(header[kSeed]);
      o.first_stream = FromBits<uint64_t>(header[kFirstStream]);
      o.temperature = FromBits<double>(header[kTemperatureBits]);
      o.top_p = FromBits<double>(header[kTopPBits]);
      o.stop_at_eos = header[kStopAtEos] != 0;
      const auto out = model->Generate(prompts, o);
      if (calls_served != nullptr) ++*calls_served;
      // NOTE: inputs the model rejects are rejected on the leader too,
      // before any collective, so both sides simply move on.
      if (!out.ok() &&
          out.status().code() != absl::StatusCode::kInvalidArgument) {
        return out.status();
      }
    }
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("FollowMixtralGenerate: ", e.what()));
  }
}

}  // namespace smoe::model::mixtral
