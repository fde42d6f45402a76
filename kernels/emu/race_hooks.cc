// Copyright 2026 SMoE Lab authors.
//
// File: kernels/emu/race_hooks.cc
//
// The race build's checker: kernel sources compiled with -fsanitize=thread
// (instrumentation only; libtsan is not linked) call the __tsan_* hooks below
// for every load, store and atomic. Inside an emulated thread each access is
// checked against this launch's shadow memory:
//   * shared memory: inside a declared variable (else out-of-bounds), and a
//     read only of bytes this block wrote (else an uninitialised read);
//   * shared and global memory: a data race is two accesses to a byte by
//     different threads, at least one a write, not both atomic, without
//     happens-before. Happens-before exists only where CUDA promises it:
//     program order, __syncthreads (the block), __syncwarp (its lanes) and
//     kernel boundaries (the shadow lives for one launch); threads of
//     different blocks are never ordered. Vector clocks per block
//     (emu.cc) decide it.
// The shadow keeps, per 8-byte granule, the last write and the last read
// (with the bytes they touched), like ThreadSanitizer's bounded history: a
// race whose earlier access was overwritten by a third thread's can be
// missed, a reported race is real. Accesses to the fiber's own stack and
// host code outside a launch are not checked.
#include <dlfcn.h>
#include <sys/mman.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>

#include "kernels/emu/emu_internal.h"

namespace smoe::emu::internal {

namespace {

constexpr int kRegionBits = 20;  // 1 MiB of memory per shadow region
constexpr size_t kCellsPerRegion = size_t{1} << (kRegionBits - 3);

constexpr uint8_t kWrite = 1;
constexpr uint8_t kAtomic = 2;

struct Access {
  uint32_t who = 0;  // (block << 10 | thread) + 1; 0 = none
  uint32_t clock = 0;
  uint32_t pc = 0;    // offset from g_pc_base
  uint8_t bytes = 0;  // bit i: byte i of the granule
  uint8_t flags = 0;
  uint16_t pad = 0;
};
struct Cell {
  Access w, r;
};

uintptr_t g_pc_base = 0;
const char* g_pc_module = nullptr;

}  // namespace

struct Shadow {
  std::unordered_map<uintptr_t, Cell*> regions;
  uintptr_t last_key = ~uintptr_t{0};
  Cell* last = nullptr;

  Cell* RegionFor(uintptr_t key, bool create) {
    if (key == last_key) return last;
    auto it = regions.find(key);
    Cell* c = nullptr;
    if (it != regions.end()) {
      c = it->second;
    } else if (create) {
      void* p =
          mmap(nullptr, kCellsPerRegion * sizeof(Cell), PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) {
        std::fprintf(stderr, "smoe-emu: cannot map shadow memory\n");
        std::abort();
      }
      c = static_cast<Cell*>(p);
      regions.emplace(key, c);
    } else {
      return nullptr;
    }
    last_key = key;
    last = c;
    return c;
  }
};

Shadow* NewShadow() { return new Shadow; }

void DeleteShadow(Shadow* s) {
  for (auto& [key, cells] : s->regions) {
    munmap(cells, kCellsPerRegion * sizeof(Cell));
  }
  delete s;
}

void ShadowForget(Launch& L, const void* p, size_t n) {
  Shadow* s = ShadowOf(L);
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  for (uintptr_t g = a >> 3; g <= (a + n - 1) >> 3; ++g) {
    Cell* region = s->RegionFor(g >> (kRegionBits - 3), false);
    if (region != nullptr) region[g & (kCellsPerRegion - 1)] = Cell{};
  }
}

namespace {

std::string Symbolize(uint32_t pc) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "pc 0x%" PRIxPTR,
                g_pc_base + static_cast<uintptr_t>(pc));
  if (g_pc_module == nullptr) return buf;
  // addr2line wants a file address: the offset in a PIE / shared object, the
  // absolute address in a fixed-address executable.
  uintptr_t addr = pc;
  const auto* ehdr = reinterpret_cast<const unsigned char*>(g_pc_base);
  if (ehdr[16] == 2) addr += g_pc_base;  // ET_EXEC
  // The access is at the instruction before the return address.
  char hex_cmd[1024];
  std::snprintf(hex_cmd, sizeof(hex_cmd),
                "addr2line -C -i -f -e '%s' 0x%" PRIxPTR " 2>/dev/null",
                g_pc_module, addr - 1);
  FILE* f = popen(hex_cmd, "r");
  if (f == nullptr) return buf;
  std::string out, line;
  char b[1024];
  int n = 0;
  while (std::fgets(b, sizeof(b), f) != nullptr) {
    std::string s(b);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    // Pairs of lines: function, file:line (innermost inline frame first).
    if (n % 2 == 0) {
      line = s;
    } else {
      if (!out.empty()) out += "\n      inlined in ";
      out += s + " (" + line + ")";
    }
    ++n;
  }
  pclose(f);
  return out.empty() ? std::string(buf) : out;
}

