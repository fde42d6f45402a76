// Copyright 2026 SMoE Lab authors.
#include "worker/model/mixtral/mixtral_tokenizer.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/rng.h"

namespace smoe::model::mixtral {
namespace {

absl::Status CheckTurns(const std::vector<MixtralChatTurn>& turns) {
  if (turns.empty()) {
    return absl::InvalidArgumentError("chat: the conversation is empty");
  }
  for (size_t i = 0; i < turns.size(); ++i) {
    const std::string& role = turns[i].role;
    if (role != "user" && role != "assistant") {
      return absl::InvalidArgumentError(absl::StrCat(
          "chat: message ", i, " has role '", role,
          "'; the Mixtral-Instruct template accepts only user and assistant "
          "(no system prompt)"));
    }
    const char* want = i % 2 == 0 ? "user" : "assistant";
    if (role != want) {
      return absl::InvalidArgumentError(absl::StrCat(
          "chat: message ", i, " has role '", role,
          "' but roles must "
          "alternate user/assistant starting with user (expected '",
          want, "')"));
    }
  }
  return absl::OkStatus();
}

// Word lists for the corpus: plain English with Skill-Mix-like vocabulary.
const char* const kSubjects[] = {
    "the student", "a teacher",     "my friend",    "the writer",
    "our team",    "the scientist", "a gardener",   "the old sailor",
    "her brother", "the committee", "a young poet", "the model"};
const char* const kVerbs[] = {"explains",   "describes",  "writes about",
                              "argues for", "remembers",  "questions",
                              "compares",   "discovers",  "imagines",
                              "ignores",    "celebrates", "summarizes"};
const char* const kObjects[] = {
    "the meaning of a metaphor", "an example of irony",
    "the history of tea",        "a story about dueling",
    "the rules of chess",        "modus ponens",
    "the spirit of gardening",   "a red herring",
    "the sound of rain",         "the value of a promise",
    "statistical syllogism",     "self serving bias",
    "the last train home",       "a letter to the editor",
    "the price of bread"};
const char* const kTails[] = {"because it matters.",
                              "with great care.",
                              "in 3 short sentences.",
                              "without saying why.",
                              "after the 2024 election.",
                              "at 7:30 in the morning.",
                              "and nobody noticed!",
                              "; however, the answer is unclear.",
                              "before lunch?",
                              "(as expected).",
                              "for 12 hours straight.",
                              "\"in the first place\"."};

template <size_t N>
const char* Pick(Rng& rng, const char* const (&list)[N]) {
  return list[rng.UniformInt(N)];
}

}  // namespace

absl::StatusOr<std::unique_ptr<MixtralTokenizer>> MixtralTokenizer::Load(
    const std::string& path) {
  if (!std::filesystem::exists(path)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  std::unique_ptr<MixtralTokenizer> t(new MixtralTokenizer());
  std::string error;
  t->sp_ = SentencePieceBridge::Load(path, &error);
  if (t->sp_ == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a SentencePiece model: ", error));
  }
  t->bos_id_ = t->sp_->bos_id();
  t->eos_id_ = t->sp_->eos_id();
  t->vocab_size_ = t->sp_->PieceSize();
  if (t->bos_id_ < 0 || t->eos_id_ < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the model defines no BOS (", t->bos_id_,
                     ") or EOS (", t->eos_id_, ") id"));
  }
  return t;
}

absl::StatusOr<std::vector<int32_t>> MixtralTokenizer::Encode(
    const std::string& text, bool add_bos) const {
  std::vector<int> ids;
  std::string error;
  if (!sp_->Encode(text, &ids, &error)) {
    return absl::InvalidArgumentError(absl::StrCat("encode: ", error));
  }
  std::vector<int32_t> out;
  out.reserve(ids.size() + 1);
  if (add_bos) out.push_back(bos_id_);
  out.insert(out.end(), ids.begin(), ids.end());
  return out;
}

absl::StatusOr<std::string> MixtralTokenizer::Decode(
    const std::vector<int32_t>& ids) const {
  std::vector<int> in;
  in.reserve(ids.size());
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "decode: token id ", id, " outside [0, ", vocab_size_, ")"));
    }
    in.push_back(id);
  }
  std::string text, error;
  if (!sp_->Decode(in, &text, &error)) {
    return absl::InvalidArgumentError(absl::StrCat("decode: ", error));
  }
  return text;
}

absl::StatusOr<std::vector<int32_t>> MixtralTokenizer::ApplyChatTemplate(
    const std::vector<MixtralChatTurn>& turns) const {
  if (absl::Status s = CheckTurns(turns); !s.ok()) return s;
  std::vector<int32_t> ids = {bos_id_};
  for (const MixtralChatTurn& turn : turns) {
    const bool user = turn.role == "user";
    auto seg = Encode(
        user ? absl::StrCat("[INST] ", turn.content, " [/INST]") : turn.content,
        /*add_bos=*/false);
    if (!seg.ok()) return seg.status();
    ids.insert(ids.end(), seg->begin(), seg->end());
    if (!user) ids.push_back(eos_id_);
  }
  return ids;
}

absl::StatusOr<std::string> RenderMixtralChat(
    const std::vector<MixtralChatTurn>& turns) {
  if (absl::Status s = CheckTurns(turns); !s.ok()) return s;
  std::string out = "<s>";
  for (const MixtralChatTurn& turn : turns) {
    if (turn.role == "user") {
      absl::StrAppend(&out, "[INST] ", turn.content, " [/INST]");
    } else {
      absl::StrAppend(&out, " ", turn.content, "</s>");
    }
  }
  return out;
}

std::vector<std::string> MixtralTokenizerCorpus(int num_sentences,
                                                uint64_t seed) {
  Rng rng = Rng::ForStream(seed, {0x70C0, 1});
  std::vector<std::string> out;
  out.reserve(num_sentences);
  for (int i = 0; i < num_sentences; ++i) {
    std::string s =
        absl::StrCat(Pick(rng, kSubjects), " ", Pick(rng, kVerbs), " ",
                     Pick(rng, kObjects), " ", Pick(rng, kTails));
    s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    if (i % 5 == 0) s = absl::StrCat("[INST] ", s, " [/INST]");
    out.push_back(std::move(s));
  }
  return out;
}

absl::Status TrainMixtralTokenizer(const std::string& path, int vocab_size,
                                   uint64_t seed) {
  if (vocab_size < 320) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tokenizer vocab_size ", vocab_size,
        " is too small (>= 320: 256 byte pieces, 3 controls, characters)"));
  }
  const std::vector<std::string> corpus = MixtralTokenizerCorpus(4000, seed);
  const std::map<std::string, std::string> options = {
      {"model_type", "bpe"},
      {"vocab_size", std::to_string(vocab_size)},
      {"hard_vocab_limit", vocab_size <= 4096 ? "true" : "false"},
      {"byte_fallback", "true"},
      {"character_coverage", "1.0"},
      {"unk_id", "0"},
      {"bos_id", "1"},
      {"eos_id", "2"},
      {"pad_id", "-1"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "true"},
      {"split_digits", "true"},
      {"allow_whitespace_only_pieces", "true"},
      {"num_threads", "1"},
      {"minloglevel", "2"},
  };
  std::string model, error;
  if (!TrainSentencePiece(corpus, options, &model, &error)) {
    return absl::InternalError(absl::StrCat("training the tokenizer: ", error));
  }
  std::ofstream out(path, std::ios::binary);
  out << model;
  if (!out) return absl::UnavailableError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

}  // namespace smoe::model::mixtral
