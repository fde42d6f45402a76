// Copyright 2026 SMoE Lab authors.
//
// Every synchronous CUDA runtime / NCCL call site of the unchanged
// kernels/all_to_all/nccl_communicator.cc (and of kernels/common/device.cc
// and the payload checker's staging), made to fail once by the fake of
// tests/fakes (fake_nccl_control.h FailCall), at world 2 with rank 0 failing:
//
//  * rank 0's call returns a Status that names the failing call and carries
//    the vendor's error name (Internal), at once;
//  * after a failure inside a collective the communicator is aborted: the
//    next call fails fast with Aborted (communicator.h), it never joins a
//    collective its peer has given up on;
//  * the peer (rank 1) returns within its deadline (no hang), whatever it
//    returns;
//  * the armed fault was reached (so each case tests the line it names),
//    no API misuse was recorded and no communicator leaked.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cuda_runtime_api.h"
#include "kernels/all_to_all/nccl_communicator.h"
#include "kernels/all_to_all/payload.h"
#include "kernels/common/device.h"
#include "nccl.h"
#include "tests/fakes/fake_nccl_control.h"
#include "tests/fakes/rank_threads.h"

namespace smoe::kernels {
namespace {

namespace fake = ::smoe::fake_nccl;
using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

constexpr int kWorld = 2;
// Rank 1 waits at most this long for a rank 0 that failed.
constexpr int64_t kPeerTimeoutMs = 1500;
constexpr Ms kHangBudget(15000);

enum class Phase { kInit, kCounts, kAllToAllV, kAllReduce, kBarrier };

const char* PhaseName(Phase p) {
  switch (p) {
    case Phase::kInit:
      return "init";
    case Phase::kCounts:
      return "AllToAllCounts";
    case Phase::kAllToAllV:
      return "AllToAllV";
    case Phase::kAllReduce:
      return "AllReduceSum";
    case Phase::kBarrier:
      return "Barrier";
  }
  return "?";
}

struct Case {
  Phase phase;
  std::string call;    // the fake API function that fails
  int error;           // cudaError_t or ncclResult_t
  int skip = 0;        // calls of `call` let through first in that phase
  std::string names;   // the returned message must contain this
  std::string vendor;  // ... and this (the error's name or string)
};

std::string CudaName(cudaError_t e) { return cudaGetErrorName(e); }
std::string NcclName(ncclResult_t r) { return ncclGetErrorString(r); }

std::vector<Case> Cases() {
  const std::string oom = CudaName(cudaErrorMemoryAllocation);
  const std::string launch = CudaName(cudaErrorLaunchFailure);
  const std::string sys = NcclName(ncclSystemError);
  const std::string internal = NcclName(ncclInternalError);
  const std::string cuda = NcclName(ncclUnhandledCudaError);
  return {
      // Init.
      {Phase::kInit, "cudaSetDevice", cudaErrorInvalidDevice, 0,
       "cudaSetDevice", CudaName(cudaErrorInvalidDevice)},
      {Phase::kInit, "cudaMalloc", cudaErrorMemoryAllocation, 0, "cudaMalloc",
       oom},
      {Phase::kInit, "cudaMallocHost", cudaErrorMemoryAllocation, 0,
       "cudaMallocHost", oom},
      {Phase::kInit, "ncclCommInitRankConfig", ncclSystemError, 0,
       "ncclCommInitRankConfig", sys},
      {Phase::kInit, "ncclCommGetAsyncError", ncclInternalError, 0,
       "ncclCommInitRankConfig: ncclCommGetAsyncError", internal},
      // AllToAllCounts: both count copies, the group, the two waits.
      {Phase::kCounts, "cudaMemcpyAsync", cudaErrorLaunchFailure, 0,
       "cudaMemcpyAsync (to device)", launch},
      {Phase::kCounts, "cudaMemcpyAsync", cudaErrorLaunchFailure, 1,
       "cudaMemcpyAsync (to host)", launch},
      {Phase::kCounts, "ncclGroupStart", ncclInternalError, 0, "ncclGroupStart",
       internal},
      {Phase::kCounts, "ncclSend", ncclUnhandledCudaError, 0, "ncclSend", cuda},
      {Phase::kCounts, "ncclRecv", ncclUnhandledCudaError, 0, "ncclRecv", cuda},
      {Phase::kCounts, "ncclGroupEnd", ncclSystemError, 0, "ncclGroupEnd", sys},
      {Phase::kCounts, "ncclCommGetAsyncError", ncclInternalError, 0,
       "ncclGroupEnd: ncclCommGetAsyncError", internal},
      {Phase::kCounts, "cudaStreamQuery", cudaErrorLaunchFailure, 0,
       "AllToAllCounts: cudaStreamQuery", launch},
      // AllToAllV.
      {Phase::kAllToAllV, "ncclSend", ncclSystemError, 1, "ncclSend", sys},
      {Phase::kAllToAllV, "ncclRecv", ncclSystemError, 1, "ncclRecv", sys},
      {Phase::kAllToAllV, "ncclGroupEnd", ncclUnhandledCudaError, 0,
       "ncclGroupEnd", cuda},
      {Phase::kAllToAllV, "cudaStreamQuery", cudaErrorIllegalAddress, 0,
       "AllToAllV: cudaStreamQuery", CudaName(cudaErrorIllegalAddress)},
      // AllReduceSum: the launch, the enqueue wait, the stream wait (and the
      // stream wait's own async-error poll, after the enqueue completed).
      {Phase::kAllReduce, "ncclAllReduce", ncclInvalidUsage, 0, "ncclAllReduce",
       NcclName(ncclInvalidUsage)},
      {Phase::kAllReduce, "ncclCommGetAsyncError", ncclSystemError, 0,
       "ncclAllReduce: ncclCommGetAsyncError", sys},
      {Phase::kAllReduce, "cudaStreamQuery", cudaErrorLaunchFailure, 0,
       "AllReduceSum: cudaStreamQuery", launch},
      // Barrier is an AllReduceSum of the scratch flag.
      {Phase::kBarrier, "ncclAllReduce", ncclSystemError, 0, "ncclAllReduce",
       sys},
  };
}

// Runs rank `rank` through the phases in order; before `c.phase` rank 0 arms
// the fault. Returns the first error (and in *failed_at its phase).
absl::Status RunRank(int rank, const NcclUniqueIdBytes& id, const Case& c,
                     Phase* failed_at, absl::Status* after) {
  auto arm = [&](Phase p) {
    if (rank == 0 && p == c.phase) {
      fake::FailCall(c.call, c.error, /*device=*/0, c.skip);
    }
  };
  *failed_at = Phase::kInit;
  arm(Phase::kInit);
  NcclCommunicatorOptions o;
  o.common.op_timeout_ms = kPeerTimeoutMs;
  o.device = rank;
  absl::StatusOr<std::unique_ptr<Communicator>> comm =
      CreateNcclCommunicator(rank, kWorld, id, o);
  if (!comm.ok()) return comm.status();
  Communicator& cm = **comm;
  // Buffers in fake device memory of the rank's device (set by Init).
  double* buf = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&buf), 4 * sizeof(double)) !=
      cudaSuccess) {
    return absl::InternalError("test setup: cudaMalloc");
  }
  const std::vector<std::pair<Phase, std::function<absl::Status()>>> phases = {
      {Phase::kCounts,
       [&] {
         const int64_t send[kWorld] = {1, 1};
         int64_t recv[kWorld] = {0, 0};
         return cm.AllToAllCounts(send, recv);
       }},
      {Phase::kAllToAllV,
       [&] {
         const int64_t counts[kWorld] = {1, 1};
         return cm.AllToAllV(buf, counts, buf + 2, counts, DType::kFloat64);
       }},
      {Phase::kAllReduce,
       [&] { return cm.AllReduceSum(buf, 2, DType::kFloat64); }},
      {Phase::kBarrier, [&] { return cm.Barrier(); }},
  };
  absl::Status result;
  for (const auto& [phase, run] : phases) {
    *failed_at = phase;
    arm(phase);
    result = run();
    if (!result.ok()) {
      // The communicator is unusable now: the next call fails fast.
      *after = cm.AllReduceSum(buf, 1, DType::kFloat64);
      break;
    }
  }
  cudaFree(buf);
  comm->reset();  // finalize (or nothing, when aborted) on this thread
  return result;
}