uint32_t PcOffset(uintptr_t pc) {
  if (g_pc_base == 0) {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(pc), &info) != 0) {
      g_pc_base = reinterpret_cast<uintptr_t>(info.dli_fbase);
      g_pc_module = info.dli_fname;
      if (g_pc_module != nullptr && g_pc_module[0] == '\0') {
        g_pc_module = "/proc/self/exe";
      }
    } else {
      g_pc_base = 1;
    }
  }
  return static_cast<uint32_t>(pc - g_pc_base);
}

const char* KindName(uint8_t flags) {
  if (flags & kAtomic) return "atomic read-modify-write";
  return (flags & kWrite) ? "write" : "read";
}

[[noreturn]] void ReportRace(Launch& L, int t, uintptr_t addr, size_t size,
                             uint8_t flags, uint32_t pc, const Access& prev,
                             bool shared) {
  char a[32];
  std::snprintf(a, sizeof(a), "0x%" PRIxPTR, addr);
  std::string where =
      shared ? "shared memory " +
                   DescribeShared(L, reinterpret_cast<const char*>(addr))
             : std::string("global memory ") + a;
  const uint32_t pb = (prev.who - 1) >> 10;
  const int pt = static_cast<int>((prev.who - 1) & 1023);
  const bool same_block = pb == BlockLinear(L);
  std::string detail =
      "  " + std::string(KindName(flags)) + " of " + std::to_string(size) +
      " bytes at " + where + "\n    by this thread at " + Symbolize(pc) +
      "\n  previous " + KindName(prev.flags) + " by " +
      DescribeThread(L, pb, pt) + "\n    at " + Symbolize(prev.pc) + "\n  " +
      (same_block ? "no __syncthreads or __syncwarp orders the two accesses"
                  : "threads of different blocks are never ordered within "
                    "a launch");
  Fail(L, shared ? "data race on shared memory" : "data race on global memory",
       t, detail);
}

