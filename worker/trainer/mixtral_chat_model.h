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
// the stream (seed, i) whatever the chunking. EPT is the model's current
// value (SetExpertsPerToken, or Options::experts_per_token at Create).
//
// Thread safety: not thread-safe (ChatModel is thread-compatible).
#ifndef SMOE_WORKER_TRAINER_MIXTRAL_CHAT_MODEL_H_
#define SMOE_WORKER_TRAINER_MIXTRAL_CHAT_MODEL_H_

#include <cstdint>
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

  // Wraps an already loaded model and tokenizer (tests). REQUIRES: both
  // non-null.
  MixtralChatModel(std::unique_ptr<model::mixtral::MixtralModel> model,
                   std::unique_ptr<model::mixtral::MixtralTokenizer> tokenizer,
                   int64_t max_batch);

  // Changes EPT for later calls without reloading. InvalidArgument outside
  // 1..num_local_experts.
  absl::Status SetExpertsPerToken(int64_t ept) {
    return model_->SetExpertsPerToken(ept);
  }
  int64_t experts_per_token() const { return model_->experts_per_token(); }

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
  std::unique_ptr<model::mixtral::MixtralModel> model_;
  std::unique_ptr<model::mixtral::MixtralTokenizer> tokenizer_;
  int64_t max_batch_;
};

}  // namespace smoe::trainer

#endif  // SMOE_WORKER_TRAINER_MIXTRAL_CHAT_MODEL_H_
