// Copyright 2026 SMoE Lab authors.
//
// File: kernels/emu/cuda_emu.h
//
// The device side of CUDA for kernel sources compiled as C++ by g++ (the
// CUDA execution model on the CPU, docs/kernels.md 7): qualifiers, dim3 /
// uint3 / uint4, threadIdx / blockIdx / blockDim / gridDim of the emulated
// thread that is running, warpSize, __ldg, min/max, __popc/__ffs,
// atomicAdd (int, unsigned, float; shared and global), __syncthreads,
// __syncwarp, __shfl_sync / _up / _down / _xor, __ballot_sync,
// __match_any_sync, and the launch / shared-memory spellings behind
// SMOE_LAUNCH, SMOE_SHARED and SMOE_DYNAMIC_SHARED (kernels/common/
// cuda_launch.cuh). Nothing the kernels do not use.
//
// Included by kernels/common/cuda_launch.cuh when SMOE_CUDA_EMU is defined
// (never under nvcc). The runtime (fibers, schedules, checks) is
// kernels/emu/emu.h.
//
// Thread-safety: each emulated thread is a fiber of the OS thread that runs
// the launch; launches on different OS threads are independent.
#ifndef SMOE_KERNELS_EMU_CUDA_EMU_H_
#define SMOE_KERNELS_EMU_CUDA_EMU_H_

#include <cuda_runtime_api.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernels/emu/emu.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline

// vector_types.h
using uint3 = ::smoe::emu::Dim3;
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1)
      : x(vx), y(vy), z(vz) {}
};

// The built-in variables of the running emulated thread (function calls into
// the runtime, so the race checker never sees them as memory).
#define threadIdx (::smoe::emu::internal::ThreadIdx())
#define blockIdx (::smoe::emu::internal::BlockIdx())
#define blockDim (::smoe::emu::internal::BlockDim())
#define gridDim (::smoe::emu::internal::GridDim())
inline constexpr int warpSize = 32;

template <typename T>
inline T __ldg(const T* p) {
  return *p;
}
template <typename T>
inline T min(T a, T b) {
  return b < a ? b : a;
}
template <typename T>
inline T max(T a, T b) {
  return a < b ? b : a;
}
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __ffs(int v) { return __builtin_ffs(v); }

// Atomics: relaxed read-modify-writes (no ordering, as on the device).
inline int atomicAdd(int* p, int v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
inline unsigned atomicAdd(unsigned* p, unsigned v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
inline float atomicAdd(float* p, float v) {
  static_assert(sizeof(float) == sizeof(uint32_t));
  auto* u = reinterpret_cast<uint32_t*>(p);
  uint32_t old = __atomic_load_n(u, __ATOMIC_RELAXED);
  for (;;) {
    float f;
    std::memcpy(&f, &old, sizeof(f));
    f += v;
    uint32_t next;
    std::memcpy(&next, &f, sizeof(next));
    if (__atomic_compare_exchange_n(u, &old, next, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED)) {
      std::memcpy(&f, &old, sizeof(f));
      return f;
    }
  }
}

// Barriers and warp collectives. Each records its call site
// (__builtin_FILE/LINE of the caller) for the reports.
inline void __syncthreads(const char* file = __builtin_FILE(),
                          int line = __builtin_LINE()) {
  ::smoe::emu::internal::SyncThreads({file, line});
}
inline void __syncwarp(unsigned mask = 0xffffffffu,
                       const char* file = __builtin_FILE(),
                       int line = __builtin_LINE()) {
  ::smoe::emu::internal::Collective(::smoe::emu::internal::Op::kSyncWarp, mask,
                                    0, 0, 32, {file, line});
}

namespace smoe::emu::internal {
template <typename T>
inline uint64_t ToBits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>,
                "shuffles move values of at most 8 bytes");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <typename T>
inline T FromBits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}
}  // namespace smoe::emu::internal

