// Copyright 2026 SMoE Lab authors.
#include "worker/eval/skillmix/pipeline.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/eval/skillmix/testdata_util.h"

namespace smoe::skillmix {
namespace {

using ::smoe::skillmix::testing::TestdataPath;
using ::testing::HasSubstr;

// Student: turn 1 -> a draft; turn 2 -> "Answer: C<c>G<g> ..." where c is
// the combination's position in `topics_` and g the conversation's position
// in the batch. Combination 2 answers with two sentences.
class FakeStudent : public ChatModel {
 public:
  explicit FakeStudent(std::vector<std::string> topics)
      : topics_(std::move(topics)) {}
  absl::StatusOr<std::vector<std::string>> Complete(
      const std::vector<Conversation>& convs,
      const SamplingParams& params) override {
    ++calls;
    seeds.push_back(params.seed);
    last_top_k = params.top_k;
    std::vector<std::string> out;
    for (size_t g = 0; g < convs.size(); ++g) {
      const Conversation& conv = convs[g];
      if (conv.empty() || conv.back().role != "user") {
        return absl::InvalidArgumentError("bad conversation");
      }
      for (const ChatMessage& m : conv) {
        if (m.role == "system") return absl::InvalidArgumentError("system");
      }
      int c = -1;
      for (size_t i = 0; i < topics_.size(); ++i) {
        if (absl::StrContains(conv.front().content,
                              "in the context of " + topics_[i] + " ")) {
          c = static_cast<int>(i);
        }
      }
      if (conv.size() == 1) {
        out.push_back(absl::StrCat("Answer: draft ", c, "\nExplanation: e"));
      } else {
        if (conv.size() != 3 || conv[1].role != "assistant" ||
            conv[1].content !=
                absl::StrCat("Answer: draft ", c, "\nExplanation: e")) {
          return absl::InvalidArgumentError("turn 2 lacks the first reply");
        }
        const std::string extra = c == 2 ? " Two sentences." : "";
        out.push_back(absl::StrCat("Sure. Answer: \"C", c, "G", g, " text.",
                                   extra, "\"\nExplanation: because"));
      }
    }
    return out;
  }
  int calls = 0;
  std::vector<uint64_t> seeds;
  int last_top_k = -1;

 private:
  std::vector<std::string> topics_;
};

// Grader: k = 2 tables whose points are scripted per (answer tag, round).
class FakeGrader : public ChatModel {
 public:
  absl::StatusOr<std::vector<std::string>> Complete(
      const std::vector<Conversation>& convs, const SamplingParams&) override {
    ++calls;
    std::vector<std::string> out;
    std::map<std::string, int> round;
    for (const Conversation& conv : convs) {
      if (conv.size() != 2 || conv[0].role != "system" ||
          conv[0].content != "You are a helpful assistant.") {
        return absl::InvalidArgumentError("grader conversation");
      }
      const std::string& prompt = conv[1].content;
      const size_t pos = prompt.find("answer was: \"\"C");
      if (pos == std::string::npos) return absl::InvalidArgumentError("tag");
      const std::string tag = prompt.substr(pos + 14, 4);  // "C0G1"
      const int r = round[tag]++;
      const std::vector<int> p = Script(tag, r);
      std::string t =
          "Here's the grading table:\n| Criteria | Points Earned "
          "|\n|---|---|\n";
      const char* names[] = {"Skill one", "Skill two", "Pertains", "Sense",
                             "At most one sentence"};
      int total = 0;
      for (int j = 0; j < 5; ++j) {
        absl::StrAppend(&t, "| ", names[j], " | ", p[j], " |\n");
        total += p[j];
      }
      absl::StrAppend(&t, "| Total Points Earned | ", total,
                      " |\nExplanation: ok");
      out.push_back(t);
    }
    return out;
  }
  static std::vector<int> Script(const std::string& tag, int r) {
    if (tag == "C0G0")
      return r == 2 ? std::vector<int>{1, 0, 1, 1, 1}
                    : std::vector<int>{1, 1, 1, 1, 1};
    if (tag == "C1G0")
      return r == 0 ? std::vector<int>{1, 1, 1, 1, 1}
                    : std::vector<int>{0, 1, 1, 1, 1};
    if (tag == "C1G1") return {0, 1, 0, 1, 1};
    if (tag == "C2G0" || tag == "C2G1") return {1, 1, 1, 1, 1};
    return {0, 0, 0, 0, 0};
  }
  int calls = 0;
};

class PipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cat = LoadSkills(TestdataPath("skills.json"));
    ASSERT_TRUE(cat.ok());
    catalog_ = *cat;
    combos_ = {{"Sewing", {"metaphor", "red herring"}},
               {"Knots", {"modus ponens", "spatial reasoning"}},
               {"Dueling", {"self serving bias", "accident (fallacy)"}}};
    config_.k_skills = 2;
    config_.num_combinations = 3;
    config_.num_generations = 2;
    config_.num_gradings = 3;
    config_.student_sampling.seed = 7;
    dir_ = ::testing::TempDir() + "skillmix_pipeline_" +
           std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::remove((dir_ + ".jsonl").c_str());
  }
  std::vector<std::string> Topics() const {
    std::vector<std::string> t;
    for (const Combination& c : combos_) t.push_back(c.topic);
    return t;
  }
  SkillCatalog catalog_;
  std::vector<Combination> combos_;
  SkillMixConfig config_;
  std::string dir_;
};

