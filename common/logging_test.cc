// Copyright 2026 SMoE Lab authors.
#include "common/logging.h"

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

}  // namespace
}  // namespace smoe
