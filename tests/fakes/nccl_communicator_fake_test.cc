// Copyright 2026 SMoE Lab authors.
//
// kernels/all_to_all/nccl_communicator.cc, compiled unchanged against the fake
// CUDA runtime + NCCL of tests/fakes (fake_nccl_control.h), at world 2 and 4
// with the ranks as threads: payload all-to-alls, counts, all-reduces of
// every dtype, barriers, zero counts, timeouts, injected async errors, the
// nonblocking-enqueue race (review A2), the host block in AllToAllCounts (A8)
// and the per-call stream (A13). The fake's timing is randomised (seed printed
// on failure; SMOE_FAKE_NCCL_SEED=N reproduces the delays). Every test is
// bounded: RunRanks breaks a hang with fake_nccl::AbortAll() and fails.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cuda_runtime_api.h"
#include "kernels/all_to_all/nccl_communicator.h"
#include "kernels/all_to_all/payload.h"
#include "nccl.h"
#include "tests/fakes/fake_nccl_control.h"
#include "tests/fakes/rank_threads.h"

namespace smoe::kernels {
namespace {

namespace fake = ::smoe::fake_nccl;
using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

// Calls that must succeed get a generous deadline; calls that must time out
// get a short one.
constexpr int64_t kLongTimeoutMs = 20000;
constexpr int64_t kShortTimeoutMs = 300;
// A rank still running after this is hung (every test finishes in well under
// a second per rank otherwise).
constexpr Ms kHangBudget(8000);

int64_t MsSince(Clock::time_point t) {
  return std::chrono::duration_cast<Ms>(Clock::now() - t).count();
}

std::vector<absl::Status> RunRanks(int world,
                                   const std::function<absl::Status(int)>& body,
                                   Ms budget = kHangBudget) {
  return fake::RunRanks(world, body, budget);
}

absl::StatusOr<std::unique_ptr<Communicator>> MakeComm(
    int rank, int world, const NcclUniqueIdBytes& id, int64_t timeout_ms,
    std::function<void*()> current_stream = nullptr) {
  NcclCommunicatorOptions o;
  o.common.op_timeout_ms = timeout_ms;
  o.device = rank;  // one fake GPU per rank, as NCCL requires
  o.current_stream = std::move(current_stream);
  return CreateNcclCommunicator(rank, world, id, o);
}

NcclUniqueIdBytes NewId() {
  absl::StatusOr<NcclUniqueIdBytes> id = NewNcclUniqueId();
  EXPECT_TRUE(id.ok()) << id.status();
  return id.ok() ? *id : NcclUniqueIdBytes{};
}

// Fake device memory (cudaMalloc'ed on the calling thread's device).
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes > 0) {
      EXPECT_EQ(cudaMalloc(&ptr_, bytes), cudaSuccess);
    }
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  void Upload(const void* host) {
    if (bytes_ > 0) {
      EXPECT_EQ(cudaMemcpy(ptr_, host, bytes_, cudaMemcpyHostToDevice),
                cudaSuccess);
    }
  }
  void Download(void* host) const {
    if (bytes_ > 0) {
      EXPECT_EQ(cudaMemcpy(host, ptr_, bytes_, cudaMemcpyDeviceToHost),
                cudaSuccess);
    }
  }

 private:
  size_t bytes_;
  void* ptr_ = nullptr;
};

class FakeNcclTest : public ::testing::Test {
 protected:
  void SetUp() override { Reset({}); }
  void Reset(const fake::Config& config) {
    seed_ = fake::Reset(config);
    RecordProperty("fake_nccl_seed", std::to_string(seed_));
  }
  void TearDown() override {
    const std::vector<std::string> v = fake::Violations();
    EXPECT_TRUE(v.empty()) << "fake NCCL/CUDA API misuse:\n  "
                           << absl::StrJoin(v, "\n  ");
    EXPECT_EQ(fake::GetStats().live_comms, 0) << "communicators leaked";
    if (HasFailure()) {
      std::fprintf(stderr,
                   "reproduce the fake's delays: SMOE_FAKE_NCCL_SEED=%llu\n",
                   static_cast<unsigned long long>(seed_));
    }
  }
  uint64_t seed_ = 0;
};

