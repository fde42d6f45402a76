// Copyright 2026 SMoE Lab authors.
//
// The fake CUDA runtime + NCCL (tests/fakes/include/{cuda_runtime_api.h,
// nccl.h}); semantics and knobs in fake_nccl_control.h.
//
// Model: one global mutex guards all fake state and one condition variable is
// notified on every state change; every blocking wait is a predicate wait on
// it. Each stream has a detached worker thread that pops operations in FIFO
// order, sleeps a random delay, waits for the operation's dependencies
// (legacy-stream ordering), runs it and counts it complete. A timer thread
// runs delayed actions: the nonblocking NCCL enqueues and init completions.
// NCCL kernels run on stream threads and wait (on the same condition
// variable) for their peers; ncclCommAbort releases them. Nothing here is
// ever freed while a thread could still touch it: streams, communicators and
// cliques live until the process ends (tests create few), and freed
// "device" memory sits in a bounded quarantine first.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda_runtime_api.h"
#include "nccl.h"
#include "tests/fakes/fake_nccl_control.h"

namespace smoe_fake {

using Clock = std::chrono::steady_clock;

struct Task {
  std::function<void()> run;  // runs without the lock held
  std::vector<std::pair<CUstream_st*, uint64_t>> deps;
};

struct CUstream_st {
  uint64_t id = 0;
  int device = 0;
  bool legacy = false;
  bool nonblocking = false;
  bool destroyed = false;
  std::deque<Task> queue;
  uint64_t enqueued = 0;
  uint64_t completed = 0;
  int64_t nccl_kernels = 0;
  std::mt19937_64 rng;
};

struct Clique;

struct ncclComm {
  std::shared_ptr<Clique> clique;
  int rank = 0;
  int nranks = 0;
  int device = 0;
  bool blocking = true;
  ncclResult_t async = ncclInProgress;
  bool aborted = false;     // kernels and waits give up
  bool finalizing = false;  // ncclCommFinalize called
  int64_t launches = 0;
  int64_t inflight = 0;  // launched, kernel not finished (or not enqueued)
  std::map<int, uint64_t> send_seq, recv_seq;
  uint64_t coll_seq = 0;
};

namespace {

struct Msg {
  const void* data = nullptr;
  size_t count = 0;
  ncclDataType_t type = ncclFloat32;
  bool consumed = false;
};

struct CollSlot {
  int arrived = 0;
  int done = 0;
  size_t count = 0;
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  std::vector<const void*> send;
  bool computed = false;
  std::vector<unsigned char> result;
};

}  // namespace

struct Clique {
  int nranks = 0;
  std::vector<ncclComm*> members;
  int joined = 0;
  std::map<std::tuple<int, int, uint64_t>, Msg> mailbox;  // (src, dst, seq)
  std::map<uint64_t, CollSlot> colls;
};

namespace {

struct Alloc {
  size_t size = 0;
  int device = 0;
  bool freed = false;
};

struct Fault {
  int64_t error_at = -1;
  ncclResult_t error = ncclSuccess;
  bool propagate = false;
  int64_t hang_at = -1;
  int64_t enqueue_delay_us = -1;
};

struct PendingOp {
  enum Kind { kSend, kRecv, kAllReduce } kind = kSend;
  ncclComm* comm = nullptr;
  CUstream_st* stream = nullptr;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  int peer = 0;
  uint64_t seq = 0;
};

struct State {
  std::mutex mu;
  std::condition_variable cv;
  smoe::fake_nccl::Config config;
  uint64_t seed = 1;
  std::mt19937_64 rng{1};
  uint64_t next_stream_id = 1;
  uint64_t next_unique_id = 1;
  std::vector<std::string> violations;
  std::map<uintptr_t, Alloc> device_allocs;
  std::map<uintptr_t, size_t> pinned;
  std::deque<uintptr_t> quarantine;
  size_t quarantine_bytes = 0;
  std::vector<CUstream_st*> legacy;  // per device, created lazily
  std::set<CUstream_st*> streams;    // live (user and legacy)
  std::vector<cudaError_t> sticky;   // per device
  std::map<std::string, std::shared_ptr<Clique>> cliques;
  std::vector<std::unique_ptr<ncclComm>> all_comms;
  std::set<ncclComm*> handles;  // valid communicator handles
  std::map<int, Fault> faults;
  smoe::fake_nccl::Stats stats;
  std::multimap<Clock::time_point, std::function<void()>> timers;
  bool timer_started = false;
  // Host threads blocked inside a fake CUDA call right now.
  std::map<uint64_t, std::pair<std::string, Clock::time_point>> blocked;
  uint64_t next_block_id = 1;
};

State& G() {
  static State* s = new State;  // never destroyed: detached threads use it
  return *s;
}

thread_local int tls_device = 0;
thread_local int tls_group_depth = 0;
thread_local std::vector<PendingOp> tls_group_ops;
thread_local ncclResult_t tls_group_error = ncclSuccess;

// One-shot synchronous failures (smoe::fake_nccl::FailCall). Own mutex: the
// API functions check it before taking G().mu.
struct CallFault {
  std::string call;
  int error = 0;
  int device = -1;  // -1: any
  int skip = 0;
  // FailCallWhileBusy: counts only once a cudaStreamQuery on `device` has
  // answered cudaErrorNotReady (`armed` from then on).
  bool while_busy = false;
  bool armed = true;
};
std::mutex& CallFaultMu() {
  static std::mutex* m = new std::mutex;
  return *m;
}
std::vector<CallFault>& CallFaults() {
  static std::vector<CallFault>* v = new std::vector<CallFault>;
  return *v;
}
std::vector<std::string>& FiredFaults() {
  static std::vector<std::string>* v = new std::vector<std::string>;
  return *v;
}

// The error armed for this call of `call` on `device`, once; 0 when none.
int InjectedError(const char* call, int device) {
  std::lock_guard<std::mutex> l(CallFaultMu());
  std::vector<CallFault>& v = CallFaults();
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (it->call != call || (it->device >= 0 && it->device != device) ||
        !it->armed) {
      continue;
    }
    if (it->skip > 0) {
      --it->skip;
      return 0;
    }
    const int e = it->error;
    FiredFaults().push_back(std::string(call) + " on device " +
                            std::to_string(device));
    v.erase(it);
    return e;
  }
  return 0;
}

#define SMOE_FAKE_INJECT(call, type, device)                 \
  do {                                                       \
    if (const int injected_ = InjectedError(call, device)) { \
      return static_cast<type>(injected_);                   \
    }                                                        \
  } while (false)

using Lock = std::unique_lock<std::mutex>;

void Violation(const std::string& what) {  // lock held
  G().violations.push_back(what);
  std::fprintf(stderr, "[fake nccl/cuda] VIOLATION: %s\n", what.c_str());
}

int64_t Rand(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
}

// ---- Timer thread --------------------------------------------------------

void TimerLoop() {
  State& g = G();
  Lock l(g.mu);
  while (true) {
    if (g.timers.empty()) {
      g.cv.wait(l);
      continue;
    }
    auto it = g.timers.begin();
    if (Clock::now() < it->first) {
      g.cv.wait_until(l, it->first);
      continue;
    }
    std::function<void()> fn = std::move(it->second);
    g.timers.erase(it);
    fn();  // under the lock: short state changes only
    g.cv.notify_all();
  }
}

void Schedule(int64_t delay_us, std::function<void()> fn) {  // lock held
  State& g = G();
  if (!g.timer_started) {
    g.timer_started = true;
    std::thread(TimerLoop).detach();
  }
  g.timers.emplace(Clock::now() + std::chrono::microseconds(delay_us),
                   std::move(fn));
  g.cv.notify_all();
}

// ---- Memory ----------------------------------------------------------------

// The device allocation containing [p, p + n), or nullptr.
Alloc* FindDevice(const void* p, size_t n) {  // lock held
  auto& m = G().device_allocs;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = m.upper_bound(a);
  if (it == m.begin()) return nullptr;
  --it;
  if (a + n > it->first + std::max<size_t>(it->second.size, 1)) return nullptr;
  if (a < it->first) return nullptr;
  return &it->second;
}

bool IsPinned(const void* p, size_t n) {  // lock held
  auto& m = G().pinned;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = m.upper_bound(a);
  if (it == m.begin()) return false;
  --it;
  return a >= it->first && a + n <= it->first + it->second;
}

bool IsDevice(const void* p) {  // lock held
  return FindDevice(p, 0) != nullptr;
}

// At execution time of a stream op: the device range must not be freed.
bool CheckLive(const void* p, size_t n, int device, const char* what) {
  if (n == 0) return true;
  Alloc* a = FindDevice(p, n);
  if (a == nullptr || !a->freed) return true;  // host memory, or live
  Violation(std::string(what) + " touched freed device memory");
  if (device >= 0 && device < static_cast<int>(G().sticky.size())) {
    G().sticky[device] = cudaErrorIllegalAddress;
  }
  return false;
}

// ---- Streams ---------------------------------------------------------------

void NoteHostBlock(Clock::time_point start, const char* what) {  // lock held
  const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(
                         Clock::now() - start)
                         .count();
  if (us > G().stats.max_host_block_us) {
    G().stats.max_host_block_us = us;
    G().stats.max_host_block_call = what;
  }
}

void Worker(CUstream_st* s) {
  State& g = G();
  Lock l(g.mu);
  while (true) {
    g.cv.wait(l, [&] { return !s->queue.empty() || s->destroyed; });
    if (s->queue.empty()) return;  // destroyed and drained
    Task t = std::move(s->queue.front());
    s->queue.pop_front();
    const int64_t delay = Rand(s->rng, 0, g.config.max_stream_op_delay_us);
    g.cv.wait(l, [&] {
      for (const auto& [dep, seq] : t.deps) {
        if (dep->completed < seq) return false;
      }
      return true;
    });
    l.unlock();
    if (delay > 0)
      std::this_thread::sleep_for(std::chrono::microseconds(delay));
    if (t.run) t.run();
    l.lock();
    ++s->completed;
    ++g.stats.stream_ops;
    g.cv.notify_all();
  }
}

CUstream_st* NewStream(int device, bool legacy, bool nonblocking) {
  State& g = G();
  auto* s = new CUstream_st;  // lives until the process ends
  s->id = g.next_stream_id++;
  s->device = device;
  s->legacy = legacy;
  s->nonblocking = nonblocking;
  s->rng.seed(g.seed ^ (s->id * 0x9E3779B97F4A7C15ull));
  g.streams.insert(s);
  std::thread(Worker, s).detach();
  return s;
}

CUstream_st* Legacy(int device) {  // lock held
  State& g = G();
  if (static_cast<int>(g.legacy.size()) <= device) {
    g.legacy.resize(device + 1, nullptr);
  }
  if (g.legacy[device] == nullptr) {
    g.legacy[device] = NewStream(device, true, false);
  }
  return g.legacy[device];
}

// nullptr for an unknown or destroyed handle.
CUstream_st* Resolve(cudaStream_t h) {  // lock held
  if (h == nullptr || h == cudaStreamLegacy || h == cudaStreamPerThread) {
    return Legacy(tls_device);
  }
  if (G().streams.count(h) == 0) return nullptr;
  return h;
}

// Enqueues `run` on `s` with CUDA's legacy-stream ordering; returns the
// sequence number the op completes at.
uint64_t Enqueue(CUstream_st* s, std::function<void()> run) {  // lock held
  State& g = G();
  Task t;
  t.run = std::move(run);
  if (s->legacy) {
    for (CUstream_st* b : g.streams) {
      if (b != s && !b->legacy && !b->nonblocking && b->device == s->device &&
          b->enqueued > b->completed) {
        t.deps.push_back({b, b->enqueued});
      }
    }
  } else if (!s->nonblocking) {
    CUstream_st* l = Legacy(s->device);
    if (l->enqueued > l->completed) t.deps.push_back({l, l->enqueued});
  }
  s->queue.push_back(std::move(t));
  ++s->enqueued;
  g.cv.notify_all();
  return s->enqueued;
}

// Registers the calling thread as blocked in `what` while it exists.
class BlockScope {
 public:
  explicit BlockScope(const char* what)
      : what_(what), start_(Clock::now()), id_(G().next_block_id++) {
    G().blocked[id_] = {what, start_};
  }
  ~BlockScope() {
    G().blocked.erase(id_);
    NoteHostBlock(start_, what_);
  }
  BlockScope(const BlockScope&) = delete;
  BlockScope& operator=(const BlockScope&) = delete;

