// Copyright 2026 SMoE Lab authors.
//
// The access table (coordinator/access.h): every gRPC method of the proto
// services and every route the HTTP server registers has exactly one row, so
// a new method or route cannot forget its role; and the gRPC checker refuses
// the wrong role with PERMISSION_DENIED naming the role needed.
#include "coordinator/api/access.h"

#include <google/protobuf/descriptor.h>

#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "coordinator/grpc_auth.h"
#include "coordinator/http_server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/smoe.grpc.pb.h"
#include "store/in_memory_store.h"
#include "store/store_test_util.h"

namespace smoe::coordinator {
namespace {

using ::testing::HasSubstr;

constexpr char kAdmin[] = "smoe_0123456789abcdef0123456789abcdef";

TEST(AccessTableTest, EveryGrpcMethodHasARule) {
  std::set<std::string> methods;
  const google::protobuf::FileDescriptor* file =
      smoe::v1::SubmitSweepRequest::descriptor()->file();
  ASSERT_GE(file->service_count(), 2);
  for (int s = 0; s < file->service_count(); ++s) {
    const google::protobuf::ServiceDescriptor* svc = file->service(s);
    for (int m = 0; m < svc->method_count(); ++m) {
      methods.insert(
          absl::StrCat("/", svc->full_name(), "/", svc->method(m)->name()));
    }
  }
  methods.insert("/grpc.health.v1.Health/Check");
  methods.insert("/grpc.health.v1.Health/Watch");
  std::set<std::string> rules;
  for (const GrpcRule& r : GrpcAccessTable()) {
    EXPECT_TRUE(rules.insert(r.method).second) << "two rules for " << r.method;
  }
  EXPECT_EQ(rules, methods)
      << "add the new method to coordinator/api/operations.cc";
}

TEST(AccessTableTest, EveryHttpRouteHasARule) {
  store::InMemoryStore store;
  auto sched = Scheduler::Create(&store, Clock::Real(), {});
  ASSERT_TRUE(sched.ok());
  HttpServerOptions o;
  o.listen = "127.0.0.1:0";
  auto http = HttpServer::Start(sched->get(), &store, kAdmin, o);
  ASSERT_TRUE(http.ok()) << http.status();
  std::set<std::pair<std::string, std::string>> routes;
  for (const auto& r : (*http)->routes()) {
    EXPECT_TRUE(routes.insert(r).second) << r.first << " " << r.second;
  }
  std::set<std::pair<std::string, std::string>> rules;
  for (const HttpRule& r : HttpAccessTable()) {
    rules.insert({r.method, r.pattern});
  }
  EXPECT_EQ(routes, rules)
      << "add the new route to coordinator/api/operations.cc";
  (*http)->Shutdown();
}

TEST(AccessTableTest, RolesAndLookups) {
  EXPECT_TRUE(Allows(Role::kAdmin, Access::kWorker));
  EXPECT_TRUE(Allows(Role::kAdmin, Access::kViewer));
  EXPECT_TRUE(Allows(Role::kViewer, Access::kViewer));
  EXPECT_FALSE(Allows(Role::kViewer, Access::kAdmin));
  EXPECT_FALSE(Allows(Role::kViewer, Access::kWorker));
  EXPECT_TRUE(Allows(Role::kWorker, Access::kWorker));
  EXPECT_FALSE(Allows(Role::kWorker, Access::kViewer));
  EXPECT_FALSE(Allows(Role::kWorker, Access::kAdmin));
  EXPECT_EQ(HttpAccess("GET", "/api/sweeps/demo"), Access::kViewer);
  EXPECT_EQ(HttpAccess("HEAD", "/healthz"), Access::kPublic);
  EXPECT_EQ(HttpAccess("POST", "/api/sweeps/demo/cancel"), Access::kAdmin);
  EXPECT_EQ(HttpAccess("POST", "/api/trials/demo/0123456789abcdef/retry"),
            Access::kAdmin);
  EXPECT_EQ(HttpAccess("POST", "/api/sweeps"), std::nullopt);
  EXPECT_EQ(HttpAccess("DELETE", "/api/sweeps/demo"), Access::kAdmin);
  EXPECT_EQ(HttpAccess("DELETE", "/api/sweeps"), std::nullopt);
  EXPECT_EQ(HttpAccess("DELETE", "/api/trials/demo/0123456789abcdef"),
            std::nullopt);
  EXPECT_EQ(GrpcAccess("/smoe.v1.Coordinator/DeleteSweep"), Access::kAdmin);
  EXPECT_EQ(GrpcAccess("/smoe.v1.Coordinator/Nope"), std::nullopt);
}

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