void ExpectAllOk(const std::vector<absl::Status>& st) {
  for (size_t r = 0; r < st.size(); ++r) {
    EXPECT_TRUE(st[r].ok()) << "rank " << r << ": " << st[r];
  }
}

// ---- Data movement ---------------------------------------------------------

TEST_F(FakeNcclTest, PayloadAllToAllAtWorldTwoAndFour) {
  for (int world : {2, 4}) {
    SCOPED_TRACE(absl::StrCat("world ", world));
    const NcclUniqueIdBytes id = NewId();
    std::atomic<int64_t> checked{0}, wrong{0};
    ExpectAllOk(RunRanks(world, [&](int r) -> absl::Status {
      auto comm = MakeComm(r, world, id, kLongTimeoutMs);
      if (!comm.ok()) return comm.status();
      EXPECT_EQ((*comm)->memory_space(), MemorySpace::kCudaDevice);
      for (uint64_t seed = 1; seed <= 6; ++seed) {
        for (int64_t columns : {1, 7}) {
          PayloadCheck check;
          if (absl::Status s =
                  RunPayloadAllToAll(**comm, columns, seed, &check);
              !s.ok()) {
            return s;
          }
          checked += check.checked;
          wrong += check.wrong;
        }
      }
      return (*comm)->Barrier();
    }));
    EXPECT_GT(checked.load(), 0);
    EXPECT_EQ(wrong.load(), 0);
  }
  EXPECT_GT(fake::GetStats().kernels_run, 0) << "did not run on the fake";
}

TEST_F(FakeNcclTest, AllToAllCountsWithZerosAndLargeValues) {
  const int world = 4;
  const NcclUniqueIdBytes id = NewId();
  auto sent = [](int src, int dst) -> int64_t {
    if ((src + dst) % 3 == 0) return 0;
    return src == 3 && dst == 1 ? (int64_t{1} << 40) : src * 10 + dst;
  };
  ExpectAllOk(RunRanks(world, [&](int r) -> absl::Status {
    auto comm = MakeComm(r, world, id, kLongTimeoutMs);
    if (!comm.ok()) return comm.status();
    for (int round = 0; round < 5; ++round) {
      std::vector<int64_t> send(world), recv(world, -1);
      for (int j = 0; j < world; ++j) send[j] = sent(r, j) + round;
      if (absl::Status s = (*comm)->AllToAllCounts(send.data(), recv.data());
          !s.ok()) {
        return s;
      }
      for (int j = 0; j < world; ++j) {
        EXPECT_EQ(recv[j], sent(j, r) + round)
            << "rank " << r << " from " << j << " round " << round;
      }
    }
    std::vector<int64_t> bad(world, 1);
    bad[2] = -1;
    std::vector<int64_t> recv(world);
    EXPECT_EQ((*comm)->AllToAllCounts(bad.data(), recv.data()).code(),
              absl::StatusCode::kInvalidArgument);
    return absl::OkStatus();
  }));
}

TEST_F(FakeNcclTest, ZeroCountsAndNullBuffers) {
  const int world = 4;
  const NcclUniqueIdBytes id = NewId();
  ExpectAllOk(RunRanks(world, [&](int r) -> absl::Status {
    auto comm = MakeComm(r, world, id, kLongTimeoutMs);
    if (!comm.ok()) return comm.status();
    std::vector<int64_t> zero(world, 0);
    if (absl::Status s = (*comm)->AllToAllV(nullptr, zero.data(), nullptr,
                                            zero.data(), DType::kFloat32);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = (*comm)->AllReduceSum(nullptr, 0, DType::kFloat64);
        !s.ok()) {
      return s;
    }
    // Only rank 0 -> rank world-1 carries data; everyone else sends nothing.
    std::vector<int64_t> send(world, 0), recv(world, 0);
    if (r == 0) send[world - 1] = 3;
    if (r == world - 1) recv[0] = 3;
    DeviceBuffer d_send(r == 0 ? 3 * sizeof(float) : 0);
    DeviceBuffer d_recv(r == world - 1 ? 3 * sizeof(float) : 0);
    const float values[3] = {1.5f, -2.0f, 7.25f};
    if (r == 0) d_send.Upload(values);
    if (absl::Status s =
            (*comm)->AllToAllV(d_send.get(), send.data(), d_recv.get(),
                               recv.data(), DType::kFloat32);
        !s.ok()) {
      return s;
    }
    if (r == world - 1) {
      float got[3] = {};
      d_recv.Download(got);
      for (int i = 0; i < 3; ++i) EXPECT_EQ(got[i], values[i]);
    }
    return absl::OkStatus();
  }));
}

