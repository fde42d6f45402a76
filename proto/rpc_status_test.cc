// Copyright 2026 SMoE Lab authors.
#include "proto/rpc_status.h"

#include "gtest/gtest.h"
#include "proto/smoe.pb.h"

namespace smoe::proto {
namespace {

TEST(RpcStatusTest, RoundTripsEveryCode) {
  for (int c = 0; c <= 16; ++c) {
    const absl::Status s(static_cast<absl::StatusCode>(c), c ? "msg" : "");
    const grpc::Status g = ToGrpcStatus(s);
    EXPECT_EQ(static_cast<int>(g.error_code()), c);
    EXPECT_EQ(FromGrpcStatus(g), s);
  }
}

TEST(ProtoTest, GeneratedMessagesAreUsable) {
  smoe::v1::Trial t;
  t.set_trial_id("demo/0123456789abcdef");
  (*t.mutable_results())["ood_acc"] = 0.5;
  smoe::v1::Trial u;
  ASSERT_TRUE(u.ParseFromString(t.SerializeAsString()));
  EXPECT_EQ(u.results().at("ood_acc"), 0.5);
}

}  // namespace
}  // namespace smoe::proto
