// Copyright 2026 SMoE Lab authors.
//
// File: tests/skillmix/fake_grader.h
//
// A fake OpenAI-compatible chat-completions server on 127.0.0.1 for the
// Skill-Mix end-to-end tests (tests/skillmix, tests/local_ep): checks the
// bearer key (401 otherwise), answers each of the request's `n` choices with a
// full-marks grading table, counts requests, and can delay its replies.
// Listens on a free port (common/http_listener.h: never a fixed one; stops
// without cpp-httplib's shutdown race). Test-only; header-only (cpp-httplib).
#ifndef SMOE_TESTS_SKILLMIX_FAKE_GRADER_H_
#define SMOE_TESTS_SKILLMIX_FAKE_GRADER_H_

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/http_listener.h"
#include "nlohmann/json.hpp"

namespace smoe::skillmix_test {

class FakeGrader {
 public:
  // Serves until destroyed; requests must carry "Bearer <key>".
  explicit FakeGrader(std::string key) : key_(std::move(key)) {
    server_.Post("/v1/chat/completions", [this](const httplib::Request& req,
                                                httplib::Response& res) {
      ++requests_;
      if (req.get_header_value("Authorization") !=
          absl::StrCat("Bearer ", key_)) {
        res.status = 401;
        return;
      }
      if (delay_ms_ > 0) {
        std::this_thread::sleep_for(
            std::chrono::milliseconds(delay_ms_.load()));
      }
      const nlohmann::json body =
          nlohmann::json::parse(req.body, nullptr, false);
      const int n = body.is_object() ? body.value("n", 1) : 1;
      nlohmann::json choices = nlohmann::json::array();
      for (int i = 0; i < n; ++i) {
        choices.push_back({{"index", i},
                           {"message",
                            {{"role", "assistant"},
                             {"content",
                              "Here's the grading table:\n| Criteria | Points "
                              "Earned |\n|---|---|\n| s1 | 1 |\n| s2 | 1 |\n"
                              "| topic | 1 |\n| sense | 1 |\n| length | 1 |\n"
                              "| Total Points Earned | 5 |\n"}}}});
      }
      res.set_content(nlohmann::json{{"choices", choices}}.dump(),
                      "application/json");
    });
    // On failure url() names port -1 and the test's requests fail.
    listener_.Start("127.0.0.1", 0).IgnoreError();
  }
  ~FakeGrader() { listener_.Stop(); }
  FakeGrader(const FakeGrader&) = delete;
  FakeGrader& operator=(const FakeGrader&) = delete;

  std::string url() const {
    return absl::StrCat("http://127.0.0.1:", listener_.port(), "/v1");
  }
  int requests() const { return requests_.load(); }
  void set_delay_ms(int ms) { delay_ms_ = ms; }

 private:
  std::string key_;
  httplib::Server server_;
  HttpListener listener_{&server_};  // after server_: stopped before it
  std::atomic<int> requests_{0};
  std::atomic<int> delay_ms_{0};
};

}  // namespace smoe::skillmix_test

#endif  // SMOE_TESTS_SKILLMIX_FAKE_GRADER_H_
