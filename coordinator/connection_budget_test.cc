// Copyright 2026 SMoE Lab authors.
#include "coordinator/connection_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace smoe::coordinator {
namespace {

using ::testing::HasSubstr;

// HTTP connections and gRPC calls of one address draw on one budget; other
// addresses keep theirs until the total is spent.
TEST(ConnectionBudgetTest, HttpAndGrpcShareOneBudgetPerAddressAndInTotal) {
  ConnectionBudget b({/*per_address=*/3, /*total=*/5});
  EXPECT_TRUE(b.Acquire("10.0.0.1", "http").ok());
  EXPECT_TRUE(b.Acquire("10.0.0.1", "http").ok());
  EXPECT_TRUE(b.Acquire("10.0.0.1", "grpc").ok());
  absl::Status full = b.Acquire("10.0.0.1", "grpc");
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(full.message(),
              HasSubstr("connection budget of 10.0.0.1 spent: 2 HTTP "
                        "connection(s) and 1 gRPC call(s) open, at most 3"));
  EXPECT_FALSE(b.Acquire("10.0.0.1", "http").ok());
  // The same address over a dual-stack socket.
  EXPECT_FALSE(b.Acquire("::ffff:10.0.0.1", "http").ok());
  EXPECT_TRUE(b.Acquire("10.0.0.2", "grpc").ok());
  EXPECT_TRUE(b.Acquire("10.0.0.3", "http").ok());
  absl::Status total = b.Acquire("10.0.0.4", "grpc");
  EXPECT_EQ(total.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(total.message(), HasSubstr("at most 5"));
  EXPECT_EQ(b.total(), 5);
  EXPECT_EQ(b.refused(), 4);
  // Released units are free again, per transport.
  b.Release("10.0.0.1", "http");
  EXPECT_EQ(b.held("10.0.0.1"), 2);
  EXPECT_TRUE(b.Acquire("10.0.0.4", "grpc").ok());
  b.Release("10.0.0.1", "grpc");
  b.Release("10.0.0.1", "grpc");  // not held: ignored
  EXPECT_EQ(b.held("10.0.0.1"), 1);
  EXPECT_TRUE(b.Acquire("10.0.0.1", "grpc").ok());
}

TEST(ConnectionBudgetTest, GrpcPeerAddresses) {
  EXPECT_EQ(GrpcPeerAddress("ipv4:127.0.0.1:5000"), "127.0.0.1");
  EXPECT_EQ(GrpcPeerAddress("ipv6:[::1]:5000"), "::1");
  EXPECT_EQ(GrpcPeerAddress("ipv6:%5B::1%5D:5000"), "::1");
  EXPECT_EQ(GrpcPeerAddress("unix:/tmp/s"), "unix:/tmp/s");
}

}  // namespace
}  // namespace smoe::coordinator
