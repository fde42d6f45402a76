// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/skillmix_models.h"

#include <torch/torch.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "kernels/all_to_all/nccl_communicator.h"
#include "worker/model/device.h"
#include "worker/model/mixtral/mixtral_expert_parallel.h"
#include "worker/trainer/mixtral_chat_model.h"

namespace smoe::trainer {

namespace mx = model::mixtral;

absl::StatusOr<std::unique_ptr<kernels::Communicator>> JoinSkillMixGroup(
    const model::RendezvousInfo& info, const std::string& device,
    int64_t op_timeout_ms) {
  kernels::CommunicatorOptions o;
  o.op_timeout_ms = op_timeout_ms;
  SMOE_ASSIGN_OR_RETURN(
      const model::DeviceSelection sel,
      model::SelectDeviceHere(device, info.rank, info.world_size));
  absl::StatusOr<std::unique_ptr<kernels::Communicator>> made =
      sel.comm == model::CommKind::kNccl
          ? model::CreateNcclCommunicator(info, sel.device.index(), o)
          : model::CreateGlooCommunicator(info, o);
  if (!made.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "expert-parallel rendezvous '", info.rendezvous, "' (rank ", info.rank,
        " of ", info.world_size, ") failed: ", made.status().ToString()));
  }
  return made;
}

std::vector<std::string> SkillMixModels::ModelDirs(
    const SkillMixTrialConfig& config) {
  std::vector<std::string> dirs = {config.model};
  if (config.grader == "local" && config.grader_model != config.model) {
    dirs.push_back(config.grader_model);
  }
  return dirs;
}

SkillMixModels::SkillMixModels(SkillMixTrialConfig config,
                               kernels::Communicator* comm)
    : config_(std::move(config)),
      comm_(comm != nullptr && comm->world_size() > 1 ? comm : nullptr) {}

absl::StatusOr<mx::MixtralLoadOptions> SkillMixModels::LoadOptions() const {
  mx::MixtralLoadOptions o;
  o.comm = comm_;
  const int rank = comm_ != nullptr ? comm_->rank() : 0;
  const int world = comm_ != nullptr ? comm_->world_size() : 1;
  SMOE_ASSIGN_OR_RETURN(const model::DeviceSelection sel,
                        model::SelectDeviceHere(config_.device, rank, world));
  o.device = sel.device;
  // bf16 on a GPU (Mixtral's checkpoints are bf16); fp32 on the CPU.
  o.dtype = sel.device.is_cuda() ? torch::kBFloat16 : torch::kFloat32;
  return o;
}

absl::StatusOr<SkillMixModels::Loaded*> SkillMixModels::Get(
    const std::string& dir, bool need_tokenizer) {
  auto it = loaded_.find(dir);
  if (it == loaded_.end()) {
    const std::vector<std::string> dirs = ModelDirs(config_);
    const auto pos = std::find(dirs.begin(), dirs.end(), dir);
    if (comm_ != nullptr && pos == dirs.end()) {
      return absl::InternalError(
          absl::StrCat("skillmix: model '", dir,
                       "' is not one the expert-parallel ranks load"));
    }
    SMOE_ASSIGN_OR_RETURN(mx::MixtralLoadOptions opts, LoadOptions());
    Loaded l;
    l.index = static_cast<int>(pos - dirs.begin());
    try {
      SMOE_ASSIGN_OR_RETURN(std::unique_ptr<mx::MixtralModel> m,
                            mx::MixtralModel::Load(dir, opts));
      l.model = std::move(m);
    } catch (const std::exception& e) {  // LibTorch (c10::Error) and std
      return absl::InternalError(
          absl::StrCat("loading '", dir, "': ", e.what()));
    }
    if (comm_ != nullptr) {
      SMOE_LOG(INFO) << "skillmix: rank " << comm_->rank() << " of "
                     << comm_->world_size() << " loaded " << dir << " (model "
                     << l.index << ", " << l.model->config().num_local_experts
                     << " experts split over " << comm_->name() << ")";
    }
    it = loaded_.emplace(dir, std::move(l)).first;
  }
  if (need_tokenizer && it->second.tokenizer == nullptr) {
    SMOE_ASSIGN_OR_RETURN(std::unique_ptr<mx::MixtralTokenizer> tok,
                          mx::MixtralTokenizer::Load(dir + "/tokenizer.model"));
    it->second.tokenizer = std::move(tok);
  }
  return &it->second;
}

ChatModelFactory SkillMixModels::Factory() {
  return [this](const ChatModelSpec& spec)
             -> absl::StatusOr<std::unique_ptr<skillmix::ChatModel>> {
    if (comm_ != nullptr && comm_->rank() != 0) {
      return absl::InternalError("skillmix: only rank 0 builds chat models");
    }
    SMOE_ASSIGN_OR_RETURN(Loaded * l, Get(spec.model_dir, true));
    constexpr int64_t kMaxBatch = 16;
    SMOE_RETURN_IF_ERROR(MixtralChatModel::Validate(
        *l->model, *l->tokenizer, spec.ept, kMaxBatch, spec.model_dir));
    MixtralChatModel::GenerateFn generate;
    if (comm_ != nullptr) {
      kernels::Communicator* comm = comm_;
      const int index = l->index;
      generate = [comm, index](mx::MixtralModel& m,
                               const std::vector<std::vector<int32_t>>& p,
                               const mx::MixtralGenerationOptions& o) {
        return mx::LeadMixtralGenerate(&m, comm, p, o, index);
      };
    }
    return std::unique_ptr<skillmix::ChatModel>(
        std::make_unique<MixtralChatModel>(l->model, l->tokenizer, kMaxBatch,
                                           spec.ept, std::move(generate)));
  };
}

absl::Status SkillMixModels::Follow(int64_t* calls_served) {
  if (comm_ == nullptr || comm_->rank() == 0) {
    return absl::FailedPreconditionError(
        "SkillMixModels::Follow: needs a communicator rank > 0");
  }
  std::vector<mx::MixtralModel*> models;
  for (const std::string& dir : ModelDirs(config_)) {
    SMOE_ASSIGN_OR_RETURN(Loaded * l, Get(dir, false));
    models.push_back(l->model.get());
  }
  try {
    return mx::FollowMixtralGenerate(models, comm_, calls_served);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("skillmix follower: ", e.what()));
  }
}

absl::Status SkillMixModels::StopFollowers() {
  if (comm_ == nullptr || comm_->rank() != 0) return absl::OkStatus();
  SMOE_ASSIGN_OR_RETURN(const mx::MixtralLoadOptions o, LoadOptions());
  return mx::StopMixtralFollowers(comm_, o.device);
}

}  // namespace smoe::trainer
