// Copyright 2026 SMoE Lab authors.
#include "worker/eval/skillmix/openai_grader.h"

#include <httplib.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/http_listener.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "worker/eval/skillmix/data.h"

namespace smoe::skillmix {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

constexpr char kKeyEnv[] = "SMOE_TEST_GRADER_KEY";
constexpr char kKey[] = "sk-test-SECRET-0123456789";

// A local OpenAI-compatible server on 127.0.0.1 with an ephemeral port. Each
// request pops the next scripted behaviour ("ok" when the script is empty).
class FakeOpenAi {
 public:
  FakeOpenAi() {
    server_.Post("/v1/chat/completions", [this](const httplib::Request& req,
                                                httplib::Response& res) {
      std::string action = "ok";
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++requests_;
        bodies_.push_back(req.body);
        if (req.get_header_value("Authorization") !=
            absl::StrCat("Bearer ", kKey)) {
          res.status = 401;
          res.set_content(
              absl::StrCat("{\"error\": \"Incorrect API key provided: ",
                           req.get_header_value("Authorization"), "\"}"),
              "application/json");
          return;
        }
        if (!script_.empty()) {
          action = script_.front();
          script_.pop_front();
        }
      }
      if (action == "429") {
        res.status = 429;
        res.set_header("Retry-After", "0");
        res.set_content("{\"error\": \"rate limited\"}", "application/json");
        return;
      }
      if (action == "500") {
        res.status = 500;
        res.set_content("{\"error\": \"boom\"}", "application/json");
        return;
      }
      if (action == "echo401") {  // a server quoting the key back
        res.status = 401;
        res.set_content(absl::StrCat("{\"error\": \"bad key ", kKey, "\"}"),
                        "application/json");
        return;
      }
      if (action == "slow") {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      }
      const Json body = Json::parse(req.body);
      const int n = body.value("n", 1);
      const std::string last = body["messages"].back()["content"];
      Json choices = Json::array();
      for (int i = n - 1; i >= 0; --i) {  // out of order on purpose
        choices.push_back(
            {{"index", i},
             {"message",
              {{"role", "assistant"},
               {"content", absl::StrCat("reply ", i, " to ", last)}}}});
      }
      res.set_content(Json{{"choices", choices}}.dump(), "application/json");
    });
    // On failure base_url() names port -1 and the requests fail.
    listener_.Start("127.0.0.1", 0).IgnoreError();
  }
  ~FakeOpenAi() { listener_.Stop(); }
  std::string base_url() const {
    return absl::StrCat("http://127.0.0.1:", listener_.port(), "/v1");
  }
  void Script(std::vector<std::string> actions) {
    std::lock_guard<std::mutex> lock(mu_);
    script_.assign(actions.begin(), actions.end());
  }
  int requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  std::vector<std::string> bodies() {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_;
  }

 private:
  httplib::Server server_;
  HttpListener listener_{&server_};  // after server_: stopped before it
  std::mutex mu_;
  std::deque<std::string> script_;
  std::vector<std::string> bodies_;
  int requests_ = 0;
};

class OpenAiGraderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv(kKeyEnv, kKey, 1);
    cache_dir_ =
        ::testing::TempDir() + "openai_cache_" + std::to_string(::getpid()) +
        "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(cache_dir_);
    options_.base_url = server_.base_url();
    options_.model = "gpt-4";
    options_.api_key_env = kKeyEnv;
    options_.initial_backoff = absl::Milliseconds(5);
    options_.max_backoff = absl::Milliseconds(20);
    options_.max_requests_per_second = 0;
    options_.request_timeout = absl::Seconds(10);
  }
  void TearDown() override { std::filesystem::remove_all(cache_dir_); }

  static Conversation Conv(const std::string& user) {
    return {{"system", "You are a helpful assistant."}, {"user", user}};
  }

  FakeOpenAi server_;
  OpenAiOptions options_;
  std::string cache_dir_;
};

