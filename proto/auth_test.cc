// Copyright 2026 SMoE Lab authors.
#include "proto/auth.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/api_token.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::proto {
namespace {

TEST(AuthTest, BearerCheck) {
  const std::string token = "smoe_abc";
  std::multimap<grpc::string_ref, grpc::string_ref> md;
  EXPECT_EQ(CheckBearerToken(md, token).code(),
            absl::StatusCode::kUnauthenticated);
  const std::string good = "Bearer smoe_abc", bad = "Bearer smoe_abd",
                    bare = "smoe_abc";
  md.emplace(kAuthMetadataKey, bad);
  EXPECT_EQ(CheckBearerToken(md, token).code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(CheckBearerToken(md, token).message().find("smoe_abd"),
            std::string::npos);
  md.clear();
  md.emplace(kAuthMetadataKey, bare);
  EXPECT_FALSE(CheckBearerToken(md, token).ok());
  md.clear();
  md.emplace(kAuthMetadataKey, good);
  EXPECT_TRUE(CheckBearerToken(md, token).ok());
}

TEST(ApiTokenTest, CreateThenLoadWithMode0600) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("smoe-token-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "token").string();
  bool created = false;
  auto t1 = LoadOrCreateTokenFile(path, &created);
  ASSERT_TRUE(t1.ok()) << t1.status();
  EXPECT_TRUE(created);
  EXPECT_EQ(t1->rfind("smoe_", 0), 0u);
  EXPECT_EQ(t1->size(), 5u + 64u);
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto t2 = LoadOrCreateTokenFile(path, &created);
  ASSERT_TRUE(t2.ok());
  EXPECT_FALSE(created);
  EXPECT_EQ(*t1, *t2);
  ::chmod(path.c_str(), 0644);
  EXPECT_EQ(LoadOrCreateTokenFile(path, &created).status().code(),
            absl::StatusCode::kPermissionDenied);
  ::unsetenv("SMOE_TOKEN");
  auto t3 = ResolveClientToken(path);
  ASSERT_TRUE(t3.ok());
  EXPECT_EQ(t3->token, *t1);
  EXPECT_EQ(t3->source, "token file '" + path + "'");
  // Issue 31 item 8: an explicit --token-file wins over $SMOE_TOKEN, which
  // wins over the default token file; the source is named, never the token.
  ::setenv("SMOE_TOKEN", "from-env", 1);
  auto t4 = ResolveClientToken(path);
  ASSERT_TRUE(t4.ok());
  EXPECT_EQ(t4->token, *t1);
  {
    const std::string home = (dir / "home").string();
    const char* old_home = std::getenv("HOME");
    const std::string saved_home = old_home != nullptr ? old_home : "";
    ::setenv("HOME", home.c_str(), 1);  // no default token file there
    char cwd[4096];
    ASSERT_NE(::getcwd(cwd, sizeof(cwd)), nullptr);
    ASSERT_EQ(::chdir(dir.c_str()), 0);
    auto t5 = ResolveClientToken("");
    ASSERT_TRUE(t5.ok());
    EXPECT_EQ(t5->token, "from-env");
    EXPECT_EQ(t5->source, "$SMOE_TOKEN");
    // A missing explicit file is an error even with $SMOE_TOKEN set.
    absl::Status missing =
        ResolveClientToken((dir / "missing").string()).status();
    EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(std::string(missing.message()),
                ::testing::HasSubstr("--token-file '" +
                                     (dir / "missing").string() + "'"));
    ::unsetenv("SMOE_TOKEN");
    absl::Status none = ResolveClientToken("").status();
    EXPECT_EQ(none.code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(std::string(none.message()),
                ::testing::HasSubstr(home + "/.smoe/token"));
    ASSERT_EQ(::chdir(cwd), 0);
    ::setenv("HOME", saved_home.c_str(), 1);
  }
  // Issue 16 item 10: a weak token in the file is refused at startup,
  // naming the file and the rule, never the token.
  for (const char* weak : {"abcde", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                           "0123456789abcdef0123456789abcde"}) {
    const std::string wpath = (dir / "weak").string();
    {
      std::ofstream out(wpath);
      out << weak << "\n";
    }
    ::chmod(wpath.c_str(), 0600);
    auto w = LoadOrCreateTokenFile(wpath, &created);
    EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument) << weak;
    EXPECT_NE(w.status().message().find("weak API token"), std::string::npos);
    EXPECT_NE(w.status().message().find(wpath), std::string::npos);
    EXPECT_EQ(w.status().message().find(weak), std::string::npos);
  }
  EXPECT_TRUE(CheckTokenStrength(*t1, "t").ok());
  std::filesystem::remove_all(dir);
  EXPECT_NE(*GenerateApiToken(), *GenerateApiToken());
  EXPECT_TRUE(TokenEquals("abc", "abc"));
  EXPECT_FALSE(TokenEquals("abc", "abd"));
  EXPECT_FALSE(TokenEquals("abc", "abcd"));
}

// Without --token-file a command finds the token of the data directory it
// runs in or under (walking up), else ~/.smoe/token.
TEST(ApiTokenTest, DefaultTokenFileWalksUpToTheDataDirectory) {
  const std::filesystem::path root =
      std::filesystem::path(::testing::TempDir()) /
      ("smoe-token-walk-" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  const std::filesystem::path deep = root / "project" / "sub" / "deeper";
  std::filesystem::create_directories(deep);
  std::filesystem::create_directories(root / "project" / "smoe-data");
  const std::string home = (root / "home").string();
  // Nothing found: the home fallback.
  EXPECT_EQ(DefaultTokenFile(deep.string(), home.c_str()),
            home + "/.smoe/token");
  EXPECT_EQ(DefaultTokenFile(deep.string(), nullptr), "./.smoe/token");
  std::ofstream((root / "project" / "smoe-data" / "token").string())
      << "smoe_x\n";
  const std::string want = (root / "project" / "smoe-data" / "token").string();
  EXPECT_EQ(DefaultTokenFile(deep.string(), home.c_str()), want);
  EXPECT_EQ(DefaultTokenFile((root / "project").string() + "/", home.c_str()),
            want);
  // Inside the data directory itself (it holds smoe.db).
  std::ofstream((root / "project" / "smoe-data" / "smoe.db").string()) << "";
  std::filesystem::create_directories(root / "project" / "smoe-data" / "w");
  EXPECT_EQ(DefaultTokenFile((root / "project" / "smoe-data" / "w").string(),
                             home.c_str()),
            want);
  // A nearer data directory wins.
  std::filesystem::create_directories(deep / "smoe-data");
  std::ofstream((deep / "smoe-data" / "token").string()) << "smoe_y\n";
  EXPECT_EQ(DefaultTokenFile(deep.string(), home.c_str()),
            (deep / "smoe-data" / "token").string());
  std::filesystem::remove_all(root);
}

// A sweep names the env var its grader key is read from and the URL it goes
// to: only *_API_KEY names may be chosen, so worker secrets cannot leave.
TEST(ApiKeyEnvNameTest, OnlyApiKeyVariablesMayBeNamed) {
  for (const char* ok : {"OPENAI_API_KEY", "TOGETHER_API_KEY", "X_API_KEY",
                         "AZURE_OPENAI2_API_KEY"}) {
    EXPECT_TRUE(CheckApiKeyEnvName(ok).ok()) << ok;
  }
  for (const char* bad :
       {"SMOE_TOKEN", "AWS_SECRET_ACCESS_KEY", "HOME", "_API_KEY", "API_KEY",
        "openai_api_key", "OPENAI_API_KEY ", "1_API_KEY", "A-B_API_KEY", ""}) {
    const absl::Status s = CheckApiKeyEnvName(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find(absl::StrCat("'", bad, "'")), std::string::npos)
        << s;
  }
}

}  // namespace
}  // namespace smoe::proto
