// Copyright 2026 SMoE Lab authors.
#include "kernels/all_to_all/nccl_communicator.h"

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

#if defined(SMOE_WITH_NCCL)
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

namespace smoe::kernels {

#if defined(SMOE_WITH_NCCL)
namespace {

// Sleep between watchdog polls: short next to any real collective.
constexpr auto kNcclPollInterval = std::chrono::microseconds(50);

absl::Status CudaError(cudaError_t e, const std::string& what) {
  return absl::InternalError(
      absl::StrCat(what, ": CUDA error ", static_cast<int>(e), " ",
                   cudaGetErrorName(e), ": ", cudaGetErrorString(e)));
}

absl::Status NcclError(ncclResult_t r, const std::string& what) {
  return absl::InternalError(absl::StrCat(
      what, ": NCCL error ", static_cast<int>(r), ": ", ncclGetErrorString(r)));
}

// Every DType has its case (-Wswitch); kFloat32's is the function's one
// exit after the switch, so no line is unreachable.
ncclDataType_t ToNccl(DType t) {
  switch (t) {
    case DType::kFloat32:
      break;
    case DType::kFloat64:
      return ncclFloat64;
    case DType::kBFloat16:
      return ncclBfloat16;
    case DType::kFloat16:
      return ncclFloat16;
    case DType::kInt32:
      return ncclInt32;
    case DType::kInt64:
      return ncclInt64;
  }
  return ncclFloat32;
}

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(int rank, int world, const NcclCommunicatorOptions& options)
      : rank_(rank), world_(world), options_(options) {}

  ~NcclCommunicator() override {
    if (scratch_ != nullptr) cudaFree(scratch_);
    if (host_counts_ != nullptr) cudaFreeHost(host_counts_);
    if (comm_ == nullptr) return;
    if (aborted_) return;
    // Finalize (flushes outstanding work) within the deadline, else abort.
    const ncclResult_t r = ncclCommFinalize(comm_);
    if (r == ncclSuccess || r == ncclInProgress) {
      if (WaitComm("ncclCommFinalize").ok()) {
        ncclCommDestroy(comm_);
        return;
      }
      return;  // WaitComm aborted it
    }
    ncclCommAbort(comm_);
  }