TEST_F(OpenAiGraderTest, RetriesOn429And500ThenSucceeds) {
  auto model = OpenAiChatModel::Create(options_);
  ASSERT_TRUE(model.ok()) << model.status();
  server_.Script({"429", "500"});
  auto r = (*model)->Complete({Conv("grade this")}, SamplingParams{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(*r, ::testing::ElementsAre("reply 0 to grade this"));
  EXPECT_EQ(server_.requests(), 3);
  EXPECT_EQ((*model)->retries(), 2);
  const Json body = Json::parse(server_.bodies().back());
  EXPECT_EQ(body["model"], "gpt-4");
  EXPECT_EQ(body["max_tokens"], 512);
  EXPECT_EQ(body["messages"][0]["role"], "system");
}

TEST_F(OpenAiGraderTest, IdenticalConversationsShareOneRequestWithN) {
  auto model = OpenAiChatModel::Create(options_);
  ASSERT_TRUE(model.ok());
  auto r = (*model)->Complete({Conv("a"), Conv("b"), Conv("a"), Conv("a")},
                              SamplingParams{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(*r, ::testing::ElementsAre("reply 0 to a", "reply 0 to b",
                                         "reply 1 to a", "reply 2 to a"));
  EXPECT_EQ(server_.requests(), 2);
  bool saw_n3 = false;
  for (const std::string& b : server_.bodies()) {
    saw_n3 |= Json::parse(b).value("n", 1) == 3;
  }
  EXPECT_TRUE(saw_n3);

  options_.use_n = false;
  auto separate = OpenAiChatModel::Create(options_);
  ASSERT_TRUE(separate.ok());
  auto r2 = (*separate)->Complete({Conv("a"), Conv("a")}, SamplingParams{});
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(server_.requests(), 4);
}

TEST_F(OpenAiGraderTest, CacheMakesReRunsFreeAndHoldsNoKey) {
  options_.cache_dir = cache_dir_;
  const std::vector<Conversation> convs = {Conv("x"), Conv("x"), Conv("y")};
  SamplingParams params;
  params.seed = 3;
  std::vector<std::string> first;
  {
    auto model = OpenAiChatModel::Create(options_);
    ASSERT_TRUE(model.ok());
    auto r = (*model)->Complete(convs, params);
    ASSERT_TRUE(r.ok()) << r.status();
    first = *r;
    EXPECT_EQ((*model)->cache_hits(), 0);
  }
  const int before = server_.requests();
  EXPECT_EQ(before, 2);
  auto again = OpenAiChatModel::Create(options_);
  ASSERT_TRUE(again.ok());
  auto r = (*again)->Complete(convs, params);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, first);
  EXPECT_EQ(server_.requests(), before);  // zero new requests
  EXPECT_EQ((*again)->cache_hits(), 2);
  // Other sampling params are a different cache entry.
  params.temperature = 0.1;
  ASSERT_TRUE((*again)->Complete({Conv("y")}, params).ok());
  EXPECT_EQ(server_.requests(), before + 1);
  // No cache file (or leftover tmp file) contains the key.
  int files = 0;
  for (const auto& e :
       std::filesystem::recursive_directory_iterator(cache_dir_)) {
    if (!e.is_regular_file()) continue;
    ++files;
    EXPECT_FALSE(absl::StrContains(e.path().string(), ".tmp"));
    auto text = ReadFileToString(e.path().string());
    ASSERT_TRUE(text.ok());
    EXPECT_THAT(*text, Not(HasSubstr(kKey)));
    EXPECT_THAT(*text, Not(HasSubstr("SECRET")));
  }
  EXPECT_EQ(files, 3);
}

TEST_F(OpenAiGraderTest, TimeoutIsRetriedThenReported) {
  options_.request_timeout = absl::Milliseconds(300);
  options_.max_retries = 1;
  auto model = OpenAiChatModel::Create(options_);
  ASSERT_TRUE(model.ok());
  server_.Script({"slow", "slow"});
  auto r = (*model)->Complete({Conv("late")}, SamplingParams{});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ((*model)->requests_sent(), 2);
}

TEST_F(OpenAiGraderTest, KeyNeverInLogsOrErrors) {
  options_.max_retries = 2;
  auto model = OpenAiChatModel::Create(options_);
  ASSERT_TRUE(model.ok());
  ::testing::internal::CaptureStderr();
  server_.Script({"500", "429", "echo401"});
  auto r = (*model)->Complete({Conv("q")}, SamplingParams{});
  const std::string logs = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("[REDACTED]"));
  EXPECT_THAT(std::string(r.status().message()), Not(HasSubstr("SECRET")));
  EXPECT_THAT(logs, HasSubstr("retry 1/2"));  // the retries were logged
  EXPECT_THAT(logs, Not(HasSubstr("SECRET")));
  EXPECT_EQ(server_.requests(), 3);  // 401 is not retried
}

TEST_F(OpenAiGraderTest, WrongKeyIsPermissionDenied) {
  ::setenv(kKeyEnv, "sk-wrong", 1);
  auto model = OpenAiChatModel::Create(options_);
  ASSERT_TRUE(model.ok());
  auto r = (*model)->Complete({Conv("q")}, SamplingParams{});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(r.status().message()), Not(HasSubstr("sk-wrong")));
  EXPECT_EQ(server_.requests(), 1);
}

TEST_F(OpenAiGraderTest, CreateValidates) {
  ::unsetenv(kKeyEnv);
  auto missing = OpenAiChatModel::Create(options_);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(missing.status().message(), HasSubstr(kKeyEnv));
  options_.api_key_env = "";
  options_.model = "";
  EXPECT_THAT(OpenAiChatModel::Create(options_).status().message(),
              HasSubstr("grader_model"));
  options_.model = "m";
  auto model = OpenAiChatModel::Create(options_);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ((*model)->Complete({{}}, SamplingParams{}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT((*model)
                  ->Complete({{{"robot", "x"}}}, SamplingParams{})
                  .status()
                  .message(),
              HasSubstr("role 'robot'"));
}

TEST_F(OpenAiGraderTest, CancelFlagStopsRetriesAndSlowRequests) {
  options_.initial_backoff = absl::Seconds(30);  // would hang if not honoured
  options_.max_backoff = absl::Seconds(30);
  auto model = OpenAiChatModel::Create(options_);
  ASSERT_TRUE(model.ok());
  std::atomic<bool> cancel{false};
  SamplingParams params;
  params.cancel = &cancel;
  server_.Script({"500"});
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel.store(true);
  });
  auto r = (*model)->Complete({Conv("q")}, params);
  canceller.join();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(server_.requests(), 1);
  // Already cancelled: nothing is sent.
  auto again = (*model)->Complete({Conv("q2")}, params);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(server_.requests(), 1);
}

// Request starts are spaced by the client-side limit (a lower bound only).
TEST_F(OpenAiGraderTest, RateLimitSpacesRequests) {
  options_.max_requests_per_second = 20;
  auto model = OpenAiChatModel::Create(options_);
  ASSERT_TRUE(model.ok());
  const absl::Time start = absl::Now();
  auto r = (*model)->Complete(
      {Conv("1"), Conv("2"), Conv("3"), Conv("4"), Conv("5")},
      SamplingParams{});
  ASSERT_TRUE(r.ok());
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(195));
}

}  // namespace
}  // namespace smoe::skillmix
