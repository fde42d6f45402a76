// Copyright 2026 SMoE Lab authors.
#include "kernels/all_to_all/local_communicator.h"

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace smoe::kernels {
namespace {

enum class OpKind { kCounts, kAllToAllV, kAllReduce, kBarrier };

const char* OpName(OpKind k) {
  switch (k) {
    case OpKind::kCounts:
      return "AllToAllCounts";
    case OpKind::kAllToAllV:
      return "AllToAllV";
    case OpKind::kAllReduce:
      return "AllReduceSum";
    case OpKind::kBarrier:
      return "Barrier";
  }
  return "?";
}

// What one rank posted for the current collective.
struct Post {
  OpKind kind = OpKind::kBarrier;
  DType dtype = DType::kFloat32;
  const void* send = nullptr;
  const int64_t* send_counts = nullptr;
  int64_t count = 0;  // AllReduceSum
};

class Hub {
 public:
  Hub(int world, int64_t timeout_ms)
      : world_(world), timeout_ms_(timeout_ms), posts_(world) {}

  int world() const { return world_; }
  const Post& post(int rank) const { return posts_[rank]; }

  // Posts `p` for `rank` and waits until every rank has posted.
  absl::Status PostAndWait(int rank, const Post& p) {
    std::unique_lock<std::mutex> lock(mu_);
    posts_[rank] = p;
    return ArriveLocked(rank, OpName(p.kind), lock);
  }

  // Plain rendezvous (second phase of a collective).
  absl::Status Wait(int rank, const char* what) {
    std::unique_lock<std::mutex> lock(mu_);
    return ArriveLocked(rank, what, lock);
  }

  void Abort(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_.empty()) aborted_ = why;
    cv_.notify_all();
  }

 private:
  absl::Status ArriveLocked(int rank, const char* what,
                            std::unique_lock<std::mutex>& lock) {
    if (!aborted_.empty()) {
      return absl::AbortedError(
          absl::StrCat("local communicator aborted: ", aborted_));
    }
    const uint64_t gen = generation_;
    if (++arrived_ == world_) {
      arrived_ = 0;
      // NOTE: checked by the last arriver under the lock, before anyone can
      // read a peer's post or move on to the next collective.
      if (std::string why = MismatchLocked(); !why.empty()) {
        aborted_ = why;
        cv_.notify_all();
        return absl::FailedPreconditionError(why);
      }
      ++generation_;
      cv_.notify_all();
      return absl::OkStatus();
    }
    const bool done =
        cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms_),
                     [&] { return generation_ != gen || !aborted_.empty(); });
    if (generation_ != gen) return absl::OkStatus();
    if (done) {
      return absl::AbortedError(
          absl::StrCat("local communicator aborted: ", aborted_));
    }
    aborted_ =
        absl::StrCat("rank ", rank, " waited ", timeout_ms_, " ms in ", what,
                     " with ", arrived_, " of ", world_, " ranks arrived");
    cv_.notify_all();
    return absl::DeadlineExceededError(aborted_);
  }

  // Returns a description of the first rank whose collective differs from
  // rank 0's, or "" when all match.
  std::string MismatchLocked() const {
    const Post& p = posts_[0];
    for (int j = 1; j < world_; ++j) {
      const Post& q = posts_[j];
      if (q.kind != p.kind || q.dtype != p.dtype || q.count != p.count) {
        return absl::StrCat("mismatched collectives: rank 0 called ",
                            OpName(p.kind), "(", DTypeName(p.dtype), ", count ",
                            p.count, ") but rank ", j, " called ",
                            OpName(q.kind), "(", DTypeName(q.dtype), ", count ",
                            q.count, ")");
      }
    }
    return "";
  }

  const int world_;
  const int64_t timeout_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Post> posts_;  // written by rank r only before its arrival
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::string aborted_;  // non-empty once poisoned
};

template <typename T>
void AddInto(T* acc, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
}

class LocalCommunicator : public Communicator {
 public:
  LocalCommunicator(std::shared_ptr<Hub> hub, int rank)
      : hub_(std::move(hub)), rank_(rank) {}

  int rank() const override { return rank_; }
  int world_size() const override { return hub_->world(); }
  MemorySpace memory_space() const override { return MemorySpace::kHost; }
  std::string name() const override { return "local"; }

  absl::Status AllToAllCounts(const int64_t* send_counts,
                              int64_t* recv_counts) override {
    const int w = world_size();
    if (absl::Status s =
            ValidateAllToAllCountsArgs(w, send_counts, recv_counts);
        !s.ok()) {
      return s;
    }
    Post p;
    p.kind = OpKind::kCounts;
    p.send_counts = send_counts;
    if (absl::Status s = Begin(p); !s.ok()) return s;
    for (int j = 0; j < w; ++j) {
      recv_counts[j] = hub_->post(j).send_counts[rank_];
    }
    return hub_->Wait(rank_, "AllToAllCounts (release)");
  }