 private:
  const char* what_;
  Clock::time_point start_;
  uint64_t id_;
};

void WaitSeq(Lock& l, CUstream_st* s, uint64_t seq, const char* what) {
  BlockScope b(what);
  G().cv.wait(l, [&] { return s->completed >= seq; });
}

void WaitDevice(Lock& l, int device, const char* what) {
  std::vector<std::pair<CUstream_st*, uint64_t>> wait;
  for (CUstream_st* s : G().streams) {
    if (s->device == device) wait.push_back({s, s->enqueued});
  }
  BlockScope b(what);
  G().cv.wait(l, [&] {
    for (const auto& [s, seq] : wait) {
      if (s->completed < seq) return false;
    }
    return true;
  });
}

cudaError_t Sticky(int device) {  // lock held
  const auto& v = G().sticky;
  if (device < 0 || device >= static_cast<int>(v.size())) return cudaSuccess;
  return v[device];
}

// Validates `kind` against the pointers; returns the effective kind or -1.
int CheckKind(void* dst, const void* src, size_t n, cudaMemcpyKind kind,
              const char* fn) {  // lock held
  const bool dd = n == 0 || FindDevice(dst, n) != nullptr;
  const bool sd = n == 0 || FindDevice(src, n) != nullptr;
  if (kind == cudaMemcpyDefault) {
    if (dd && sd) return cudaMemcpyDeviceToDevice;
    if (dd) return cudaMemcpyHostToDevice;
    if (sd) return cudaMemcpyDeviceToHost;
    return cudaMemcpyHostToHost;
  }
  const bool ok =
      (kind == cudaMemcpyHostToDevice && dd && !IsDevice(src)) ||
      (kind == cudaMemcpyDeviceToHost && sd && !IsDevice(dst)) ||
      (kind == cudaMemcpyDeviceToDevice && dd && sd) ||
      (kind == cudaMemcpyHostToHost && !IsDevice(dst) && !IsDevice(src));
  if (!ok) {
    Violation(std::string(fn) + ": kind " + std::to_string(kind) +
              " does not match the pointers (or the range leaves a device "
              "allocation)");
    return -1;
  }
  return kind;
}

// A copy task: checks at execution time that device ranges are still live.
std::function<void()> CopyTask(void* dst, const void* src, size_t n,
                               std::shared_ptr<std::vector<char>> staged,
                               int device) {
  return [=] {
    {
      Lock l(G().mu);
      const bool ok =
          CheckLive(dst, n, device, "cudaMemcpyAsync (dst)") &&
          (staged || CheckLive(src, n, device, "cudaMemcpyAsync (src)"));
      if (!ok) return;
    }
    if (n > 0) std::memcpy(dst, staged ? staged->data() : src, n);
  };
}

// ---- NCCL helpers ---------------------------------------------------------

size_t TypeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

float Bf16ToFloat(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t FloatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const int exp = (h >> 10) & 0x1f;
  const uint32_t man = h & 0x3ffu;
  float f;
  if (exp == 0) {
    f = std::ldexp(static_cast<float>(man), -24);
  } else if (exp == 31) {
    f = man ? std::numeric_limits<float>::quiet_NaN()
            : std::numeric_limits<float>::infinity();
  } else {
    f = std::ldexp(static_cast<float>(man | 0x400u), exp - 25);
  }
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u |= sign;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const float a = std::fabs(f);
  if (std::isnan(f)) return sign | 0x7e00;
  if (a >= 65520.0f) return sign | 0x7c00;
  if (a < std::ldexp(1.0f, -24)) {
    return a >= std::ldexp(1.0f, -25) ? (sign | 1) : sign;
  }
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int exp = e - 1 + 15;
  if (exp <= 0) {  // subnormal: units of 2^-24
    const float q = std::nearbyint(std::ldexp(a, 24));
    return sign | static_cast<uint16_t>(q);
  }
  const float q = std::nearbyint(std::ldexp(a, 10 - (e - 1)));  // 1024..2048
  uint32_t man = static_cast<uint32_t>(q);
  if (man == 2048) {
    man = 1024;
    ++exp;
  }
  if (exp >= 31) return sign | 0x7c00;
  return sign | static_cast<uint16_t>((exp << 10) | (man & 0x3ffu));
}

template <typename T, typename Acc>
void ReduceTyped(const std::vector<const void*>& src, size_t n, ncclRedOp_t op,
                 void* out, Acc (*load)(T), T (*store)(Acc)) {
  for (size_t i = 0; i < n; ++i) {
    Acc acc = load(static_cast<const T*>(src[0])[i]);
    for (size_t r = 1; r < src.size(); ++r) {
      const Acc v = load(static_cast<const T*>(src[r])[i]);
      switch (op) {
        case ncclProd:
          acc = acc * v;
          break;
        case ncclMax:
          acc = std::max(acc, v);
          break;
        case ncclMin:
          acc = std::min(acc, v);
          break;
        default:  // ncclSum, ncclAvg
          acc = acc + v;
      }
    }
    if (op == ncclAvg) acc = acc / static_cast<Acc>(src.size());
    static_cast<T*>(out)[i] = store(acc);
  }
}

template <typename T>
T Same(T v) {
  return v;
}

// Integers wrap like the GPU's (no signed-overflow UB here).
template <typename T>
void ReduceInt(const std::vector<const void*>& src, size_t n, ncclRedOp_t op,
               void* out) {
  using U = std::make_unsigned_t<T>;
  for (size_t i = 0; i < n; ++i) {
    T acc = static_cast<const T*>(src[0])[i];
    for (size_t r = 1; r < src.size(); ++r) {
      const T v = static_cast<const T*>(src[r])[i];
      switch (op) {
        case ncclProd:
          acc = static_cast<T>(static_cast<U>(acc) * static_cast<U>(v));
          break;
        case ncclMax:
          acc = std::max(acc, v);
          break;
        case ncclMin:
          acc = std::min(acc, v);
          break;
        default:
          acc = static_cast<T>(static_cast<U>(acc) + static_cast<U>(v));
      }
    }
    if (op == ncclAvg) acc = static_cast<T>(acc / static_cast<T>(src.size()));
    static_cast<T*>(out)[i] = acc;
  }
}

void Reduce(const std::vector<const void*>& src, size_t n, ncclDataType_t t,
            ncclRedOp_t op, void* out) {
  switch (t) {
    case ncclInt8:
      ReduceInt<int8_t>(src, n, op, out);
      break;
    case ncclUint8:
      ReduceInt<uint8_t>(src, n, op, out);
      break;
    case ncclInt32:
      ReduceInt<int32_t>(src, n, op, out);
      break;
    case ncclUint32:
      ReduceInt<uint32_t>(src, n, op, out);
      break;
    case ncclInt64:
      ReduceInt<int64_t>(src, n, op, out);
      break;
    case ncclUint64:
      ReduceInt<uint64_t>(src, n, op, out);
      break;
    case ncclFloat32:
      ReduceTyped<float, float>(src, n, op, out, Same, Same);
      break;
    case ncclFloat64:
      ReduceTyped<double, double>(src, n, op, out, Same, Same);
      break;
    case ncclFloat16:
      ReduceTyped<uint16_t, float>(src, n, op, out, HalfToFloat, FloatToHalf);
      break;
    case ncclBfloat16:
      ReduceTyped<uint16_t, float>(src, n, op, out, Bf16ToFloat, FloatToBf16);
      break;
    default:
      break;
  }
}

// Checks a communicator handle for an API call (lock held).
ncclResult_t CheckComm(ncclComm* c, const char* fn, bool allow_in_progress) {
  if (c == nullptr) {
    Violation(std::string(fn) + ": null communicator");
    return ncclInvalidArgument;
  }
  if (G().handles.count(c) == 0) {
    Violation(std::string(fn) +
              ": communicator used after ncclCommAbort/ncclCommDestroy (or "
              "from an earlier test)");
    return ncclInvalidUsage;
  }
  if (!allow_in_progress && c->async == ncclInProgress) {
    Violation(std::string(fn) + " on rank " + std::to_string(c->rank) +
              ": called while the communicator's previous nonblocking "
              "operation is still in progress (poll ncclCommGetAsyncError "
              "until ncclSuccess first)");
    return ncclInvalidUsage;
  }
  if (!allow_in_progress && c->finalizing) {
    Violation(std::string(fn) + ": called after ncclCommFinalize");
    return ncclInvalidUsage;
  }
  if (!allow_in_progress && c->async != ncclSuccess) return c->async;
  return ncclSuccess;
}

ncclResult_t CheckBuffer(ncclComm* c, const void* p, size_t n,
                         const char* fn) {  // lock held
  if (n == 0 || !G().config.strict_device_pointers) return ncclSuccess;
  Alloc* a = FindDevice(p, n);
  if (a == nullptr || a->freed || a->device != c->device) {
    Violation(std::string(fn) + " on rank " + std::to_string(c->rank) +
              ": buffer is not live device memory of device " +
              std::to_string(c->device));
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

void FinishKernel(ncclComm* c, bool ran) {  // lock held
  --c->inflight;
  if (ran) ++G().stats.kernels_run;
  if (c->finalizing && c->inflight == 0 && c->async == ncclInProgress) {
    c->async = ncclSuccess;
  }
  G().cv.notify_all();
}

// Runs one launch's operations on a stream thread (lock NOT held on entry).
void RunKernel(ncclComm* c, std::vector<PendingOp> ops, bool stuck) {
  State& g = G();
  Lock l(g.mu);
  Clique& q = *c->clique;
  const int me = c->rank;
  if (stuck) {
    g.cv.wait(l, [&] { return c->aborted; });
    FinishKernel(c, false);
    return;
  }
  // 1. Post every send (a send completes when its receiver consumed it).
  for (const PendingOp& op : ops) {
    if (op.kind != PendingOp::kSend) continue;
    Msg m;
    m.data = op.send;
    m.count = op.count;
    m.type = op.type;
    q.mailbox[{me, op.peer, op.seq}] = m;
  }
  g.cv.notify_all();
  bool ok = true;
  // 2. Receives and all-reduces, in launch order.
  for (const PendingOp& op : ops) {
    if (!ok) break;
    if (op.kind == PendingOp::kRecv) {
      const auto key = std::make_tuple(op.peer, me, op.seq);
      g.cv.wait(l, [&] { return c->aborted || q.mailbox.count(key) > 0; });
      if (c->aborted) {
        ok = false;
        break;
      }
      Msg& m = q.mailbox[key];
      if (m.count != op.count || m.type != op.type) {
        Violation("ncclRecv on rank " + std::to_string(me) + " from " +
                  std::to_string(op.peer) + ": expects " +
                  std::to_string(op.count) + " elements of type " +
                  std::to_string(op.type) + ", the matching ncclSend has " +
                  std::to_string(m.count) + " of type " +
                  std::to_string(m.type));
        c->async = ncclInvalidUsage;
      }
      const size_t bytes =
          std::min(m.count * TypeSize(m.type), op.count * TypeSize(op.type));
      if (CheckLive(m.data, bytes, c->device, "ncclSend kernel (source)") &&
          CheckLive(op.recv, bytes, c->device, "ncclRecv kernel")) {
        std::memcpy(op.recv, m.data, bytes);
      }
      m.consumed = true;
      g.cv.notify_all();
    } else if (op.kind == PendingOp::kAllReduce) {
      CollSlot& s = q.colls[op.seq];
      if (s.arrived == 0) {
        s.count = op.count;
        s.type = op.type;
        s.op = op.op;
        s.send.assign(q.nranks, nullptr);
      } else if (s.count != op.count || s.type != op.type || s.op != op.op) {
        Violation("ncclAllReduce #" + std::to_string(op.seq) + " on rank " +
                  std::to_string(me) + ": count/type/op differ between ranks");
        c->async = ncclInvalidUsage;
      }
      s.send[me] = op.send;
      ++s.arrived;
      g.cv.notify_all();
      auto compute = [&] {
        if (s.computed) return;
        bool live = true;
        for (int r = 0; r < q.nranks; ++r) {
          live = CheckLive(s.send[r], s.count * TypeSize(s.type), c->device,
                           "ncclAllReduce kernel") &&
                 live;
        }
        s.result.assign(s.count * TypeSize(s.type), 0);
        if (live) Reduce(s.send, s.count, s.type, s.op, s.result.data());
        s.computed = true;
      };
      g.cv.wait(l, [&] { return c->aborted || s.arrived == q.nranks; });
      if (c->aborted) {
        // An aborted rank's buffer may be freed as soon as its stream moves
        // on: peers never read it afterwards. All there: reduce now, while
        // every buffer is live. Else withdraw: the peers' kernels never
        // complete (as with a dead peer), until their own abort.
        if (s.arrived == q.nranks) {
          compute();
        } else {
          --s.arrived;
          s.send[me] = nullptr;
        }
        ok = false;
        break;
      }
      compute();
      if (CheckLive(op.recv, s.result.size(), c->device,
                    "ncclAllReduce kernel")) {
        std::memcpy(op.recv, s.result.data(),
                    std::min(s.result.size(), op.count * TypeSize(op.type)));
      }
      if (++s.done == q.nranks) q.colls.erase(op.seq);
      g.cv.notify_all();
    }
  }
  // 3. Wait until every send was consumed.
  for (const PendingOp& op : ops) {
    if (op.kind != PendingOp::kSend) continue;
    const auto key = std::make_tuple(me, op.peer, op.seq);
    if (ok) {
      g.cv.wait(l, [&] {
        auto it = q.mailbox.find(key);
        return c->aborted || it == q.mailbox.end() || it->second.consumed;
      });
      if (c->aborted) ok = false;
    }
    q.mailbox.erase(key);  // consumed, or withdrawn by the abort
  }
  FinishKernel(c, ok);
}

// Launches `ops` (all of communicator `c`); lock held.
ncclResult_t Launch(ncclComm* c, std::vector<PendingOp> ops) {
  State& g = G();
  CUstream_st* stream = ops.front().stream;
  for (const PendingOp& op : ops) {
    if (op.stream != stream) {
      Violation(
          "one NCCL group used several streams on one communicator "
          "(the fake does not model that)");
      return ncclInvalidUsage;
    }
  }
  const int64_t n = c->launches++;
  ++g.stats.launches;
  for (PendingOp& op : ops) {
    if (op.kind == PendingOp::kSend) op.seq = c->send_seq[op.peer]++;
    if (op.kind == PendingOp::kRecv) op.seq = c->recv_seq[op.peer]++;
    if (op.kind == PendingOp::kAllReduce) op.seq = c->coll_seq++;
  }
  Fault f;
  if (auto it = g.faults.find(c->rank); it != g.faults.end()) f = it->second;
  const bool error = f.error_at == n;
  const bool stuck = error || (f.hang_at >= 0 && n >= f.hang_at);
  ++c->inflight;
  auto enqueue = [c, ops, stuck, error, f, stream] {  // lock held
    if (c->aborted) {
      FinishKernel(c, false);
      return;
    }
    ++stream->nccl_kernels;
    Enqueue(stream, [c, ops, stuck] { RunKernel(c, ops, stuck); });
    if (error) {
      c->async = f.error;
      if (f.propagate) {
        for (ncclComm* p : c->clique->members) {
          if (p != nullptr && p != c && !p->aborted) p->async = ncclRemoteError;
        }
      }
    } else if (c->async == ncclInProgress) {
      c->async = ncclSuccess;
    }
  };
  if (c->blocking) {
    enqueue();
    return c->async == ncclSuccess ? ncclSuccess : c->async;
  }
  c->async = ncclInProgress;
  const int64_t delay = f.enqueue_delay_us >= 0
                            ? f.enqueue_delay_us
                            : Rand(g.rng, g.config.min_enqueue_delay_us,
                                   g.config.max_enqueue_delay_us);
  Schedule(delay, enqueue);
  return ncclInProgress;
}

// Validates and either records (inside a group) or launches one operation.
ncclResult_t Submit(PendingOp op, const char* fn, cudaStream_t stream) {
  State& g = G();
  Lock l(g.mu);
  ncclResult_t r = CheckComm(op.comm, fn, false);
  if (r == ncclSuccess) {
    if (TypeSize(op.type) == 0) {
      Violation(std::string(fn) + ": unsupported data type");
      r = ncclInvalidArgument;
    }
  }
  if (r == ncclSuccess) {
    op.stream = Resolve(stream);
    if (op.stream == nullptr || op.stream->device != op.comm->device) {
      Violation(std::string(fn) + ": stream is invalid or of another device");
      r = ncclInvalidArgument;
    }
  }
  if (r == ncclSuccess &&
      (op.kind == PendingOp::kSend || op.kind == PendingOp::kRecv)) {
    if (op.peer < 0 || op.peer >= op.comm->nranks) {
      Violation(std::string(fn) + ": peer out of range");
      r = ncclInvalidArgument;
    }
  }
  if (r == ncclSuccess && op.send != nullptr) {
    r = CheckBuffer(op.comm, op.send, op.count * TypeSize(op.type), fn);
  }
  if (r == ncclSuccess && op.recv != nullptr) {
    r = CheckBuffer(op.comm, op.recv, op.count * TypeSize(op.type), fn);
  }
  if (r == ncclSuccess && op.count > 0 &&
      ((op.kind != PendingOp::kRecv && op.send == nullptr) ||
       (op.kind != PendingOp::kSend && op.recv == nullptr))) {
    Violation(std::string(fn) + ": null buffer with a non-zero count");
    r = ncclInvalidArgument;
  }
  if (tls_group_depth > 0) {
    if (r != ncclSuccess) {
      tls_group_error = r;
      return r;
    }
    tls_group_ops.push_back(op);
    return ncclSuccess;
  }
  if (r != ncclSuccess) return r;
  return Launch(op.comm, {op});
}

}  // namespace

// ---- CUDA runtime API ------------------------------------------------------

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorNoDevice:
      return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorIllegalAddress:
      return "cudaErrorIllegalAddress";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
    case cudaErrorUnknown:
      return "cudaErrorUnknown";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorNoDevice:
      return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorIllegalAddress:
      return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure";
    case cudaErrorUnknown:
      return "unknown error";
  }
  return "unknown error";
}

cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaPeekAtLastError() { return cudaSuccess; }

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  SMOE_FAKE_INJECT("cudaGetDeviceProperties", cudaError_t, device);
  Lock l(G().mu);
  if (prop == nullptr) return cudaErrorInvalidValue;
  if (device < 0 || device >= G().config.num_devices) {
    return cudaErrorInvalidDevice;
  }
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof(prop->name), "Fake GPU %d", device);
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 132;
  prop->totalGlobalMem = size_t{80} << 30;
  prop->pciBusID = 0x18 + device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int* count) {
  SMOE_FAKE_INJECT("cudaGetDeviceCount", cudaError_t, tls_device);
  Lock l(G().mu);
  *count = G().config.num_devices;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  SMOE_FAKE_INJECT("cudaSetDevice", cudaError_t, device);
  Lock l(G().mu);
  if (device < 0 || device >= G().config.num_devices) {
    return cudaErrorInvalidDevice;
  }
  tls_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  SMOE_FAKE_INJECT("cudaGetDevice", cudaError_t, tls_device);
  *device = tls_device;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* v) {
  SMOE_FAKE_INJECT("cudaDriverGetVersion", cudaError_t, tls_device);
  if (v == nullptr) return cudaErrorInvalidValue;
  *v = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* v) {
  SMOE_FAKE_INJECT("cudaRuntimeGetVersion", cudaError_t, tls_device);
  if (v == nullptr) return cudaErrorInvalidValue;
  *v = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  SMOE_FAKE_INJECT("cudaDeviceSynchronize", cudaError_t, tls_device);
  State& g = G();
  Lock l(g.mu);
  WaitDevice(l, tls_device, "cudaDeviceSynchronize");
  return Sticky(tls_device);
}