// Element bits for small integers in every dtype (all exact).
std::vector<char> Encode(DType t, const std::vector<int64_t>& v) {
  std::vector<char> out(v.size() * DTypeSize(t));
  for (size_t i = 0; i < v.size(); ++i) {
    char* p = out.data() + i * DTypeSize(t);
    switch (t) {
      case DType::kFloat32: {
        const float f = static_cast<float>(v[i]);
        std::memcpy(p, &f, 4);
        break;
      }
      case DType::kFloat64: {
        const double d = static_cast<double>(v[i]);
        std::memcpy(p, &d, 8);
        break;
      }
      case DType::kBFloat16: {
        const float f = static_cast<float>(v[i]);
        uint32_t u;
        std::memcpy(&u, &f, 4);
        const uint16_t h = static_cast<uint16_t>(u >> 16);  // exact: small int
        std::memcpy(p, &h, 2);
        break;
      }
      case DType::kFloat16: {
        uint16_t h = 0;  // |v| < 2048
        const int64_t a = v[i] < 0 ? -v[i] : v[i];
        if (a != 0) {
          int e = 0;
          while ((a >> (e + 1)) != 0) ++e;
          h = static_cast<uint16_t>(((e + 15) << 10) |
                                    ((a << (10 - e)) & 0x3ff));
        }
        if (v[i] < 0) h |= 0x8000;
        std::memcpy(p, &h, 2);
        break;
      }
      case DType::kInt32: {
        const int32_t x = static_cast<int32_t>(v[i]);
        std::memcpy(p, &x, 4);
        break;
      }
      case DType::kInt64:
        std::memcpy(p, &v[i], 8);
        break;
    }
  }
  return out;
}

TEST_F(FakeNcclTest, AllReduceSumOfEveryDType) {
  for (int world : {2, 4}) {
    SCOPED_TRACE(absl::StrCat("world ", world));
    const NcclUniqueIdBytes id = NewId();
    ExpectAllOk(RunRanks(world, [&](int r) -> absl::Status {
      auto comm = MakeComm(r, world, id, kLongTimeoutMs);
      if (!comm.ok()) return comm.status();
      for (DType t : {DType::kFloat32, DType::kFloat64, DType::kBFloat16,
                      DType::kFloat16, DType::kInt32, DType::kInt64}) {
        SCOPED_TRACE(DTypeName(t));
        const int64_t n = 37;
        const int64_t big = t == DType::kInt64 ? (int64_t{1} << 40) : 0;
        std::vector<int64_t> mine(n), want(n, 0);
        for (int64_t i = 0; i < n; ++i) {
          mine[i] = (r + 1) * (i % 5) - 3 + big * r;
          for (int q = 0; q < world; ++q)
            want[i] += (q + 1) * (i % 5) - 3 + big * q;
        }
        DeviceBuffer buf(n * DTypeSize(t));
        buf.Upload(Encode(t, mine).data());
        if (absl::Status s = (*comm)->AllReduceSum(buf.get(), n, t); !s.ok()) {
          return s;
        }
        std::vector<char> got(n * DTypeSize(t));
        buf.Download(got.data());  // right after the call returned
        EXPECT_EQ(got, Encode(t, want)) << "rank " << r;
      }
      return absl::OkStatus();
    }));
  }
}