class NcclSyncErrorsTest : public ::testing::TestWithParam<Case> {};

TEST_P(NcclSyncErrorsTest, ErrorNamesTheCallAndAbortsTheCommunicator) {
  const Case& c = GetParam();
  SCOPED_TRACE(absl::StrCat(PhaseName(c.phase), ": ", c.call, " (skip ", c.skip,
                            ") -> ", c.error));
  const uint64_t seed = fake::Reset({});
  SCOPED_TRACE(absl::StrCat("SMOE_FAKE_NCCL_SEED=", seed));
  absl::StatusOr<NcclUniqueIdBytes> id = NewNcclUniqueId();
  ASSERT_TRUE(id.ok()) << id.status();

  std::vector<Phase> failed_at(kWorld, Phase::kInit);
  std::vector<absl::Status> after(kWorld);
  std::vector<int64_t> ms(kWorld, 0);
  const std::vector<absl::Status> st = fake::RunRanks(
      kWorld,
      [&](int r) {
        const auto t0 = Clock::now();
        absl::Status s = RunRank(r, *id, c, &failed_at[r], &after[r]);
        ms[r] = std::chrono::duration_cast<Ms>(Clock::now() - t0).count();
        return s;
      },
      kHangBudget);

  // The fault was reached, in the phase meant.
  EXPECT_TRUE(fake::ArmedCallFaults().empty())
      << "fault never reached: "
      << absl::StrJoin(fake::ArmedCallFaults(), ", ");
  ASSERT_EQ(fake::FiredCallFaults().size(), 1u);
  EXPECT_EQ(fake::FiredCallFaults()[0], c.call + " on device 0");

  // Rank 0: Internal naming the call and the vendor's error, in that phase,
  // without waiting out its deadline.
  ASSERT_FALSE(st[0].ok()) << "rank 0 did not see the failure";
  EXPECT_EQ(failed_at[0], c.phase) << st[0];
  EXPECT_EQ(st[0].code(), absl::StatusCode::kInternal) << st[0];
  EXPECT_TRUE(absl::StrContains(st[0].message(), c.names)) << st[0];
  EXPECT_TRUE(absl::StrContains(st[0].message(), c.vendor)) << st[0];
  EXPECT_LT(ms[0], kPeerTimeoutMs) << "rank 0 waited instead of failing fast";
  if (c.phase != Phase::kInit) {
    EXPECT_EQ(after[0].code(), absl::StatusCode::kAborted) << after[0];
    EXPECT_TRUE(absl::StrContains(after[0].message(), c.names)) << after[0];
  }
  // Rank 1 returned (no hang); when it failed, with a communicator error.
  if (!st[1].ok()) {
    EXPECT_TRUE(absl::IsDeadlineExceeded(st[1]) || absl::IsAborted(st[1]) ||
                absl::IsInternal(st[1]))
        << st[1];
  }
  const std::vector<std::string> v = fake::Violations();
  EXPECT_TRUE(v.empty()) << absl::StrJoin(v, "\n");
  EXPECT_EQ(fake::GetStats().live_comms, 0) << "communicators leaked";
}

