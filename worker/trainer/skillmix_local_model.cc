// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/skillmix_local_model.h"

#include <torch/torch.h>

#include <exception>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "worker/model/gloo_communicator.h"
#include "worker/trainer/mixtral_chat_model.h"

namespace smoe::trainer {

ChatModelFactory LocalChatModelFactory() {
  return [](const ChatModelSpec& spec)
             -> absl::StatusOr<std::unique_ptr<skillmix::ChatModel>> {
    // NOTE: expert-parallel Skill-Mix (rank 0 leads, the other ranks follow;
    // worker/model/mixtral/README.md) is not wired yet. Refuse to run as one
    // of several ranks: every rank would run the whole pipeline and grader.
    absl::StatusOr<model::RendezvousInfo> rdv = model::RendezvousFromEnv();
    if (!rdv.ok()) return rdv.status();
    if (rdv->world_size > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "skillmix: SMOE_WORLD_SIZE=", rdv->world_size,
          " (resources.ep_size) is not supported yet: expert-parallel "
          "Skill-Mix is not wired into the trial; use resources.ep_size: 1"));
    }
    try {
      MixtralChatModel::Options o;
      o.model_dir = spec.model_dir;
      o.experts_per_token = spec.ept;
      if (spec.device == "cuda") {
        if (!torch::cuda::is_available()) {
          return absl::FailedPreconditionError(
              "device=cuda: no CUDA device is visible to smoe-trainer");
        }
        o.load.device = torch::Device(torch::kCUDA, 0);
        o.load.dtype = torch::kBFloat16;
      } else {
        o.load.device = torch::kCPU;
        o.load.dtype = torch::kFloat32;
      }
      auto m = MixtralChatModel::Create(o);
      if (!m.ok()) return m.status();
      return std::unique_ptr<skillmix::ChatModel>(std::move(*m));
    } catch (const std::exception& e) {
      return absl::InternalError(
          absl::StrCat("loading '", spec.model_dir, "': ", e.what()));
    }
  };
}

}  // namespace smoe::trainer