void Check(uintptr_t addr, size_t size, uint8_t flags, uintptr_t pc) {
  Launch* Lp = CurrentLaunch();
  if (Lp == nullptr) return;
  Launch& L = *Lp;
  const int t = CurrentThread(L);
  const auto [stack, stack_bytes] = StackOf(L, t);
  const uintptr_t sb = reinterpret_cast<uintptr_t>(stack);
  if (addr >= sb && addr < sb + stack_bytes) return;  // private
  CountRaceCheck();
  const uint32_t pc32 = PcOffset(pc);
  const auto [arena, arena_bytes] = Arena(L);
  const uintptr_t ab = reinterpret_cast<uintptr_t>(arena);
  const bool shared =
      arena != nullptr && addr + size > ab && addr < ab + arena_bytes;
  if (shared) {
    const char* p = reinterpret_cast<const char*>(addr);
    if (!InSharedAlloc(L, p, size)) {
      Fail(L, "out-of-bounds shared memory", t,
           std::string("  ") + KindName(flags) + " of " + std::to_string(size) +
               " bytes at " + DescribeShared(L, p) + "\n    at " +
               Symbolize(pc32));
    }
    std::vector<uint8_t>& init = SharedInit(L);
    const size_t off = addr - ab;
    if (!(flags & kWrite) || (flags & kAtomic)) {
      for (size_t i = 0; i < size; ++i) {
        if (!init[off + i]) {
          Fail(L, "uninitialised shared memory read", t,
               std::string("  ") + KindName(flags) + " of " +
                   std::to_string(size) + " bytes at shared memory " +
                   DescribeShared(L, p + i) +
                   ", which no thread of this block wrote\n    at " +
                   Symbolize(pc32));
        }
      }
    }
    if (flags & kWrite) std::memset(&init[off], 1, size);
  }
  const uint32_t block = BlockLinear(L);
  const uint32_t who = ((block << 10) | static_cast<uint32_t>(t)) + 1;
  const uint32_t* vc = ClockOf(L, t);
  const uint32_t now = vc[t];
  auto ordered = [&](const Access& a) {
    if (((a.who - 1) >> 10) != block) return false;
    return a.clock <= vc[(a.who - 1) & 1023];
  };
  Shadow* s = ShadowOf(L);
  const uintptr_t end = addr + size;
  for (uintptr_t g = addr >> 3; g <= (end - 1) >> 3; ++g) {
    const uintptr_t lo = std::max(addr, g << 3),
                    hi = std::min(end, (g + 1) << 3);
    const uint8_t bytes =
        static_cast<uint8_t>(((1u << (hi - lo)) - 1u) << (lo - (g << 3)));
    Cell& c =
        s->RegionFor(g >> (kRegionBits - 3), true)[g & (kCellsPerRegion - 1)];
    auto conflicts = [&](const Access& a) {
      return a.who != 0 && a.who != who && (a.bytes & bytes) &&
             ((a.flags | flags) & kWrite) &&
             !((a.flags & kAtomic) && (flags & kAtomic)) && !ordered(a);
    };
    if (conflicts(c.w)) ReportRace(L, t, lo, size, flags, pc32, c.w, shared);
    if ((flags & kWrite) && conflicts(c.r)) {
      ReportRace(L, t, lo, size, flags, pc32, c.r, shared);
    }
    Access me;
    me.who = who;
    me.clock = now;
    me.pc = pc32;
    me.bytes = bytes;
    me.flags = flags;
    // Merging an older access of this thread keeps its (older) clock: the
    // record may then miss a race on the new bytes, never invent one.
    auto merge = [](Access& into, const Access& older) {
      if (older.who != into.who || !(older.bytes & ~into.bytes)) return;
      into.bytes |= older.bytes;
      into.clock = std::min(into.clock, older.clock);
      into.pc = older.pc;
    };
    if (flags & kWrite) {
      merge(me, c.w);
      c.w = me;
      // Reads of these bytes are ordered before this write (checked above).
      if (c.r.who != 0 && !(c.r.bytes & ~bytes)) c.r = Access{};
    }
    if (!(flags & kWrite) || (flags & kAtomic)) {
      Access rd = me;
      rd.flags = flags & kAtomic;
      if (c.r.who == 0 || c.r.who == who || ordered(c.r)) {
        merge(rd, c.r);
        c.r = rd;
      }
    }
  }
}

inline uintptr_t A(const volatile void* p) {
  return reinterpret_cast<uintptr_t>(p);
}
#define SMOE_PC reinterpret_cast<uintptr_t>(__builtin_return_address(0))

}  // namespace
}  // namespace smoe::emu::internal

// ---- The hooks GCC's -fsanitize=thread instrumentation calls -------------

using smoe::emu::internal::A;
using smoe::emu::internal::Check;
using smoe::emu::internal::kAtomic;
using smoe::emu::internal::kWrite;

extern "C" {

void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}

#define SMOE_EMU_RW(n)                                                   \
  void __tsan_read##n(void* p) { Check(A(p), n, 0, SMOE_PC); }           \
  void __tsan_write##n(void* p) { Check(A(p), n, kWrite, SMOE_PC); }     \
  void __tsan_unaligned_read##n(void* p) { Check(A(p), n, 0, SMOE_PC); } \
  void __tsan_unaligned_write##n(void* p) { Check(A(p), n, kWrite, SMOE_PC); }
SMOE_EMU_RW(1)
SMOE_EMU_RW(2)
SMOE_EMU_RW(4)
SMOE_EMU_RW(8)
SMOE_EMU_RW(16)
#undef SMOE_EMU_RW

