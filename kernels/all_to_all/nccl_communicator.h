// Copyright 2026 SMoE Lab authors.
//
// File: kernels/all_to_all/nccl_communicator.h
//
// NcclCommunicator: the Communicator for one GPU per process, over NCCL
// (compiled only when CUDA is enabled; this header has no CUDA or NCCL types so
// LibTorch-side code can include it).
//
// Design (docs/kernels.md 5):
//  * The communicator is created NONBLOCKING (ncclConfig_t.blocking = 0), so
//    no NCCL call can hang the host: init, grouped send/recv and finalize all
//    return at once, and completion is polled.
//  * AllToAllV is the baseline grouped ncclSend/ncclRecv between
//    ncclGroupStart/ncclGroupEnd, one pair per peer with a non-zero count;
//    AllToAllCounts runs the same exchange on one int64 per peer through a
//    small device buffer (the host needs the counts to size the receive
//    buffer: this is the per-layer host sync MegaBlocks also has).
//  * Every call blocks the host until the work is done on `stream`. The wait
//    loop is the watchdog: it polls ncclCommGetAsyncError and cudaStreamQuery,
//    and once op_timeout_ms has passed (or NCCL reports an async error) it
//    calls ncclCommAbort and returns DeadlineExceeded (resp. Internal). An
//    aborted communicator fails every later call with Aborted.
//  * A nonblocking NCCL call may return ncclInProgress BEFORE it has put
//    anything on the stream (a background thread enqueues later), so every
//    call first polls the communicator (WaitComm) and only then the stream;
//    a stream that looks idle before that proves nothing.
//  * AllToAllCounts never blocks the host outside the watchdog: the counts
//    come back through pinned host memory (a device->host copy into pageable
//    memory would block inside cudaMemcpyAsync until the send/recv kernel
//    finished, i.e. forever when a peer died).
//  * Ordering with LibTorch: work is enqueued on
//    NcclCommunicatorOptions::current_stream() when set (asked for on every
//    call: the caller's current stream), else on `stream` (default: the
//    legacy default stream), so it is ordered after the kernels that
//    produced the send buffer on that stream.
//
// NCCL cannot run several ranks on one GPU ("using the same CUDA device
// multiple times as different ranks of the same NCCL communicator is not
// supported"), so multi-rank use needs one GPU per rank. The unique id is
// exchanged by the caller (rank 0 calls NewNcclUniqueId and distributes the
// bytes, e.g. through the c10d store in worker/model).
//
// Thread-safety: one thread at a time per communicator.
#ifndef SMOE_KERNELS_ALL_TO_ALL_NCCL_COMMUNICATOR_H_
#define SMOE_KERNELS_ALL_TO_ALL_NCCL_COMMUNICATOR_H_

#include <array>
#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "kernels/all_to_all/communicator.h"

namespace smoe::kernels {

// The 128 bytes of an ncclUniqueId.
inline constexpr int kNcclUniqueIdBytes = 128;
using NcclUniqueIdBytes = std::array<char, kNcclUniqueIdBytes>;

// Returns true when this build has NCCL (SMOE_WITH_CUDA and libnccl found).
bool BuiltWithNccl();

// Returns a fresh unique id (call on one rank, send it to the others).
// Unimplemented in builds without NCCL; Internal with NCCL's message on error.
absl::StatusOr<NcclUniqueIdBytes> NewNcclUniqueId();

struct NcclCommunicatorOptions {
  CommunicatorOptions common;
  int device = 0;  // CUDA device ordinal of this rank
  // The stream each call enqueues its work on, asked for at the start of
  // EVERY call (on the calling thread) when set; returns a cudaStream_t. Set
  // it to the caller's current stream so each collective is ordered after the
  // kernels that produced its input and before those that read its output,
  // whatever stream guard is active, e.g. with CUDA LibTorch:
  //   o.current_stream = [device] {
  //     return static_cast<void*>(
  //         c10::cuda::getCurrentCUDAStream(device).stream());
  //   };
  // (kernels/ stays free of LibTorch: the caller, CreateNcclCommunicator in
  // worker/model/gloo_communicator.cc, sets it.) Unset: `stream`.
  std::function<void*()> current_stream;
  // The fixed cudaStream_t used when current_stream is unset; nullptr = the
  // legacy default stream (LibTorch's default current stream, but not the
  // current one under a stream guard).
  void* stream = nullptr;
};

// Joins the `world_size`-rank communicator identified by `id` as `rank`.
// Blocks until every rank has joined or op_timeout_ms passed
// (DeadlineExceeded; the half-built communicator is aborted).
// REQUIRES: 0 <= rank < world_size; the same id on every rank.
absl::StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(
    int rank, int world_size, const NcclUniqueIdBytes& id,
    const NcclCommunicatorOptions& options);

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_ALL_TO_ALL_NCCL_COMMUNICATOR_H_
