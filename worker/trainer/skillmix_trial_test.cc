// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/skillmix_trial.h"

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "worker/eval/skillmix/data.h"
#include "worker/trainer/skillmix_config.h"
#include "worker/trainer/trial_envelope.h"

#if SMOE_SKILLMIX_TEST_HTTPLIB
#include <httplib.h>

#include "common/http_listener.h"
#endif

namespace smoe::trainer {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

// Student: answers every turn with a one-sentence text; records its specs.
class EchoStudent : public skillmix::ChatModel {
 public:
  absl::StatusOr<std::vector<std::string>> Complete(
      const std::vector<skillmix::Conversation>& convs,
      const skillmix::SamplingParams& params) override {
    ++calls;
    last_temperature = params.temperature;
    std::vector<std::string> out;
    for (size_t i = 0; i < convs.size(); ++i) {
      out.push_back(absl::StrCat("Answer: A tidy text number ", i,
                                 ".\nExplanation: none"));
    }
    return out;
  }
  int calls = 0;
  double last_temperature = -1;
};

// Grader: full marks for every item (k = 2 -> 5 rows). Like the Mixtral
// adapter it refuses system messages (grader=local sends none).
class FullMarksGrader : public skillmix::ChatModel {
 public:
  absl::StatusOr<std::vector<std::string>> Complete(
      const std::vector<skillmix::Conversation>& convs,
      const skillmix::SamplingParams&) override {
    ++calls;
    for (const auto& c : convs) {
      if (c.front().role == "system") {
        return absl::InvalidArgumentError("system message");
      }
    }
    return std::vector<std::string>(convs.size(), Table());
  }
  static std::string Table() {
    return "Here's the grading table:\n| Criteria | Points Earned |\n|--|--|\n"
           "| a | 1 |\n| b | 1 |\n| topic | 1 |\n| sense | 1 |\n"
           "| At most one sentence | 1 |\n| Total Points Earned | 5 |\n";
  }
  int calls = 0;
};

std::string TrialJson(const json& params, int seed = 0) {
  return json{{"sweep_id", "s"},    {"trial_id", "s/t1"}, {"attempt", 1},
              {"kind", "skillmix"}, {"seed", seed},       {"params", params}}
      .dump();
}

class SkillMixTrialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    workdir_ = ::testing::TempDir() + "skillmix_trial_" +
               std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(workdir_);
  }
  void TearDown() override { std::filesystem::remove_all(workdir_); }

  SkillMixRunOptions Options(std::vector<std::string>* events,
                             EchoStudent** student_out = nullptr) {
    SkillMixRunOptions o;
    o.workdir = workdir_;
    o.emit = [events](const std::string& line) { events->push_back(line); };
    o.model_factory = [this, student_out](const ChatModelSpec& spec)
        -> absl::StatusOr<std::unique_ptr<skillmix::ChatModel>> {
      specs_.push_back(spec);
      auto s = std::make_unique<EchoStudent>();
      if (student_out != nullptr) *student_out = s.get();
      return std::unique_ptr<skillmix::ChatModel>(std::move(s));
    };
    return o;
  }
  std::string workdir_;
  std::vector<ChatModelSpec> specs_;
};

TEST(SkillMixConfigTest, ParsesParamsAndDefaults) {
  auto c = ParseSkillMixTrialJson(TrialJson({{"model", "/m"},
                                             {"ept", 3},
                                             {"k_skills", 4},
                                             {"num_combinations", 7},
                                             {"grader", "local"},
                                             {"grader_model", "/g"},
                                             {"grader_prompt_kind", "llama"},
                                             {"top_k", 40},
                                             {"temperature", 0.5},
                                             {"device", "cpu"}},
                                            9));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->model, "/m");
  EXPECT_EQ(c->ept, 3);
  EXPECT_EQ(c->eval.k_skills, 4);
  EXPECT_EQ(c->eval.num_combinations, 7);
  EXPECT_EQ(c->eval.num_generations, 3);  // default
  EXPECT_EQ(c->eval.combos_seed, 10);     // default
  EXPECT_EQ(c->eval.grading_prompt, skillmix::GradingPrompt::kLlama);
  EXPECT_EQ(c->eval.student_sampling.top_k, 40);
  EXPECT_EQ(c->eval.student_sampling.seed, 9u);
  EXPECT_EQ(c->grader_api_key_env, "OPENAI_API_KEY");
  EXPECT_EQ(c->device, "cpu");
}

