// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/mixtral/sentencepiece_bridge.h
//
// A C++ wrapper over libsentencepiece, which lives in the loadable module
// libsmoe_sentencepiece.so (see sentencepiece_module.h for why: protobuf
// symbol clashes with LibTorch and an absl::string_view clash). The module is
// looked up, once per process, at $SMOE_SENTENCEPIECE_MODULE, next to the
// running executable, then at its build-tree path. Plain std types; errors
// as `false` plus a message (which says where the module was looked for when
// it could not be loaded).
//
// Thread safety: a loaded SentencePieceBridge is immutable; its methods may be
// called concurrently.
#ifndef SMOE_WORKER_MODEL_MIXTRAL_SENTENCEPIECE_BRIDGE_H_
#define SMOE_WORKER_MODEL_MIXTRAL_SENTENCEPIECE_BRIDGE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace smoe::model::mixtral {

class SentencePieceBridge {
 public:
  // Loads a serialized SentencePiece model file. Returns null and sets
  // `*error` on failure.
  static std::unique_ptr<SentencePieceBridge> Load(const std::string& path,
                                                   std::string* error);
  ~SentencePieceBridge();

  // Encodes `text` into piece ids (no BOS/EOS). False + `*error` on failure.
  bool Encode(const std::string& text, std::vector<int>* ids,
              std::string* error) const;
  // Decodes ids into text (control ids such as BOS/EOS decode to nothing).
  bool Decode(const std::vector<int>& ids, std::string* text,
              std::string* error) const;

  int PieceSize() const;
  int bos_id() const;  // -1 when the model defines none
  int eos_id() const;
  int unk_id() const;
  std::string IdToPiece(int id) const;

 private:
  SentencePieceBridge();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Trains a SentencePiece model on `sentences` with SentencePieceTrainer's
// API (`options` are trainer flags such as {"vocab_size", "384"}) and writes
// the serialized model to `*model`. False + `*error` on failure.
bool TrainSentencePiece(const std::vector<std::string>& sentences,
                        const std::map<std::string, std::string>& options,
                        std::string* model, std::string* error);

}  // namespace smoe::model::mixtral

#endif  // SMOE_WORKER_MODEL_MIXTRAL_SENTENCEPIECE_BRIDGE_H_
