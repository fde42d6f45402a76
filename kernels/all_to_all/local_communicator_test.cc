// Copyright 2026 SMoE Lab authors.
#include "kernels/all_to_all/local_communicator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/all_to_all/payload.h"

namespace smoe::kernels {
namespace {

// Runs fn(comm) on one thread per rank; returns each rank's status.
std::vector<absl::Status> RunRanks(
    int world, int64_t timeout_ms,
    const std::function<absl::Status(Communicator&)>& fn) {
  CommunicatorOptions opt;
  opt.op_timeout_ms = timeout_ms;
  auto comms = CreateLocalCommunicators(world, opt);
  std::vector<absl::Status> out(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] { out[r] = fn(*comms[r]); });
  }
  for (auto& t : threads) t.join();
  return out;
}

TEST(LocalCommunicatorTest, AllToAllVPayloadVerifiesInClosedForm) {
  for (int world : {1, 2, 3, 4}) {
    for (int64_t columns : {1, 3}) {
      auto st = RunRanks(world, 10000, [&](Communicator& c) {
        PayloadCheck check;
        absl::Status s = RunPayloadAllToAll(c, columns, /*seed=*/7, &check);
        if (!s.ok()) return s;
        if (check.wrong != 0) {
          return absl::InternalError(
              absl::StrCat(check.wrong, " wrong of ", check.checked));
        }
        if (check.checked == 0 && world > 1) {
          return absl::InternalError("nothing was checked");
        }
        return absl::OkStatus();
      });
      for (int r = 0; r < world; ++r) {
        EXPECT_TRUE(st[r].ok())
            << "world " << world << " rank " << r << ": " << st[r];
      }
    }
  }
}

TEST(LocalCommunicatorTest, CountsExchangeIsATranspose) {
  const int world = 4;
  auto st = RunRanks(world, 10000, [&](Communicator& c) {
    std::vector<int64_t> send(world), recv(world, -1);
    for (int j = 0; j < world; ++j) send[j] = 10 * c.rank() + j;
    if (auto s = c.AllToAllCounts(send.data(), recv.data()); !s.ok()) return s;
    for (int j = 0; j < world; ++j) {
      if (recv[j] != 10 * j + c.rank()) {
        return absl::InternalError(absl::StrCat("recv[", j, "]=", recv[j]));
      }
    }
    return absl::OkStatus();
  });
  for (const auto& s : st) EXPECT_TRUE(s.ok()) << s;
}

TEST(LocalCommunicatorTest, AllZeroCountsWithNullBuffers) {
  auto st = RunRanks(3, 10000, [&](Communicator& c) {
    std::vector<int64_t> zero(3, 0);
    return c.AllToAllV(nullptr, zero.data(), nullptr, zero.data(),
                       DType::kFloat32);
  });
  for (const auto& s : st) EXPECT_TRUE(s.ok()) << s;
}

TEST(LocalCommunicatorTest, AllReduceSumFloatAndInt) {
  auto st = RunRanks(4, 10000, [&](Communicator& c) {
    std::vector<double> d = {1.0 * c.rank(), 0.5, -2.0};
    std::vector<int64_t> i = {c.rank() + 1, 100};
    if (auto s = c.AllReduceSum(d.data(), 3, DType::kFloat64); !s.ok()) {
      return s;
    }
    if (auto s = c.AllReduceSum(i.data(), 2, DType::kInt64); !s.ok()) {
      return s;
    }
    if (d != std::vector<double>{6.0, 2.0, -8.0} ||
        i != std::vector<int64_t>{10, 400}) {
      return absl::InternalError("wrong sums");
    }
    return c.Barrier();
  });
  for (const auto& s : st) EXPECT_TRUE(s.ok()) << s;
}

TEST(LocalCommunicatorTest, NegativeCountIsInvalidArgument) {
  auto comms = CreateLocalCommunicators(1, {});
  int64_t send = -1, recv = 0;
  float x = 0;
  absl::Status s = comms[0]->AllToAllV(&x, &send, &x, &recv, DType::kFloat32);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("send_counts[0]=-1"), std::string::npos) << s;
}

TEST(LocalCommunicatorTest, NegativeOrNullCountsAreInvalidArgument) {
  auto comms = CreateLocalCommunicators(1, {});
  int64_t send = -2, recv = 0;
  absl::Status s = comms[0]->AllToAllCounts(&send, &recv);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("AllToAllCounts: send_counts[0]=-2"),
            std::string::npos)
      << s;
  s = ValidateAllToAllCountsArgs(1, &send, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("non-null"), std::string::npos) << s;
}

TEST(LocalCommunicatorTest, WrongRecvCountFailsEveryRankWithoutHanging) {
  auto st = RunRanks(2, 10000, [&](Communicator& c) {
    std::vector<int64_t> send = {1, 1};
    std::vector<int64_t> recv = {1, c.rank() == 0 ? 2 : 1};  // rank 0 is wrong
    std::vector<float> in(2, 1.f), out(3, 0.f);
    return c.AllToAllV(in.data(), send.data(), out.data(), recv.data(),
                       DType::kFloat32);
  });
  EXPECT_EQ(st[0].code(), absl::StatusCode::kInvalidArgument) << st[0];
  EXPECT_FALSE(st[1].ok());
}

TEST(LocalCommunicatorTest, MissingRankHitsTheDeadlineThenFailsFast) {
  const auto t0 = std::chrono::steady_clock::now();
  auto st = RunRanks(3, 200, [&](Communicator& c) -> absl::Status {
    if (c.rank() == 2) return absl::OkStatus();  // never joins
    absl::Status s = c.Barrier();
    if (s.ok()) return absl::InternalError("barrier passed with a rank gone");
    absl::Status again = c.Barrier();
    if (again.ok()) return absl::InternalError("second barrier passed");
    return s;
  });
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_LT(secs, 5.0);
  // The first rank to time out reports DeadlineExceeded; a rank woken by the
  // poisoning reports Aborted.
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(st[r].code() == absl::StatusCode::kDeadlineExceeded ||
                st[r].code() == absl::StatusCode::kAborted)
        << st[r];
  }
  EXPECT_TRUE(st[0].code() == absl::StatusCode::kDeadlineExceeded ||
              st[1].code() == absl::StatusCode::kDeadlineExceeded);
}

TEST(LocalCommunicatorTest, MismatchedCollectivesAreReported) {
  auto st = RunRanks(2, 10000, [&](Communicator& c) -> absl::Status {
    if (c.rank() == 0) return c.Barrier();
    double x = 1;
    return c.AllReduceSum(&x, 1, DType::kFloat64);
  });
  EXPECT_FALSE(st[0].ok());
  EXPECT_FALSE(st[1].ok());
  const std::string msg =
      std::string(st[0].message()) + " " + std::string(st[1].message());
  EXPECT_NE(msg.find("mismatched collectives"), std::string::npos) << msg;
}

}  // namespace
}  // namespace smoe::kernels