INSTANTIATE_TEST_SUITE_P(EverySyncCallSite, NcclSyncErrorsTest,
                         ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return absl::StrCat(PhaseName(info.param.phase), "_",
                                               info.param.call, "_",
                                               info.param.skip);
                         });

// A failed ncclCommFinalize in the destructor: the communicator is aborted
// instead (nothing leaks, the destructor returns at once), and the peer's
// finalize still completes.
TEST(NcclSyncErrorsOtherTest, FailedFinalizeAborts) {
  fake::Reset({});
  absl::StatusOr<NcclUniqueIdBytes> id = NewNcclUniqueId();
  ASSERT_TRUE(id.ok()) << id.status();
  const std::vector<absl::Status> st = fake::RunRanks(
      kWorld,
      [&](int r) -> absl::Status {
        NcclCommunicatorOptions o;
        o.common.op_timeout_ms = kPeerTimeoutMs;
        o.device = r;
        auto comm = CreateNcclCommunicator(r, kWorld, *id, o);
        if (!comm.ok()) return comm.status();
        absl::Status s = (*comm)->Barrier();
        if (r == 0) fake::FailCall("ncclCommFinalize", ncclInternalError, 0);
        comm->reset();
        return s;
      },
      kHangBudget);
  EXPECT_TRUE(st[0].ok()) << st[0];
  EXPECT_TRUE(st[1].ok()) << st[1];
  ASSERT_EQ(fake::FiredCallFaults().size(), 1u);
  EXPECT_EQ(fake::GetStats().live_comms, 0);
  const std::vector<std::string> v = fake::Violations();
  EXPECT_TRUE(v.empty()) << absl::StrJoin(v, "\n");
}

