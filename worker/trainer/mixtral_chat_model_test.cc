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
  static std::unique_ptr<MixtralChatModel> Create(int64_t max_batch,
                                                  int64_t ept = 0) {
    MixtralChatModel::Options o;
    o.model_dir = *dir_;
    o.max_batch = max_batch;
    o.experts_per_token = ept;
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

// Two chat models over ONE loaded model at different EPTs (a student and a
// local grader on the same checkpoint) reply exactly like two separately
// loaded models; the shared model's own EPT is never changed; generation
// goes through the GenerateFn when one is given.
TEST_F(MixtralChatModelTest, SharedModelAtTwoEptsEqualsTwoModels) {
  auto separate1 = Create(16, 1);
  auto separate8 = Create(16, 8);
  ASSERT_NE(separate1, nullptr);
  ASSERT_NE(separate8, nullptr);
  auto model = mx::MixtralModel::Load(*dir_);
  auto tok = mx::MixtralTokenizer::Load(*dir_ + "/tokenizer.model");
  ASSERT_TRUE(model.ok() && tok.ok());
  std::shared_ptr<mx::MixtralModel> shared = std::move(*model);
  std::shared_ptr<const mx::MixtralTokenizer> shared_tok = std::move(*tok);
  const int64_t default_ept = shared->experts_per_token();
  int calls = 0;
  auto counting = [&calls](mx::MixtralModel& m,
                           const std::vector<std::vector<int32_t>>& prompts,
                           const mx::MixtralGenerationOptions& o) {
    ++calls;
    return m.Generate(prompts, o);
  };
  ASSERT_TRUE(
      MixtralChatModel::Validate(*shared, *shared_tok, 8, 4, *dir_).ok());
  MixtralChatModel at1(shared, shared_tok, 4, 1, counting);
  MixtralChatModel at8(shared, shared_tok, 4, 8);
  skillmix::SamplingParams p;
  p.temperature = 0.9;
  p.seed = 5;
  p.max_new_tokens = 6;
  auto a1 = at1.Complete(kChats, p);
  auto a8 = at8.Complete(kChats, p);
  auto b1 = separate1->Complete(kChats, p);
  auto b8 = separate8->Complete(kChats, p);
  ASSERT_TRUE(a1.ok() && a8.ok() && b1.ok() && b8.ok());
  EXPECT_EQ(*a1, *b1);
  EXPECT_EQ(*a8, *b8);
  EXPECT_NE(*a1, *a8);  // EPT matters on this model
  EXPECT_EQ(calls, 1);  // 3 conversations, max_batch 4: one call
  EXPECT_EQ(shared->experts_per_token(), default_ept);
  EXPECT_EQ(at1.experts_per_token(), 1);
  const absl::Status bad =
      MixtralChatModel::Validate(*shared, *shared_tok, 9, 4, *dir_);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("got 9"));
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
