// Copyright 2026 SMoE Lab authors.
//
// File: kernels/emu/emu.h
//
// The CUDA execution model on the CPU (docs/kernels.md 7): the runtime behind
// kernels/emu/cuda_emu.h. A launch is one stream operation of the (fake) CUDA
// runtime it is linked with (cudaLaunchHostFunc on the launch's stream). It
// runs the grid's blocks one after another; each block's threads are fibers
// of the OS thread that runs the stream operation (one fiber per GPU thread,
// with its own stack), switched only at __syncthreads, at warp collectives
// and at exit. A barrier releases when every live (not exited) thread of the
// block has arrived; a warp collective is a rendezvous of the lanes of its
// mask with CUDA's semantics (PTX shfl.sync / vote.sync / match.sync rules).
//
// Schedule: SMOE_EMU_SCHEDULE = "inorder" (default: the lowest runnable
// thread resumes first, blocks ascending), "reverse" (highest first, blocks
// descending) or "random[:SEED]" (a seeded random runnable thread at every
// release point, blocks shuffled).
//
// Checks (each report names the check, the kernel and its launch site, the
// block, the thread and the file:line, prints "smoe-emu: <check>" and ends
// the process with exit status 3, like compute-sanitizer with
// --error-exitcode):
//   divergent barrier, deadlock, warp-collective misuse (always);
//   data race on shared or global memory, uninitialised shared-memory read,
//   out-of-bounds shared memory (the race build: kernels compiled with
//   -fsanitize=thread instrumentation over this runtime's own shadow memory,
//   SMOE_EMU_RACE_CHECK); out-of-bounds shared and global memory through
//   AddressSanitizer (the ASan build: a fresh, poisoned arena per block).
//
// Thread-safety: launches on different OS threads (streams) are independent.
#ifndef SMOE_KERNELS_EMU_EMU_H_
#define SMOE_KERNELS_EMU_EMU_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace smoe::emu {

struct Dim3 {
  unsigned x, y, z;
};

// What the emulator did since the process started (all OS threads).
struct Stats {
  int64_t launches = 0;
  int64_t blocks = 0;
  int64_t threads = 0;
  int64_t switches = 0;     // fiber switches, both directions
  int64_t race_checks = 0;  // instrumented memory accesses checked
};
Stats GetStats();

// The schedule in force for launches from now on, as SMOE_EMU_SCHEDULE spells
// it ("inorder", "reverse", "random:SEED"); an unknown value is reported and
// aborts at the next launch.
std::string ScheduleName();

// True in the race build (SMOE_EMU_RACE_CHECK), false in the ASan build.
bool RaceCheckEnabled();

namespace internal {

struct Site {
  const char* file;
  int line;
};

enum class Op {
  kSyncWarp,
  kShflIdx,
  kShflUp,
  kShflDown,
  kShflXor,
  kBallot,
  kMatchAny
};

struct LaunchConfig {
  const char* kernel = "";  // as spelled at the launch site
  const char* where = "";   // the launching function
  Site site{"", 0};
  Dim3 grid{1, 1, 1};
  Dim3 block{1, 1, 1};
  size_t dynamic_smem = 0;
  cudaStream_t stream = nullptr;
  const void* args = nullptr;  // owned; released by destroy
  void (*run)(const void* args) = nullptr;
  void (*destroy)(const void* args) = nullptr;
};

// The kernel as spelled at a launch site, without a SMOE_KERNEL( ) wrapper;
// the returned string lives as long as the process.
const char* KernelName(const char* spelled);

// Enqueues the launch on c.stream (cudaLaunchHostFunc). A launch that CUDA
// would refuse (empty grid, more than 1024 threads per block, more than
// 48 KiB of dynamic shared memory) is reported and aborts.
void Enqueue(const LaunchConfig& c);

Dim3 ThreadIdx();
Dim3 BlockIdx();
Dim3 BlockDim();
Dim3 GridDim();

void SyncThreads(Site site);
// Returns the lane's result (the shuffled value, the ballot, the match mask;
// 0 for __syncwarp).
uint64_t Collective(Op op, unsigned mask, uint64_t value, int arg, int width,
                    Site site);

// Storage of a static __shared__ variable (`key` is unique per variable and
// template instantiation) and of the dynamic shared memory, in this block's
// arena.
void* StaticShared(const void* key, size_t bytes, size_t align,
                   const char* name, Site site);
void* DynamicShared(const char* name, Site site);

}  // namespace internal
}  // namespace smoe::emu

#endif  // SMOE_KERNELS_EMU_EMU_H_