// The finalize's wait fails (its async-error poll): the destructor aborts
// instead of destroying, returns at once, and nothing leaks.
TEST(NcclSyncErrorsOtherTest, FailedFinalizeWaitAborts) {
  fake::Reset({});
  absl::StatusOr<NcclUniqueIdBytes> id = NewNcclUniqueId();
  ASSERT_TRUE(id.ok()) << id.status();
  const std::vector<absl::Status> st = fake::RunRanks(
      kWorld,
      [&](int r) -> absl::Status {
        NcclCommunicatorOptions o;
        o.common.op_timeout_ms = kPeerTimeoutMs;
        o.device = r;
        auto comm = CreateNcclCommunicator(r, kWorld, *id, o);
        if (!comm.ok()) return comm.status();
        absl::Status s = (*comm)->Barrier();
        if (r == 0) {
          fake::FailCall("ncclCommGetAsyncError", ncclInternalError, 0);
        }
        comm->reset();
        return s;
      },
      kHangBudget);
  EXPECT_TRUE(st[0].ok()) << st[0];
  EXPECT_TRUE(st[1].ok()) << st[1];
  ASSERT_EQ(fake::FiredCallFaults().size(), 1u);
  EXPECT_EQ(fake::GetStats().live_comms, 0);
  const std::vector<std::string> v = fake::Violations();
  EXPECT_TRUE(v.empty()) << absl::StrJoin(v, "\n");
}

// The stream wait's own async-error poll fails while the stream is still
// busy (rank 0's all-reduce kernel waits for rank 1, whose enqueue is held
// back 1 s): the poll before it, in the enqueue wait, succeeded, so this
// is the stream wait's error return. Rank 0 returns at once with the call
// named and its communicator aborted.
TEST(NcclSyncErrorsOtherTest, StreamWaitPollFailureWhileBusyAborts) {
  fake::Reset({});
  absl::StatusOr<NcclUniqueIdBytes> id = NewNcclUniqueId();
  ASSERT_TRUE(id.ok()) << id.status();
  fake::SetEnqueueDelay(1, 1000000);
  fake::SetEnqueueDelay(0, 0);
  absl::Status after;
  const std::vector<absl::Status> st = fake::RunRanks(
      kWorld,
      [&](int r) -> absl::Status {
        NcclCommunicatorOptions o;
        o.common.op_timeout_ms = kPeerTimeoutMs;
        o.device = r;
        auto comm = CreateNcclCommunicator(r, kWorld, *id, o);
        if (!comm.ok()) return comm.status();
        if (r == 0) {
          fake::FailCallWhileBusy("ncclCommGetAsyncError", ncclSystemError, 0);
        }
        const absl::Status s = (*comm)->Barrier();
        if (r == 0) after = (*comm)->Barrier();
        return s;
      },
      kHangBudget);
  EXPECT_TRUE(absl::IsInternal(st[0])) << st[0];
  EXPECT_TRUE(
      absl::StrContains(st[0].message(), "AllReduceSum: ncclCommGetAsyncError"))
      << st[0];
  EXPECT_TRUE(absl::StrContains(st[0].message(), NcclName(ncclSystemError)))
      << st[0];
  EXPECT_TRUE(absl::IsAborted(after)) << after;
  EXPECT_EQ(absl::StrJoin(fake::FiredCallFaults(), ", "),
            "ncclCommGetAsyncError on device 0");
  EXPECT_EQ(fake::GetStats().live_comms, 0);
  const std::vector<std::string> v = fake::Violations();
  EXPECT_TRUE(v.empty()) << absl::StrJoin(v, "\n");
}

