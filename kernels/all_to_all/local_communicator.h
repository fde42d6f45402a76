// Copyright 2026 SMoE Lab authors.
//
// File: kernels/all_to_all/local_communicator.h
//
// LocalCommunicator: W ranks simulated inside one process, one thread per rank
// (docs/kernels.md 5). Buffers are host memory. Used by unit tests of
// everything built on Communicator (the expert-parallel layer,
// dispatch/combine), so they run on any machine, GPU or not.
//
// How it works: the W communicators of a group share one hub. Each collective
// is two rendezvous: every rank posts pointers to its buffers and waits for
// all; each rank then PULLS what it needs straight from its peers' buffers
// (one memcpy per peer, no staging); a second rendezvous keeps every send
// buffer alive until all peers have read it. A rank that does not arrive
// within op_timeout_ms makes the waiting ranks return DeadlineExceeded and
// poisons the group: every later call on any rank fails fast with Aborted.
//
// Usage:
//   auto comms = CreateLocalCommunicators(4, {});
//   std::vector<std::thread> t;
//   for (auto& c : comms) t.emplace_back([&c] { ... c->AllToAllV(...) ... });
//
// Thread-safety: each Communicator is used by one thread at a time (its
// rank's); the group's shared state is internally synchronised.
#ifndef SMOE_KERNELS_ALL_TO_ALL_LOCAL_COMMUNICATOR_H_
#define SMOE_KERNELS_ALL_TO_ALL_LOCAL_COMMUNICATOR_H_

#include <memory>
#include <vector>

#include "kernels/all_to_all/communicator.h"

namespace smoe::kernels {

// Returns `world_size` connected communicators; element r has rank r.
// REQUIRES: world_size >= 1.
std::vector<std::unique_ptr<Communicator>> CreateLocalCommunicators(
    int world_size, const CommunicatorOptions& options);

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_ALL_TO_ALL_LOCAL_COMMUNICATOR_H_
