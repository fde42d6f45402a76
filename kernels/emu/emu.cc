// Copyright 2026 SMoE Lab authors.
//
// File: kernels/emu/emu.cc
//
// The emulator's runtime (contract in emu.h): fibers, the scheduler, barrier
// and warp-collective rendezvous, shared-memory arenas, the checks and, in
// the race build (SMOE_EMU_RACE_CHECK), the shadow memory behind the
// -fsanitize=thread hooks (race_hooks.cc calls OnAccess).
#include "kernels/emu/emu.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/emu/emu_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

// ---- Context switch (x86-64 System V) -------------------------------------
// smoe_emu_switch(save, to): pushes the callee-saved registers, stores the
// stack pointer in *save, loads `to` and pops the same frame from it (the
// floating-point control words are never changed by kernels, so they are
// not switched). A new fiber's stack holds such a frame
// whose return address is smoe_emu_fiber_start, which calls r13(r12).
extern "C" void smoe_emu_switch(void** save, void* to);
extern "C" void smoe_emu_fiber_start();
asm(R"(
  .text
  .globl smoe_emu_switch
  .type smoe_emu_switch,@function
smoe_emu_switch:
  .cfi_startproc
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .cfi_endproc
  .size smoe_emu_switch, .-smoe_emu_switch
  .globl smoe_emu_fiber_start
  .type smoe_emu_fiber_start,@function
smoe_emu_fiber_start:
  .cfi_startproc
  .cfi_undefined rip
  movq %r12, %rdi
  callq *%r13
  ud2
  .cfi_endproc
  .size smoe_emu_fiber_start, .-smoe_emu_fiber_start
  .section .note.GNU-stack,"",@progbits
  .text
)");