// The peer's asynchronous error arrives while rank 0 is already in the stream
// wait (its enqueue wait finished at once; rank 1's launch, held back 1 s,
// fails and every peer sees ncclRemoteError): rank 0's stream wait reports
// the remote error and aborts.
TEST(NcclSyncErrorsOtherTest, PeerErrorDuringTheStreamWaitAborts) {
  fake::Reset({});
  absl::StatusOr<NcclUniqueIdBytes> id = NewNcclUniqueId();
  ASSERT_TRUE(id.ok()) << id.status();
  fake::SetEnqueueDelay(1, 1000000);
  fake::SetEnqueueDelay(0, 0);
  fake::InjectAsyncError(1, /*at_launch=*/0, ncclSystemError,
                         /*peers_see_remote_error=*/true);
  const std::vector<absl::Status> st = fake::RunRanks(
      kWorld,
      [&](int r) -> absl::Status {
        NcclCommunicatorOptions o;
        o.common.op_timeout_ms = 5000;
        o.device = r;
        auto comm = CreateNcclCommunicator(r, kWorld, *id, o);
        if (!comm.ok()) return comm.status();
        return (*comm)->Barrier();
      },
      kHangBudget);
  EXPECT_TRUE(absl::IsInternal(st[0])) << st[0];
  EXPECT_TRUE(absl::StartsWith(st[0].message(), "AllReduceSum: NCCL error"))
      << st[0];
  EXPECT_TRUE(absl::StrContains(st[0].message(), NcclName(ncclRemoteError)))
      << st[0];
  EXPECT_TRUE(absl::StrContains(st[1].message(), NcclName(ncclSystemError)))
      << st[1];
  EXPECT_EQ(fake::GetStats().live_comms, 0);
  const std::vector<std::string> v = fake::Violations();
  EXPECT_TRUE(v.empty()) << absl::StrJoin(v, "\n");
}

// Bad arguments are InvalidArgument naming the value, before any NCCL call,
// and leave the communicator usable (world 1).
TEST(NcclSyncErrorsOtherTest, BadArgumentsNameTheValue) {
  fake::Reset({});
  EXPECT_TRUE(BuiltWithNccl());
  absl::StatusOr<NcclUniqueIdBytes> id = NewNcclUniqueId();
  ASSERT_TRUE(id.ok()) << id.status();
  const std::vector<absl::Status> st = fake::RunRanks(
      1,
      [&](int r) -> absl::Status {
        NcclCommunicatorOptions o;
        o.common.op_timeout_ms = kPeerTimeoutMs;
        o.device = r;
        auto comm = CreateNcclCommunicator(r, 1, *id, o);
        if (!comm.ok()) return comm.status();
        double* buf = nullptr;
        EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&buf), sizeof(double)),
                  cudaSuccess);
        const int64_t launches = fake::GetStats().launches;
        absl::Status neg = (*comm)->AllReduceSum(buf, -1, DType::kFloat64);
        EXPECT_EQ(neg.code(), absl::StatusCode::kInvalidArgument) << neg;
        EXPECT_TRUE(absl::StrContains(neg.message(), "count=-1")) << neg;
        absl::Status null = (*comm)->AllReduceSum(nullptr, 1, DType::kFloat64);
        EXPECT_EQ(null.code(), absl::StatusCode::kInvalidArgument) << null;
        const int64_t bad[1] = {-2};
        const int64_t ok[1] = {1};
        absl::Status v = (*comm)->AllToAllV(buf, bad, buf, ok, DType::kFloat64);
        EXPECT_EQ(v.code(), absl::StatusCode::kInvalidArgument) << v;
        EXPECT_TRUE(absl::StrContains(v.message(), "-2")) << v;
        EXPECT_EQ(fake::GetStats().launches, launches) << "an NCCL call ran";
        absl::Status after = (*comm)->AllReduceSum(buf, 1, DType::kFloat64);
        cudaFree(buf);
        comm->reset();
        return after;
      },
      kHangBudget);
  EXPECT_TRUE(st[0].ok()) << st[0];
  EXPECT_EQ(fake::GetStats().live_comms, 0);
}