TEST(SkillMixConfigTest, ErrorsNameTheKeyAndValue) {
  auto missing = ParseSkillMixTrialJson(TrialJson({{"ept", 2}}));
  EXPECT_THAT(missing.status().message(), HasSubstr("model: required"));
  auto range =
      ParseSkillMixTrialJson(TrialJson({{"model", "m"}, {"k_skills", 11}}));
  EXPECT_THAT(range.status().message(), HasSubstr("k_skills=11"));
  auto unknown =
      ParseSkillMixTrialJson(TrialJson({{"model", "m"}, {"foo", 1}}));
  EXPECT_THAT(unknown.status().message(),
              HasSubstr("unknown parameter \"foo\""));
  auto grader =
      ParseSkillMixTrialJson(TrialJson({{"model", "m"}, {"grader", "claude"}}));
  EXPECT_THAT(grader.status().message(), HasSubstr("grader=\"claude\""));
  // Only *_API_KEY variables may be sent to the (sweep-chosen) grader URL.
  auto secret = ParseSkillMixTrialJson(
      TrialJson({{"model", "m"}, {"grader_api_key_env", "SMOE_TOKEN"}}));
  EXPECT_EQ(secret.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(secret.status().message(), HasSubstr("'SMOE_TOKEN'"));
  EXPECT_TRUE(ParseSkillMixTrialJson(
                  TrialJson({{"model", "m"}, {"grader_api_key_env", ""}}))
                  .ok());
  auto kind = ParseSkillMixTrialJson(R"({"kind": "sraven", "params": {}})");
  EXPECT_EQ(kind.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*TrialKind(R"({"kind": "skillmix"})"), "skillmix");
}

TEST_F(SkillMixTrialTest, RunsEmitsEventsAndResumes) {
  auto c = ParseSkillMixTrialJson(TrialJson({{"model", "/models/tiny"},
                                             {"ept", 2},
                                             {"k_skills", 2},
                                             {"num_combinations", 4},
                                             {"num_generations", 2},
                                             {"num_gradings", 3},
                                             {"grader", "local"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<std::string> events;
  FullMarksGrader grader;
  SkillMixRunOptions o = Options(&events);
  o.grader_override = &grader;
  auto r = RunSkillMixTrial(*c, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(specs_.size(), 1u);
  EXPECT_EQ(specs_[0].model_dir, "/models/tiny");
  EXPECT_EQ(specs_[0].ept, 2);
  EXPECT_EQ(grader.calls, 4);
  // progress 0..4, metrics per finished combination, one result last.
  int progress = 0, metrics = 0, checkpoints = 0;
  for (const std::string& line : events) {
    const json ev = json::parse(line);
    progress += ev["event"] == "progress";
    checkpoints += ev["event"] == "checkpoint";
    if (ev["event"] == "metric") {
      ++metrics;
      EXPECT_TRUE(absl::StartsWith(ev["name"].get<std::string>(), "skillmix/"));
    }
  }
  EXPECT_EQ(progress, 5);
  EXPECT_EQ(checkpoints, 4);
  EXPECT_GT(metrics, 0);
  const json result = json::parse(events.back());
  ASSERT_EQ(result["event"], "result");
  EXPECT_DOUBLE_EQ(result["metrics"]["ratio_full_marks"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(result["metrics"]["ratio_full_marks_se"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(result["metrics"]["skill_fraction"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(result["metrics"]["total_score"].get<double>(), 5.0);
  EXPECT_TRUE(std::filesystem::exists(SkillMixResultPath(workdir_)));

  // A second attempt in the same work dir redoes nothing.
  std::vector<std::string> events2;
  FullMarksGrader grader2;
  EchoStudent* student2 = nullptr;
  SkillMixRunOptions o2 = Options(&events2, &student2);
  o2.grader_override = &grader2;
  auto r2 = RunSkillMixTrial(*c, o2);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->resumed, 4);
  EXPECT_EQ(grader2.calls, 0);
  ASSERT_NE(student2, nullptr);
  EXPECT_EQ(student2->calls, 0);
}

TEST_F(SkillMixTrialTest, StopFlagMeansPreempted) {
  auto c = ParseSkillMixTrialJson(TrialJson(
      {{"model", "/m"}, {"num_combinations", 3}, {"grader", "local"}}));
  ASSERT_TRUE(c.ok());
  std::vector<std::string> events;
  FullMarksGrader grader;
  std::atomic<bool> stop{true};
  SkillMixRunOptions o = Options(&events);
  o.grader_override = &grader;
  o.stop = &stop;
  auto r = RunSkillMixTrial(*c, o);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(grader.calls, 0);
}

TEST_F(SkillMixTrialTest, LocalGraderIsBuiltFromItsOwnSpec) {
  auto c = ParseSkillMixTrialJson(TrialJson({{"model", "/student"},
                                             {"ept", 1},
                                             {"num_combinations", 1},
                                             {"num_generations", 1},
                                             {"num_gradings", 1},
                                             {"grader", "local"},
                                             {"grader_model", "/grader"},
                                             {"grader_ept", 2},
                                             {"device", "cpu"}}));
  ASSERT_TRUE(c.ok());
  std::vector<std::string> events;
  auto r = RunSkillMixTrial(*c, Options(&events));
  ASSERT_TRUE(r.ok()) << r.status();  // the echo "grader" gives no table
  ASSERT_EQ(specs_.size(), 2u);
  EXPECT_EQ(specs_[1].model_dir, "/grader");
  EXPECT_EQ(specs_[1].ept, 2);
  EXPECT_EQ(specs_[1].device, "cpu");
}

TEST_F(SkillMixTrialTest, MissingApiKeyFailsBeforeLoadingTheModel) {
  ::unsetenv("SMOE_TEST_NO_SUCH_API_KEY");
  auto c = ParseSkillMixTrialJson(
      TrialJson({{"model", "/m"},
                 {"grader", "openai"},
                 {"grader_api_key_env", "SMOE_TEST_NO_SUCH_API_KEY"}}));
  ASSERT_TRUE(c.ok());
  std::vector<std::string> events;
  auto r = RunSkillMixTrial(*c, Options(&events));
#if SMOE_SKILLMIX_HAVE_HTTP
  EXPECT_THAT(r.status().message(), HasSubstr("SMOE_TEST_NO_SUCH_API_KEY"));
#endif
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(specs_.empty());
}

#if SMOE_SKILLMIX_TEST_HTTPLIB
// grader=openai end to end against a local OpenAI-compatible server.
TEST_F(SkillMixTrialTest, OpenAiGraderThroughTheTrial) {
  httplib::Server server;
  std::atomic<int> requests{0};
  server.Post("/v1/chat/completions", [&](const httplib::Request& req,
                                          httplib::Response& res) {
    ++requests;
    if (req.get_header_value("Authorization") != "Bearer k-123") {
      res.status = 401;
      return;
    }
    const json body = json::parse(req.body);
    json choices = json::array();
    for (int i = 0; i < body.value("n", 1); ++i) {
      choices.push_back(
          {{"index", i}, {"message", {{"content", FullMarksGrader::Table()}}}});
    }
    res.set_content(json{{"choices", choices}}.dump(), "application/json");
  });
  HttpListener listener(&server);
  ASSERT_TRUE(listener.Start("127.0.0.1", 0).ok());
  const int port = listener.port();
  ::setenv("SMOE_TEST_TRIAL_API_KEY", "k-123", 1);
  auto c = ParseSkillMixTrialJson(TrialJson(
      {{"model", "/m"},
       {"num_combinations", 2},
       {"num_generations", 2},
       {"grader_base_url", absl::StrCat("http://127.0.0.1:", port, "/v1")},
       {"grader_api_key_env", "SMOE_TEST_TRIAL_API_KEY"},
       {"grader_requests_per_second", 0}}));
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<std::string> events;
  auto r = RunSkillMixTrial(*c, Options(&events));
  listener.Stop();
  ASSERT_TRUE(r.ok()) << r.status();
  // 2 combinations x 2 generations, n = 3 gradings per request.
  EXPECT_EQ(requests.load(), 4);
  EXPECT_DOUBLE_EQ(
      r->metrics.at(skillmix::ScoreMethod::kAllPointsEarnedBinary).mean, 1.0);
  // Cached under the work dir; the key is in no file there.
  for (const auto& e :
       std::filesystem::recursive_directory_iterator(workdir_)) {
    if (!e.is_regular_file()) continue;
    auto text = skillmix::ReadFileToString(e.path().string());
    ASSERT_TRUE(text.ok());
    EXPECT_THAT(*text, ::testing::Not(HasSubstr("k-123"))) << e.path();
  }
  EXPECT_TRUE(std::filesystem::exists(workdir_ + "/grader_cache"));
}
#endif

}  // namespace
}  // namespace smoe::trainer
