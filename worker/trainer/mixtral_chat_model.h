// Copyright 2026 SMoE Lab authors.
//
// File: worker/trainer/mixtral_chat_model.h
//
// MixtralChatModel: the Skill-Mix `ChatModel` (worker/eval/skillmix/
// chat_model.h) over the Mixtral runtime (worker/model/mixtral). Each
// conversation is tokenised with the Mixtral-Instruct chat template, the
// batch is generated in chunks of at most `max_batch` rows (left padded),
// and the new tokens are decoded to text.
//
// Mapping of SamplingParams: temperature <= 1e-5 -> greedy; top_k, top_p,
// max_new_tokens as given; conversation i of a Complete() call samples from
// the stream (seed, i) whatever the chunking. EPT is this chat model's own
// value (Options::experts_per_token at Create, SetExpertsPerToken), passed
// with every generation call, so several chat models may share one loaded
// MixtralModel at different EPTs (a Skill-Mix student and a local grader on
// the same checkpoint: one copy of the weights).
//
// Generation goes through a GenerateFn: by default the model's own Generate;
// expert-parallel rank 0 passes one that leads the followers
// (LeadMixtralGenerate, worker/model/mixtral/mixtral_expert_parallel.h).
//
// Thread safety: not thread-safe (ChatModel is thread-compatible).
#ifndef SMOE_WORKER_TRAINER_MIXTRAL_CHAT_MODEL_H_
#define SMOE_WORKER_TRAINER_MIXTRAL_CHAT_MODEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/eval/skillmix/chat_model.h"
#include "worker/model/mixtral/mixtral_model.h"
#include "worker/model/mixtral/mixtral_tokenizer.h"

namespace smoe::trainer {

class MixtralChatModel : public skillmix::ChatModel {
 public:
  struct Options {
    std::string model_dir;  // config.json, safetensors, tokenizer.model
    model::mixtral::MixtralLoadOptions load;
    int64_t experts_per_token = 0;  // 0: config.json's num_experts_per_tok
    int64_t max_batch = 16;         // rows per generation call
  };

  // Loads the model and MODEL_DIR/tokenizer.model. Errors come from the
  // loaders (they name the file) or name a bad option.
  static absl::StatusOr<std::unique_ptr<MixtralChatModel>> Create(
      const Options& options);

  // Runs one generation call on `model` (the default: model.Generate).
  using GenerateFn =
      std::function<absl::StatusOr<std::vector<std::vector<int32_t>>>(
          model::mixtral::MixtralModel& model,
          const std::vector<std::vector<int32_t>>& prompts,
          const model::mixtral::MixtralGenerationOptions& options)>;

  // Wraps an already loaded model and tokenizer, possibly shared with other
  // chat models. `experts_per_token` 0 means the model's current EPT at each
  // call; `generate` empty means model.Generate. REQUIRES: model and
  // tokenizer non-null, max_batch >= 1, experts_per_token 0 or in
  // 1..num_local_experts (Create checks these).
  MixtralChatModel(
      std::shared_ptr<model::mixtral::MixtralModel> model,
      std::shared_ptr<const model::mixtral::MixtralTokenizer> tokenizer,
      int64_t max_batch, int64_t experts_per_token = 0,
      GenerateFn generate = nullptr);

  // Checks a model/tokenizer pair and an EPT for the constructor: the
  // tokenizer's vocabulary must fit the model's, `experts_per_token` must be
  // 0 or in 1..num_local_experts, max_batch >= 1. InvalidArgument naming the
  // value otherwise.
  static absl::Status Validate(const model::mixtral::MixtralModel& model,
                               const model::mixtral::MixtralTokenizer& tok,
                               int64_t experts_per_token, int64_t max_batch,
                               const std::string& model_dir);

  // Changes EPT for later calls without reloading (the shared model is not
  // touched). InvalidArgument outside 1..num_local_experts.
  absl::Status SetExpertsPerToken(int64_t ept);
  int64_t experts_per_token() const {
    return ept_ != 0 ? ept_ : model_->experts_per_token();
  }

  // ChatModel. InvalidArgument for an empty conversation, one that does not
  // end with "user", a "system" message or roles that do not alternate.
  absl::StatusOr<std::vector<std::string>> Complete(
      const std::vector<skillmix::Conversation>& conversations,
      const skillmix::SamplingParams& params) override;

  model::mixtral::MixtralModel& model() { return *model_; }
  const model::mixtral::MixtralTokenizer& tokenizer() const {
    return *tokenizer_;
  }

 private:
  std::shared_ptr<model::mixtral::MixtralModel> model_;
  std::shared_ptr<const model::mixtral::MixtralTokenizer> tokenizer_;
  int64_t max_batch_;
  int64_t ept_;  // 0: the model's current value
  GenerateFn generate_;
};

}  // namespace smoe::trainer

#endif  // SMOE_WORKER_TRAINER_MIXTRAL_CHAT_MODEL_H_
