// Copyright 2026 SMoE Lab authors.
//
// HttpListener: start/stop loops that used to hang (cpp-httplib drops a
// stop() that arrives before its accept loop runs; issue 20), each iteration
// under a deadline so that a regression fails fast instead of stalling ctest.
#include "common/http_listener.h"

#include <httplib.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace smoe {
namespace {

// Runs `fn` on a thread of its own; when it takes longer than `limit` the
// test fails and the process exits at once (the thread is stuck, e.g. in
// accept(), and cannot be joined).
void WithDeadline(absl::Duration limit, const std::string& what,
                  const std::function<void()>& fn) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  std::thread t([fn, done] {
    fn();
    done->set_value();
  });
  if (finished.wait_for(absl::ToChronoNanoseconds(limit)) !=
      std::future_status::ready) {
    ADD_FAILURE() << what << " did not finish within " << limit
                  << " (hung in shutdown?)";
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(1);
  }
  t.join();
}

constexpr int kIterations = 200;
const absl::Duration kPerIteration = absl::Seconds(10);

TEST(HttpListenerTest, StopRightAfterStartNeverHangs) {
  for (int i = 0; i < kIterations; ++i) {
    WithDeadline(kPerIteration, absl::StrCat("iteration ", i), [] {
      httplib::Server server;
      HttpListener listener(&server);
      ASSERT_TRUE(listener.Start("127.0.0.1", 0).ok());
      EXPECT_GT(listener.port(), 0);
      listener.Stop();
    });
  }
}

// ready_timeout 0: Start returns before the accept loop has (usually) run, so
// Stop() meets exactly the window where cpp-httplib ignores stop().
TEST(HttpListenerTest, StopBeforeTheAcceptLoopRunsNeverHangs) {
  for (int i = 0; i < kIterations; ++i) {
    WithDeadline(kPerIteration, absl::StrCat("iteration ", i), [] {
      httplib::Server server;
      HttpListener listener(&server);
      ASSERT_TRUE(listener.Start("127.0.0.1", 0, absl::ZeroDuration()).ok());
      listener.Stop();
    });
  }
}

TEST(HttpListenerTest, DestructorStopsWithoutAnExplicitStop) {
  for (int i = 0; i < kIterations; ++i) {
    WithDeadline(kPerIteration, absl::StrCat("iteration ", i), [] {
      httplib::Server server;
      HttpListener listener(&server);
      ASSERT_TRUE(listener.Start("127.0.0.1", 0, absl::ZeroDuration()).ok());
    });
  }
}

TEST(HttpListenerTest, ServesOnceStartReturnsThenStops) {
  for (int i = 0; i < 20; ++i) {
    WithDeadline(kPerIteration, absl::StrCat("iteration ", i), [] {
      httplib::Server server;
      server.Get("/ping", [](const httplib::Request&, httplib::Response& r) {
        r.set_content("pong", "text/plain");
      });
      HttpListener listener(&server);
      ASSERT_TRUE(listener.Start("127.0.0.1", 0).ok());
      EXPECT_TRUE(server.is_running());
      httplib::Client client("127.0.0.1", listener.port());
      client.set_read_timeout(5, 0);
      auto res = client.Get("/ping");
      ASSERT_TRUE(res);
      EXPECT_EQ(res->status, 200);
      EXPECT_EQ(res->body, "pong");
      listener.Stop();
      EXPECT_FALSE(server.is_running());
    });
  }
}

TEST(HttpListenerTest, BusyPortIsUnavailable) {
  httplib::Server first;
  HttpListener a(&first);
  ASSERT_TRUE(a.Start("127.0.0.1", 0).ok());
  httplib::Server second;
  HttpListener b(&second);
  const absl::Status s = b.Start("127.0.0.1", a.port());
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_EQ(b.port(), -1);
  b.Stop();  // nothing started: a no-op
}

TEST(HttpListenerTest, StartTwiceIsRefusedAndStopIsIdempotent) {
  httplib::Server server;
  HttpListener listener(&server);
  listener.Stop();  // before Start: a no-op
  ASSERT_TRUE(listener.Start("127.0.0.1", 0).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(listener.Start("127.0.0.1", 0)));
  listener.Stop();
  listener.Stop();
}

}  // namespace
}  // namespace smoe
