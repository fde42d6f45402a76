// Copyright 2026 SMoE Lab authors.
//
// File: common/address.h
//
// Coordinator addresses as users type them. gRPC reads a bare host name as
// "host:443" (https's port), so `--coordinator gpu-head` would dial a port
// nothing listens on; every client (the CLI, `smoe worker`) passes what it
// was given through WithDefaultPort first.
#ifndef SMOE_COMMON_ADDRESS_H_
#define SMOE_COMMON_ADDRESS_H_

#include <string>

#include "absl/strings/string_view.h"

namespace smoe {

// The coordinator's gRPC port when none is given (`smoe coordinator
// --listen`'s default).
inline constexpr int kDefaultGrpcPort = 50051;

// `address` with ":default_port" appended when it names no port:
//   "gpu-head"      -> "gpu-head:50051"
//   "10.0.0.7"      -> "10.0.0.7:50051"
//   "::1", "fe80::1" (bare IPv6) -> "[::1]:50051"
//   "[::1]"         -> "[::1]:50051"
// Unchanged: "host:port", "[::1]:port", gRPC target URIs with a scheme
// ("dns:///host:port", "unix:/path", "ipv4:...", ...) and "".
std::string WithDefaultPort(absl::string_view address, int default_port);

}  // namespace smoe

#endif  // SMOE_COMMON_ADDRESS_H_
