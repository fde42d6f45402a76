// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/mixtral_chat_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>

#include "worker/model/mixtral/mixtral_checkpoint.h"
#include "worker/model/mixtral/mixtral_tokenizer.h"

namespace smoe::trainer {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;
namespace mx = model::mixtral;

class MixtralChatModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    torch::set_num_threads(1);
    dir_ = new std::string((fs::temp_directory_path() /
                            ("smoe_mixtral_chat_" + std::to_string(::getpid())))
                               .string());
    mx::RandomCheckpointOptions o;
    o.seed = 3;
    ASSERT_TRUE(
        mx::WriteRandomMixtralCheckpoint(*dir_, mx::MixtralConfig::Tiny(), o)
            .ok());
    ASSERT_TRUE(
        mx::TrainMixtralTokenizer(*dir_ + "/tokenizer.model", 384, 3).ok());
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::unique_ptr<MixtralChatModel> Create(int64_t max_batch) {
    MixtralChatModel::Options o;
    o.model_dir = *dir_;
    o.max_batch = max_batch;
    auto m = MixtralChatModel::Create(o);
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? std::move(*m) : nullptr;
  }
  static std::string* dir_;
};
std::string* MixtralChatModelTest::dir_ = nullptr;

const std::vector<skillmix::Conversation> kChats = {
    {{"user", "Write a story about tea."}},
    {{"user", "Explain irony."},
     {"assistant", "Irony is saying the opposite."},
     {"user", "Give an example."}},
    {{"user", "Hi"}}};

TEST_F(MixtralChatModelTest, GreedyRepliesAreTheDecodedGeneration) {
  auto chat = Create(16);
  ASSERT_NE(chat, nullptr);
  skillmix::SamplingParams p;
  p.temperature = 0;
  p.max_new_tokens = 8;
  auto replies = chat->Complete(kChats, p);
  ASSERT_TRUE(replies.ok()) << replies.status();
  ASSERT_EQ(replies->size(), 3u);
  // Same as tokenising with the template and generating by hand.
  for (size_t i = 0; i < kChats.size(); ++i) {
    std::vector<mx::MixtralChatTurn> turns;
    for (const auto& m : kChats[i]) turns.push_back({m.role, m.content});
    auto ids = chat->tokenizer().ApplyChatTemplate(turns);
    ASSERT_TRUE(ids.ok());
    mx::MixtralGenerationOptions g;
    g.temperature = 0;
    g.max_new_tokens = 8;
    auto out = chat->model().Generate({*ids}, g);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ((*replies)[i], *chat->tokenizer().Decode((*out)[0]));
  }
}

TEST_F(MixtralChatModelTest, SeededSamplingIsIndependentOfChunking) {
  auto whole = Create(16);
  auto chunked = Create(1);
  ASSERT_NE(whole, nullptr);
  ASSERT_NE(chunked, nullptr);
  skillmix::SamplingParams p;
  p.temperature = 0.7;
  p.top_k = 50;
  p.seed = 42;
  p.max_new_tokens = 6;
  auto a = whole->Complete(kChats, p);
  auto b = chunked->Complete(kChats, p);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  // EPT changes the model without a reload.
  ASSERT_TRUE(whole->SetExpertsPerToken(8).ok());
  EXPECT_EQ(whole->experts_per_token(), 8);
  EXPECT_FALSE(whole->SetExpertsPerToken(0).ok());
}

TEST_F(MixtralChatModelTest, MalformedConversationsAreInvalidArgument) {
  auto chat = Create(4);
  ASSERT_NE(chat, nullptr);
  skillmix::SamplingParams p;
  p.max_new_tokens = 2;
  const std::vector<std::vector<skillmix::Conversation>> bad = {
      {{}},
      {{{"user", "a"}, {"assistant", "b"}}},
      {{{"system", "s"}, {"user", "a"}}}};
  for (const auto& convs : bad) {
    EXPECT_EQ(chat->Complete(convs, p).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  MixtralChatModel::Options o;
  o.model_dir = *dir_ + "/missing";
  EXPECT_THAT(MixtralChatModel::Create(o).status().message(),
              HasSubstr("missing"));
}

}  // namespace
}  // namespace smoe::trainer