template <typename T>
inline T __shfl_sync(unsigned mask, T var, int src_lane, int width = 32,
                     const char* file = __builtin_FILE(),
                     int line = __builtin_LINE()) {
  using namespace ::smoe::emu::internal;  // NOLINT(build/namespaces)
  return FromBits<T>(Collective(Op::kShflIdx, mask, ToBits(var), src_lane,
                                width, {file, line}));
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32,
                        const char* file = __builtin_FILE(),
                        int line = __builtin_LINE()) {
  using namespace ::smoe::emu::internal;  // NOLINT(build/namespaces)
  return FromBits<T>(Collective(Op::kShflUp, mask, ToBits(var),
                                static_cast<int>(delta), width, {file, line}));
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32,
                          const char* file = __builtin_FILE(),
                          int line = __builtin_LINE()) {
  using namespace ::smoe::emu::internal;  // NOLINT(build/namespaces)
  return FromBits<T>(Collective(Op::kShflDown, mask, ToBits(var),
                                static_cast<int>(delta), width, {file, line}));
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32,
                         const char* file = __builtin_FILE(),
                         int line = __builtin_LINE()) {
  using namespace ::smoe::emu::internal;  // NOLINT(build/namespaces)
  return FromBits<T>(Collective(Op::kShflXor, mask, ToBits(var), lane_mask,
                                width, {file, line}));
}
inline unsigned __ballot_sync(unsigned mask, int predicate,
                              const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  using namespace ::smoe::emu::internal;  // NOLINT(build/namespaces)
  return static_cast<unsigned>(
      Collective(Op::kBallot, mask, predicate != 0, 0, 32, {file, line}));
}
template <typename T>
inline unsigned __match_any_sync(unsigned mask, T value,
                                 const char* file = __builtin_FILE(),
                                 int line = __builtin_LINE()) {
  using namespace ::smoe::emu::internal;  // NOLINT(build/namespaces)
  return static_cast<unsigned>(
      Collective(Op::kMatchAny, mask, ToBits(value), 0, 32, {file, line}));
}

namespace smoe::emu::internal {

// A kernel launch: the arguments are converted to the kernel's parameter
// types once (as CUDA copies them into the launch), and every emulated
// thread calls the kernel with its own copies.
template <typename... P>
class Launcher {
 public:
  Launcher(const char* kernel, const char* where, Site site, dim3 grid,
           dim3 block, size_t smem, cudaStream_t stream, void (*fn)(P...))
      : kernel_(KernelName(kernel)),
        where_(where),
        site_(site),
        grid_(grid),
        block_(block),
        smem_(smem),
        stream_(stream),
        fn_(fn) {}

  template <typename... A>
  void operator()(A&&... args) const {
    struct Bound {
      void (*fn)(P...);
      std::tuple<std::decay_t<P>...> args;
    };
    LaunchConfig c;
    c.kernel = kernel_;
    c.where = where_;
    c.site = site_;
    c.grid = {grid_.x, grid_.y, grid_.z};
    c.block = {block_.x, block_.y, block_.z};
    c.dynamic_smem = smem_;
    c.stream = stream_;
    c.args = new Bound{
        fn_, std::tuple<std::decay_t<P>...>(std::forward<A>(args)...)};
    c.run = [](const void* a) {
      const Bound& b = *static_cast<const Bound*>(a);
      std::apply(b.fn, b.args);
    };
    c.destroy = [](const void* a) { delete static_cast<const Bound*>(a); };
    Enqueue(c);
  }

 private:
  const char* kernel_;
  const char* where_;
  Site site_;
  dim3 grid_, block_;
  size_t smem_;
  cudaStream_t stream_;
  void (*fn_)(P...);
};

template <typename... P>
Launcher<P...> MakeLauncher(const char* kernel, const char* where, Site site,
                            dim3 grid, dim3 block, size_t smem,
                            cudaStream_t stream, void (*fn)(P...)) {
  return Launcher<P...>(kernel, where, site, grid, block, smem, stream, fn);
}

}  // namespace smoe::emu::internal

// The emulator's spellings of kernels/common/cuda_launch.cuh's portable
// shared-memory macros (never use these directly; SMOE_LAUNCH expands to
// MakeLauncher there).
#define SMOE_EMU_SHARED(type, name, dims)                                     \
  static const char smoe_emu_shared_key_##name = 0;                           \
  type(&name) dims =                                                          \
      *static_cast<type(*) dims>(::smoe::emu::internal::StaticShared(         \
          &smoe_emu_shared_key_##name, sizeof(type dims), alignof(type dims), \
          #name, {__FILE__, __LINE__}))
#define SMOE_EMU_DYNAMIC_SHARED(type, name) \
  type* const name = static_cast<type*>(    \
      ::smoe::emu::internal::DynamicShared(#name, {__FILE__, __LINE__}))

#endif  // SMOE_KERNELS_EMU_CUDA_EMU_H_
