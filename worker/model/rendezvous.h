// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/rendezvous.h
//
// The rendezvous of a multi-process (expert-parallel) trial, set up by the
// worker daemon or `smoe ... --ep-size` (docs/trainer-protocol.md):
//   SMOE_RANK, SMOE_WORLD_SIZE, SMOE_RENDEZVOUS = host:port | file path,
// and the communicators built on it that need no Gloo:
//   * the c10d key-value store behind it: "host:port" (port all digits) is a
//     c10d TCPStore whose server rank 0 starts on that port (for ranks
//     started by hand, and tests); anything else is a c10d FileStore path on
//     a filesystem every rank sees: every SMoE Lab launcher
//     (worker/launch/rank_group.h) passes <trial dir>/ep-rendezvous;
//   * CreateNcclCommunicator: the NCCL unique id exchanged through that store.
// TCPStore, FileStore and PrefixStore are plain LibTorch c10d (libtorch_cpu)
// and need no gloo headers or libgloo, so this file compiles wherever
// LibTorch ships the c10d store headers (SMOE_WITH_C10D_STORE; PyTorch's
// wheels and Debian's libtorch-dev do) — in particular on a GPU machine with
// pip PyTorch, which has neither gloo headers nor a libgloo. Only the Gloo
// communicator (gloo_communicator.h) needs SMOE_WITH_GLOO.
//
// Deadlines: the store's timeout is options.op_timeout_ms; a missing peer
// turns into an error (DeadlineExceeded / Unavailable), never a hang.
#ifndef SMOE_WORKER_MODEL_RENDEZVOUS_H_
#define SMOE_WORKER_MODEL_RENDEZVOUS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/all_to_all/communicator.h"
#include "kernels/all_to_all/nccl_communicator.h"

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

// InvalidArgument unless 0 <= rank < world_size and the rendezvous is set.
absl::Status CheckRendezvousInfo(const RendezvousInfo& info);

// Splits a "host:port" rendezvous (port all digits, 1..65535); false when
// `rendezvous` is not of that form, i.e. is a FileStore path.
bool SplitRendezvousHostPort(const std::string& rendezvous, std::string* host,
                             uint16_t* port);

// True when this build has the c10d store (SMOE_WITH_C10D_STORE).
bool BuiltWithC10dStore();

// The NCCL unique id exchange behind CreateNcclCommunicator: rank 0 calls
// `make_id` and publishes the bytes under a fixed key of the rendezvous
// store, the other ranks wait for them (op_timeout_ms). Returns every rank
// the same id. Unimplemented without the c10d store; `make_id`'s error on
// rank 0; Unavailable / DataLoss naming the rendezvous when the store fails.
// The store (and, on rank 0, the TCPStore server) lives until process exit.
absl::StatusOr<kernels::NcclUniqueIdBytes> ExchangeNcclUniqueId(
    const RendezvousInfo& info, const kernels::CommunicatorOptions& options,
    const std::function<absl::StatusOr<kernels::NcclUniqueIdBytes>()>& make_id);

// Joins an NCCL group (one GPU per rank, device `device`), exchanging the
// unique id with ExchangeNcclUniqueId (kernels::NewNcclUniqueId on rank 0).
// Unimplemented in builds without NCCL or without the c10d store.
absl::StatusOr<std::unique_ptr<kernels::Communicator>> CreateNcclCommunicator(
    const RendezvousInfo& info, int device,
    const kernels::CommunicatorOptions& options);

}  // namespace smoe::model

#endif  // SMOE_WORKER_MODEL_RENDEZVOUS_H_
