// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/gloo_communicator.h
//
// GlooCommunicator: kernels::Communicator (host memory) over LibTorch's c10d
// ProcessGroupGloo, for CPU expert-parallel trials, on the rendezvous of
// rendezvous.h (SMOE_RANK, SMOE_WORLD_SIZE, SMOE_RENDEZVOUS). Design choice:
// it implements the SAME raw buffer interface as LocalCommunicator and
// NcclCommunicator, rather than a tensor-level one, so the expert-parallel
// layer (expert_parallel.h) has one code path and is unit-tested over
// LocalCommunicator; the raw buffers are wrapped in tensors with
// torch::from_blob (no copy) inside this file only.
//
// Only this communicator needs the gloo headers and libgloo (SMOE_WITH_GLOO;
// Debian's libgloo-dev): the store and the NCCL id exchange live in
// rendezvous.h, which this header includes so that its callers keep one
// include.
//
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

#include "absl/status/statusor.h"
#include "kernels/all_to_all/communicator.h"
#include "worker/model/rendezvous.h"

namespace smoe::model {

// Joins the Gloo group described by `info` (blocks until all ranks joined or
// op_timeout_ms passed: DeadlineExceeded / Unavailable). Never throws.
// Unimplemented in builds without Gloo.
// REQUIRES: 0 <= info.rank < info.world_size.
absl::StatusOr<std::unique_ptr<kernels::Communicator>> CreateGlooCommunicator(
    const RendezvousInfo& info, const kernels::CommunicatorOptions& options);

}  // namespace smoe::model

#endif  // SMOE_WORKER_MODEL_GLOO_COMMUNICATOR_H_