  absl::Status AllToAllV(const void* send, const int64_t* send_counts,
                         void* recv, const int64_t* recv_counts,
                         DType dtype) override {
    const int w = world_size();
    if (absl::Status s =
            ValidateAllToAllVArgs(w, send, send_counts, recv, recv_counts);
        !s.ok()) {
      return s;
    }
    Post p;
    p.kind = OpKind::kAllToAllV;
    p.dtype = dtype;
    p.send = send;
    p.send_counts = send_counts;
    if (absl::Status s = Begin(p); !s.ok()) return s;
    const size_t es = DTypeSize(dtype);
    absl::Status result = absl::OkStatus();
    char* out = static_cast<char*>(recv);
    for (int j = 0; j < w && result.ok(); ++j) {
      const Post& peer = hub_->post(j);
      if (peer.send_counts[rank_] != recv_counts[j]) {
        result = absl::InvalidArgumentError(
            absl::StrCat("AllToAllV: rank ", rank_, " expects recv_counts[", j,
                         "]=", recv_counts[j], " elements but rank ", j,
                         " sends ", peer.send_counts[rank_]));
        break;
      }
      int64_t offset = 0;
      for (int i = 0; i < rank_; ++i) offset += peer.send_counts[i];
      if (recv_counts[j] > 0) {
        std::memcpy(out, static_cast<const char*>(peer.send) + offset * es,
                    static_cast<size_t>(recv_counts[j]) * es);
      }
      out += recv_counts[j] * es;
    }
    if (!result.ok()) hub_->Abort(std::string(result.message()));
    absl::Status s = hub_->Wait(rank_, "AllToAllV (release)");
    return result.ok() ? s : result;
  }

  absl::Status AllReduceSum(void* buffer, int64_t count, DType dtype) override {
    if (count < 0 || (count > 0 && buffer == nullptr)) {
      return absl::InvalidArgumentError(
          absl::StrCat("AllReduceSum: count=", count, " with buffer ",
                       buffer == nullptr ? "null" : "set"));
    }
    if (dtype == DType::kBFloat16 || dtype == DType::kFloat16) {
      return absl::UnimplementedError(
          absl::StrCat("AllReduceSum: dtype ", DTypeName(dtype),
                       " is not supported by the local communicator"));
    }
    Post p;
    p.kind = OpKind::kAllReduce;
    p.dtype = dtype;
    p.send = buffer;
    p.count = count;
    if (absl::Status s = Begin(p); !s.ok()) return s;
    // Sum in rank order into a private buffer (every rank gets the same
    // bits), then release, then overwrite our own buffer.
    const size_t bytes = static_cast<size_t>(count) * DTypeSize(dtype);
    std::vector<char> acc(bytes, 0);
    for (int j = 0; j < world_size(); ++j) {
      const void* x = hub_->post(j).send;
      switch (dtype) {
        case DType::kFloat32:
          AddInto(reinterpret_cast<float*>(acc.data()),
                  static_cast<const float*>(x), count);
          break;
        case DType::kFloat64:
          AddInto(reinterpret_cast<double*>(acc.data()),
                  static_cast<const double*>(x), count);
          break;
        case DType::kInt32:
          AddInto(reinterpret_cast<int32_t*>(acc.data()),
                  static_cast<const int32_t*>(x), count);
          break;
        case DType::kInt64:
          AddInto(reinterpret_cast<int64_t*>(acc.data()),
                  static_cast<const int64_t*>(x), count);
          break;
        default:
          break;
      }
    }
    if (absl::Status s = hub_->Wait(rank_, "AllReduceSum (release)"); !s.ok()) {
      return s;
    }
    if (bytes > 0) std::memcpy(buffer, acc.data(), bytes);
    return absl::OkStatus();
  }

  absl::Status Barrier() override {
    Post p;
    p.kind = OpKind::kBarrier;
    return Begin(p);
  }

 private:
  absl::Status Begin(const Post& p) { return hub_->PostAndWait(rank_, p); }

  std::shared_ptr<Hub> hub_;
  const int rank_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> CreateLocalCommunicators(
    int world_size, const CommunicatorOptions& options) {
  auto hub = std::make_shared<Hub>(world_size, options.op_timeout_ms);
  std::vector<std::unique_ptr<Communicator>> out;
  out.reserve(static_cast<size_t>(world_size));
  for (int r = 0; r < world_size; ++r) {
    out.push_back(std::make_unique<LocalCommunicator>(hub, r));
  }
  return out;
}

}  // namespace smoe::kernels
