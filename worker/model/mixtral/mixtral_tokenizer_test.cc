// Copyright 2026 SMoE Lab authors.
#include "worker/model/mixtral/mixtral_tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace smoe::model::mixtral {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class MixtralTokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() /
                        ("smoe_tok_" + std::to_string(::getpid())));
    fs::create_directories(*dir_);
    path_ = new std::string((*dir_ / "tokenizer.model").string());
    ASSERT_TRUE(TrainMixtralTokenizer(*path_, 384, /*seed=*/1).ok());
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    delete path_;
  }
  static fs::path* dir_;
  static std::string* path_;
};
fs::path* MixtralTokenizerTest::dir_ = nullptr;
std::string* MixtralTokenizerTest::path_ = nullptr;

TEST_F(MixtralTokenizerTest, LlamaStyleSpecialIdsAndDeterministicTraining) {
  auto tok = MixtralTokenizer::Load(*path_);
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_EQ((*tok)->vocab_size(), 384);
  EXPECT_EQ((*tok)->bos_id(), 1);
  EXPECT_EQ((*tok)->eos_id(), 2);
  EXPECT_EQ((*tok)->IdToPiece(0), "<unk>");
  EXPECT_EQ((*tok)->IdToPiece(3), "<0x00>");  // byte fallback pieces
  const std::string again = (*dir_ / "again.model").string();
  ASSERT_TRUE(TrainMixtralTokenizer(again, 384, 1).ok());
  EXPECT_EQ(ReadAll(again), ReadAll(*path_));
}

TEST_F(MixtralTokenizerTest, RoundTripIncludingByteFallback) {
  auto tok = MixtralTokenizer::Load(*path_);
  ASSERT_TRUE(tok.ok());
  for (const std::string text :
       {"The student explains the meaning of a metaphor.",
        "Numbers 12345 and  double  spaces", "naïve café — 日本語 🙂",
        "[INST] hi [/INST]"}) {
    auto ids = (*tok)->Encode(text, /*add_bos=*/true);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(ids->front(), 1);
    auto back = (*tok)->Decode(*ids);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, text);
  }
  // Unseen characters become byte pieces, not <unk>.
  auto ids = (*tok)->Encode("日", false);
  ASSERT_TRUE(ids.ok());
  for (int32_t id : *ids) EXPECT_NE(id, 0);
  EXPECT_EQ((*tok)->Decode({5000}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(MixtralTokenizerTest, ChatTemplateTwoTurns) {
  auto tok = MixtralTokenizer::Load(*path_);
  ASSERT_TRUE(tok.ok());
  const std::vector<MixtralChatTurn> chat = {{"user", "Write a story."},
                                             {"assistant", "Once upon a time."},
                                             {"user", "Explain it."}};
  auto ids = (*tok)->ApplyChatTemplate(chat);
  ASSERT_TRUE(ids.ok()) << ids.status();
  auto seg = [&](const std::string& s) { return *(*tok)->Encode(s, false); };
  std::vector<int32_t> want = {1};
  for (const auto& part :
       {seg("[INST] Write a story. [/INST]"), seg("Once upon a time."),
        std::vector<int32_t>{2}, seg("[INST] Explain it. [/INST]")}) {
    want.insert(want.end(), part.begin(), part.end());
  }
  EXPECT_EQ(*ids, want);
  // Exactly one BOS at the start, one EOS after the assistant turn.
  EXPECT_EQ(std::count(ids->begin(), ids->end(), 1), 1);
  EXPECT_EQ(std::count(ids->begin(), ids->end(), 2), 1);
  // Each segment carries SentencePiece's dummy prefix: "▁[" and "▁Once".
  EXPECT_EQ((*tok)->IdToPiece((*ids)[1]).rfind("\xE2\x96\x81", 0), 0u);
  const size_t reply = 1 + seg("[INST] Write a story. [/INST]").size();
  EXPECT_EQ((*tok)->IdToPiece((*ids)[reply]).rfind("\xE2\x96\x81", 0), 0u);
  auto text = (*tok)->Decode(*ids);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text,
            "[INST] Write a story. [/INST] Once upon a time. [INST] Explain "
            "it. [/INST]");
  auto rendered = RenderMixtralChat(chat);
  ASSERT_TRUE(rendered.ok());
  EXPECT_EQ(*rendered,
            "<s>[INST] Write a story. [/INST] Once upon a time.</s>[INST] "
            "Explain it. [/INST]");
}

TEST_F(MixtralTokenizerTest, ChatTemplateRejectsBadRoles) {
  auto tok = MixtralTokenizer::Load(*path_);
  ASSERT_TRUE(tok.ok());
  const std::vector<std::vector<MixtralChatTurn>> bad = {
      {},
      {{"system", "Be brief."}, {"user", "hi"}},
      {{"assistant", "hi"}},
      {{"user", "a"}, {"user", "b"}},
      {{"user", "a"}, {"tool", "b"}}};
  for (const auto& chat : bad) {
    auto ids = (*tok)->ApplyChatTemplate(chat);
    EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_THAT((*tok)->ApplyChatTemplate(bad[1]).status().message(),
              HasSubstr("role 'system'"));
}

TEST_F(MixtralTokenizerTest, LoadErrorsNameTheFile) {
  EXPECT_EQ(
      MixtralTokenizer::Load("/nonexistent/tokenizer.model").status().code(),
      absl::StatusCode::kNotFound);
  const std::string junk = (*dir_ / "junk.model").string();
  std::ofstream(junk) << "not a model";
  auto r = MixtralTokenizer::Load(junk);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr(junk));
  EXPECT_THAT(MixtralTokenizerCorpus(3, 9),
              ElementsAre(testing::_, testing::_, testing::_));
  EXPECT_EQ(MixtralTokenizerCorpus(50, 9), MixtralTokenizerCorpus(50, 9));
}

}  // namespace
}  // namespace smoe::model::mixtral