cudaError_t cudaMalloc(void** p, size_t size) {
  SMOE_FAKE_INJECT("cudaMalloc", cudaError_t, tls_device);
  State& g = G();
  if (p == nullptr) return cudaErrorInvalidValue;
  if (size == 0) {
    *p = nullptr;
    return cudaSuccess;
  }
  const size_t rounded = (size + 255) / 256 * 256;
  void* mem = std::aligned_alloc(256, rounded);
  if (mem == nullptr) return cudaErrorMemoryAllocation;
  std::memset(mem, 0xA5, rounded);  // uninitialised device memory
  Lock l(g.mu);
  Alloc a;
  a.size = size;
  a.device = tls_device;
  g.device_allocs[reinterpret_cast<uintptr_t>(mem)] = a;
  *p = mem;
  return cudaSuccess;
}

cudaError_t cudaFree(void* p) {
  SMOE_FAKE_INJECT("cudaFree", cudaError_t, tls_device);
  State& g = G();
  if (p == nullptr) return cudaSuccess;
  Lock l(g.mu);
  auto it = g.device_allocs.find(reinterpret_cast<uintptr_t>(p));
  if (it == g.device_allocs.end() || it->second.freed) {
    Violation("cudaFree of a pointer that is not a live cudaMalloc base");
    return cudaErrorInvalidValue;
  }
  // cudaFree synchronises the device (CUDA's implicit synchronisation).
  WaitDevice(l, it->second.device, "cudaFree");
  it = g.device_allocs.find(reinterpret_cast<uintptr_t>(p));
  it->second.freed = true;
  std::memset(p, 0xDB, it->second.size);  // poison
  g.quarantine.push_back(it->first);
  g.quarantine_bytes += it->second.size;
  while (g.quarantine_bytes > (64u << 20) && g.quarantine.size() > 1) {
    const uintptr_t old = g.quarantine.front();
    g.quarantine.pop_front();
    auto o = g.device_allocs.find(old);
    g.quarantine_bytes -= o->second.size;
    g.device_allocs.erase(o);
    std::free(reinterpret_cast<void*>(old));
  }
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** p, size_t size) {
  SMOE_FAKE_INJECT("cudaMallocHost", cudaError_t, tls_device);
  State& g = G();
  if (p == nullptr) return cudaErrorInvalidValue;
  const size_t rounded = (std::max<size_t>(size, 1) + 255) / 256 * 256;
  void* mem = std::aligned_alloc(256, rounded);
  if (mem == nullptr) return cudaErrorMemoryAllocation;
  Lock l(g.mu);
  g.pinned[reinterpret_cast<uintptr_t>(mem)] = rounded;
  *p = mem;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* p) {
  SMOE_FAKE_INJECT("cudaFreeHost", cudaError_t, tls_device);
  State& g = G();
  if (p == nullptr) return cudaSuccess;
  Lock l(g.mu);
  auto it = g.pinned.find(reinterpret_cast<uintptr_t>(p));
  if (it == g.pinned.end()) {
    Violation("cudaFreeHost of a pointer that is not a cudaMallocHost base");
    return cudaErrorInvalidValue;
  }
  WaitDevice(l, tls_device, "cudaFreeHost");
  g.pinned.erase(it);
  std::free(p);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t n,
                       cudaMemcpyKind kind) {
  SMOE_FAKE_INJECT("cudaMemcpy", cudaError_t, tls_device);
  State& g = G();
  Lock l(g.mu);
  if (CheckKind(dst, src, n, kind, "cudaMemcpy") < 0) {
    return cudaErrorInvalidValue;
  }
  if (cudaError_t e = Sticky(tls_device); e != cudaSuccess) return e;
  // Issued on the legacy stream (ordered after the device's blocking
  // streams, NOT after cudaStreamNonBlocking ones), host waits for it.
  CUstream_st* s = Legacy(tls_device);
  const uint64_t seq = Enqueue(s, CopyTask(dst, src, n, nullptr, s->device));
  WaitSeq(l, s, seq, "cudaMemcpy");
  return Sticky(tls_device);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n,
                            cudaMemcpyKind kind, cudaStream_t stream) {
  SMOE_FAKE_INJECT("cudaMemcpyAsync", cudaError_t, tls_device);
  State& g = G();
  Lock l(g.mu);
  const int k = CheckKind(dst, src, n, kind, "cudaMemcpyAsync");
  if (k < 0) return cudaErrorInvalidValue;
  CUstream_st* s = Resolve(stream);
  if (s == nullptr) {
    Violation("cudaMemcpyAsync on an invalid stream");
    return cudaErrorInvalidResourceHandle;
  }
  if (cudaError_t e = Sticky(s->device); e != cudaSuccess) return e;
  std::shared_ptr<std::vector<char>> staged;
  if (k == cudaMemcpyHostToDevice && !IsPinned(src, n) && n > 0) {
    // Pageable source: CUDA copies it to a staging buffer at the call.
    staged = std::make_shared<std::vector<char>>(
        static_cast<const char*>(src), static_cast<const char*>(src) + n);
  }
  const uint64_t seq = Enqueue(s, CopyTask(dst, src, n, staged, s->device));
  if (k == cudaMemcpyDeviceToHost && !IsPinned(dst, n) &&
      g.config.pageable_d2h_synchronous) {
    // Pageable destination: synchronous in practice (CUDA's API sync rules).
    WaitSeq(l, s, seq, "cudaMemcpyAsync(DeviceToHost, pageable dst)");
  }
  return cudaSuccess;
}

