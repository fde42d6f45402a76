// Copyright 2026 SMoE Lab authors.
//
// File: kernels/all_to_all/payload.h
//
// Self-verifying all-to-all payloads (docs/kernels.md 5, nccl-tests style).
// Rank `src` sends PayloadRows(seed, src, dst, W) rows of `columns` float64
// elements to rank `dst`; element (t, c) of that chunk is
//   PayloadValue(src, dst, t, c) = src * 1e9 + dst * 1e6 + t * 1e3 + c
// (exact in float64 for world <= 1000, rows < 1000, columns < 1000). The
// receiver recomputes every element from its position alone, so no reference
// run is needed, and a chunk that lands at the wrong rank or offset shows up
// as wrong elements. Row counts include zeros and differ per (src, dst) pair.
//
// Shared by the LocalCommunicator unit test, the multi-process Gloo test
// (tests/ep) and the NCCL GPU test.
#ifndef SMOE_KERNELS_ALL_TO_ALL_PAYLOAD_H_
#define SMOE_KERNELS_ALL_TO_ALL_PAYLOAD_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/all_to_all/communicator.h"

namespace smoe::kernels {

// Rows rank `src` sends to rank `dst` in a world of `world` ranks: in 0..5.
int64_t PayloadRows(uint64_t seed, int src, int dst, int world);

// The value of element (row t, column c) of the chunk src -> dst.
double PayloadValue(int src, int dst, int64_t t, int64_t c);

struct PayloadCheck {
  int64_t checked = 0;  // elements received and compared
  int64_t wrong = 0;    // of which differ from PayloadValue
};

// Runs one verified all-to-all on `comm`: exchanges row counts with
// AllToAllCounts (and checks them against PayloadRows), then AllToAllV of
// float64 payload rows, then checks every received element. Handles host and
// CUDA-device communicators (device buffers are staged with cudaMemcpy).
// Returns the communicator's error, InvalidArgument when `columns` is out of
// 1..999, or Internal when the exchanged counts are wrong; element errors are
// counted in `check` (not an error status).
absl::Status RunPayloadAllToAll(Communicator& comm, int64_t columns,
                                uint64_t seed, PayloadCheck* check);

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_ALL_TO_ALL_PAYLOAD_H_
