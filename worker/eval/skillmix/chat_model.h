// Copyright 2026 SMoE Lab authors.
//
// File: worker/eval/skillmix/chat_model.h
//
// The one interface between the Skill-Mix protocol (worker/eval/skillmix) and
// any language model: the student (a local Mixtral-format model, adapted in
// worker/trainer/mixtral_chat_model.{h,cc}) and the grader (the OpenAI-
// compatible HTTP client in openai_grader.h, or again a local model).
//
// Pure C++17 + absl; no LibTorch, no HTTP, no proto types.
#ifndef SMOE_WORKER_EVAL_SKILLMIX_CHAT_MODEL_H_
#define SMOE_WORKER_EVAL_SKILLMIX_CHAT_MODEL_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace smoe::skillmix {

// One message of a conversation. `role` is "system", "user" or "assistant";
// `content` is UTF-8 text, passed through byte for byte (no trimming).
struct ChatMessage {
  std::string role;
  std::string content;

  friend bool operator==(const ChatMessage& a, const ChatMessage& b) {
    return a.role == b.role && a.content == b.content;
  }
};

using Conversation = std::vector<ChatMessage>;

// Sampling settings of one Complete() call (applies to every conversation of
// the batch).
//   temperature <= 1e-5 means greedy decoding (as HF generate with
//     do_sample=False); otherwise sample from softmax(logits / temperature).
//   top_k == 0 disables top-k filtering; top_p == 1.0 disables nucleus
//     filtering (HF order: temperature, then top-k, then top-p).
//   seed: conversation i of a batch is sampled from a stream derived from
//     (seed, i), so identical conversations in one batch give independent
//     samples and the same call repeated gives the same replies (for local
//     models; hosted APIs only forward the seed as a hint).
//   max_new_tokens: per reply.
//   cancel: optional flag (not owned; may be null), e.g. the trainer's SIGTERM
//     flag. A model should poll it between decoding steps or requests and
//     return absl::CancelledError soon after it is set; the caller then
//     discards the whole batch.
struct SamplingParams {
  double temperature = 0.7;
  int top_k = 0;
  double top_p = 1.0;
  uint64_t seed = 0;
  int max_new_tokens = 512;
  const std::atomic<bool>* cancel = nullptr;
};

// A chat model: completes a batch of conversations.
//
// Thread-compatible: concurrent calls on one object need external
// synchronisation.
class ChatModel {
 public:
  virtual ~ChatModel() = default;

  // Returns one assistant reply per conversation, in order (the reply text
  // only: no chat-template markers, no trailing EOS token).
  // REQUIRES: every conversation is non-empty and ends with a "user" message.
  // Errors: InvalidArgument for a malformed conversation or params; any other
  // status from the model/transport (e.g. Unavailable, DeadlineExceeded).
  virtual absl::StatusOr<std::vector<std::string>> Complete(
      const std::vector<Conversation>& conversations,
      const SamplingParams& params) = 0;
};

}  // namespace smoe::skillmix

#endif  // SMOE_WORKER_EVAL_SKILLMIX_CHAT_MODEL_H_
