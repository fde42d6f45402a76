// Copyright 2026 SMoE Lab authors.
//
// File: proto/auth.h
//
// Bearer-token auth for the gRPC services: clients attach
// `authorization: Bearer <token>`; services check it first thing.
#ifndef SMOE_PROTO_AUTH_H_
#define SMOE_PROTO_AUTH_H_

#include <grpcpp/client_context.h>
#include <grpcpp/server_context.h>

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace smoe::proto {

// Metadata key carrying the token.
inline constexpr char kAuthMetadataKey[] = "authorization";

// Prepares `ctx` for one call: attaches the token and sets the deadline to now
// + `timeout` (every client call has a deadline).
void PrepareClientContext(grpc::ClientContext* ctx, const std::string& token,
                          absl::Duration timeout);

// Returns OK when `metadata` carries `Bearer <token>`; Unauthenticated
// otherwise (the message never echoes what was sent).
absl::Status CheckBearerToken(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
    const std::string& token);

}  // namespace smoe::proto

#endif  // SMOE_PROTO_AUTH_H_