// Typed all-to-all-v: bfloat16 and int64 rows with values naming (src, dst, i).
TEST_F(FakeNcclTest, AllToAllVBFloat16AndInt64) {
  const int world = 4;
  const NcclUniqueIdBytes id = NewId();
  ExpectAllOk(RunRanks(world, [&](int r) -> absl::Status {
    auto comm = MakeComm(r, world, id, kLongTimeoutMs);
    if (!comm.ok()) return comm.status();
    for (DType t : {DType::kBFloat16, DType::kInt64}) {
      for (uint64_t seed = 1; seed <= 4; ++seed) {
        std::vector<int64_t> send_counts(world), recv_counts(world);
        std::vector<int64_t> send_vals, want_vals;
        auto value = [&](int src, int dst, int64_t i) -> int64_t {
          return t == DType::kInt64 ? src * 1000000000000LL + dst * 1000000 + i
                                    : src * 32 + dst * 8 + i;  // < 256: exact
        };
        for (int j = 0; j < world; ++j) {
          send_counts[j] = PayloadRows(seed, r, j, world);
          recv_counts[j] = PayloadRows(seed, j, r, world);
          for (int64_t i = 0; i < send_counts[j]; ++i) {
            send_vals.push_back(value(r, j, i));
          }
          for (int64_t i = 0; i < recv_counts[j]; ++i) {
            want_vals.push_back(value(j, r, i));
          }
        }
        const std::vector<char> send_bytes = Encode(t, send_vals);
        DeviceBuffer d_send(send_bytes.size());
        DeviceBuffer d_recv(want_vals.size() * DTypeSize(t));
        d_send.Upload(send_bytes.data());
        if (absl::Status s =
                (*comm)->AllToAllV(d_send.get(), send_counts.data(),
                                   d_recv.get(), recv_counts.data(), t);
            !s.ok()) {
          return s;
        }
        std::vector<char> got(want_vals.size() * DTypeSize(t));
        d_recv.Download(got.data());
        EXPECT_EQ(got, Encode(t, want_vals))
            << "rank " << r << " " << DTypeName(t) << " seed " << seed;
      }
    }
    return absl::OkStatus();
  }));
}

TEST_F(FakeNcclTest, BarrierReleasesNoRankBeforeTheLastArrives) {
  const int world = 4;
  std::vector<Clock::time_point> enter(world), leave(world);
  for (int round = 0; round < 3; ++round) {
    const NcclUniqueIdBytes id = NewId();
    ExpectAllOk(RunRanks(world, [&](int r) -> absl::Status {
      auto comm = MakeComm(r, world, id, kLongTimeoutMs);
      if (!comm.ok()) return comm.status();
      std::this_thread::sleep_for(Ms(15 * ((r + round) % world)));
      enter[r] = Clock::now();
      absl::Status s = (*comm)->Barrier();
      leave[r] = Clock::now();
      return s;
    }));
    Clock::time_point last_enter = enter[0], first_leave = leave[0];
    for (int r = 1; r < world; ++r) {
      last_enter = std::max(last_enter, enter[r]);
      first_leave = std::min(first_leave, leave[r]);
    }
    EXPECT_GE(first_leave, last_enter) << "round " << round;
  }
}

// ---- Review A2: AllReduceSum after a nonblocking (delayed) enqueue --------

TEST_F(FakeNcclTest, AllReduceSumWaitsForTheDelayedEnqueue) {
  const int world = 2;
  for (int r = 0; r < world; ++r) fake::SetEnqueueDelay(r, 30000);  // 30 ms
  const NcclUniqueIdBytes id = NewId();
  ExpectAllOk(RunRanks(world, [&](int r) -> absl::Status {
    auto comm = MakeComm(r, world, id, kLongTimeoutMs);
    if (!comm.ok()) return comm.status();
    for (int round = 0; round < 3; ++round) {
      const float mine[4] = {1.0f + r, 10.0f * (r + 1), -1.0f, 0.5f * round};
      DeviceBuffer buf(sizeof(mine));
      buf.Upload(mine);
      if (absl::Status s = (*comm)->AllReduceSum(buf.get(), 4, DType::kFloat32);
          !s.ok()) {
        return s;
      }
      float got[4] = {};
      buf.Download(got);
      const float want[4] = {3.0f, 30.0f, -2.0f, 1.0f * round};
      for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(got[i], want[i])
            << "rank " << r << " round " << round << " element " << i
            << ": read before the all-reduce ran";
      }
      if (absl::Status s = (*comm)->Barrier(); !s.ok()) return s;
    }
    return absl::OkStatus();
  }));
}

// ---- Timeouts and faults ---------------------------------------------------

