// Copyright 2026 SMoE Lab authors.
//
// The table of operations (coordinator/api/operations.h) and the access table
// read from it (coordinator/api/access.h): every gRPC method of the proto
// services has exactly one row, so a new method cannot forget its role; every
// Op has one row; patterns come from the id patterns; roles and lookups.
// (Every route the HTTP server registers has a row:
// coordinator/http/openapi_test.cc; the gRPC checker refuses the wrong role:
// coordinator/grpc/grpc_auth_test.cc.)
#include "coordinator/api/access.h"

#include <google/protobuf/descriptor.h>

#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "coordinator/api/operations.h"
#include "gtest/gtest.h"
#include "proto/smoe.grpc.pb.h"

namespace smoe::coordinator {
namespace {

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

TEST(OperationsTest, OneRowPerOperationAndPatternsFromTheIdPatterns) {
  std::set<std::string> names;
  for (const api::Operation& op : api::Operations()) {
    EXPECT_EQ(&api::OperationOf(op.op), &op) << op.name;
    EXPECT_TRUE(names.insert(op.name).second) << "two rows named " << op.name;
    EXPECT_TRUE(op.http_method != nullptr || op.grpc_method != nullptr)
        << op.name << " is served by no transport";
    EXPECT_EQ(op.http_method == nullptr, op.http_path == nullptr) << op.name;
  }
  EXPECT_EQ(api::HttpPattern(api::OperationOf(api::Op::kGetTrialMetrics)),
            "/api/trials/([a-z0-9][a-z0-9._-]{0,63}/[0-9a-f]{16})/metrics");
  EXPECT_EQ(api::HttpPattern(api::OperationOf(api::Op::kGetArtifact)),
            "/api/trials/([a-z0-9][a-z0-9._-]{0,63}/[0-9a-f]{16})/artifacts/"
            "([A-Za-z0-9._-]{1,200})");
  EXPECT_EQ(api::HttpPattern(api::OperationOf(api::Op::kGetCurves)),
            "/api/sweeps/([a-z0-9][a-z0-9._-]{0,63})/curves");
  // An operation served by both transports needs the same role on both.
  const api::Operation& get = api::OperationOf(api::Op::kGetSweep);
  EXPECT_EQ(GrpcAccess(get.grpc_method), HttpAccess("GET", "/api/sweeps/x"));
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
  EXPECT_EQ(HttpAccess("POST", "/api/sweeps"), Access::kAdmin);
  EXPECT_EQ(HttpAccess("POST", "/api/sweeps/demo/extend"), Access::kAdmin);
  EXPECT_EQ(HttpAccess("PUT", "/api/sweeps"), std::nullopt);
  EXPECT_EQ(HttpAccess("DELETE", "/api/sweeps/demo"), Access::kAdmin);
  EXPECT_EQ(HttpAccess("DELETE", "/api/sweeps"), std::nullopt);
  EXPECT_EQ(HttpAccess("DELETE", "/api/trials/demo/0123456789abcdef"),
            std::nullopt);
  EXPECT_EQ(GrpcAccess("/smoe.v1.Coordinator/DeleteSweep"), Access::kAdmin);
  EXPECT_EQ(GrpcAccess("/smoe.v1.Coordinator/Nope"), std::nullopt);
}

}  // namespace
}  // namespace smoe::coordinator