namespace smoe::emu {
namespace internal {
namespace {

constexpr size_t kStackBytes = 256 * 1024;
constexpr size_t kGuardBytes = 4096;
constexpr size_t kRedzone = 64;                  // between shared variables
constexpr size_t kStaticSharedMax = 48 * 1024;   // CUDA's static limit
constexpr size_t kDynamicSharedMax = 48 * 1024;  // without opt-in attribute
constexpr unsigned char kSharedPoison = 0xCD;    // never-written shared bytes
constexpr int kFailExitCode = 3;                 // a check failed

std::atomic<int64_t> g_launches{0}, g_blocks{0}, g_threads{0}, g_switches{0},
    g_race_checks{0};

// ---- Schedules --------------------------------------------------------------

enum class Kind { kInOrder, kReverse, kRandom };
struct Schedule {
  Kind kind = Kind::kInOrder;
  uint64_t seed = 1;
  bool ok = true;
  std::string spelling = "inorder";
};

Schedule ParseSchedule() {
  Schedule s;
  const char* env = std::getenv("SMOE_EMU_SCHEDULE");
  if (env == nullptr || *env == '\0') return s;
  const std::string v(env);
  s.spelling = v;
  if (v == "inorder") return s;
  if (v == "reverse") {
    s.kind = Kind::kReverse;
    return s;
  }
  if (v.rfind("random", 0) == 0) {
    s.kind = Kind::kRandom;
    if (v.size() > 6) {
      char* end = nullptr;
      if (v[6] != ':') s.ok = false;
      s.seed = std::strtoull(v.c_str() + 7, &end, 10);
      if (end == v.c_str() + 7 || *end != '\0') s.ok = false;
    } else {
      s.spelling = "random:1";
    }
    return s;
  }
  s.ok = false;
  return s;
}

// ---- Fibers -----------------------------------------------------------------

struct Stack {
  char* base = nullptr;  // lowest usable byte (above the guard page)
  size_t size = 0;
};

// Stacks are reused across blocks and launches of one OS thread.
thread_local std::vector<Stack> t_stack_pool;

Stack TakeStack() {
  if (!t_stack_pool.empty()) {
    Stack s = t_stack_pool.back();
    t_stack_pool.pop_back();
    return s;
  }
  void* p = mmap(nullptr, kStackBytes + kGuardBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "smoe-emu: cannot map a fiber stack\n");
    std::abort();
  }
  mprotect(p, kGuardBytes, PROT_NONE);  // overflow faults
  return {static_cast<char*>(p) + kGuardBytes, kStackBytes};
}

enum class State { kRunnable, kBarrier, kCollective, kExited };

struct Thread {
  State state = State::kRunnable;
  void* sp = nullptr;
  Stack stack;
  Dim3 idx{0, 0, 0};
  Site site{"", 0};  // where it waits
  // The collective it waits at.
  Op op = Op::kSyncWarp;
  unsigned mask = 0;
  uint64_t value = 0;
  int arg = 0;
  int width = 32;
  uint64_t result = 0;
#if defined(__SANITIZE_ADDRESS__)
  void* fake_stack = nullptr;
#endif
};

// Per warp: which lanes wait at a collective, which exited, which exist,
// and whether all waiting lanes agree on (op, mask) (the fast path).
struct Warp {
  uint32_t waiting = 0;
  uint32_t exited = 0;
  uint32_t exists = 0;
  bool uniform = true;
  Op u_op = Op::kSyncWarp;
  unsigned u_mask = 0;
};

struct SharedAlloc {
  size_t offset;
  size_t bytes;
  const char* name;
  Site site;
};

}  // namespace

// One launch running on this OS thread (emu_internal.h).
struct Launch {
  LaunchConfig c;
  Schedule sched;
  std::mt19937_64 rng;
  int nthreads = 0;
  int nwarps = 0;
  Dim3 block_idx{0, 0, 0};
  uint32_t block_linear = 0;
  std::vector<Thread> threads;
  std::vector<Warp> warps;
  std::vector<uint32_t> join;      // scratch of Join
  std::vector<uint64_t> runnable;  // bitset
  int num_runnable = 0;
  int live = 0;
  int at_barrier = 0;
  int cur = -1;
  void* sched_sp = nullptr;
#if defined(__SANITIZE_ADDRESS__)
  void* sched_fake_stack = nullptr;
  const void* sched_stack_bottom = nullptr;
  size_t sched_stack_size = 0;
#endif
  // Shared memory of the current block.
  char* arena = nullptr;
  size_t arena_bytes = 0;
  size_t dynamic_bytes = 0;
  size_t static_used = 0;
  std::vector<SharedAlloc> allocs;
  std::unordered_map<const void*, void*> statics;
  std::vector<uint8_t> shared_init;  // race build: bytes written this block
  // Race build: vector clocks of this block's threads (row t = thread t).
  std::vector<uint32_t> vc;
  Shadow* shadow = nullptr;
};

namespace {

thread_local Launch* t_launch = nullptr;

void Mark(Launch& L, int t, bool on) {
  uint64_t& w = L.runnable[t / 64];
  const uint64_t b = uint64_t{1} << (t % 64);
  if (on && !(w & b)) {
    w |= b;
    ++L.num_runnable;
  } else if (!on && (w & b)) {
    w &= ~b;
    --L.num_runnable;
  }
}

int Pick(Launch& L) {
  const int words = static_cast<int>(L.runnable.size());
  switch (L.sched.kind) {
    case Kind::kInOrder:
      for (int i = 0; i < words; ++i) {
        if (L.runnable[i]) return i * 64 + __builtin_ctzll(L.runnable[i]);
      }
      break;
    case Kind::kReverse:
      for (int i = words - 1; i >= 0; --i) {
        if (L.runnable[i]) return i * 64 + 63 - __builtin_clzll(L.runnable[i]);
      }
      break;
    case Kind::kRandom: {
      int r = static_cast<int>(L.rng() % static_cast<uint64_t>(L.num_runnable));
      for (int i = 0; i < words; ++i) {
        const int n = __builtin_popcountll(L.runnable[i]);
        if (r < n) {
          uint64_t w = L.runnable[i];
          for (int k = 0; k < r; ++k) w &= w - 1;
          return i * 64 + __builtin_ctzll(w);
        }
        r -= n;
      }
      break;
    }
  }
  return -1;
}

// ---- Context switching with AddressSanitizer's fiber annotations ----------
// The scheduler (the OS thread's own stack) starts a block's first thread;
// from then on a thread that waits or exits switches directly to the next
// runnable thread (Yield), and back to the scheduler only when the block is
// done or nothing can run.

// Switches from the running context (a fiber, or the scheduler when
// from == nullptr) to fiber `to`, or to the scheduler when to == nullptr.
void Switch(Launch& L, Thread* from, Thread* to, bool exiting) {
  g_switches.fetch_add(1, std::memory_order_relaxed);
  void** save = from != nullptr ? &from->sp : &L.sched_sp;
  void* target = to != nullptr ? to->sp : L.sched_sp;
#if defined(__SANITIZE_ADDRESS__)
  void** fake = from != nullptr ? &from->fake_stack : &L.sched_fake_stack;
  __sanitizer_start_switch_fiber(
      exiting ? nullptr : fake,
      to != nullptr ? to->stack.base : L.sched_stack_bottom,
      to != nullptr ? to->stack.size : L.sched_stack_size);
  smoe_emu_switch(save, target);
  __sanitizer_finish_switch_fiber(*fake, nullptr, nullptr);
#else
  (void)exiting;
  smoe_emu_switch(save, target);
#endif
}

void Yield(Launch& L, int t);  // below

void FiberMain(void* arg) {
  Launch& L = *static_cast<Launch*>(arg);
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
  L.c.run(L.c.args);
  const int t = L.cur;
  L.threads[t].state = State::kExited;
  Yield(L, t);
  std::abort();  // an exited fiber is never resumed
}

void PrepareFiber(Launch& L, Thread& t) {
#if defined(__SANITIZE_ADDRESS__)
  // Frames that returned left no poison; FiberMain's own frame (it never
  // returns) sits at the top: clear that part only (the whole stack would
  // cost 32 KiB of shadow per thread per block).
  __asan_unpoison_memory_region(t.stack.base + t.stack.size - 16384, 16384);
  t.fake_stack = nullptr;
#endif
  uintptr_t top = reinterpret_cast<uintptr_t>(t.stack.base + t.stack.size);
  top &= ~uintptr_t{15};
  auto* ret = reinterpret_cast<uint64_t*>(top - 24);  // 8 mod 16
  ret[0] = reinterpret_cast<uint64_t>(&smoe_emu_fiber_start);
  uint64_t* f = ret - 6;
  f[0] = 0;                                       // r15
  f[1] = 0;                                       // r14
  f[2] = reinterpret_cast<uint64_t>(&FiberMain);  // r13
  f[3] = reinterpret_cast<uint64_t>(&L);          // r12
  f[4] = 0;                                       // rbx
  f[5] = 0;                                       // rbp
  t.sp = f;
}

// ---- Reports ----------------------------------------------------------------

std::string Str(Dim3 d) {
  return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," +
         std::to_string(d.z) + ")";
}

std::string Str(Site s) {
  return std::string(s.file) + ":" + std::to_string(s.line);
}

const char* OpName(Op op) {
  switch (op) {
    case Op::kSyncWarp:
      return "__syncwarp";
    case Op::kShflIdx:
      return "__shfl_sync";
    case Op::kShflUp:
      return "__shfl_up_sync";
    case Op::kShflDown:
      return "__shfl_down_sync";
    case Op::kShflXor:
      return "__shfl_xor_sync";
    case Op::kBallot:
      return "__ballot_sync";
    case Op::kMatchAny:
      return "__match_any_sync";
  }
  return "?";
}

std::string Hex(unsigned m) {
  char b[16];
  std::snprintf(b, sizeof(b), "0x%08x", m);
  return b;
}

std::string Waiting(const Thread& t) {
  switch (t.state) {
    case State::kBarrier:
      return "waits at __syncthreads " + Str(t.site);
    case State::kCollective:
      return std::string("waits at ") + OpName(t.op) + "(mask " + Hex(t.mask) +
             ") " + Str(t.site);
    case State::kExited:
      return "exited";
    case State::kRunnable:
      return "runnable";
  }
  return "?";
}

}  // namespace

[[noreturn]] void Fail(Launch& L, const char* check, int thread,
                       const std::string& detail) {
  std::string head = std::string("smoe-emu: ") + check + "\n  kernel " +
                     L.c.kernel + " launched at " + Str(L.c.site) + " in " +
                     L.c.where + "\n  grid " + Str(L.c.grid) + " block " +
                     Str(L.c.block) + " dynamic shared " +
                     std::to_string(L.c.dynamic_smem) + " B, schedule " +
                     L.sched.spelling + "\n  block " + Str(L.block_idx);
  if (thread >= 0) head += " thread " + Str(L.threads[thread].idx);
  std::fprintf(stderr, "%s\n%s\n", head.c_str(), detail.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  std::_Exit(kFailExitCode);  // like compute-sanitizer --error-exitcode
}

namespace {

// Lists threads by what they wait at, merging runs of equal lines.
std::string ListThreads(const Launch& L) {
  std::string out;
  int i = 0;
  while (i < L.nthreads) {
    const std::string w = Waiting(L.threads[i]);
    int j = i + 1;
    while (j < L.nthreads && Waiting(L.threads[j]) == w) ++j;
    out += "  thread " + Str(L.threads[i].idx);
    if (j - i > 1) out += " .. " + Str(L.threads[j - 1].idx);
    out += " " + w + "\n";
    i = j;
  }
  return out;
}

// ---- Vector clocks (race build) -------------------------------------------

#if defined(SMOE_EMU_RACE_CHECK)
inline uint32_t* Clock(Launch& L, int t) {
  return L.vc.data() + static_cast<size_t>(t) * L.nthreads;
}
// The threads `base + l` for l in `lanes` (or all threads in state kBarrier
// when lanes == 0) join their clocks, then tick.
void Join(Launch& L, int base, uint32_t lanes) {
  std::vector<uint32_t>& m = L.join;
  m.assign(L.nthreads, 0);
  auto each = [&](auto&& fn) {
    if (lanes != 0) {
      for (uint32_t b = lanes; b; b &= b - 1) fn(base + __builtin_ctz(b));
    } else {
      for (int t = 0; t < L.nthreads; ++t) {
        if (L.threads[t].state == State::kBarrier) fn(t);
      }
    }
  };
  each([&](int t) {
    const uint32_t* c = Clock(L, t);
    for (int k = 0; k < L.nthreads; ++k) m[k] = std::max(m[k], c[k]);
  });
  each([&](int t) {
    uint32_t* c = Clock(L, t);
    std::copy(m.begin(), m.end(), c);
    ++c[t];
  });
}
#endif

// ---- Barriers
// -----------------------------------------------------------------

void MaybeReleaseBarrier(Launch& L) {
  if (L.at_barrier == 0 || L.at_barrier != L.live) return;
  int first = -1;
  for (int t = 0; t < L.nthreads; ++t) {
    const Thread& th = L.threads[t];
    if (th.state != State::kBarrier) continue;
    if (first < 0) {
      first = t;
    } else if (th.site.line != L.threads[first].site.line ||
               std::strcmp(th.site.file, L.threads[first].site.file) != 0) {
      Fail(L, "divergent barrier", t,
           "  threads of one block wait at different __syncthreads:\n" +
               ListThreads(L));
    }
  }
#if defined(SMOE_EMU_RACE_CHECK)
  Join(L, 0, 0);
#endif
  for (int t = 0; t < L.nthreads; ++t) {
    if (L.threads[t].state == State::kBarrier) {
      L.threads[t].state = State::kRunnable;
      Mark(L, t, true);
    }
  }
  L.at_barrier = 0;
}

// ---- Warp collectives
// --------------------------------------------------------

bool IsShuffle(Op op) {
  return op == Op::kShflIdx || op == Op::kShflUp || op == Op::kShflDown ||
         op == Op::kShflXor;
}

[[noreturn]] void Mismatch(Launch& L, int t, int other) {
  Fail(L, "warp-collective misuse", t,
       "  lanes of one warp meet with different masks or collectives:\n"
       "  lane " +
           std::to_string(t % 32) + " " + Waiting(L.threads[t]) + "\n  lane " +
           std::to_string(other % 32) + " " + Waiting(L.threads[other]));
}

// Every lane of `mask` that has not exited waits at the same collective:
// computes each lane's result and releases them.
void Complete(Launch& L, int warp, unsigned mask) {
  Warp& w = L.warps[warp];
  const int base = warp * 32;
  const uint32_t members = mask & w.waiting;
  const Thread& first = L.threads[base + __builtin_ctz(members)];
  const Op op = first.op;
  uint64_t ballot = 0;
  if (op == Op::kBallot) {
    for (uint32_t b = members; b; b &= b - 1) {
      const int l = __builtin_ctz(b);
      if (L.threads[base + l].value) ballot |= uint64_t{1} << l;
    }
  }
  for (uint32_t b = members; b; b &= b - 1) {
    const int i = __builtin_ctz(b);
    Thread& x = L.threads[base + i];
    uint64_t r = 0;
    if (IsShuffle(op)) {
      const int wd = x.width;
      const int seg = i & ~(wd - 1);
      int j = i;
      bool own = false;
      switch (op) {
        case Op::kShflIdx:
          j = seg | (x.arg & (wd - 1));
          break;
        case Op::kShflUp:
          j = i - x.arg;
          own = j < seg;
          break;
        case Op::kShflDown:
          j = i + x.arg;
          own = j > (seg | (wd - 1));
          break;
        default:  // kShflXor: PTX shfl.bfly
          j = i ^ x.arg;
          own = j > (seg | (wd - 1)) || j < 0;
      }
      if (own) {
        r = x.value;
      } else if (j < 0 || j > 31 || !((members >> j) & 1u)) {
        Fail(L, "warp-collective misuse", base + i,
             std::string("  ") + OpName(op) + " at " + Str(x.site) + ": lane " +
                 std::to_string(i) + " reads source lane " + std::to_string(j) +
                 ", outside the mask " + Hex(mask));
      } else {
        r = L.threads[base + j].value;
      }
    } else if (op == Op::kBallot) {
      r = ballot;
    } else if (op == Op::kMatchAny) {
      for (uint32_t c = members; c; c &= c - 1) {
        const int l = __builtin_ctz(c);
        if (L.threads[base + l].value == x.value) r |= uint64_t{1} << l;
      }
    }
    x.result = r;
  }
#if defined(SMOE_EMU_RACE_CHECK)
  // Memory ordering among the lanes is promised by __syncwarp only (shuffles,
  // votes and matches exchange values, not memory).
  if (op == Op::kSyncWarp) Join(L, base, members);
#endif
  w.waiting &= ~members;
  for (uint32_t b = members; b; b &= b - 1) {
    const int t = base + __builtin_ctz(b);
    L.threads[t].state = State::kRunnable;
    Mark(L, t, true);
  }
  if (w.waiting == 0) {
    w.uniform = true;
  } else {
    // Recompute whether the remaining waiters agree (rare: disjoint groups).
    const Thread& f = L.threads[base + __builtin_ctz(w.waiting)];
    w.uniform = true;
    w.u_op = f.op;
    w.u_mask = f.mask;
    for (uint32_t c = w.waiting; c; c &= c - 1) {
      const Thread& o = L.threads[base + __builtin_ctz(c)];
      if (o.op != f.op || o.mask != f.mask) w.uniform = false;
    }
  }
}

bool Ready(const Warp& w, unsigned mask) {
  const uint32_t need = mask & ~w.exited;
  return need != 0 && (w.waiting & need) == need;
}

// Thread t has just arrived at a collective: checks it against the lanes
// already waiting, and completes its group when every lane has arrived.
void Arrive(Launch& L, int t) {
  Thread& me = L.threads[t];
  const int warp = t / 32, base = warp * 32, lane = t % 32;
  Warp& w = L.warps[warp];
  const unsigned m = me.mask;
  if (!((m >> lane) & 1u)) {
    Fail(L, "warp-collective misuse", t,
         std::string("  ") + OpName(me.op) + " at " + Str(me.site) +
             ": the calling lane " + std::to_string(lane) +
             " is not in its mask " + Hex(m));
  }
  if (IsShuffle(me.op) &&
      (me.width < 1 || me.width > 32 || (me.width & (me.width - 1)) != 0)) {
    Fail(L, "warp-collective misuse", t,
         std::string("  ") + OpName(me.op) + " at " + Str(me.site) +
             ": width " + std::to_string(me.width) +
             " is not a power of two in [1, 32]");
  }
  if (m & ~w.exists) {
    Fail(L, "warp-collective misuse", t,
         std::string("  ") + OpName(me.op) + " at " + Str(me.site) + ": mask " +
             Hex(m) + " names lane " +
             std::to_string(__builtin_ctz(m & ~w.exists)) +
             ", which does not exist (block of " + std::to_string(L.nthreads) +
             " threads)");
  }
  if (me.op != Op::kSyncWarp && (m & w.exited)) {
    Fail(L, "warp-collective misuse", t,
         std::string("  ") + OpName(me.op) + " at " + Str(me.site) + ": mask " +
             Hex(m) + " names lane " +
             std::to_string(__builtin_ctz(m & w.exited)) +
             ", which has exited");
  }
  if (w.waiting == 0) {
    w.uniform = true;
    w.u_op = me.op;
    w.u_mask = m;
  } else if (!w.uniform || w.u_op != me.op || w.u_mask != m) {
    for (uint32_t b = w.waiting; b; b &= b - 1) {
      const int l = __builtin_ctz(b);
      const Thread& o = L.threads[base + l];
      const bool related = ((m >> l) & 1u) || ((o.mask >> lane) & 1u);
      if (related && (o.mask != m || o.op != me.op)) Mismatch(L, t, base + l);
    }
    w.uniform = false;
  }
  w.waiting |= 1u << lane;
  if (Ready(w, m)) Complete(L, warp, m);
}

void OnExit(Launch& L, int t) {
  --L.live;
  const int warp = t / 32, base = warp * 32, lane = t % 32;
  Warp& w = L.warps[warp];
  w.exited |= 1u << lane;
  for (uint32_t b = w.waiting; b; b &= b - 1) {
    const int l = __builtin_ctz(b);
    const Thread& o = L.threads[base + l];
    if (!((o.mask >> lane) & 1u)) continue;
    if (o.op != Op::kSyncWarp) {
      Fail(L, "warp-collective misuse", base + l,
           std::string("  ") + OpName(o.op) + " at " + Str(o.site) + ": mask " +
               Hex(o.mask) + " names lane " + std::to_string(lane) +
               ", which exited without joining");
    }
    if (Ready(w, o.mask)) {
      Complete(L, warp, o.mask);
      break;  // the waiting set changed; one exit completes one group
    }
  }
  MaybeReleaseBarrier(L);
}

// ---- Shared memory
// ---------------------------------------------------------------

// A fresh arena per block: the dynamic shared memory, then the static
// variables as the block first touches them, each followed by a redzone.
// Never-written bytes hold kSharedPoison; the ASan build poisons everything
// outside the variables.
void NewArena(Launch& L) {
  const size_t dyn = (L.c.dynamic_smem + 15) / 16 * 16;
  L.dynamic_bytes = L.c.dynamic_smem;
  L.arena_bytes =
      (dyn + kRedzone + kStaticSharedMax + 64 * kRedzone + 63) / 64 * 64;
  L.arena = static_cast<char*>(std::aligned_alloc(64, L.arena_bytes));
  std::memset(L.arena, kSharedPoison, dyn + kRedzone);
#if defined(__SANITIZE_ADDRESS__)
  __asan_poison_memory_region(L.arena, L.arena_bytes);
  __asan_unpoison_memory_region(L.arena, L.c.dynamic_smem);
#endif
  L.static_used = dyn + kRedzone;
  L.allocs.clear();
  L.allocs.push_back({0, L.c.dynamic_smem, "dynamic shared memory", {"", 0}});
  L.statics.clear();
#if defined(SMOE_EMU_RACE_CHECK)
  if (L.shared_init.size() < L.arena_bytes) L.shared_init.resize(L.arena_bytes);
#endif
}

void FreeArena(Launch& L) {
  if (L.arena == nullptr) return;
#if defined(SMOE_EMU_RACE_CHECK)
  // The next block's arena may reuse these addresses.
  std::fill(L.shared_init.begin(), L.shared_init.begin() + L.static_used, 0);
  ShadowForget(L, L.arena, L.static_used);
#endif
#if defined(__SANITIZE_ADDRESS__)
  __asan_unpoison_memory_region(L.arena, L.arena_bytes);
#endif
  std::free(L.arena);
  L.arena = nullptr;
}

// ---- Running a launch
// ---------------------------------------------------------

// Thread t has just waited or exited: handles it, then runs the next
// runnable thread (possibly t itself, without a switch).
void Yield(Launch& L, int t) {
  Thread& th = L.threads[t];
  const bool exiting = th.state == State::kExited;
  switch (th.state) {
    case State::kExited:
      OnExit(L, t);
      break;
    case State::kBarrier:
      ++L.at_barrier;
      MaybeReleaseBarrier(L);
      break;
    case State::kCollective:
      Arrive(L, t);
      break;
    case State::kRunnable:
      std::abort();
  }
  if (L.live == 0) {
    Switch(L, &th, nullptr, exiting);  // the block is done
    std::abort();
  }
  if (L.num_runnable == 0) {
    Fail(L, "deadlock", -1,
         "  no thread can run; every live thread waits:\n" + ListThreads(L));
  }
  const int next = Pick(L);
  Mark(L, next, false);
  L.cur = next;
  if (next == t) return;
  Switch(L, &th, &L.threads[next], exiting);
  L.cur = t;  // resumed (never when exiting)
}

void RunBlock(Launch& L) {
  g_blocks.fetch_add(1, std::memory_order_relaxed);
  g_threads.fetch_add(L.nthreads, std::memory_order_relaxed);
  NewArena(L);
  const Dim3 b = L.c.block;
  for (int t = 0; t < L.nthreads; ++t) {
    Thread& th = L.threads[t];
    th.state = State::kRunnable;
    th.idx = {t % b.x, (t / b.x) % b.y, t / (b.x * b.y)};
    PrepareFiber(L, th);
  }
  std::fill(L.runnable.begin(), L.runnable.end(), 0);
  L.num_runnable = 0;
  for (int t = 0; t < L.nthreads; ++t) Mark(L, t, true);
  L.live = L.nthreads;
  L.at_barrier = 0;
  for (int w = 0; w < L.nwarps; ++w) {
    const int lanes = std::min(32, L.nthreads - w * 32);
    L.warps[w] = Warp{};
    L.warps[w].exists = lanes == 32 ? ~0u : (1u << lanes) - 1u;
  }
#if defined(SMOE_EMU_RACE_CHECK)
  std::fill(L.vc.begin(), L.vc.end(), 0);
  for (int t = 0; t < L.nthreads; ++t) Clock(L, t)[t] = 1;
#endif
  const int first = Pick(L);
  Mark(L, first, false);
  L.cur = first;
  Switch(L, nullptr, &L.threads[first], false);
  L.cur = -1;
  if (L.live != 0) std::abort();  // fibers return here only when done
  FreeArena(L);
}

void RunLaunch(void* p) {
  std::unique_ptr<Launch> L(static_cast<Launch*>(p));
  g_launches.fetch_add(1, std::memory_order_relaxed);
  if (!L->sched.ok) {
    Fail(*L, "bad SMOE_EMU_SCHEDULE", -1,
         "  expected inorder, reverse, random or random:SEED");
  }
  const Dim3 g = L->c.grid, b = L->c.block;
  L->nthreads = static_cast<int>(b.x * b.y * b.z);
  L->nwarps = (L->nthreads + 31) / 32;
  L->threads.resize(L->nthreads);
  L->warps.resize(L->nwarps);
  for (Thread& th : L->threads) th.stack = TakeStack();
  L->runnable.assign((L->nthreads + 63) / 64, 0);
#if defined(SMOE_EMU_RACE_CHECK)
  L->vc.assign(static_cast<size_t>(L->nthreads) * L->nthreads, 0);
  L->shadow = NewShadow();
#endif
  const uint64_t nblocks = uint64_t{g.x} * g.y * g.z;
  std::vector<uint32_t> order(nblocks);
  for (uint64_t i = 0; i < nblocks; ++i) order[i] = static_cast<uint32_t>(i);
  if (L->sched.kind == Kind::kReverse) std::reverse(order.begin(), order.end());
  if (L->sched.kind == Kind::kRandom)
    std::shuffle(order.begin(), order.end(), L->rng);
#if defined(__SANITIZE_ADDRESS__)
  {
    pthread_attr_t attr;
    pthread_getattr_np(pthread_self(), &attr);
    void* addr = nullptr;
    size_t size = 0;
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    L->sched_stack_bottom = addr;
    L->sched_stack_size = size;
  }
#endif
  Launch* const saved = t_launch;
  t_launch = L.get();
  for (uint32_t linear : order) {
    L->block_linear = linear;
    L->block_idx = {linear % g.x, (linear / g.x) % g.y, linear / (g.x * g.y)};
    RunBlock(*L);
  }
  t_launch = saved;
  for (Thread& th : L->threads) t_stack_pool.push_back(th.stack);
#if defined(SMOE_EMU_RACE_CHECK)
  DeleteShadow(L->shadow);
#endif
  L->c.destroy(L->c.args);
}

std::atomic<uint64_t> g_launch_seq{0};

Thread& Current() {
  Launch* L = t_launch;
  if (L == nullptr || L->cur < 0) {
    std::fprintf(stderr,
                 "smoe-emu: a device function ran outside an emulated "
                 "kernel launch\n");
    std::abort();
  }
  return L->threads[L->cur];
}

}  // namespace

Launch* CurrentLaunch() {
  Launch* L = t_launch;
  return L != nullptr && L->cur >= 0 ? L : nullptr;
}
int CurrentThread(const Launch& L) { return L.cur; }
uint32_t BlockLinear(const Launch& L) { return L.block_linear; }
int NumThreads(const Launch& L) { return L.nthreads; }
const uint32_t* ClockOf(const Launch& L, int t) {
  return L.vc.data() + static_cast<size_t>(t) * L.nthreads;
}
Shadow* ShadowOf(const Launch& L) { return L.shadow; }
std::pair<const char*, size_t> Arena(const Launch& L) {
  return {L.arena, L.arena_bytes};
}
std::pair<const char*, size_t> StackOf(const Launch& L, int t) {
  return {L.threads[t].stack.base, L.threads[t].stack.size};
}
std::vector<uint8_t>& SharedInit(Launch& L) { return L.shared_init; }
std::string DescribeThread(const Launch& L, uint32_t block, int t) {
  const Dim3 g = L.c.grid, b = L.c.block;
  const Dim3 bi{block % g.x, (block / g.x) % g.y, block / (g.x * g.y)};
  const Dim3 ti{t % b.x, (t / b.x) % b.y, t / (b.x * b.y)};
  return "block " + Str(bi) + " thread " + Str(ti);
}
std::string DescribeShared(const Launch& L, const char* p) {
  const size_t off = static_cast<size_t>(p - L.arena);
  for (const SharedAlloc& a : L.allocs) {
    if (off >= a.offset && off < a.offset + std::max<size_t>(a.bytes, 1)) {
      return std::string(a.name) + "+" + std::to_string(off - a.offset) +
             (a.site.line > 0 ? " (declared at " + Str(a.site) + ")" : "");
    }
  }
  // The nearest variable below the address.
  const SharedAlloc* near = nullptr;
  for (const SharedAlloc& a : L.allocs) {
    if (a.offset <= off && (near == nullptr || a.offset > near->offset)) {
      near = &a;
    }
  }
  if (near == nullptr) return "shared arena+" + std::to_string(off);
  return std::to_string(off - near->offset - near->bytes) +
         " bytes past the end of " + near->name + " (" +
         std::to_string(near->bytes) + " bytes" +
         (near->site.line > 0 ? ", declared at " + Str(near->site) : "") + ")";
}
bool InSharedAlloc(const Launch& L, const char* p, size_t n) {
  const size_t off = static_cast<size_t>(p - L.arena);
  for (const SharedAlloc& a : L.allocs) {
    if (off >= a.offset && off + n <= a.offset + a.bytes) return true;
  }
  return false;
}
void CountRaceCheck() { g_race_checks.fetch_add(1, std::memory_order_relaxed); }

#if defined(__SANITIZE_ADDRESS__)
// AddressSanitizer / UBSan reports say where in the host program; this names
// the emulated kernel, block and thread they happened in.
void OnSanitizerDeath() {
  const Launch* L = t_launch;
  if (L == nullptr || L->cur < 0) return;
  std::fprintf(stderr,
               "smoe-emu: the error above is in kernel %s launched at %s, "
               "block %s thread %s, schedule %s\n",
               L->c.kernel, Str(L->c.site).c_str(), Str(L->block_idx).c_str(),
               Str(L->threads[L->cur].idx).c_str(), L->sched.spelling.c_str());
}
#endif

void Enqueue(const LaunchConfig& c) {
#if defined(__SANITIZE_ADDRESS__)
  static const bool registered = [] {
    __sanitizer_set_death_callback(OnSanitizerDeath);
    return true;
  }();
  (void)registered;
#endif
  auto L = std::make_unique<Launch>();
  L->c = c;
  L->sched = ParseSchedule();
  L->rng.seed(L->sched.seed * 0x9E3779B97F4A7C15ull +
              g_launch_seq.fetch_add(1, std::memory_order_relaxed));
  const uint64_t threads = uint64_t{c.block.x} * c.block.y * c.block.z;
  const uint64_t blocks = uint64_t{c.grid.x} * c.grid.y * c.grid.z;
  if (threads == 0 || threads > 1024 || blocks == 0 || c.grid.y > 65535 ||
      c.grid.z > 65535 || c.block.z > 64 ||
      c.dynamic_smem > kDynamicSharedMax) {
    Fail(*L, "invalid launch configuration", -1,
         "  CUDA refuses this launch (threads per block in [1, 1024], a "
         "non-empty grid, <= 48 KiB dynamic shared memory)");
  }
  const cudaError_t e = cudaLaunchHostFunc(c.stream, RunLaunch, L.get());
  if (e != cudaSuccess) {
    std::fprintf(stderr, "smoe-emu: cudaLaunchHostFunc failed (%d)\n",
                 static_cast<int>(e));
    std::abort();
  }
  L.release();
}

const char* KernelName(const char* spelled) {
  constexpr char kWrap[] = "SMOE_KERNEL(";
  if (std::strncmp(spelled, kWrap, sizeof(kWrap) - 1) != 0) return spelled;
  static std::mutex mu;
  static auto* names = new std::set<std::string>;
  std::string name(spelled + sizeof(kWrap) - 1);
  if (!name.empty() && name.back() == ')') name.pop_back();
  std::lock_guard<std::mutex> l(mu);
  return names->insert(name).first->c_str();
}

Dim3 ThreadIdx() { return Current().idx; }
Dim3 BlockIdx() {
  Current();
  return t_launch->block_idx;
}
Dim3 BlockDim() {
  Current();
  return t_launch->c.block;
}
Dim3 GridDim() {
  Current();
  return t_launch->c.grid;
}

void SyncThreads(Site site) {
  Thread& t = Current();
  t.state = State::kBarrier;
  t.site = site;
  Yield(*t_launch, t_launch->cur);
}

uint64_t Collective(Op op, unsigned mask, uint64_t value, int arg, int width,
                    Site site) {
  Thread& t = Current();
  t.state = State::kCollective;
  t.op = op;
  t.mask = mask;
  t.value = value;
  t.arg = arg;
  t.width = width;
  t.site = site;
  Yield(*t_launch, t_launch->cur);
  return t.result;
}

void* StaticShared(const void* key, size_t bytes, size_t align,
                   const char* name, Site site) {
  Current();
  Launch& L = *t_launch;
  auto it = L.statics.find(key);
  if (it != L.statics.end()) return it->second;
  size_t off = (L.static_used + align - 1) / align * align;
  if (off + bytes + kRedzone > L.arena_bytes) {
    Fail(L, "too much static shared memory", L.cur,
         std::string("  ") + name + " at " + Str(site) + " needs " +
             std::to_string(bytes) + " bytes beyond the 48 KiB limit");
  }
  L.static_used = off + bytes + kRedzone;
  L.allocs.push_back({off, bytes, name, site});
  void* p = L.arena + off;
#if defined(__SANITIZE_ADDRESS__)
  __asan_unpoison_memory_region(p, bytes);
#endif
  std::memset(p, kSharedPoison, bytes);
  L.statics.emplace(key, p);
  return p;
}

void* DynamicShared(const char* name, Site site) {
  Current();
  Launch& L = *t_launch;
  if (L.allocs[0].site.line == 0) {
    L.allocs[0].name = name;
    L.allocs[0].site = site;
  }
  return L.arena;
}

}  // namespace internal

Stats GetStats() {
  Stats s;
  s.launches = internal::g_launches.load();
  s.blocks = internal::g_blocks.load();
  s.threads = internal::g_threads.load();
  s.switches = internal::g_switches.load();
  s.race_checks = internal::g_race_checks.load();
  return s;
}

std::string ScheduleName() {
  const internal::Schedule s = internal::ParseSchedule();
  return s.ok ? s.spelling : "invalid (" + s.spelling + ")";
}

bool RaceCheckEnabled() {
#if defined(SMOE_EMU_RACE_CHECK)
  return true;
#else
  return false;
#endif
}

}  // namespace smoe::emu
