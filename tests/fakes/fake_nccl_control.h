// Copyright 2026 SMoE Lab authors.
//
// File: tests/fakes/fake_nccl_control.h
//
// Test-only control of the fake CUDA runtime + NCCL in
// tests/fakes/fake_nccl_cuda.cc (headers: tests/fakes/include/). The fake
// exists so kernels/all_to_all/nccl_communicator.cc, unchanged, runs at
// world 2 and 4 on a machine without a GPU, under adversarial timing:
//
//  * Device memory is host memory. cudaMalloc'ed memory is filled with a
//    poison pattern; cudaFree'd memory is poisoned and quarantined, and a
//    stream operation that touches it records a violation and a sticky
//    cudaErrorIllegalAddress.
//  * Each stream is a FIFO run by its own thread, with a random delay before
//    every operation, so a caller that forgets to wait reads stale data.
//    The legacy default stream (nullptr) of each device synchronises with
//    that device's blocking streams (cudaStreamCreate) as in CUDA; streams
//    made with cudaStreamNonBlocking do not.
//  * cudaMemcpyAsync: host->device from pageable memory copies the source at
//    the call (CUDA's staging); device->host into PAGEABLE memory blocks the
//    calling thread until the stream has run the copy (the "might be
//    synchronous" case of CUDA's API synchronisation rules, on by default);
//    pinned memory (cudaMallocHost) is fully asynchronous.
//  * NCCL ranks are threads; a communicator is one rank. With
//    config.blocking = 0, ncclCommInitRankConfig, ncclGroupEnd and a bare
//    ncclAllReduce return ncclInProgress and a background thread enqueues the
//    kernel onto the stream after a random delay; ncclCommGetAsyncError
//    reports ncclInProgress until then. Grouped send/recv are matched per
//    (sender, receiver) pair in launch order; a send completes only when the
//    peer has received it. AllReduce sums in rank order (bfloat16/half in
//    float, rounded once).
//  * Any synchronous CUDA/NCCL call can be made to fail once (FailCall), so
//    every error return after a vendor call runs in CI.
//  * Misuse is recorded as a violation (Violations()), never a crash: an NCCL
//    call on a communicator whose previous nonblocking call is still in
//    progress, a handle used after ncclCommAbort/ncclCommDestroy, a buffer
//    that is not live device memory of the communicator's device, a count or
//    type mismatch between peers, a cudaMemcpy kind that does not match the
//    pointers, a stream op on freed memory.
//
// Every wait inside the fake is released by ncclCommAbort of the waiting
// rank's communicator, so AbortAll() ends any hang (tests use it as the
// hang breaker after their own deadline).
#ifndef SMOE_TESTS_FAKES_FAKE_NCCL_CONTROL_H_
#define SMOE_TESTS_FAKES_FAKE_NCCL_CONTROL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_runtime_api.h"
#include "nccl.h"

