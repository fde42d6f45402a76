// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/mixtral_chat_model.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace smoe::trainer {

using model::mixtral::MixtralChatTurn;
using model::mixtral::MixtralGenerationOptions;
using model::mixtral::MixtralModel;
using model::mixtral::MixtralTokenizer;

// Greedy below this temperature (the ChatModel contract).
constexpr double kGreedyTemperature = 1e-5;

absl::Status MixtralChatModel::Validate(const MixtralModel& model,
                                        const MixtralTokenizer& tokenizer,
                                        int64_t experts_per_token,
                                        int64_t max_batch,
                                        const std::string& model_dir) {
  if (max_batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_batch must be >= 1, got ", max_batch));
  }
  if (tokenizer.vocab_size() > model.config().vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        model_dir, ": tokenizer.model has ", tokenizer.vocab_size(),
        " pieces but config.json vocab_size is ", model.config().vocab_size));
  }
  const int64_t e = model.config().num_local_experts;
  if (experts_per_token < 0 || experts_per_token > e) {
    return absl::InvalidArgumentError(absl::StrCat(
        "experts_per_token must be in 1..", e, " (num_local_experts of ",
        model_dir, "), got ", experts_per_token));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<MixtralChatModel>> MixtralChatModel::Create(
    const Options& options) {
  if (options.max_batch < 1) {  // before loading anything
    return absl::InvalidArgumentError(
        absl::StrCat("max_batch must be >= 1, got ", options.max_batch));
  }
  SMOE_ASSIGN_OR_RETURN(std::unique_ptr<MixtralModel> model,
                        MixtralModel::Load(options.model_dir, options.load));
  SMOE_ASSIGN_OR_RETURN(
      std::unique_ptr<MixtralTokenizer> tokenizer,
      MixtralTokenizer::Load(options.model_dir + "/tokenizer.model"));
  SMOE_RETURN_IF_ERROR(Validate(*model, *tokenizer, options.experts_per_token,
                                options.max_batch, options.model_dir));
  return std::make_unique<MixtralChatModel>(
      std::move(model), std::move(tokenizer), options.max_batch,
      options.experts_per_token);
}

MixtralChatModel::MixtralChatModel(
    std::shared_ptr<MixtralModel> model,
    std::shared_ptr<const MixtralTokenizer> tokenizer, int64_t max_batch,
    int64_t experts_per_token, GenerateFn generate)
    : model_(std::move(model)),
      tokenizer_(std::move(tokenizer)),
      max_batch_(max_batch),
      ept_(experts_per_token),
      generate_(std::move(generate)) {}

absl::Status MixtralChatModel::SetExpertsPerToken(int64_t ept) {
  const int64_t e = model_->config().num_local_experts;
  if (ept < 1 || ept > e) {
    return absl::InvalidArgumentError(
        absl::StrCat("experts_per_token must be in 1..", e,
                     " (num_local_experts), got ", ept));
  }
  ept_ = ept;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> MixtralChatModel::Complete(
    const std::vector<skillmix::Conversation>& conversations,
    const skillmix::SamplingParams& params) {
  std::vector<std::vector<int32_t>> prompts;
  prompts.reserve(conversations.size());
  for (size_t i = 0; i < conversations.size(); ++i) {
    const skillmix::Conversation& c = conversations[i];
    if (c.empty() || c.back().role != "user") {
      return absl::InvalidArgumentError(
          absl::StrCat("conversation ", i,
                       " must be non-empty and end with a user message"));
    }
    std::vector<MixtralChatTurn> turns;
    for (const skillmix::ChatMessage& m : c)
      turns.push_back({m.role, m.content});
    auto ids = tokenizer_->ApplyChatTemplate(turns);
    if (!ids.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("conversation ", i, ": ", ids.status().message()));
    }
    prompts.push_back(*std::move(ids));
  }
  MixtralGenerationOptions gen;
  gen.max_new_tokens = params.max_new_tokens;
  gen.temperature =
      params.temperature <= kGreedyTemperature ? 0.0 : params.temperature;
  gen.top_k = params.top_k;
  gen.top_p = params.top_p;
  gen.seed = params.seed;
  if (ept_ != 0) gen.experts_per_token = ept_;
  std::vector<std::string> replies;
  replies.reserve(prompts.size());
  for (size_t begin = 0; begin < prompts.size();
       begin += static_cast<size_t>(max_batch_)) {
    const size_t end =
        std::min(prompts.size(), begin + static_cast<size_t>(max_batch_));
    gen.first_stream = begin;
    const std::vector<std::vector<int32_t>> chunk(prompts.begin() + begin,
                                                  prompts.begin() + end);
    SMOE_ASSIGN_OR_RETURN(std::vector<std::vector<int32_t>> out,
                          generate_ ? generate_(*model_, chunk, gen)
                                    : model_->Generate(chunk, gen));
    for (const auto& ids : out) {
      SMOE_ASSIGN_OR_RETURN(std::string text, tokenizer_->Decode(ids));
      replies.push_back(std::move(text));
    }
  }
  return replies;
}

}  // namespace smoe::trainer
