// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/mixtral/mixtral_tokenizer.h
//
// The Mixtral (Llama/Mistral v1) SentencePiece tokenizer and the
// Mixtral-8x7B-Instruct-v0.1 chat template (docs/skillmix.md 2.4).
//
// Chat template: BOS, then for each message, roles alternating and starting
// with "user":
//   user       ->  Encode("[INST] " + content + " [/INST]")
//   assistant  ->  Encode(content) + EOS
// i.e. the text `<s>[INST] {user} [/INST] {assistant}</s>[INST] {user}
// [/INST]`. Each segment is encoded separately with SentencePiece's dummy
// prefix (as mistral-common's v1 tokenizer does), which is where the space
// between
// "[/INST]" and the assistant's reply comes from. "[INST]" and "[/INST]" are
// plain text, not special tokens. A "system" message (or any other role),
// two messages of one role in a row, or a conversation not starting with
// "user" is an InvalidArgument error, as in the HF v0.1 template (which
// raises); system prompts are not prepended.
//
// Thread safety: immutable after Load; methods may be called concurrently.
#ifndef SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_TOKENIZER_H_
#define SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/model/mixtral/sentencepiece_bridge.h"

namespace smoe::model::mixtral {

struct MixtralChatTurn {
  std::string role;  // "user" or "assistant"
  std::string content;
};

class MixtralTokenizer {
 public:
  // Loads tokenizer.model. NotFound / InvalidArgument name the file; a model
  // without BOS or EOS ids is InvalidArgument.
  static absl::StatusOr<std::unique_ptr<MixtralTokenizer>> Load(
      const std::string& path);

  // Encodes text (no BOS/EOS added unless `add_bos`).
  absl::StatusOr<std::vector<int32_t>> Encode(const std::string& text,
                                              bool add_bos) const;
  // Decodes ids; BOS/EOS/UNK control pieces decode to nothing.
  absl::StatusOr<std::string> Decode(const std::vector<int32_t>& ids) const;

  // Token ids of `turns` under the chat template (see the file comment).
  absl::StatusOr<std::vector<int32_t>> ApplyChatTemplate(
      const std::vector<MixtralChatTurn>& turns) const;

  int32_t bos_id() const { return bos_id_; }
  int32_t eos_id() const { return eos_id_; }
  int32_t vocab_size() const { return vocab_size_; }
  std::string IdToPiece(int32_t id) const { return sp_->IdToPiece(id); }

 private:
  MixtralTokenizer() = default;
  std::unique_ptr<SentencePieceBridge> sp_;
  int32_t bos_id_ = 1, eos_id_ = 2, vocab_size_ = 0;
};

// Returns the chat template's text rendering of `turns`
// ("<s>[INST] a [/INST] b</s>[INST] c [/INST]"), for logs and docs. Same
// validation as ApplyChatTemplate.
absl::StatusOr<std::string> RenderMixtralChat(
    const std::vector<MixtralChatTurn>& turns);

// A deterministic English training corpus (`num_sentences` sentences from
// fixed word lists, chat markers and digits) for random tokenizers.
std::vector<std::string> MixtralTokenizerCorpus(int num_sentences,
                                                uint64_t seed);

// Trains a Llama-style SentencePiece model on MixtralTokenizerCorpus and
// writes it to `path`: BPE, byte_fallback, <unk>=0, <s>=1, </s>=2, no pad,
// identity normalisation, digits split, dummy prefix. `vocab_size` is a hard
// limit up to 4096 and a soft limit above it (the small corpus cannot fill
// 32000 pieces; the model's embedding rows beyond the pieces stay unused).
// REQUIRES: vocab_size >= 320 (256 byte pieces, 3 controls, characters).
absl::Status TrainMixtralTokenizer(const std::string& path, int vocab_size,
                                   uint64_t seed);

}  // namespace smoe::model::mixtral

#endif  // SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_TOKENIZER_H_
