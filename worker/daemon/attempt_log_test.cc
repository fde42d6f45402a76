// Copyright 2026 SMoE Lab authors.
#include "worker/daemon/attempt_log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/test_dir.h"
#include "gtest/gtest.h"

namespace smoe::worker {
namespace {

std::string NewDir(const std::string& name) {
  return smoe::testing::NewTestDir(absl::StrCat("attempt_log_", name, "_"));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

TEST(SecretRedactorTest, ReplacesSecretEnvironmentValuesOnly) {
  std::string a = "SMOE_TOKEN=smoe_abcdef123456";
  std::string b = "OPENAI_API_KEY=sk-verysecretvalue";
  std::string c = "HOME=/home/someone";
  std::string d = "DB_PASSWORD=hunter2hunter2";
  std::string e = "SHORT_TOKEN=abc";  // too short to redact safely
  std::vector<char*> env = {a.data(), b.data(), c.data(),
                            d.data(), e.data(), nullptr};
  SecretRedactor r = SecretRedactor::FromEnvironment(env.data());
  EXPECT_EQ(r.size(), 3u);
  EXPECT_EQ(r.Redact("token smoe_abcdef123456 key sk-verysecretvalue at "
                     "/home/someone pw hunter2hunter2 abc"),
            "token [REDACTED] key [REDACTED] at /home/someone pw [REDACTED] "
            "abc");
  EXPECT_TRUE(SecretRedactor::IsSecretName("aws_secret_access_key"));
  EXPECT_TRUE(SecretRedactor::IsSecretName("HF_TOKEN"));
  EXPECT_FALSE(SecretRedactor::IsSecretName("PATH"));
  EXPECT_FALSE(SecretRedactor::IsSecretName("KEYBOARD"));
}

TEST(AttemptLogTest, AppendsRedactedLinesAndKeepsATail) {
  const std::string dir = NewDir("append");
  SecretRedactor r({"supersecret-token"});
  auto log = AttemptLog::Open(dir, 3, AttemptLog::kDefaultMaxBytes, &r);
  ASSERT_TRUE(log.ok()) << log.status();
  (*log)->Append("starting");
  (*log)->Append("using supersecret-token now");
  (*log)->Flush();
  EXPECT_EQ((*log)->path(), dir + "/logs/attempt-3.log");
  EXPECT_EQ(ReadFile((*log)->path()), "starting\nusing [REDACTED] now\n");
  const LogTailText tail = (*log)->Tail();
  EXPECT_EQ(tail.text, "starting\nusing [REDACTED] now\n");
  EXPECT_EQ(tail.total_bytes, 30);
  // A small tail starts at a line boundary.
  EXPECT_EQ((*log)->Tail(25).text, "using [REDACTED] now\n");
  EXPECT_EQ((*log)->Tail(21).text, "using [REDACTED] now\n");
  // One line longer than the limit: its end.
  EXPECT_EQ((*log)->Tail(10).text, "CTED] now\n");
}

TEST(AttemptLogTest, RotatesAtTheCapAndKeepsTwoFiles) {
  const std::string dir = NewDir("rotate");
  auto log = AttemptLog::Open(dir, 1, 1024, nullptr);
  ASSERT_TRUE(log.ok()) << log.status();
  const std::string line(99, 'x');  // 100 bytes with '\n'
  for (int i = 0; i < 25; ++i) (*log)->Append(absl::StrCat(line));
  (*log)->Flush();
  const std::string path = (*log)->path();
  ASSERT_TRUE(Exists(path + ".1"));
  EXPECT_LE(ReadFile(path).size(), 1024u);
  EXPECT_LE(ReadFile(path + ".1").size(), 1024u);
  EXPECT_FALSE(Exists(path + ".2"));
  EXPECT_EQ((*log)->total_bytes(), 2500);
  // 2500 bytes written; the files hold the newest, whole lines.
  EXPECT_EQ(ReadFile(path).size() % 100, 0u);
  EXPECT_EQ(ReadFile(path + ".1").size(), 1000u);
}

TEST(AttemptLogTest, TailIsBoundedAndStartsAtALine) {
  const std::string dir = NewDir("tail");
  auto log = AttemptLog::Open(dir, 1, AttemptLog::kDefaultMaxBytes, nullptr);
  ASSERT_TRUE(log.ok()) << log.status();
  for (int i = 0; i < 20000; ++i) (*log)->Append(absl::StrCat("line ", i));
  const LogTailText tail = (*log)->Tail();
  EXPECT_LE(tail.text.size(), AttemptLog::kTailBytes);
  EXPECT_GT(tail.text.size(), AttemptLog::kTailBytes - 100);
  EXPECT_EQ(tail.text.rfind("line 19999\n"), tail.text.size() - 11);
  EXPECT_EQ(tail.text.substr(0, 5), "line ");
  // Long lines are cut with a note.
  (*log)->Append(std::string(AttemptLog::kMaxLineBytes + 10, 'y'));
  EXPECT_NE((*log)->Tail().text.find("[... 10 bytes cut]"), std::string::npos);
}

TEST(AttemptLogTest, ReopeningAppendsAndCountsExistingBytes) {
  const std::string dir = NewDir("reopen");
  {
    auto log = AttemptLog::Open(dir, 2, 4096, nullptr);
    ASSERT_TRUE(log.ok());
    (*log)->Append("one");
  }
  auto log = AttemptLog::Open(dir, 2, 4096, nullptr);
  ASSERT_TRUE(log.ok());
  (*log)->Append("two");
  (*log)->Flush();
  EXPECT_EQ(ReadFile((*log)->path()), "one\ntwo\n");
  EXPECT_EQ((*log)->total_bytes(), 8);
}

TEST(AttemptLogTest, UnwritableDirectoryIsAnErrorNamingThePath) {
  auto log = AttemptLog::Open("/proc/no-such-dir", 1, 4096, nullptr);
  ASSERT_FALSE(log.ok());
  EXPECT_NE(std::string(log.status().message()).find("/proc/no-such-dir"),
            std::string::npos);
}

}  // namespace
}  // namespace smoe::worker
