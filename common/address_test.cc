// Copyright 2026 SMoE Lab authors.
#include "common/address.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace smoe {
namespace {

// Addresses are only parsed here; nothing listens (fixed-port-ok below).
// Issue 31 item 8: `--coordinator HOST` must not dial port 443.
TEST(AddressTest, AHostWithoutAPortGetsTheCoordinatorsPort) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"gpu-head", "gpu-head:50051"},      // fixed-port-ok
      {"10.0.0.7", "10.0.0.7:50051"},      // fixed-port-ok
      {"::1", "[::1]:50051"},              // fixed-port-ok
      {"fe80::1:2", "[fe80::1:2]:50051"},  // fixed-port-ok
      {"[::1]", "[::1]:50051"},            // fixed-port-ok
      {"gpu-head.cluster.local",
       "gpu-head.cluster.local:50051"},  // fixed-port-ok
  };
  for (const auto& [in, want] : cases) {
    EXPECT_EQ(WithDefaultPort(in, kDefaultGrpcPort), want) << in;
  }
  EXPECT_EQ(WithDefaultPort("gpu-head", 7), "gpu-head:7");
}

TEST(AddressTest, AddressesWithAPortOrASchemeAreKept) {
  const std::vector<std::string> kept = {
      "gpu-head:443",       // fixed-port-ok
      "127.0.0.1:50051",    // fixed-port-ok
      "[::1]:9000",         // fixed-port-ok
      "dns:///gpu-head:1",  // fixed-port-ok
      "dns:gpu-head",
      "unix:/run/smoe.sock",
      "ipv4:10.0.0.1:5",  // fixed-port-ok
      "ipv6:[::1]:5",     // fixed-port-ok
      "unix-abstract:smoe",
      "vsock:3:5",  // fixed-port-ok
      "",
  };
  for (const std::string& k : kept) {
    EXPECT_EQ(WithDefaultPort(k, kDefaultGrpcPort), k) << k;
  }
}

}  // namespace
}  // namespace smoe
