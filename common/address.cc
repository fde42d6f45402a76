// Copyright 2026 SMoE Lab authors.
#include "common/address.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace smoe {

std::string WithDefaultPort(absl::string_view address, int default_port) {
  if (address.empty()) return "";
  // gRPC target URIs name their own scheme (dns:, unix:, ipv4:, ipv6:,
  // unix-abstract:, vsock:): leave them to gRPC's resolver.
  for (absl::string_view scheme :
       {"dns:", "unix:", "unix-abstract:", "ipv4:", "ipv6:", "vsock:"}) {
    if (absl::StartsWith(address, scheme)) return std::string(address);
  }
  if (address.front() == '[') {
    const size_t close = address.find(']');
    if (close != absl::string_view::npos && close + 1 < address.size()) {
      return std::string(address);  // "[v6]:port"
    }
    return absl::StrCat(address, ":", default_port);
  }
  const size_t colons = std::count(address.begin(), address.end(), ':');
  if (colons == 1) return std::string(address);  // "host:port"
  if (colons > 1) return absl::StrCat("[", address, "]:", default_port);
  return absl::StrCat(address, ":", default_port);
}

}  // namespace smoe