namespace smoe::fake_nccl {

struct Config {
  // 0: take SMOE_FAKE_NCCL_SEED from the environment, else the clock.
  uint64_t seed = 0;
  int num_devices = 8;
  // Random delay in [0, max] before every stream operation.
  int64_t max_stream_op_delay_us = 200;
  // Nonblocking NCCL: delay in [min, max] between the call returning
  // ncclInProgress and the kernel being enqueued (and the comm's async state
  // turning ncclSuccess).
  int64_t min_enqueue_delay_us = 50;
  int64_t max_enqueue_delay_us = 600;
  // Nonblocking init: extra delay after the last rank joined.
  int64_t max_init_delay_us = 2000;
  // cudaMemcpyAsync device->host into pageable memory blocks the caller until
  // the copy ran (true) or is fully asynchronous (false). CUDA allows both.
  bool pageable_d2h_synchronous = true;
  // NCCL buffers must be live fake-device memory of the comm's device, and
  // cudaMemset(Async) targets fake-device memory. Off: host memory (CPU
  // tensors) stands in for device memory.
  bool strict_device_pointers = true;
};

// Aborts every communicator left over from a previous test, waits (bounded)
// for the streams to drain, clears faults, statistics and violations, and
// applies `config`. Returns the seed in use (log it: it reproduces the
// delays, though not the OS thread schedule).
uint64_t Reset(const Config& config = {});

// API misuse seen since Reset (see the file comment); empty when clean.
std::vector<std::string> Violations();

// Faults, by rank (they apply to any communicator in which the rank takes
// part). `at_launch` counts that rank's NCCL launches (ncclGroupEnd of a
// non-empty group, or a bare ncclAllReduce) from 0 since its
// communicator was created.
//
// At launch `at_launch` the rank's communicator reports `error` from
// ncclCommGetAsyncError (after the enqueue delay) and its kernel never
// completes (until abort). With `peers_see_remote_error` every other
// communicator of the clique then reports ncclRemoteError as well.
void InjectAsyncError(int rank, int at_launch, ncclResult_t error,
                      bool peers_see_remote_error);
// From launch `at_launch` on, the rank's kernels are enqueued but never run
// (a hung GPU or a dead peer): its sends never happen, so its peers' kernels
// never complete either. Its own async state stays ncclSuccess.
void HangRank(int rank, int at_launch);
// Every launch of `rank` waits exactly `us` before the enqueue (overrides the
// random enqueue delay).
void SetEnqueueDelay(int rank, int64_t us);

// Synchronous failures: the `skip`+1-th call of the API function named
// `call` (e.g. "cudaMemcpyAsync", "ncclGroupEnd") made from now on by a
// thread whose current device is `device` (cudaSetDevice: the device asked
// for; -1: any thread) returns `error` (a cudaError_t or ncclResult_t value)
// at once, without doing anything; once. Every cuda*/nccl* function of the
// fake that returns an error code can fail this way, and so can the cuBLAS
// calls and the kernel launches of tests/fakes/fake_kernels.cc (call names
// "cublasCreate", "LaunchRouterTopK", ...; the error is a cublasStatus_t for
// cuBLAS and LaunchGroupedGemm, else a cudaError_t). Reset disarms all.
void FailCall(const std::string& call, int error, int device = -1,
              int skip = 0);
// Like FailCall, but only calls made after a cudaStreamQuery on `device`
// (-1: any) answered cudaErrorNotReady count: the poll of a wait loop whose
// stream is still busy, not the polls before it.
void FailCallWhileBusy(const std::string& call, int error, int device = -1);
// For the other fake files: the error armed (FailCall) for this call of
// `call` by the calling thread (its current device), consumed; 0 when none.
int TakeCallFault(const char* call);
// Armed faults that have not fired ("CALL on device D"), and those that have,
// in order (tests check that the call they meant to fail was reached).
std::vector<std::string> ArmedCallFaults();
std::vector<std::string> FiredCallFaults();

// Enqueues an operation that occupies `stream` for `ms` milliseconds (a slow
// producer kernel). nullptr = the legacy stream of the current device.
void EnqueueSleep(cudaStream_t stream, int64_t ms);

// The hang breaker: aborts every live communicator (each blocked kernel and
// every wait in the fake returns). Returns how many were aborted.
int AbortAll();

struct Stats {
  int64_t launches = 0;     // NCCL launches (groups + bare collectives)
  int64_t kernels_run = 0;  // NCCL kernels that completed on a stream
  int64_t stream_ops = 0;   // stream operations executed, all kinds
  int64_t live_comms = 0;   // created, not yet destroyed or aborted
  // Longest time a host thread was blocked inside one fake CUDA call
  // (cudaMemcpy, synchronous cudaMemcpyAsync, cudaStreamSynchronize...).
  int64_t max_host_block_us = 0;
  std::string max_host_block_call;
  // Host threads blocked inside a fake CUDA call right now: "CALL for N ms".
  std::vector<std::string> blocked_now;
};
Stats GetStats();

// Number of NCCL kernels enqueued on `stream` since Reset (nullptr = the
// legacy stream of the current device).
int64_t NcclKernelsOnStream(cudaStream_t stream);

}  // namespace smoe::fake_nccl

#endif  // SMOE_TESTS_FAKES_FAKE_NCCL_CONTROL_H_