TEST(NcclSyncErrorsOtherTest, UniqueIdFailureNamesTheCall) {
  fake::Reset({});
  fake::FailCall("ncclGetUniqueId", ncclSystemError);
  absl::StatusOr<NcclUniqueIdBytes> id = NewNcclUniqueId();
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(id.status().message(), "ncclGetUniqueId"))
      << id.status();
  EXPECT_TRUE(absl::StrContains(id.status().message(),
                                ncclGetErrorString(ncclSystemError)))
      << id.status();
  EXPECT_TRUE(NewNcclUniqueId().ok());  // once only
}

// The payload checker stages its rows through device memory after the
// count exchange: a failed cudaMalloc on rank 0 is an error naming it, and
// rank 1 (left in the AllToAllV) returns within its deadline.
TEST(NcclSyncErrorsOtherTest, PayloadStagingFailureNamesTheCall) {
  fake::Reset({});
  absl::StatusOr<NcclUniqueIdBytes> id = NewNcclUniqueId();
  ASSERT_TRUE(id.ok()) << id.status();
  const std::vector<absl::Status> st = fake::RunRanks(
      kWorld,
      [&](int r) -> absl::Status {
        NcclCommunicatorOptions o;
        o.common.op_timeout_ms = kPeerTimeoutMs;
        o.device = r;
        auto comm = CreateNcclCommunicator(r, kWorld, *id, o);
        if (!comm.ok()) return comm.status();
        if (r == 0) {
          fake::FailCall("cudaMalloc", cudaErrorMemoryAllocation, 0);
        }
        PayloadCheck check;
        absl::Status s = RunPayloadAllToAll(**comm, 3, 7, &check);
        comm->reset();
        return s;
      },
      kHangBudget);
  ASSERT_EQ(fake::FiredCallFaults().size(), 1u);
  ASSERT_FALSE(st[0].ok());
  EXPECT_EQ(st[0].code(), absl::StatusCode::kInternal) << st[0];
  EXPECT_TRUE(absl::StrContains(st[0].message(), "cudaMalloc")) << st[0];
  EXPECT_TRUE(absl::StrContains(st[0].message(), "cudaErrorMemoryAllocation"))
      << st[0];
  EXPECT_EQ(fake::GetStats().live_comms, 0);
  const std::vector<std::string> v = fake::Violations();
  EXPECT_TRUE(v.empty()) << absl::StrJoin(v, "\n");
}

// kernels/common/device.cc on the fake runtime: the arms that need a driver
// (a device count, the properties) and each query's failure.
TEST(FakeDeviceQueriesTest, EveryArmOfDeviceCc) {
  fake::Config fc;
  fc.num_devices = 3;
  fake::Reset(fc);
  EXPECT_TRUE(BuiltWithCuda());
  EXPECT_EQ(CudaDeviceCount(), 3);
  EXPECT_EQ(DescribeDevice(1), "Fake GPU 1, sm_90, 132 SMs");
  EXPECT_EQ(DescribeDevice(3), "device index out of range");
  fake::FailCall("cudaGetDeviceCount", cudaErrorNoDevice);
  EXPECT_EQ(CudaDeviceCount(), 0);
  fake::FailCall("cudaGetDeviceCount", cudaErrorNoDevice);
  EXPECT_EQ(DescribeDevice(0),
            absl::StrCat("CUDA unavailable: cudaErrorNoDevice: ",
                         cudaGetErrorString(cudaErrorNoDevice)));
  fake::FailCall("cudaGetDeviceProperties", cudaErrorInvalidDevice, 2);
  EXPECT_EQ(DescribeDevice(2), "cudaGetDeviceProperties failed");
  EXPECT_TRUE(fake::ArmedCallFaults().empty());
  EXPECT_EQ(fake::FiredCallFaults().size(), 3u);
  EXPECT_EQ(CudaDeviceCount(), 3);  // each fault fired once
}

}  // namespace
}  // namespace smoe::kernels