TEST_F(PipelineTest, VotesMaxAndAggregation) {
  FakeStudent student(Topics());
  FakeGrader grader;
  std::vector<int> progress;
  auto r = RunSkillMix(
      config_, catalog_, combos_, student, grader,
      [&](const SkillMixProgress& p) { progress.push_back(p.done); });
  ASSERT_TRUE(r.ok()) << r.status();
  // 2 student turns and 1 grader call (2 generations x 3 rounds) per item.
  EXPECT_EQ(student.calls, 6);
  EXPECT_EQ(grader.calls, 3);
  EXPECT_EQ(student.last_top_k, 50);
  EXPECT_THAT(progress, ::testing::ElementsAre(0, 1, 2, 3));
  // Per-turn seeds differ.
  EXPECT_NE(student.seeds[0], student.seeds[1]);
  // c0: g0 votes all 1 -> full marks. c1: best is g0 (skill0 voted 0, rest
  // perfect) -> fraction 0.5. c2: grader gives all 1 but the answer has two
  // sentences (limit one) -> sentence point 0 from code.
  const auto& c2 = r->combinations[2].generations[0];
  EXPECT_EQ(c2.num_sentences, 2);
  EXPECT_EQ(c2.votes, (std::vector<double>{1, 1, 1, 1, 0}));
  EXPECT_EQ(r->combinations[0].generations[0].answer, "\"C0G0 text.\"");
  const auto& m = r->metrics;
  EXPECT_NEAR(m.at(ScoreMethod::kAllPointsEarnedBinary).mean, 1.0 / 3, 1e-12);
  EXPECT_NEAR(m.at(ScoreMethod::kAllSkillsAndGoodRest).mean, 2.0 / 3, 1e-12);
  EXPECT_NEAR(m.at(ScoreMethod::kAverageOverSkillsFiltered).mean, 0.5, 1e-12);
  // sum: c0 5, c1 max(4, 3) = 4, c2 4.
  EXPECT_NEAR(m.at(ScoreMethod::kSum).mean, 13.0 / 3, 1e-12);
  EXPECT_NEAR(m.at(ScoreMethod::kAllPointsEarnedBinary).se,
              std::sqrt(1.0 / 3) / std::sqrt(3.0), 1e-12);
}

TEST_F(PipelineTest, ResumesWithoutRedoingFinishedCombinations) {
  config_.checkpoint_path = dir_ + ".jsonl";
  FakeStudent full_student(Topics());
  FakeGrader full_grader;
  SkillMixConfig no_ckpt = config_;
  no_ckpt.checkpoint_path = "";
  auto full =
      RunSkillMix(no_ckpt, catalog_, combos_, full_student, full_grader);
  ASSERT_TRUE(full.ok());

  // Preempted after two combinations.
  FakeStudent s1(Topics());
  FakeGrader g1;
  int polls = 0;
  auto first = RunSkillMix(config_, catalog_, combos_, s1, g1, nullptr,
                           [&] { return ++polls > 2; });
  EXPECT_EQ(first.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(first.status().message(), HasSubstr("preempted after 2 of 3"));
  EXPECT_EQ(g1.calls, 2);

  // A torn line (crash mid-append) is dropped on resume.
  {
    std::ofstream f(config_.checkpoint_path, std::ios::app);
    f << "{\"index\": 2, \"topic\": \"Duel";
  }
  FakeStudent s2(Topics());
  FakeGrader g2;
  auto second = RunSkillMix(config_, catalog_, combos_, s2, g2);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->resumed, 2);
  EXPECT_EQ(s2.calls, 2);  // only combination 2's two turns
  EXPECT_EQ(g2.calls, 1);
  for (ScoreMethod m : AllScoreMethods()) {
    EXPECT_DOUBLE_EQ(second->metrics.at(m).mean, full->metrics.at(m).mean);
  }
  // Same replies as an uninterrupted run (seeds depend on the index only).
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(second->combinations[c].generations[1].replies,
              full->combinations[c].generations[1].replies);
  }

  // Everything done: a third run calls no model.
  FakeStudent s3(Topics());
  FakeGrader g3;
  auto third = RunSkillMix(config_, catalog_, combos_, s3, g3);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(s3.calls + g3.calls, 0);
  EXPECT_EQ(third->resumed, 3);

  // A different configuration refuses the checkpoint.
  SkillMixConfig other = config_;
  other.num_gradings = 1;
  auto refused = RunSkillMix(other, catalog_, combos_, s3, g3);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("num_gradings"));
  std::remove(config_.checkpoint_path.c_str());
}

