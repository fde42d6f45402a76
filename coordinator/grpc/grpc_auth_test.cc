// Copyright 2026 SMoE Lab authors.
//
// The gRPC transport's access check (coordinator/grpc/grpc_auth.h) reads the
// access table: each role gets its methods only, a method without a row is
// refused even to admins, and the refusal names the role needed.
#include "coordinator/grpc/grpc_auth.h"

#include <string>

#include "coordinator/api/access.h"
#include "coordinator/tokens.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/store_test_util.h"

namespace smoe::coordinator {
namespace {

using ::testing::HasSubstr;

constexpr char kAdmin[] = "smoe_0123456789abcdef0123456789abcdef";

class GrpcRoleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = TokensFile(dir_.path());
    viewer_ = CreateToken(file_, "v", Role::kViewer, absl::Now())->token;
    worker_ = CreateToken(file_, "w", Role::kWorker, absl::Now())->token;
  }
  absl::Status Call(const std::string& method, const std::string& token) {
    return checker_.Check(method, token.empty() ? "" : "Bearer " + token);
  }
  store::testing::ScopedTempDir dir_;
  std::string file_, viewer_, worker_;
  TokenRegistry tokens_{kAdmin, TokensFile(dir_.path())};
  TokenAuthChecker checker_{&tokens_};
};

TEST_F(GrpcRoleTest, EachRoleGetsItsMethodsOnly) {
  const std::string submit = "/smoe.v1.Coordinator/SubmitSweep";
  const std::string list = "/smoe.v1.Coordinator/ListSweeps";
  const std::string lease = "/smoe.v1.WorkerGateway/Lease";
  EXPECT_TRUE(Call(submit, kAdmin).ok());
  EXPECT_TRUE(Call(list, kAdmin).ok());
  EXPECT_TRUE(Call(lease, kAdmin).ok());
  EXPECT_TRUE(Call(list, viewer_).ok());
  EXPECT_TRUE(Call(lease, worker_).ok());

  absl::Status st = Call(submit, viewer_);
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(st.message(), HasSubstr("needs role 'admin'"));
  EXPECT_THAT(st.message(), HasSubstr("token 'v' has role 'viewer'"));
  st = Call(list, worker_);
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(st.message(), HasSubstr("needs role 'viewer'"));
  EXPECT_EQ(Call("/smoe.v1.Coordinator/CancelSweep", worker_).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(Call(lease, viewer_).code(), absl::StatusCode::kPermissionDenied);
  // No token, a wrong one: unauthenticated, whatever the method.
  EXPECT_EQ(Call(list, "").code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(Call(list, "smoe_wrong").code(),
            absl::StatusCode::kUnauthenticated);
  // Health is public; a method without a rule is refused even to admins.
  EXPECT_TRUE(Call("/grpc.health.v1.Health/Check", "").ok());
  EXPECT_EQ(Call("/smoe.v1.Coordinator/Nope", kAdmin).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_GE(checker_.refused(), 6);
}

}  // namespace
}  // namespace smoe::coordinator
