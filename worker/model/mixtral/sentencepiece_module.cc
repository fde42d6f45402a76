// Copyright 2026 SMoE Lab authors.
//
// libsmoe_sentencepiece.so: the C ABI of sentencepiece_module.h over
// libsentencepiece. NOTE: no absl header may be included here.
#include "worker/model/mixtral/sentencepiece_module.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

char* Copy(const std::string& s, size_t* len = nullptr) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  std::memcpy(out, s.data(), s.size());
  out[s.size()] = '\0';
  if (len != nullptr) *len = s.size();
  return out;
}

int Fail(const sentencepiece::util::Status& s, char** error) {
  *error = Copy(s.ToString());
  return 1;
}

sentencepiece::SentencePieceProcessor* Sp(void* p) {
  return static_cast<sentencepiece::SentencePieceProcessor*>(p);
}

// Feeds an in-memory list of sentences to the trainer.
class VectorIterator : public sentencepiece::SentenceIterator {
 public:
  explicit VectorIterator(const std::vector<std::string>* s) : s_(s) {}
  bool done() const override { return i_ >= s_->size(); }
  void Next() override { ++i_; }
  const std::string& value() const override { return (*s_)[i_]; }
  sentencepiece::util::Status status() const override {
    return sentencepiece::util::Status();
  }

 private:
  const std::vector<std::string>* s_;
  size_t i_ = 0;
};

int Load(const char* path, void** processor, char** error) {
  auto* sp = new sentencepiece::SentencePieceProcessor();
  const auto s = sp->Load(path);
  if (!s.ok()) {
    delete sp;
    return Fail(s, error);
  }
  *processor = sp;
  return 0;
}

void Destroy(void* p) { delete Sp(p); }

int Encode(void* p, const char* text, size_t text_len, int** ids, size_t* n,
           char** error) {
  std::vector<int> out;
  const auto s = Sp(p)->Encode(std::string(text, text_len), &out);
  if (!s.ok()) return Fail(s, error);
  *ids = static_cast<int*>(std::malloc(sizeof(int) * (out.size() + 1)));
  std::memcpy(*ids, out.data(), sizeof(int) * out.size());
  *n = out.size();
  return 0;
}

int Decode(void* p, const int* ids, size_t n, char** text, size_t* text_len,
           char** error) {
  std::string out;
  const auto s = Sp(p)->Decode(std::vector<int>(ids, ids + n), &out);
  if (!s.ok()) return Fail(s, error);
  *text = Copy(out, text_len);
  return 0;
}

int PieceSize(void* p) { return Sp(p)->GetPieceSize(); }
int BosId(void* p) { return Sp(p)->bos_id(); }
int EosId(void* p) { return Sp(p)->eos_id(); }
int UnkId(void* p) { return Sp(p)->unk_id(); }

int IdToPiece(void* p, int id, char** piece, size_t* len, char** error) {
  if (id < 0 || id >= Sp(p)->GetPieceSize()) {
    *error = Copy("piece id out of range");
    return 1;
  }
  *piece = Copy(Sp(p)->IdToPiece(id), len);
  return 0;
}

int Train(const char* const* sentences, const size_t* sentence_lens, size_t n,
          const char* const* keys, const char* const* values, size_t n_options,
          char** model, size_t* model_len, char** error) {
  std::vector<std::string> corpus;
  corpus.reserve(n);
  for (size_t i = 0; i < n; ++i)
    corpus.emplace_back(sentences[i], sentence_lens[i]);
  std::unordered_map<std::string, std::string> kwargs;
  for (size_t i = 0; i < n_options; ++i) kwargs[keys[i]] = values[i];
  VectorIterator it(&corpus);
  std::string out;
  const auto s = sentencepiece::SentencePieceTrainer::Train(kwargs, &it, &out);
  if (!s.ok()) return Fail(s, error);
  *model = Copy(out, model_len);
  return 0;
}

void FreeBuffer(void* b) { std::free(b); }

const SmoeSpApi kApi = {SMOE_SP_MODULE_ABI_VERSION,
                        &Load,
                        &Destroy,
                        &Encode,
                        &Decode,
                        &PieceSize,
                        &BosId,
                        &EosId,
                        &UnkId,
                        &IdToPiece,
                        &Train,
                        &FreeBuffer};

}  // namespace

extern "C" __attribute__((visibility("default"))) const SmoeSpApi*
smoe_sp_module_api(void) {
  return &kApi;
}
