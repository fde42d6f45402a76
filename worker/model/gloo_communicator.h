// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/gloo_communicator.h
//
// Multi-process communicators for expert-parallel trials, created from the
// rendezvous the worker daemon sets up (docs/trainer-protocol.md):
//   SMOE_RANK, SMOE_WORLD_SIZE, SMOE_RENDEZVOUS = host:port | file path.
//
// GlooCommunicator implements kernels::Communicator (host memory) over
// LibTorch's c10d ProcessGroupGloo. Design choice: it implements the SAME raw
// buffer interface as LocalCommunicator and NcclCommunicator, rather than a
// tensor-level one, so the expert-parallel layer (expert_parallel.h) has one
// code path and is unit-tested over LocalCommunicator; the raw buffers are
// wrapped in tensors with torch::from_blob (no copy) inside this file only.
//
// Rendezvous: "host:port" (port all digits) is a c10d TCPStore whose server
// rank 0 starts on that port (the daemon picks a free one); anything else is a
// c10d FileStore path on a filesystem every rank sees (tests use a temp file).
// Gloo's TCP transport binds to 127.0.0.1 when the rendezvous host is a
// loopback address or a file, else to the interface in SMOE_GLOO_IFNAME if
// set, else to this host's name.
//
// Deadlines: the store's timeout, the process group's timeout and every
// Work::wait() use options.op_timeout_ms; a dead peer turns into an error
// (connection reset, or DeadlineExceeded), never a hang. After an error the
// communicator is poisoned (later calls return Aborted).
//
// Thread-safety: one thread at a time.
#ifndef SMOE_WORKER_MODEL_GLOO_COMMUNICATOR_H_
#define SMOE_WORKER_MODEL_GLOO_COMMUNICATOR_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "kernels/all_to_all/communicator.h"

namespace smoe::model {

// Rank, world size and rendezvous of this process.
struct RendezvousInfo {
  int rank = 0;
  int world_size = 1;
  std::string rendezvous;  // host:port or a file path; empty when world == 1
};

// Reads SMOE_RANK, SMOE_WORLD_SIZE and SMOE_RENDEZVOUS. With none of them set
// returns {0, 1, ""}. InvalidArgument naming the variable and its value when
// one is malformed, out of range, or SMOE_RENDEZVOUS is missing while
// SMOE_WORLD_SIZE > 1.
absl::StatusOr<RendezvousInfo> RendezvousFromEnv();

// The CUDA device index rank `rank` of `world` uses when `visible` devices
// are visible to it: 0 when the launcher gave each rank its own GPU
// (CUDA_VISIBLE_DEVICES of one device: the worker daemon, `smoe ...
// --gpu-ids`), else rank % visible (every rank sees all GPUs: rank r takes GPU
// r).
int CudaDeviceForRank(int rank, int world, int visible);

// Joins the Gloo group described by `info` (blocks until all ranks joined or
// op_timeout_ms passed: DeadlineExceeded / Unavailable). Never throws.
// REQUIRES: 0 <= info.rank < info.world_size.
absl::StatusOr<std::unique_ptr<kernels::Communicator>> CreateGlooCommunicator(
    const RendezvousInfo& info, const kernels::CommunicatorOptions& options);

// Joins an NCCL group (one GPU per rank, device `device`), exchanging the
// unique id through the same store as above: rank 0 creates it and publishes
// it under a key, the others wait for it (op_timeout_ms). Unimplemented in
// builds without NCCL.
absl::StatusOr<std::unique_ptr<kernels::Communicator>> CreateNcclCommunicator(
    const RendezvousInfo& info, int device,
    const kernels::CommunicatorOptions& options);

}  // namespace smoe::model

#endif  // SMOE_WORKER_MODEL_GLOO_COMMUNICATOR_H_
