// Copyright 2026 SMoE Lab authors.
#include "common/logging.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"

namespace smoe {
namespace {

TEST(LoggingTest, RedactSecretNeverContainsTheSecret) {
  const std::string secret = "smoe_tok_0123456789abcdef";
  const std::string r = RedactSecret(secret);
  EXPECT_EQ(r.find(secret), std::string::npos);
  EXPECT_EQ(r, "<redacted:25 chars>");
}

TEST(LoggingTest, LevelThresholdSkipsEvaluation) {
  const LogLevel old = MinLogLevel();
  SetMinLogLevel(LogLevel::kWarning);
  int evaluated = 0;
  auto side_effect = [&] { return ++evaluated; };
  SMOE_LOG(INFO) << side_effect();
  EXPECT_EQ(evaluated, 0);
  testing::internal::CaptureStderr();
  SMOE_LOG(ERROR) << "value=" << side_effect();
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_EQ(evaluated, 1);
  EXPECT_EQ(out.front(), 'E');
  EXPECT_NE(out.find("logging_test.cc:"), std::string::npos);
  EXPECT_NE(out.find("] value=1\n"), std::string::npos);
  SetMinLogLevel(old);
}

// Reads what was written to the read end of a non-blocking pipe.
std::string Drain(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) {
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// On a terminal, a log line goes above the progress bar and the bar is
// redrawn below it in the same write: neither overwrites the other.
TEST(StatusLineTest, LogLinesGoAboveTheBarOnATerminal) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  logging_internal::SetStatusOutputForTest(fds[1], /*terminal=*/true);
  SetStatusLine("[##--] 1/2");
  EXPECT_EQ(Drain(fds[0]), "\r\033[K[##--] 1/2");
  SetStatusLine("[##--] 1/2");  // unchanged: nothing written
  EXPECT_EQ(Drain(fds[0]), "");
  SMOE_LOG(WARNING) << "worker lost";
  const std::string log = Drain(fds[0]);
  EXPECT_EQ(log.rfind("\r\033[KW", 0), 0u) << log;
  EXPECT_NE(log.find("] worker lost\n[##--] 1/2"), std::string::npos) << log;
  WriteAboveStatusLine("trial t1 failed: exit 1");
  EXPECT_EQ(Drain(fds[0]), "\r\033[Ktrial t1 failed: exit 1\n[##--] 1/2");
  EndStatusLine();
  EXPECT_EQ(Drain(fds[0]), "\n");
  WriteAboveStatusLine("after");  // no bar any more
  EXPECT_EQ(Drain(fds[0]), "after\n");
  logging_internal::SetStatusOutputForTest(STDERR_FILENO, ::isatty(2) != 0);
  ::close(fds[0]);
  ::close(fds[1]);
}

// In a log file each new status is one line, written only when it changes.
TEST(StatusLineTest, NotATerminalWritesChangedStatusLines) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  logging_internal::SetStatusOutputForTest(fds[1], /*terminal=*/false);
  SetStatusLine("a");
  SetStatusLine("a");
  WriteAboveStatusLine("log");
  SetStatusLine("b");
  EndStatusLine();
  EXPECT_EQ(Drain(fds[0]), "a\nlog\nb\n");
  logging_internal::SetStatusOutputForTest(STDERR_FILENO, ::isatty(2) != 0);
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
}  // namespace smoe
