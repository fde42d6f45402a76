// Copyright 2026 SMoE Lab authors.
//
// File: kernels/all_to_all/communicator.h
//
// The collective-communication interface that expert parallelism talks to
// (docs/kernels.md 5). It moves raw buffers: no LibTorch, no CUDA types. Three
// implementations:
//   * LocalCommunicator (local_communicator.h): W ranks simulated by W threads
//     of one process; host memory; for unit tests, runs everywhere.
//   * NcclCommunicator (nccl_communicator.h): one GPU per process; device
//     memory; compiled only with CUDA.
//   * GlooCommunicator (worker/model/gloo_communicator.h): one CPU process per
//     rank over LibTorch's c10d ProcessGroupGloo; host memory.
//
// Semantics (all ranks must call the same collectives in the same order, as
// with MPI/NCCL):
//   * Counts are in ELEMENTS of `dtype`, one per peer, in rank order.
//   * AllToAllV: rank i's send buffer holds, back to back in rank order, the
//     send_counts[j] elements destined for rank j. Its recv buffer receives,
//     back to back in rank order, recv_counts[j] elements from rank j.
//     recv_counts[j] must equal rank j's send_counts[i]; exchange the counts
//     first with AllToAllCounts (the "counts exchanged first" step of
//     MegaBlocks / Megatron, docs/kernels.md 5).
//   * Zero counts are legal everywhere; a null buffer is legal when its total
//     count is zero.
//
// Deadlines (docs/kernels.md 5): every call is bounded by the
// `op_timeout_ms` the communicator was created with. A call that cannot
// complete in time returns DeadlineExceeded (or Aborted/Unavailable when a
// peer failed) instead of hanging; after such an error the communicator is
// unusable and every later call fails fast.
//
// Thread-safety: a Communicator object belongs to one rank and must be used by
// one thread at a time. Different objects (ranks) may be used concurrently.
#ifndef SMOE_KERNELS_ALL_TO_ALL_COMMUNICATOR_H_
#define SMOE_KERNELS_ALL_TO_ALL_COMMUNICATOR_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "kernels/common/dtype.h"

namespace smoe::kernels {

// Element types a Communicator can move: every DType (kernels/common/dtype.h;
// sizes and names there). Reductions support the float and integer types
// except kBFloat16/kFloat16 on host communicators.

// Where a communicator's buffers live.
enum class MemorySpace { kHost, kCudaDevice };

// Default bound on one collective call. Generous: a collective waits for the
// slowest rank's compute between calls, and the daemon's own lease/heartbeat
// machinery catches stuck trials well before this.
inline constexpr int64_t kDefaultCommOpTimeoutMs = 5 * 60 * 1000;

struct CommunicatorOptions {
  // Bound on every collective call (and on initialisation / rendezvous).
  int64_t op_timeout_ms = kDefaultCommOpTimeoutMs;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // This process's (or thread's) rank in [0, world_size()).
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Where the buffers passed to the collectives must live.
  virtual MemorySpace memory_space() const = 0;
  // "local", "nccl" or "gloo" (for logs).
  virtual std::string name() const = 0;

  // Exchanges one count per peer: on return recv_counts[j] is rank j's
  // send_counts[rank()]. Both arrays are HOST arrays of world_size() entries,
  // whatever memory_space() is.
  // REQUIRES: send_counts[j] >= 0 (else InvalidArgument naming the entry).
  virtual absl::Status AllToAllCounts(const int64_t* send_counts,
                                      int64_t* recv_counts) = 0;

  // Variable all-to-all (see the file comment). `send` and `recv` are in
  // memory_space(); the count arrays are host arrays of world_size() entries.
  // On error the contents of `recv` are unspecified.
  // REQUIRES: counts >= 0; send/recv non-null when their total is > 0; send
  // and recv do not overlap.
  virtual absl::Status AllToAllV(const void* send, const int64_t* send_counts,
                                 void* recv, const int64_t* recv_counts,
                                 DType dtype) = 0;

  // In-place sum over ranks of `count` elements at `buffer` (memory_space()).
  // Every rank must pass the same count and dtype.
  virtual absl::Status AllReduceSum(void* buffer, int64_t count,
                                    DType dtype) = 0;

  // Returns once every rank has entered Barrier() (or the deadline passed).
  virtual absl::Status Barrier() = 0;

 protected:
  Communicator() = default;
};

// Checks the arguments of an AllToAllV call on a communicator of
// `world_size` ranks: non-negative counts, non-null buffers when the totals are
// positive. Returns InvalidArgument naming the offending field and value.
absl::Status ValidateAllToAllVArgs(int world_size, const void* send,
                                   const int64_t* send_counts, const void* recv,
                                   const int64_t* recv_counts);

// Checks the arguments of an AllToAllCounts call on a communicator of
// `world_size` ranks: non-null arrays, non-negative send counts. Returns
// InvalidArgument naming the offending field and value.
absl::Status ValidateAllToAllCountsArgs(int world_size,
                                        const int64_t* send_counts,
                                        const int64_t* recv_counts);

// Returns sum(counts[0..n)).
int64_t TotalCount(const int64_t* counts, int n);

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_ALL_TO_ALL_COMMUNICATOR_H_