// A one-shot latch: the absent rank keeps its communicator alive (it joined,
// then never calls the collective) until the present ranks are done.
class Latch {
 public:
  void Open() {
    std::lock_guard<std::mutex> l(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait_for(l, Ms(20000), [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

enum class Op { kCounts, kAllToAllV, kAllReduce, kBarrier };

const char* OpName(Op op) {
  switch (op) {
    case Op::kCounts:
      return "AllToAllCounts";
    case Op::kAllToAllV:
      return "AllToAllV";
    case Op::kAllReduce:
      return "AllReduceSum";
    case Op::kBarrier:
      return "Barrier";
  }
  return "?";
}

absl::Status RunOp(Communicator& comm, Op op) {
  const int w = comm.world_size();
  std::vector<int64_t> counts(w, 2), recv(w, 0);
  switch (op) {
    case Op::kCounts:
      return comm.AllToAllCounts(counts.data(), recv.data());
    case Op::kAllToAllV: {
      DeviceBuffer send(2 * w * sizeof(double)), out(2 * w * sizeof(double));
      return comm.AllToAllV(send.get(), counts.data(), out.get(), counts.data(),
                            DType::kFloat64);
    }
    case Op::kAllReduce: {
      DeviceBuffer buf(8 * sizeof(float));
      return comm.AllReduceSum(buf.get(), 8, DType::kFloat32);
    }
    case Op::kBarrier:
      return comm.Barrier();
  }
  return absl::OkStatus();
}

// Rank 1 joins and then never calls `op`: rank 0's call must end in
// DeadlineExceeded within op_timeout_ms (+ slack), not hang, and every later
// call must fail fast with Aborted. For AllToAllCounts this is review A8: the
// device->host copy of the counts into pageable memory would block the host
// in cudaMemcpyAsync forever, outside the watchdog.
void CheckAbsentPeer(Op op) {
  SCOPED_TRACE(OpName(op));
  const int world = 2;
  const NcclUniqueIdBytes id = NewId();
  Latch rank0_done;
  std::vector<absl::Status> st = RunRanks(world, [&](int r) -> absl::Status {
    auto comm = MakeComm(r, world, id, kShortTimeoutMs);
    if (!comm.ok()) {
      rank0_done.Open();
      return comm.status();
    }
    if (r == 1) {
      rank0_done.Wait();
      return absl::OkStatus();
    }
    const auto start = Clock::now();
    absl::Status s = RunOp(**comm, op);
    const int64_t took = MsSince(start);
    EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
    EXPECT_GE(took, kShortTimeoutMs);
    EXPECT_LT(took, kShortTimeoutMs + 3000) << "deadline overrun";
    for (Op later :
         {Op::kCounts, Op::kAllToAllV, Op::kAllReduce, Op::kBarrier}) {
      const auto t = Clock::now();
      EXPECT_EQ(RunOp(**comm, later).code(), absl::StatusCode::kAborted)
          << OpName(later) << " after the timeout";
      EXPECT_LT(MsSince(t), kShortTimeoutMs) << "not fail-fast";
    }
    rank0_done.Open();
    return absl::OkStatus();
  });
  ExpectAllOk(st);
  // No fake CUDA call held a host thread anywhere near the deadline.
  const fake::Stats stats = fake::GetStats();
  EXPECT_LT(stats.max_host_block_us, kShortTimeoutMs * 1000)
      << "host blocked in " << stats.max_host_block_call;
}

TEST_F(FakeNcclTest, AbsentPeerInAllToAllCountsTimesOutWithoutHostBlock) {
  CheckAbsentPeer(Op::kCounts);
}
TEST_F(FakeNcclTest, AbsentPeerInAllToAllVTimesOut) {
  CheckAbsentPeer(Op::kAllToAllV);
}
TEST_F(FakeNcclTest, AbsentPeerInAllReduceSumTimesOut) {
  CheckAbsentPeer(Op::kAllReduce);
}
TEST_F(FakeNcclTest, AbsentPeerInBarrierTimesOut) {
  CheckAbsentPeer(Op::kBarrier);
}

// The same with device->host copies into pageable memory fully asynchronous
// (CUDA allows that too): AllToAllCounts must still return the right counts,
// so it cannot rely on the copy being synchronous.
TEST_F(FakeNcclTest, AllToAllCountsCorrectWhenPageableCopiesAreAsync) {
  fake::Config c;
  c.pageable_d2h_synchronous = false;
  Reset(c);
  const int world = 4;
  const NcclUniqueIdBytes id = NewId();
  ExpectAllOk(RunRanks(world, [&](int r) -> absl::Status {
    auto comm = MakeComm(r, world, id, kLongTimeoutMs);
    if (!comm.ok()) return comm.status();
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      PayloadCheck check;
      if (absl::Status s = RunPayloadAllToAll(**comm, 3, seed, &check);
          !s.ok()) {
        return s;
      }
      EXPECT_EQ(check.wrong, 0);
    }
    return absl::OkStatus();
  }));
}

TEST_F(FakeNcclTest, InitWithAMissingRankTimesOut) {
  const NcclUniqueIdBytes id = NewId();
  std::vector<absl::Status> st = RunRanks(1, [&](int) -> absl::Status {
    const auto start = Clock::now();
    auto comm = MakeComm(0, 2, id, kShortTimeoutMs);  // rank 1 never joins
    EXPECT_LT(MsSince(start), kShortTimeoutMs + 3000);
    return comm.status();
  });
  EXPECT_EQ(st[0].code(), absl::StatusCode::kDeadlineExceeded) << st[0];
}

TEST_F(FakeNcclTest, BadRankIsInvalidArgument) {
  NcclUniqueIdBytes id{};
  EXPECT_EQ(MakeComm(2, 2, id, kShortTimeoutMs).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Rank 1's GPU stops making progress at its 3rd launch (its sends never
// happen): both ranks time out, neither hangs, later calls are Aborted.
TEST_F(FakeNcclTest, HungPeerGpuTimesOutEveryRank) {
  const int world = 2;
  fake::HangRank(1, 2);
  const NcclUniqueIdBytes id = NewId();
  std::vector<absl::Status> st = RunRanks(world, [&](int r) -> absl::Status {
    auto comm = MakeComm(r, world, id, kShortTimeoutMs);
    if (!comm.ok()) return comm.status();
    absl::Status s;
    const auto start = Clock::now();
    for (uint64_t seed = 1; seed <= 4 && s.ok(); ++seed) {
      PayloadCheck check;
      s = RunPayloadAllToAll(**comm, 2, seed, &check);  // 2 launches each
    }
    EXPECT_LT(MsSince(start), kShortTimeoutMs + 3000);
    EXPECT_EQ(RunOp(**comm, Op::kBarrier).code(), absl::StatusCode::kAborted);
    return s;
  });
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(st[r].code(), absl::StatusCode::kDeadlineExceeded)
        << "rank " << r << ": " << st[r];
  }
}

// An async NCCL error (e.g. a NIC failure) on rank 1 at its 2nd launch,
// reported to the peer as ncclRemoteError: both ranks fail fast with Internal
// (long before the 20 s deadline) and are Aborted afterwards.
TEST_F(FakeNcclTest, InjectedAsyncErrorFailsFast) {
  const int world = 2;
  fake::InjectAsyncError(1, 1, ncclSystemError, true);
  const NcclUniqueIdBytes id = NewId();
  std::vector<absl::Status> st = RunRanks(world, [&](int r) -> absl::Status {
    auto comm = MakeComm(r, world, id, kLongTimeoutMs);
    if (!comm.ok()) return comm.status();
    const auto start = Clock::now();
    absl::Status s;
    for (int i = 0; i < 4 && s.ok(); ++i) s = RunOp(**comm, Op::kAllReduce);
    EXPECT_LT(MsSince(start), 3000) << "waited for the deadline";
    EXPECT_EQ(RunOp(**comm, Op::kCounts).code(), absl::StatusCode::kAborted);
    return s;
  });
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(st[r].code(), absl::StatusCode::kInternal)
        << "rank " << r << ": " << st[r];
    EXPECT_NE(st[r].message().find("NCCL error"), std::string::npos) << st[r];
  }
}

// The same error not propagated: rank 1 fails fast, rank 0 (whose peer now
// never sends) times out.
TEST_F(FakeNcclTest, InjectedAsyncErrorOnOneRankOnly) {
  const int world = 2;
  fake::InjectAsyncError(1, 0, ncclUnhandledCudaError, false);
  const NcclUniqueIdBytes id = NewId();
  std::vector<absl::Status> st = RunRanks(world, [&](int r) -> absl::Status {
    auto comm = MakeComm(r, world, id, kShortTimeoutMs);
    if (!comm.ok()) return comm.status();
    return RunOp(**comm, Op::kAllToAllV);
  });
  EXPECT_EQ(st[1].code(), absl::StatusCode::kInternal) << st[1];
  EXPECT_EQ(st[0].code(), absl::StatusCode::kDeadlineExceeded) << st[0];
}

// ---- Review A13: the per-call stream ---------------------------------------

// Each rank's input is produced on its own non-blocking stream by a slow
// "kernel" (50 ms) followed by a copy. With current_stream returning that
// stream the all-to-all is ordered after the producer; on the legacy stream
// it would read the buffer before it was written. The stream is asked for on
// every call: the calls alternate between two streams.
TEST_F(FakeNcclTest, CurrentStreamIsUsedOnEveryCall) {
  const int world = 2;
  const NcclUniqueIdBytes id = NewId();
  ExpectAllOk(RunRanks(world, [&](int r) -> absl::Status {
    if (cudaSetDevice(r) != cudaSuccess) return absl::InternalError("device");
    cudaStream_t streams[2] = {nullptr, nullptr};
    for (cudaStream_t& s : streams) {
      EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                cudaSuccess);
    }
    int calls = 0;
    cudaStream_t current = streams[0];
    absl::Status status;
    {
      auto comm = MakeComm(r, world, id, kLongTimeoutMs, [&]() -> void* {
        ++calls;
        return current;
      });
      if (!comm.ok()) return comm.status();
      const int64_t n = 64;
      std::vector<int64_t> counts(world, n);
      for (int round = 0; round < 4 && status.ok(); ++round) {
        current = streams[round % 2];
        std::vector<double> host(n * world);
        for (size_t i = 0; i < host.size(); ++i) {
          host[i] = PayloadValue(r, static_cast<int>(i / n), round, i % n);
        }
        DeviceBuffer send(host.size() * sizeof(double));
        DeviceBuffer recv(host.size() * sizeof(double));
        fake::EnqueueSleep(current, 50);
        EXPECT_EQ(cudaMemcpyAsync(send.get(), host.data(),
                                  host.size() * sizeof(double),
                                  cudaMemcpyHostToDevice, current),
                  cudaSuccess);
        status = (*comm)->AllToAllV(send.get(), counts.data(), recv.get(),
                                    counts.data(), DType::kFloat64);
        std::vector<double> got(host.size());
        EXPECT_EQ(cudaStreamSynchronize(current), cudaSuccess);
        recv.Download(got.data());
        int64_t wrong = 0;
        for (size_t i = 0; i < got.size(); ++i) {
          const int src = static_cast<int>(i / n);
          wrong += got[i] != PayloadValue(src, r, round, i % n);
        }
        EXPECT_EQ(wrong, 0) << "rank " << r << " round " << round
                            << ": the all-to-all ran before its producer";
      }
      EXPECT_GE(calls, 4) << "current_stream not asked for on every call";
      EXPECT_GT(fake::NcclKernelsOnStream(streams[0]), 0);
      EXPECT_GT(fake::NcclKernelsOnStream(streams[1]), 0);
      EXPECT_EQ(fake::NcclKernelsOnStream(nullptr), 0)
          << "NCCL work went to the legacy default stream";
    }
    for (cudaStream_t s : streams) cudaStreamDestroy(s);
    return status;
  }));
}

// ---- The fake itself is adversarial ----------------------------------------

// A nonblocking all-reduce returns ncclInProgress with NOTHING on the stream:
// cudaStreamQuery says idle while the result is not there yet.
TEST_F(FakeNcclTest, FakeEnqueuesNonblockingWorkLater) {
  const int world = 2;
  for (int r = 0; r < world; ++r) fake::SetEnqueueDelay(r, 50000);
  ncclUniqueId uid;
  ASSERT_EQ(ncclGetUniqueId(&uid), ncclSuccess);
  ExpectAllOk(RunRanks(world, [&](int r) -> absl::Status {
    cudaSetDevice(r);
    ncclComm_t comm = nullptr;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    EXPECT_EQ(ncclCommInitRankConfig(&comm, world, uid, r, &config),
              ncclInProgress);
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress) {
      EXPECT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
    }
    EXPECT_EQ(state, ncclSuccess);
    float* d = nullptr;
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), sizeof(float)),
              cudaSuccess);
    const float one = 1.0f;
    EXPECT_EQ(cudaMemcpy(d, &one, sizeof(one), cudaMemcpyHostToDevice),
              cudaSuccess);
    EXPECT_EQ(ncclAllReduce(d, d, 1, ncclFloat32, ncclSum, comm, nullptr),
              ncclInProgress);
    EXPECT_EQ(cudaStreamQuery(nullptr), cudaSuccess) << "enqueued too early";
    EXPECT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
    EXPECT_EQ(state, ncclInProgress);
    float early = 0;
    EXPECT_EQ(cudaMemcpy(&early, d, sizeof(early), cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(early, 1.0f) << "a caller that does not wait sees stale data";
    while (state == ncclInProgress) ncclCommGetAsyncError(comm, &state);
    EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
    float late = 0;
    EXPECT_EQ(cudaMemcpy(&late, d, sizeof(late), cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(late, 2.0f);
    EXPECT_EQ(ncclCommFinalize(comm), ncclInProgress);
    do {
      ncclCommGetAsyncError(comm, &state);
    } while (state == ncclInProgress);
    EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
    cudaFree(d);
    return absl::OkStatus();
  }));
}

// Streams are asynchronous and a non-blocking stream is not ordered with the
// legacy stream; a device->host copy into pageable memory blocks the host.
TEST_F(FakeNcclTest, FakeStreamsAreAsynchronous) {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  DeviceBuffer d(sizeof(int64_t));
  const int64_t v = 42;
  fake::EnqueueSleep(s, 50);
  ASSERT_EQ(cudaMemcpyAsync(d.get(), &v, sizeof(v), cudaMemcpyHostToDevice, s),
            cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  int64_t stale = 0;
  d.Download(&stale);  // legacy stream: not ordered after `s`
  EXPECT_NE(stale, v);
  int64_t got = 0;
  fake::EnqueueSleep(s, 50);
  const auto start = Clock::now();
  ASSERT_EQ(
      cudaMemcpyAsync(&got, d.get(), sizeof(got), cudaMemcpyDeviceToHost, s),
      cudaSuccess);
  EXPECT_GE(MsSince(start), 40) << "pageable D2H should block the host";
  EXPECT_EQ(got, v);
  int64_t* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), sizeof(int64_t)),
            cudaSuccess);
  *pinned = 0;
  fake::EnqueueSleep(s, 50);
  ASSERT_EQ(
      cudaMemcpyAsync(pinned, d.get(), sizeof(v), cudaMemcpyDeviceToHost, s),
      cudaSuccess);
  EXPECT_EQ(*pinned, 0) << "pinned D2H should be asynchronous";
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(*pinned, v);
  cudaFreeHost(pinned);
  cudaStreamDestroy(s);
}

// Misuse is recorded: an NCCL call while the previous nonblocking one is in
// progress, and a kernel writing freed memory.
TEST_F(FakeNcclTest, FakeReportsMisuse) {
  fake::SetEnqueueDelay(0, 30000);
  ncclUniqueId uid;
  ASSERT_EQ(ncclGetUniqueId(&uid), ncclSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ncclComm_t comm = nullptr;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ASSERT_EQ(ncclCommInitRankConfig(&comm, 1, uid, 0, &config), ncclInProgress);
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) ncclCommGetAsyncError(comm, &state);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 16), cudaSuccess);
  EXPECT_EQ(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, comm, nullptr),
            ncclInProgress);
  EXPECT_EQ(ncclAllReduce(d, d, 4, ncclFloat32, ncclSum, comm, nullptr),
            ncclInvalidUsage);
  cudaFree(d);  // before the delayed enqueue: the kernel touches freed memory
  while (state == ncclInProgress || state == ncclSuccess) {
    ncclCommGetAsyncError(comm, &state);
    if (state == ncclSuccess) break;
  }
  cudaStreamSynchronize(nullptr);
  ncclCommAbort(comm);
  const std::vector<std::string> v = fake::Violations();
  ASSERT_GE(v.size(), 2u) << absl::StrJoin(v, "\n");
  EXPECT_NE(v[0].find("still in progress"), std::string::npos) << v[0];
  EXPECT_NE(v[1].find("freed device memory"), std::string::npos) << v[1];
  Reset({});  // clears the violations (and the sticky error)
}

}  // namespace
}  // namespace smoe::kernels