void __tsan_read_range(void* p, unsigned long n) {  // NOLINT(runtime/int)
  if (n > 0) Check(A(p), n, 0, SMOE_PC);
}
void __tsan_write_range(void* p, unsigned long n) {  // NOLINT(runtime/int)
  if (n > 0) Check(A(p), n, kWrite, SMOE_PC);
}

// Atomics (relaxed, as CUDA's): checked as atomic accesses, then done.
#define SMOE_EMU_ATOMICS(bits, T)                                             \
  T __tsan_atomic##bits##_load(const volatile T* a, int) {                    \
    Check(A(a), sizeof(T), kAtomic, SMOE_PC);                                 \
    return __atomic_load_n(a, __ATOMIC_RELAXED);                              \
  }                                                                           \
  void __tsan_atomic##bits##_store(volatile T* a, T v, int) {                 \
    Check(A(a), sizeof(T), kAtomic | kWrite, SMOE_PC);                        \
    __atomic_store_n(a, v, __ATOMIC_RELAXED);                                 \
  }                                                                           \
  T __tsan_atomic##bits##_exchange(volatile T* a, T v, int) {                 \
    Check(A(a), sizeof(T), kAtomic | kWrite, SMOE_PC);                        \
    return __atomic_exchange_n(a, v, __ATOMIC_RELAXED);                       \
  }                                                                           \
  T __tsan_atomic##bits##_fetch_add(volatile T* a, T v, int) {                \
    Check(A(a), sizeof(T), kAtomic | kWrite, SMOE_PC);                        \
    return __atomic_fetch_add(a, v, __ATOMIC_RELAXED);                        \
  }                                                                           \
  T __tsan_atomic##bits##_fetch_sub(volatile T* a, T v, int) {                \
    Check(A(a), sizeof(T), kAtomic | kWrite, SMOE_PC);                        \
    return __atomic_fetch_sub(a, v, __ATOMIC_RELAXED);                        \
  }                                                                           \
  T __tsan_atomic##bits##_fetch_and(volatile T* a, T v, int) {                \
    Check(A(a), sizeof(T), kAtomic | kWrite, SMOE_PC);                        \
    return __atomic_fetch_and(a, v, __ATOMIC_RELAXED);                        \
  }                                                                           \
  T __tsan_atomic##bits##_fetch_or(volatile T* a, T v, int) {                 \
    Check(A(a), sizeof(T), kAtomic | kWrite, SMOE_PC);                        \
    return __atomic_fetch_or(a, v, __ATOMIC_RELAXED);                         \
  }                                                                           \
  T __tsan_atomic##bits##_fetch_xor(volatile T* a, T v, int) {                \
    Check(A(a), sizeof(T), kAtomic | kWrite, SMOE_PC);                        \
    return __atomic_fetch_xor(a, v, __ATOMIC_RELAXED);                        \
  }                                                                           \
  int __tsan_atomic##bits##_compare_exchange_strong(volatile T* a, T* c, T v, \
                                                    int, int) {               \
    Check(A(a), sizeof(T), kAtomic | kWrite, SMOE_PC);                        \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_RELAXED,      \
                                       __ATOMIC_RELAXED);                     \
  }                                                                           \
  int __tsan_atomic##bits##_compare_exchange_weak(volatile T* a, T* c, T v,   \
                                                  int, int) {                 \
    Check(A(a), sizeof(T), kAtomic | kWrite, SMOE_PC);                        \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_RELAXED,      \
                                       __ATOMIC_RELAXED);                     \
  }                                                                           \
  T __tsan_atomic##bits##_compare_exchange_val(volatile T* a, T c, T v, int,  \
                                               int) {                         \
    Check(A(a), sizeof(T), kAtomic | kWrite, SMOE_PC);                        \
    __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_RELAXED,            \
                                __ATOMIC_RELAXED);                            \
    return c;                                                                 \
  }
SMOE_EMU_ATOMICS(8, char)
SMOE_EMU_ATOMICS(16, short)  // NOLINT(runtime/int)
SMOE_EMU_ATOMICS(32, int)
SMOE_EMU_ATOMICS(64, long)  // NOLINT(runtime/int)
#undef SMOE_EMU_ATOMICS

void __tsan_atomic_thread_fence(int) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
void __tsan_atomic_signal_fence(int) {}

}  // extern "C"
