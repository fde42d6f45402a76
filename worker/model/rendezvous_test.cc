// Copyright 2026 SMoE Lab authors.
//
// The rendezvous without Gloo or a GPU: "host:port" parsing, the argument
// check, and the NCCL unique-id exchange through a c10d FileStore between
// threads (rank 0 makes the id, every rank gets the same bytes; a missing
// rank 0 is a deadline error, not a hang).
#include "worker/model/rendezvous.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/all_to_all/nccl_communicator.h"

namespace smoe::model {
namespace {

TEST(RendezvousTest, SplitsHostPortElseFilePath) {
  std::string host;
  uint16_t port = 0;
  const char* addr = "10.0.0.7:29500";  // fixed-port-ok (parse only)
  ASSERT_TRUE(SplitRendezvousHostPort(addr, &host, &port));
  EXPECT_EQ(host, "10.0.0.7");
  EXPECT_EQ(port, 29500);
  ASSERT_TRUE(SplitRendezvousHostPort("node-3.cluster:1", &host, &port));
  EXPECT_EQ(host, "node-3.cluster");
  EXPECT_EQ(port, 1);
  // File paths, and ports out of range or not all digits.
  for (const char* s : {"/tmp/ep-rendezvous", "/tmp/a:b/file",
                        "host:", ":29500", "host:0",  // fixed-port-ok
                        "host:65536", "host:12x", "host:-1", ""}) {
    EXPECT_FALSE(SplitRendezvousHostPort(s, &host, &port)) << s;
  }
}

TEST(RendezvousTest, CheckNamesTheProblem) {
  EXPECT_TRUE(CheckRendezvousInfo({1, 2, "/tmp/x"}).ok());
  EXPECT_EQ(CheckRendezvousInfo({2, 2, "/tmp/x"}).code(),
            absl::StatusCode::kInvalidArgument);
  const absl::Status s = CheckRendezvousInfo({0, 2, ""});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("SMOE_RENDEZVOUS"), std::string::npos) << s;
}

std::string FreshStorePath(const char* name) {
  const std::string path =
      absl::StrCat(testing::TempDir(), "/smoe-rdv-", name, "-", ::getpid());
  std::remove(path.c_str());
  return path;
}

kernels::NcclUniqueIdBytes PatternId() {
  kernels::NcclUniqueIdBytes id{};
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<char>(i * 7 + 3);
  return id;
}

TEST(RendezvousTest, NcclIdExchangeOverFileStore) {
  const std::string path = FreshStorePath("exchange");
  const int world = 3;
  kernels::CommunicatorOptions opt;
  opt.op_timeout_ms = 20000;
  std::vector<absl::StatusOr<kernels::NcclUniqueIdBytes>> got(
      world, absl::UnknownError("not run"));
  int made = 0;
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      got[r] = ExchangeNcclUniqueId(
          {r, world, path}, opt,
          [&]() -> absl::StatusOr<kernels::NcclUniqueIdBytes> {
            ++made;  // rank 0 only
            return PatternId();
          });
    });
  }
  for (std::thread& t : ranks) t.join();
  std::remove(path.c_str());
  if (!BuiltWithC10dStore()) {
    for (const auto& g : got) EXPECT_TRUE(absl::IsUnimplemented(g.status()));
    GTEST_SKIP() << "built without the c10d store headers";
  }
  EXPECT_EQ(made, 1);
  for (int r = 0; r < world; ++r) {
    ASSERT_TRUE(got[r].ok()) << "rank " << r << ": " << got[r].status();
    EXPECT_EQ(*got[r], PatternId()) << "rank " << r;
  }
}

TEST(RendezvousTest, RankZeroErrorIsReturned) {
  if (!BuiltWithC10dStore()) GTEST_SKIP() << "no c10d store";
  const std::string path = FreshStorePath("error");
  absl::StatusOr<kernels::NcclUniqueIdBytes> id = ExchangeNcclUniqueId(
      {0, 1, path}, {}, []() -> absl::StatusOr<kernels::NcclUniqueIdBytes> {
        return absl::InternalError("ncclGetUniqueId failed");
      });
  std::remove(path.c_str());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInternal);
}

TEST(RendezvousTest, MissingRankZeroTimesOut) {
  if (!BuiltWithC10dStore()) GTEST_SKIP() << "no c10d store";
  const std::string path = FreshStorePath("timeout");
  kernels::CommunicatorOptions opt;
  opt.op_timeout_ms = 300;
  absl::StatusOr<kernels::NcclUniqueIdBytes> id =
      ExchangeNcclUniqueId({1, 2, path}, opt, nullptr);
  std::remove(path.c_str());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kUnavailable) << id.status();
  EXPECT_NE(id.status().message().find(path), std::string::npos) << id.status();
}

TEST(RendezvousTest, NcclCommunicatorNeedsNccl) {
  if (kernels::BuiltWithNccl()) {
    GTEST_SKIP() << "this build has NCCL (joining needs a GPU per rank)";
  }
  auto comm = CreateNcclCommunicator({0, 2, "/tmp/unused"}, 0, {});
  EXPECT_TRUE(absl::IsUnimplemented(comm.status())) << comm.status();
}

}  // namespace
}  // namespace smoe::model