cudaError_t cudaMemset(void* p, int value, size_t n) {
  SMOE_FAKE_INJECT("cudaMemset", cudaError_t, tls_device);
  State& g = G();
  Lock l(g.mu);
  if (n > 0 && g.config.strict_device_pointers && FindDevice(p, n) == nullptr) {
    Violation("cudaMemset outside device memory");
    return cudaErrorInvalidValue;
  }
  if (cudaError_t e = Sticky(tls_device); e != cudaSuccess) return e;
  // On the legacy stream; the host waits (CUDA: synchronous for pageable
  // memory, and no caller here relies on anything else).
  CUstream_st* s = Legacy(tls_device);
  const int device = s->device;
  const uint64_t seq = Enqueue(s, [=] {
    {
      Lock inner(G().mu);
      if (!CheckLive(p, n, device, "cudaMemset")) return;
    }
    std::memset(p, value, n);
  });
  WaitSeq(l, s, seq, "cudaMemset");
  return Sticky(tls_device);
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t stream) {
  SMOE_FAKE_INJECT("cudaMemsetAsync", cudaError_t, tls_device);
  State& g = G();
  Lock l(g.mu);
  if (n > 0 && g.config.strict_device_pointers && FindDevice(p, n) == nullptr) {
    Violation("cudaMemsetAsync outside device memory");
    return cudaErrorInvalidValue;
  }
  CUstream_st* s = Resolve(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  const int device = s->device;
  Enqueue(s, [=] {
    {
      Lock inner(G().mu);
      if (!CheckLive(p, n, device, "cudaMemsetAsync")) return;
    }
    std::memset(p, value, n);
  });
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* s) {
  SMOE_FAKE_INJECT("cudaStreamCreate", cudaError_t, tls_device);
  return cudaStreamCreateWithFlags(s, cudaStreamDefault);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  SMOE_FAKE_INJECT("cudaStreamCreateWithFlags", cudaError_t, tls_device);
  if (s == nullptr) return cudaErrorInvalidValue;
  Lock l(G().mu);
  *s = NewStream(tls_device, false, (flags & cudaStreamNonBlocking) != 0);
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t h) {
  SMOE_FAKE_INJECT("cudaStreamDestroy", cudaError_t, tls_device);
  State& g = G();
  Lock l(g.mu);
  CUstream_st* s = Resolve(h);
  if (s == nullptr || s->legacy) return cudaErrorInvalidResourceHandle;
  s->destroyed = true;  // the worker drains the queue, then exits
  g.streams.erase(s);
  g.cv.notify_all();
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t h) {
  SMOE_FAKE_INJECT("cudaStreamQuery", cudaError_t, tls_device);
  Lock l(G().mu);
  CUstream_st* s = Resolve(h);
  if (s == nullptr) {
    Violation("cudaStreamQuery on an invalid stream");
    return cudaErrorInvalidResourceHandle;
  }
  if (cudaError_t e = Sticky(s->device); e != cudaSuccess) return e;
  if (s->completed == s->enqueued) return cudaSuccess;
  {
    std::lock_guard<std::mutex> cl(CallFaultMu());
    for (CallFault& f : CallFaults()) {
      if (f.while_busy && (f.device < 0 || f.device == tls_device)) {
        f.armed = true;
      }
    }
  }
  return cudaErrorNotReady;
}

cudaError_t cudaStreamSynchronize(cudaStream_t h) {
  SMOE_FAKE_INJECT("cudaStreamSynchronize", cudaError_t, tls_device);
  Lock l(G().mu);
  CUstream_st* s = Resolve(h);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  WaitSeq(l, s, s->enqueued, "cudaStreamSynchronize");
  return Sticky(s->device);
}

cudaError_t cudaLaunchHostFunc(cudaStream_t h, cudaHostFn_t fn, void* data) {
  SMOE_FAKE_INJECT("cudaLaunchHostFunc", cudaError_t, tls_device);
  Lock l(G().mu);
  CUstream_st* s = Resolve(h);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  Enqueue(s, [fn, data] { fn(data); });
  return cudaSuccess;
}

// ---- Events ----------------------------------------------------------------

struct CUevent_st {
  CUstream_st* stream = nullptr;  // of the last record; nullptr: never
  uint64_t seq = 0;               // completes when stream->completed >= seq
  bool done = false;              // the record ran
  Clock::time_point when;
};

cudaError_t cudaEventCreate(cudaEvent_t* e) {
  SMOE_FAKE_INJECT("cudaEventCreate", cudaError_t, tls_device);
  if (e == nullptr) return cudaErrorInvalidValue;
  *e = new CUevent_st;  // lives until the process ends (a record may run)
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  SMOE_FAKE_INJECT("cudaEventDestroy", cudaError_t, tls_device);
  if (e == nullptr) return cudaErrorInvalidResourceHandle;
  return cudaSuccess;  // not freed: a pending record may still write it
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t stream) {
  SMOE_FAKE_INJECT("cudaEventRecord", cudaError_t, tls_device);
  if (e == nullptr) return cudaErrorInvalidResourceHandle;
  Lock l(G().mu);
  CUstream_st* s = Resolve(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  e->stream = s;
  e->done = false;
  e->seq = Enqueue(s, [e] {
    Lock inner(G().mu);
    e->when = Clock::now();
    e->done = true;
  });
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  SMOE_FAKE_INJECT("cudaEventSynchronize", cudaError_t, tls_device);
  if (e == nullptr) return cudaErrorInvalidResourceHandle;
  Lock l(G().mu);
  if (e->stream == nullptr) return cudaSuccess;  // never recorded
  WaitSeq(l, e->stream, e->seq, "cudaEventSynchronize");
  return Sticky(e->stream->device);
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start,
                                 cudaEvent_t end) {
  SMOE_FAKE_INJECT("cudaEventElapsedTime", cudaError_t, tls_device);
  if (ms == nullptr || start == nullptr || end == nullptr) {
    return cudaErrorInvalidValue;
  }
  Lock l(G().mu);
  if (start->stream == nullptr || end->stream == nullptr) {
    return cudaErrorInvalidResourceHandle;
  }
  if (!start->done || !end->done) return cudaErrorNotReady;
  *ms =
      std::chrono::duration<float, std::milli>(end->when - start->when).count();
  return cudaSuccess;
}

// ---- NCCL API --------------------------------------------------------------

const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL "
             "developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

ncclResult_t ncclGetVersion(int* version) {
  SMOE_FAKE_INJECT("ncclGetVersion", ncclResult_t, tls_device);
  if (version == nullptr) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  SMOE_FAKE_INJECT("ncclGetUniqueId", ncclResult_t, tls_device);
  if (id == nullptr) return ncclInvalidArgument;
  State& g = G();
  Lock l(g.mu);
  std::memset(id->internal, 0, sizeof(id->internal));
  const uint64_t n = g.next_unique_id++;
  const uint64_t r = g.rng();
  std::memcpy(id->internal, "fakenccl", 8);
  std::memcpy(id->internal + 8, &n, 8);
  std::memcpy(id->internal + 16, &r, 8);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* out, int nranks,
                                    ncclUniqueId id, int rank,
                                    ncclConfig_t* config) {
  SMOE_FAKE_INJECT("ncclCommInitRankConfig", ncclResult_t, tls_device);
  State& g = G();
  Lock l(g.mu);
  if (out == nullptr || nranks < 1 || rank < 0 || rank >= nranks) {
    return ncclInvalidArgument;
  }
  if (config != nullptr &&
      (config->magic != 0xcafebeef || config->size != sizeof(ncclConfig_t))) {
    Violation(
        "ncclCommInitRankConfig: config not from NCCL_CONFIG_INITIALIZER");
    return ncclInvalidArgument;
  }
  auto owned = std::make_unique<ncclComm>();
  ncclComm* c = owned.get();
  g.all_comms.push_back(std::move(owned));
  c->rank = rank;
  c->nranks = nranks;
  c->device = tls_device;
  c->blocking = config == nullptr ||
                config->blocking == NCCL_CONFIG_UNDEF_INT ||
                config->blocking != 0;
  c->async = ncclInProgress;
  const std::string key(id.internal, sizeof(id.internal));
  std::shared_ptr<Clique>& q = g.cliques[key];
  if (q == nullptr) {
    q = std::make_shared<Clique>();
    q->nranks = nranks;
    q->members.assign(nranks, nullptr);
  }
  c->clique = q;
  g.handles.insert(c);
  *out = c;
  if (q->nranks != nranks) {
    Violation("ncclCommInitRankConfig: nranks differs between ranks");
    c->async = ncclInvalidUsage;
  } else if (q->members[rank] != nullptr) {
    Violation("ncclCommInitRankConfig: rank " + std::to_string(rank) +
              " joined twice");
    c->async = ncclInvalidUsage;
  } else {
    for (ncclComm* m : q->members) {
      if (m != nullptr && m->device == c->device) {
        // NCCL: "Duplicate GPU detected".
        Violation("ncclCommInitRankConfig: ranks " + std::to_string(m->rank) +
                  " and " + std::to_string(rank) + " use the same device " +
                  std::to_string(c->device));
        c->async = ncclInvalidUsage;
      }
    }
    q->members[rank] = c;
    if (++q->joined == q->nranks) {
      Clique* raw = q.get();
      Schedule(Rand(g.rng, 0, g.config.max_init_delay_us), [raw] {
        for (ncclComm* m : raw->members) {
          if (m != nullptr && m->async == ncclInProgress) {
            m->async = ncclSuccess;
          }
        }
      });
    }
  }
  if (!c->blocking) return ncclInProgress;
  g.cv.wait(l, [&] { return c->aborted || c->async != ncclInProgress; });
  return c->async;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t* state) {
  SMOE_FAKE_INJECT("ncclCommGetAsyncError", ncclResult_t, tls_device);
  Lock l(G().mu);
  if (state == nullptr) return ncclInvalidArgument;
  if (ncclResult_t r = CheckComm(c, "ncclCommGetAsyncError", true);
      r != ncclSuccess) {
    return r;
  }
  *state = c->async;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t c) {
  SMOE_FAKE_INJECT("ncclCommAbort", ncclResult_t, tls_device);
  State& g = G();
  Lock l(g.mu);
  if (c == nullptr) return ncclSuccess;  // NCCL: no-op on NULL
  if (ncclResult_t r = CheckComm(c, "ncclCommAbort", true); r != ncclSuccess) {
    return r;
  }
  c->aborted = true;
  g.handles.erase(c);
  g.cv.notify_all();
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t c) {
  SMOE_FAKE_INJECT("ncclCommFinalize", ncclResult_t, tls_device);
  State& g = G();
  Lock l(g.mu);
  if (ncclResult_t r = CheckComm(c, "ncclCommFinalize", false);
      r != ncclSuccess) {
    return r;
  }
  c->finalizing = true;
  if (c->blocking) {
    g.cv.wait(l, [&] { return c->aborted || c->inflight == 0; });
    return ncclSuccess;
  }
  c->async = ncclInProgress;
  if (c->inflight == 0) {
    Schedule(Rand(g.rng, 0, g.config.max_enqueue_delay_us), [c] {
      if (c->async == ncclInProgress && c->inflight == 0) {
        c->async = ncclSuccess;
      }
    });
  }
  return ncclInProgress;
}

ncclResult_t ncclCommDestroy(ncclComm_t c) {
  SMOE_FAKE_INJECT("ncclCommDestroy", ncclResult_t, tls_device);
  State& g = G();
  Lock l(g.mu);
  if (ncclResult_t r = CheckComm(c, "ncclCommDestroy", true);
      r != ncclSuccess) {
    return r;
  }
  if (c->inflight > 0) {
    Violation(
        "ncclCommDestroy with operations still in flight (finalize "
        "first)");
    c->aborted = true;
  }
  g.handles.erase(c);
  g.cv.notify_all();
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  SMOE_FAKE_INJECT("ncclGroupStart", ncclResult_t, tls_device);
  ++tls_group_depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (const int injected = InjectedError("ncclGroupEnd", tls_device)) {
    // The group is gone, as after a real failed ncclGroupEnd: nothing of it
    // is launched.
    tls_group_depth = 0;
    tls_group_ops.clear();
    tls_group_error = ncclSuccess;
    return static_cast<ncclResult_t>(injected);
  }
  if (tls_group_depth == 0) {
    Lock l(G().mu);
    Violation("ncclGroupEnd without ncclGroupStart");
    return ncclInvalidUsage;
  }
  if (--tls_group_depth > 0) return ncclSuccess;
  std::vector<PendingOp> ops = std::move(tls_group_ops);
  tls_group_ops.clear();
  const ncclResult_t err = tls_group_error;
  tls_group_error = ncclSuccess;
  if (err != ncclSuccess) return err;
  if (ops.empty()) return ncclSuccess;
  Lock l(G().mu);
  // One launch per communicator, operations in call order.
  std::vector<ncclComm*> order;
  for (const PendingOp& op : ops) {
    if (std::find(order.begin(), order.end(), op.comm) == order.end()) {
      order.push_back(op.comm);
    }
  }
  ncclResult_t result = ncclSuccess;
  for (ncclComm* c : order) {
    std::vector<PendingOp> mine;
    for (const PendingOp& op : ops) {
      if (op.comm == c) mine.push_back(op);
    }
    const ncclResult_t r = Launch(c, std::move(mine));
    if (r != ncclSuccess && r != ncclInProgress) return r;
    if (r == ncclInProgress) result = ncclInProgress;
  }
  return result;
}

ncclResult_t ncclSend(const void* buf, size_t count, ncclDataType_t type,
                      int peer, ncclComm_t comm, cudaStream_t stream) {
  SMOE_FAKE_INJECT("ncclSend", ncclResult_t, tls_device);
  PendingOp op;
  op.kind = PendingOp::kSend;
  op.comm = comm;
  op.send = buf;
  op.count = count;
  op.type = type;
  op.peer = peer;
  return Submit(op, "ncclSend", stream);
}

ncclResult_t ncclRecv(void* buf, size_t count, ncclDataType_t type, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  SMOE_FAKE_INJECT("ncclRecv", ncclResult_t, tls_device);
  PendingOp op;
  op.kind = PendingOp::kRecv;
  op.comm = comm;
  op.recv = buf;
  op.count = count;
  op.type = type;
  op.peer = peer;
  return Submit(op, "ncclRecv", stream);
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t type, ncclRedOp_t op_,
                           ncclComm_t comm, cudaStream_t stream) {
  SMOE_FAKE_INJECT("ncclAllReduce", ncclResult_t, tls_device);
  PendingOp op;
  op.kind = PendingOp::kAllReduce;
  op.comm = comm;
  op.send = sendbuff;
  op.recv = recvbuff;
  op.count = count;
  op.type = type;
  op.op = op_;
  return Submit(op, "ncclAllReduce", stream);
}

}  // namespace smoe_fake

// ---- Control API -----------------------------------------------------------

namespace smoe::fake_nccl {

using smoe_fake::G;
using smoe_fake::Lock;

void FailCall(const std::string& call, int error, int device, int skip) {
  std::lock_guard<std::mutex> l(smoe_fake::CallFaultMu());
  smoe_fake::CallFaults().push_back({call, error, device, skip});
}

void FailCallWhileBusy(const std::string& call, int error, int device) {
  std::lock_guard<std::mutex> l(smoe_fake::CallFaultMu());
  smoe_fake::CallFaults().push_back({call, error, device, /*skip=*/0,
                                     /*while_busy=*/true, /*armed=*/false});
}

int TakeCallFault(const char* call) {
  return smoe_fake::InjectedError(call, smoe_fake::tls_device);
}

std::vector<std::string> ArmedCallFaults() {
  std::lock_guard<std::mutex> l(smoe_fake::CallFaultMu());
  std::vector<std::string> out;
  for (const smoe_fake::CallFault& f : smoe_fake::CallFaults()) {
    out.push_back(f.call + " on device " + std::to_string(f.device));
  }
  return out;
}

std::vector<std::string> FiredCallFaults() {
  std::lock_guard<std::mutex> l(smoe_fake::CallFaultMu());
  return smoe_fake::FiredFaults();
}

uint64_t Reset(const Config& config) {
  smoe_fake::State& g = G();
  AbortAll();
  Lock l(g.mu);
  // Let the streams drain (bounded: a leftover stuck op must not hang here).
  const auto deadline = smoe_fake::Clock::now() + std::chrono::seconds(5);
  const bool drained = g.cv.wait_until(l, deadline, [&] {
    for (smoe_fake::CUstream_st* s : g.streams) {
      if (s->completed != s->enqueued) return false;
    }
    return true;
  });
  if (!drained) {
    std::fprintf(stderr,
                 "[fake nccl/cuda] Reset: streams still busy after 5 s\n");
  }
  g.config = config;
  uint64_t seed = config.seed;
  if (seed == 0) {
    if (const char* e = std::getenv("SMOE_FAKE_NCCL_SEED"); e != nullptr) {
      seed = std::strtoull(e, nullptr, 10);
    }
  }
  if (seed == 0) {
    seed = static_cast<uint64_t>(
               smoe_fake::Clock::now().time_since_epoch().count()) |
           1;
  }
  g.config.seed = seed;
  g.seed = seed;
  g.rng.seed(seed);
  for (smoe_fake::CUstream_st* s : g.streams) {
    s->rng.seed(seed ^ (s->id * 0x9E3779B97F4A7C15ull));
    s->nccl_kernels = 0;
  }
  g.violations.clear();
  g.faults.clear();
  {
    std::lock_guard<std::mutex> cl(smoe_fake::CallFaultMu());
    smoe_fake::CallFaults().clear();
    smoe_fake::FiredFaults().clear();
  }
  g.cliques.clear();
  g.handles.clear();
  g.stats = Stats{};
  g.sticky.assign(std::max(config.num_devices, 1), smoe_fake::cudaSuccess);
  return seed;
}

std::vector<std::string> Violations() {
  Lock l(G().mu);
  return G().violations;
}

void InjectAsyncError(int rank, int at_launch, ncclResult_t error,
                      bool peers_see_remote_error) {
  Lock l(G().mu);
  auto& f = G().faults[rank];
  f.error_at = at_launch;
  f.error = error;
  f.propagate = peers_see_remote_error;
}

void HangRank(int rank, int at_launch) {
  Lock l(G().mu);
  G().faults[rank].hang_at = at_launch;
}

void SetEnqueueDelay(int rank, int64_t us) {
  Lock l(G().mu);
  G().faults[rank].enqueue_delay_us = us;
}

void EnqueueSleep(cudaStream_t stream, int64_t ms) {
  Lock l(G().mu);
  smoe_fake::CUstream_st* s = smoe_fake::Resolve(stream);
  if (s == nullptr) return;
  smoe_fake::Enqueue(
      s, [ms] { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); });
}

int AbortAll() {
  smoe_fake::State& g = G();
  Lock l(g.mu);
  int n = 0;
  for (const auto& c : g.all_comms) {
    if (c->aborted) continue;
    c->aborted = true;
    if (c->async == ncclInProgress || c->async == ncclSuccess) {
      c->async = ncclSystemError;  // the handle stays valid
    }
    if (g.handles.count(c.get()) > 0) ++n;
  }
  g.cv.notify_all();
  return n;
}

Stats GetStats() {
  Lock l(G().mu);
  Stats s = G().stats;
  s.live_comms = static_cast<int64_t>(G().handles.size());
  const auto now = smoe_fake::Clock::now();
  for (const auto& [id, b] : G().blocked) {
    s.blocked_now.push_back(
        b.first + " for " +
        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                           now - b.second)
                           .count()) +
        " ms");
  }
  return s;
}

int64_t NcclKernelsOnStream(cudaStream_t stream) {
  Lock l(G().mu);
  smoe_fake::CUstream_st* s = smoe_fake::Resolve(stream);
  return s == nullptr ? -1 : s->nccl_kernels;
}

}  // namespace smoe::fake_nccl
