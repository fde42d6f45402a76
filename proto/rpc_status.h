// Copyright 2026 SMoE Lab authors.
//
// File: proto/rpc_status.h
//
// The single bridge between absl::Status and grpc::Status. Abseil's codes are
// the gRPC codes (google.rpc.Code), so the mapping is one-to-one.
#ifndef SMOE_PROTO_RPC_STATUS_H_
#define SMOE_PROTO_RPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace smoe::proto {

// Returns the grpc::Status with the same code and message.
grpc::Status ToGrpcStatus(const absl::Status& status);

// Returns the absl::Status with the same code and message.
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace smoe::proto

#endif  // SMOE_PROTO_RPC_STATUS_H_