// Issue 16 item 6 for Skill-Mix: a checkpoint line that fails its checksum
// (a flipped byte on disk) is corruption, not a torn append: the file is set
// aside, the other finished combinations are kept, only the bad one is
// redone, and the result says so.
TEST_F(PipelineTest, CorruptCheckpointLineIsSetAsideAndTheRestResumed) {
  config_.checkpoint_path = dir_ + "-corrupt.jsonl";
  std::remove(config_.checkpoint_path.c_str());
  FakeStudent s0(Topics());
  FakeGrader g0;
  SkillMixConfig no_ckpt = config_;
  no_ckpt.checkpoint_path = "";
  auto full = RunSkillMix(no_ckpt, catalog_, combos_, s0, g0);
  ASSERT_TRUE(full.ok());
  FakeStudent s1(Topics());
  FakeGrader g1;
  ASSERT_TRUE(RunSkillMix(config_, catalog_, combos_, s1, g1).ok());
  // Lines: header, c0, c1, c2. Change a digit of c0's line (still JSON).
  std::string text;
  {
    std::ifstream in(config_.checkpoint_path);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  const size_t line1 = text.find('\n') + 1;
  const size_t field = text.find("\"num_sentences\":", line1);
  ASSERT_LT(field, text.find('\n', line1)) << "c0 has num_sentences";
  const size_t d = text.find_first_of("0123456789", field);
  text[d] = text[d] == '9' ? '8' : static_cast<char>(text[d] + 1);
  std::ofstream(config_.checkpoint_path, std::ios::trunc) << text;

  FakeStudent s2(Topics());
  FakeGrader g2;
  auto again = RunSkillMix(config_, catalog_, combos_, s2, g2);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->resumed, 2) << "c1 and c2 kept, c0 redone";
  EXPECT_EQ(g2.calls, 1);
  EXPECT_THAT(again->checkpoint_set_aside, HasSubstr("is corrupt"));
  EXPECT_THAT(again->checkpoint_set_aside, HasSubstr(".corrupt-"));
  for (ScoreMethod m : AllScoreMethods()) {
    EXPECT_DOUBLE_EQ(again->metrics.at(m).mean, full->metrics.at(m).mean);
  }
  int aside = 0;
  const std::string dir =
      config_.checkpoint_path.substr(0, config_.checkpoint_path.rfind('/'));
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().string().find(config_.checkpoint_path + ".corrupt-") == 0) {
      ++aside;
      std::filesystem::remove(e.path());
    }
  }
  EXPECT_EQ(aside, 1);
  std::remove(config_.checkpoint_path.c_str());
}

// A model that returns Cancelled (SIGTERM mid-call) ends the run as
// preempted; the combination in flight is not recorded.
TEST_F(PipelineTest, CancelledModelCallIsPreemption) {
  class Cancelling : public ChatModel {
   public:
    absl::StatusOr<std::vector<std::string>> Complete(
        const std::vector<Conversation>&, const SamplingParams& p) override {
      if (p.cancel == nullptr || !p.cancel->load()) {
        return absl::InternalError("expected the cancel flag to be passed");
      }
      return absl::CancelledError("stop");
    }
  } cancelling;
  std::atomic<bool> stop{true};
  config_.student_sampling.cancel = &stop;
  config_.checkpoint_path = dir_ + ".jsonl";
  FakeGrader grader;
  auto r = RunSkillMix(config_, catalog_, combos_, cancelling, grader);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(r.status().message(), HasSubstr("preempted"));
  auto text = ReadFileToString(config_.checkpoint_path);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(std::count(text->begin(), text->end(), '\n'), 1);  // header only
  std::remove(config_.checkpoint_path.c_str());
}

TEST_F(PipelineTest, ModelErrorsPropagateAndConfigIsValidated) {
  class Failing : public ChatModel {
   public:
    absl::StatusOr<std::vector<std::string>> Complete(
        const std::vector<Conversation>&, const SamplingParams&) override {
      return absl::UnavailableError("grader down");
    }
  } failing;
  FakeStudent student(Topics());
  auto r = RunSkillMix(config_, catalog_, combos_, student, failing);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("grader: grader down"));

  SkillMixConfig bad = config_;
  bad.num_gradings = 0;
  EXPECT_THAT(
      RunSkillMix(bad, catalog_, combos_, student, failing).status().message(),
      HasSubstr("num_gradings: 0"));
  bad = config_;
  bad.k_skills = 3;
  EXPECT_THAT(
      RunSkillMix(bad, catalog_, combos_, student, failing).status().message(),
      HasSubstr("k_skills is 3"));
}

}  // namespace
}  // namespace smoe::skillmix