  absl::Status Init(const NcclUniqueIdBytes& id) {
    cudaError_t ce = cudaSetDevice(options_.device);
    if (ce != cudaSuccess) return CudaError(ce, "cudaSetDevice");
    ce = cudaMalloc(&scratch_,
                    static_cast<size_t>(2 * world_ + 1) * sizeof(int64_t));
    if (ce != cudaSuccess) return CudaError(ce, "cudaMalloc");
    // Pinned, so the count copies are truly asynchronous (see
    // AllToAllCounts).
    ce = cudaMallocHost(reinterpret_cast<void**>(&host_counts_),
                        static_cast<size_t>(2 * world_) * sizeof(int64_t));
    if (ce != cudaSuccess) return CudaError(ce, "cudaMallocHost");
    ncclUniqueId uid;
    static_assert(sizeof(uid.internal) == kNcclUniqueIdBytes,
                  "ncclUniqueId size changed");
    std::memcpy(uid.internal, id.data(), kNcclUniqueIdBytes);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const ncclResult_t r =
        ncclCommInitRankConfig(&comm_, world_, uid, rank_, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      if (comm_ != nullptr) ncclCommAbort(comm_);
      comm_ = nullptr;
      return NcclError(r, "ncclCommInitRankConfig");
    }
    return WaitComm("ncclCommInitRankConfig");
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  MemorySpace memory_space() const override { return MemorySpace::kCudaDevice; }
  std::string name() const override { return "nccl"; }

  absl::Status AllToAllCounts(const int64_t* send_counts,
                              int64_t* recv_counts) override {
    if (absl::Status s = Usable(); !s.ok()) return s;
    if (absl::Status s =
            ValidateAllToAllCountsArgs(world_, send_counts, recv_counts);
        !s.ok()) {
      return s;
    }
    const cudaStream_t stream = Stream();
    int64_t* d_send = static_cast<int64_t*>(scratch_);
    int64_t* d_recv = d_send + world_;
    int64_t* h_send = host_counts_;
    int64_t* h_recv = host_counts_ + world_;
    const size_t bytes = static_cast<size_t>(world_) * sizeof(int64_t);
    // Both copies go through pinned memory: a device->host copy into the
    // caller's pageable array would be synchronous, blocking the host inside
    // cudaMemcpyAsync until the send/recv kernel finished, i.e. forever if a
    // peer never arrives, with no deadline and no abort (review A8).
    std::memcpy(h_send, send_counts, bytes);
    cudaError_t ce =
        cudaMemcpyAsync(d_send, h_send, bytes, cudaMemcpyHostToDevice, stream);
    // A failed copy leaves the peers waiting in this collective: abort, so
    // every later call fails fast (communicator.h).
    if (ce != cudaSuccess) {
      return Fail(CudaError(ce, "AllToAllCounts: cudaMemcpyAsync (to device)"));
    }
    std::vector<int64_t> ones(world_, 1);
    if (absl::Status s = GroupedSendRecv(d_send, ones.data(), d_recv,
                                         ones.data(), DType::kInt64, stream);
        !s.ok()) {
      return s;
    }
    ce = cudaMemcpyAsync(h_recv, d_recv, bytes, cudaMemcpyDeviceToHost, stream);
    if (ce != cudaSuccess) {
      return Fail(CudaError(ce, "AllToAllCounts: cudaMemcpyAsync (to host)"));
    }
    if (absl::Status s = WaitStream("AllToAllCounts", stream); !s.ok()) {
      return s;
    }
    std::memcpy(recv_counts, h_recv, bytes);
    return absl::OkStatus();
  }

  absl::Status AllToAllV(const void* send, const int64_t* send_counts,
                         void* recv, const int64_t* recv_counts,
                         DType dtype) override {
    if (absl::Status s = Usable(); !s.ok()) return s;
    if (absl::Status s =
            ValidateAllToAllVArgs(world_, send, send_counts, recv, recv_counts);
        !s.ok()) {
      return s;
    }
    const cudaStream_t stream = Stream();
    if (absl::Status s = GroupedSendRecv(send, send_counts, recv, recv_counts,
                                         dtype, stream);
        !s.ok()) {
      return s;
    }
    return WaitStream("AllToAllV", stream);
  }

  absl::Status AllReduceSum(void* buffer, int64_t count, DType dtype) override {
    if (absl::Status s = Usable(); !s.ok()) return s;
    if (count < 0 || (count > 0 && buffer == nullptr)) {
      return absl::InvalidArgumentError(
          absl::StrCat("AllReduceSum: count=", count));
    }
    if (count == 0) return absl::OkStatus();
    const cudaStream_t stream = Stream();
    const ncclResult_t r =
        ncclAllReduce(buffer, buffer, static_cast<size_t>(count), ToNccl(dtype),
                      ncclSum, comm_, stream);
    if (r != ncclSuccess && r != ncclInProgress) {
      return Fail(NcclError(r, "ncclAllReduce"));
    }
    // Nonblocking comm: ncclInProgress means NOT YET ENQUEUED; the stream may
    // look idle until NCCL's background thread has put the kernel on it
    // (review A2).
    if (absl::Status s = WaitComm("ncclAllReduce"); !s.ok()) return s;
    return WaitStream("AllReduceSum", stream);
  }

  absl::Status Barrier() override {
    if (absl::Status s = Usable(); !s.ok()) return s;
    int64_t* flag = static_cast<int64_t*>(scratch_) + 2 * world_;
    return AllReduceSum(flag, 1, DType::kInt64);
  }

 private:
  // The stream for this call (see NcclCommunicatorOptions::current_stream).
  cudaStream_t Stream() const {
    return static_cast<cudaStream_t>(
        options_.current_stream ? options_.current_stream() : options_.stream);
  }

  absl::Status Usable() const {
    if (aborted_) {
      return absl::AbortedError(
          absl::StrCat("NCCL communicator was aborted: ", abort_reason_));
    }
    return absl::OkStatus();
  }

  absl::Status Fail(absl::Status s) {
    if (!aborted_ && comm_ != nullptr) ncclCommAbort(comm_);
    aborted_ = true;
    abort_reason_ = std::string(s.message());
    return s;
  }

  absl::Status GroupedSendRecv(const void* send, const int64_t* send_counts,
                               void* recv, const int64_t* recv_counts,
                               DType dtype, cudaStream_t stream) {
    const size_t es = DTypeSize(dtype);
    const ncclDataType_t t = ToNccl(dtype);
    ncclResult_t r = ncclGroupStart();
    if (r != ncclSuccess) return Fail(NcclError(r, "ncclGroupStart"));
    size_t send_off = 0, recv_off = 0;
    bool send_failed = false;  // which call failed, for the message
    for (int j = 0; j < world_ && r == ncclSuccess; ++j) {
      if (send_counts[j] > 0) {
        r = ncclSend(static_cast<const char*>(send) + send_off * es,
                     static_cast<size_t>(send_counts[j]), t, j, comm_, stream);
        send_failed = r != ncclSuccess;
      }
      if (r == ncclSuccess && recv_counts[j] > 0) {
        r = ncclRecv(static_cast<char*>(recv) + recv_off * es,
                     static_cast<size_t>(recv_counts[j]), t, j, comm_, stream);
      }
      send_off += static_cast<size_t>(send_counts[j]);
      recv_off += static_cast<size_t>(recv_counts[j]);
    }
    const ncclResult_t end = ncclGroupEnd();
    if (r != ncclSuccess) {
      return Fail(NcclError(r, send_failed ? "ncclSend" : "ncclRecv"));
    }
    if (end != ncclSuccess && end != ncclInProgress) {
      return Fail(NcclError(end, "ncclGroupEnd"));
    }
    return WaitComm("ncclGroupEnd");
  }

  // Polls the communicator until no operation is in progress.
  absl::Status WaitComm(const char* what) {
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::milliseconds(options_.common.op_timeout_ms);
    while (true) {
      ncclResult_t state = ncclSuccess;
      const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
      if (r != ncclSuccess) {
        return Fail(
            NcclError(r, absl::StrCat(what, ": ncclCommGetAsyncError")));
      }
      if (state == ncclSuccess) return absl::OkStatus();
      if (state != ncclInProgress) return Fail(NcclError(state, what));
      if (std::chrono::steady_clock::now() > deadline) {
        return Fail(absl::DeadlineExceededError(
            absl::StrCat(what, ": rank ", rank_, " exceeded ",
                         options_.common.op_timeout_ms, " ms; aborted")));
      }
      std::this_thread::sleep_for(kNcclPollInterval);
    }
  }

  // The watchdog: waits for `stream` while polling NCCL's async error.
  absl::Status WaitStream(const char* what, cudaStream_t stream) {
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::milliseconds(options_.common.op_timeout_ms);
    while (true) {
      const cudaError_t q = cudaStreamQuery(stream);
      if (q == cudaSuccess) return absl::OkStatus();
      if (q != cudaErrorNotReady) {
        return Fail(CudaError(q, absl::StrCat(what, ": cudaStreamQuery")));
      }
      ncclResult_t state = ncclSuccess;
      const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
      if (r != ncclSuccess) {
        return Fail(
            NcclError(r, absl::StrCat(what, ": ncclCommGetAsyncError")));
      }
      if (state != ncclSuccess && state != ncclInProgress) {
        return Fail(NcclError(state, what));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        return Fail(absl::DeadlineExceededError(
            absl::StrCat(what, ": rank ", rank_, " exceeded ",
                         options_.common.op_timeout_ms, " ms; aborted")));
      }
      std::this_thread::sleep_for(kNcclPollInterval);
    }
  }

  const int rank_, world_;
  const NcclCommunicatorOptions options_;
  ncclComm_t comm_ = nullptr;
  void* scratch_ = nullptr;  // [2W + 1] int64: counts and the barrier flag
  int64_t* host_counts_ = nullptr;  // pinned [2W]: counts sent, received
  bool aborted_ = false;
  std::string abort_reason_;
};

}  // namespace

bool BuiltWithNccl() { return true; }

absl::StatusOr<NcclUniqueIdBytes> NewNcclUniqueId() {
  ncclUniqueId uid;
  const ncclResult_t r = ncclGetUniqueId(&uid);
  if (r != ncclSuccess) return NcclError(r, "ncclGetUniqueId");
  NcclUniqueIdBytes out;
  std::memcpy(out.data(), uid.internal, kNcclUniqueIdBytes);
  return out;
}

absl::StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(
    int rank, int world_size, const NcclUniqueIdBytes& id,
    const NcclCommunicatorOptions& options) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CreateNcclCommunicator: rank=", rank, " world_size=", world_size));
  }
  auto comm = std::make_unique<NcclCommunicator>(rank, world_size, options);
  if (absl::Status s = comm->Init(id); !s.ok()) return s;
  return std::unique_ptr<Communicator>(std::move(comm));
}

#else  // !SMOE_WITH_NCCL

bool BuiltWithNccl() { return false; }

absl::StatusOr<NcclUniqueIdBytes> NewNcclUniqueId() {
  return absl::UnimplementedError("this build has no NCCL");
}

absl::StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(
    int, int, const NcclUniqueIdBytes&, const NcclCommunicatorOptions&) {
  return absl::UnimplementedError("this build has no NCCL");
}

#endif  // SMOE_WITH_NCCL

}  // namespace smoe::kernels
