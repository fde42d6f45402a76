// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/rendezvous_store.h
//
// The c10d store of a rendezvous (rendezvous.h), for the files in
// worker/model that build communicators on it (rendezvous.cc,
// gloo_communicator.cc). Available only with SMOE_WITH_C10D_STORE; includes
// LibTorch's c10d Store header, so keep it out of other headers.
#ifndef SMOE_WORKER_MODEL_RENDEZVOUS_STORE_H_
#define SMOE_WORKER_MODEL_RENDEZVOUS_STORE_H_

#if defined(SMOE_WITH_C10D_STORE)
#include <chrono>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "worker/model/rendezvous.h"

namespace smoe::model {

// Opens the store of `info.rendezvous` with every operation bounded by
// `timeout`: a c10d TCPStore for "host:port" (rank 0 runs the server and
// waits for all world_size ranks), else a c10d FileStore at that path.
// Throws (c10::Error or std::exception) on failure; callers convert.
c10::intrusive_ptr<c10d::Store> MakeRendezvousStore(
    const RendezvousInfo& info, std::chrono::milliseconds timeout);

}  // namespace smoe::model

#endif  // SMOE_WITH_C10D_STORE
#endif  // SMOE_WORKER_MODEL_RENDEZVOUS_STORE_H_
