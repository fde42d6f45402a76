// Copyright 2026 SMoE Lab authors.
//
// The role tokens file and the TokenRegistry (coordinator/tokens.h).
#include "coordinator/tokens.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/store_test_util.h"

namespace smoe::coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kAdmin[] = "smoe_0123456789abcdef0123456789abcdef";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(TokensTest, CreateStoresOnlyAHashAndAuthenticatesWithTheRole) {
  store::testing::ScopedTempDir dir;
  const std::string file = TokensFile(dir.path());
  TokenRegistry reg(kAdmin, file);
  EXPECT_FALSE(reg.Authenticate("smoe_nothing_yet").has_value());

  auto v = CreateToken(file, "alice", Role::kViewer, absl::Now());
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->name, "alice");
  EXPECT_EQ(v->token.size(), 69u);  // "smoe_" + 64 hex digits
  const std::string content = Slurp(file);
  EXPECT_THAT(content, Not(HasSubstr(v->token)));
  EXPECT_THAT(content, HasSubstr(TokenSha256Hex(v->token)));
  struct stat st;
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  auto who = reg.Authenticate(v->token);
  ASSERT_TRUE(who.has_value());
  EXPECT_EQ(who->name, "alice");
  EXPECT_EQ(who->role, Role::kViewer);

  auto w = CreateToken(file, "", Role::kWorker, absl::Now());
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_THAT(w->name, ::testing::StartsWith("worker-"));
  EXPECT_EQ(reg.Authenticate(w->token)->role, Role::kWorker);

  // The admin token file's token is admin, named "admin".
  auto admin = reg.Authenticate(kAdmin);
  ASSERT_TRUE(admin.has_value());
  EXPECT_EQ(admin->role, Role::kAdmin);
  EXPECT_EQ(admin->name, "admin");

  auto list = ReadTokensFile(file);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "alice");
  EXPECT_EQ((*list)[1].role, Role::kWorker);
}

TEST(TokensTest, RevokeTakesEffectAtTheNextCall) {
  store::testing::ScopedTempDir dir;
  const std::string file = TokensFile(dir.path());
  TokenRegistry reg(kAdmin, file);
  auto v = CreateToken(file, "bob", Role::kAdmin, absl::Now());
  ASSERT_TRUE(v.ok());
  ASSERT_TRUE(reg.Authenticate(v->token).has_value());
  ASSERT_TRUE(RevokeToken(file, "bob").ok());
  EXPECT_FALSE(reg.Authenticate(v->token).has_value());
  EXPECT_FALSE(reg.Find("bob").has_value());
  absl::Status again = RevokeToken(file, "bob");
  EXPECT_EQ(again.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(again.message(), HasSubstr("'bob'"));
}

TEST(TokensTest, NamesAndRolesAreChecked) {
  store::testing::ScopedTempDir dir;
  const std::string file = TokensFile(dir.path());
  ASSERT_TRUE(CreateToken(file, "ci", Role::kViewer, absl::Now()).ok());
  EXPECT_EQ(CreateToken(file, "ci", Role::kAdmin, absl::Now()).status().code(),
            absl::StatusCode::kAlreadyExists);
  auto bad = CreateToken(file, "Has Space", Role::kViewer, absl::Now());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("'Has Space'"));
  EXPECT_EQ(
      CreateToken(file, "admin", Role::kAdmin, absl::Now()).status().code(),
      absl::StatusCode::kInvalidArgument);
  auto role = ParseRole("root");
  EXPECT_EQ(role.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(role.status().message(), HasSubstr("'root'"));
  EXPECT_EQ(*ParseRole("worker"), Role::kWorker);
}

TEST(TokensTest, AMalformedFileKeepsThePreviousTokensAndIsReported) {
  store::testing::ScopedTempDir dir;
  const std::string file = TokensFile(dir.path());
  TokenRegistry reg(kAdmin, file);
  auto v = CreateToken(file, "carol", Role::kViewer, absl::Now());
  ASSERT_TRUE(v.ok());
  ASSERT_TRUE(reg.Authenticate(v->token).has_value());
  {
    std::ofstream out(file, std::ios::app);
    out << "garbage line\n";
  }
  auto read = ReadTokensFile(file);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(read.status().message(), HasSubstr("line 4"));
  EXPECT_TRUE(reg.Authenticate(v->token).has_value());
}

}  // namespace
}  // namespace smoe::coordinator
