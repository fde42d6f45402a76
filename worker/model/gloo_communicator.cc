// Copyright 2026 SMoE Lab authors.
#include "worker/model/gloo_communicator.h"

#include <memory>

#include "absl/status/status.h"

#if defined(SMOE_WITH_GLOO)
#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "worker/model/rendezvous_store.h"
#endif

namespace smoe::model {

#if defined(SMOE_WITH_GLOO)
namespace {

using kernels::Communicator;
using kernels::DType;

torch::Dtype ToTorch(DType t) {
  switch (t) {
    case DType::kFloat32:
      return torch::kFloat32;
    case DType::kFloat64:
      return torch::kFloat64;
    case DType::kBFloat16:
      return torch::kBFloat16;
    case DType::kFloat16:
      return torch::kFloat16;
    case DType::kInt32:
      return torch::kInt32;
    case DType::kInt64:
      return torch::kInt64;
  }
  return torch::kFloat32;
}

bool IsLoopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1";
}

// The address Gloo binds to: 127.0.0.1 for a loopback TCP host or a
// FileStore (single machine), "" for "choose by interface or hostname".
std::string GlooHost(const RendezvousInfo& info) {
  std::string host;
  uint16_t port = 0;
  if (!SplitRendezvousHostPort(info.rendezvous, &host, &port)) {
    return "127.0.0.1";
  }
  return IsLoopback(host) ? "127.0.0.1" : "";
}

class GlooCommunicator : public Communicator {
 public:
  GlooCommunicator(const RendezvousInfo& info,
                   c10::intrusive_ptr<c10d::ProcessGroupGloo> pg,
                   std::chrono::milliseconds timeout)
      : info_(info), pg_(std::move(pg)), timeout_(timeout) {}

  int rank() const override { return info_.rank; }
  int world_size() const override { return info_.world_size; }
  kernels::MemorySpace memory_space() const override {
    return kernels::MemorySpace::kHost;
  }
  std::string name() const override { return "gloo"; }

  absl::Status AllToAllCounts(const int64_t* send_counts,
                              int64_t* recv_counts) override {
    const int w = world_size();
    if (absl::Status s =
            kernels::ValidateAllToAllCountsArgs(w, send_counts, recv_counts);
        !s.ok()) {
      return s;
    }
    return Run("AllToAllCounts", [&] {
      torch::Tensor in = torch::from_blob(const_cast<int64_t*>(send_counts),
                                          {w}, torch::kInt64);
      torch::Tensor out = torch::from_blob(recv_counts, {w}, torch::kInt64);
      std::vector<int64_t> none;
      return pg_->alltoall_base(out, in, none, none);
    });
  }

  absl::Status AllToAllV(const void* send, const int64_t* send_counts,
                         void* recv, const int64_t* recv_counts,
                         DType dtype) override {
    const int w = world_size();
    if (absl::Status s = kernels::ValidateAllToAllVArgs(w, send, send_counts,
                                                        recv, recv_counts);
        !s.ok()) {
      return s;
    }
    const int64_t ns = kernels::TotalCount(send_counts, w);
    const int64_t nr = kernels::TotalCount(recv_counts, w);
    return Run("AllToAllV", [&] {
      // NOTE: from_blob needs a pointer even for empty tensors.
      static int64_t empty_slot[2];
      void* sp = ns > 0 ? const_cast<void*>(send) : empty_slot;
      void* rp = nr > 0 ? recv : empty_slot;
      torch::Tensor in = torch::from_blob(sp, {ns}, ToTorch(dtype));
      torch::Tensor out = torch::from_blob(rp, {nr}, ToTorch(dtype));
      std::vector<int64_t> in_split(send_counts, send_counts + w);
      std::vector<int64_t> out_split(recv_counts, recv_counts + w);
      return pg_->alltoall_base(out, in, out_split, in_split);
    });
  }

  absl::Status AllReduceSum(void* buffer, int64_t count, DType dtype) override {
    if (count < 0 || (count > 0 && buffer == nullptr)) {
      return absl::InvalidArgumentError(
          absl::StrCat("AllReduceSum: count=", count));
    }
    if (count == 0) return Barrier();  // keep the collective sequence aligned
    return Run("AllReduceSum", [&] {
      std::vector<torch::Tensor> t = {
          torch::from_blob(buffer, {count}, ToTorch(dtype))};
      c10d::AllreduceOptions o;
      o.reduceOp = c10d::ReduceOp::SUM;
      o.timeout = timeout_;
      return pg_->allreduce(t, o);
    });
  }

  absl::Status Barrier() override {
    return Run("Barrier", [&] {
      c10d::BarrierOptions o;
      o.timeout = timeout_;
      return pg_->barrier(o);
    });
  }

 private:
  template <typename F>
  absl::Status Run(const char* what, F&& start) {
    if (!poisoned_.empty()) {
      return absl::AbortedError(
          absl::StrCat("gloo communicator unusable after: ", poisoned_));
    }
    absl::Status s;
    try {
      c10::intrusive_ptr<c10d::Work> work = start();
      if (!work->wait(timeout_)) {
        s = absl::DeadlineExceededError(absl::StrCat(
            what, ": rank ", rank(), " exceeded ", timeout_.count(), " ms"));
      }
    } catch (const c10::Error& e) {
      s = absl::UnavailableError(absl::StrCat(what, " on rank ", rank(), ": ",
                                              e.what_without_backtrace()));
    } catch (const std::exception& e) {
      s = absl::UnavailableError(
          absl::StrCat(what, " on rank ", rank(), ": ", e.what()));
    }
    if (!s.ok()) poisoned_ = std::string(s.message());
    return s;
  }

  const RendezvousInfo info_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
  const std::chrono::milliseconds timeout_;
  std::string poisoned_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> CreateGlooCommunicator(
    const RendezvousInfo& info, const kernels::CommunicatorOptions& options) {
  if (absl::Status s = CheckRendezvousInfo(info); !s.ok()) return s;
  const std::chrono::milliseconds timeout(options.op_timeout_ms);
  try {
    const std::string gloo_host = GlooHost(info);
    c10::intrusive_ptr<c10d::Store> store = MakeRendezvousStore(info, timeout);
    auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
    const char* ifname = std::getenv("SMOE_GLOO_IFNAME");
    if (!gloo_host.empty()) {
      opts->devices.push_back(
          c10d::ProcessGroupGloo::createDeviceForHostname(gloo_host));
    } else if (ifname != nullptr && *ifname != '\0') {
      opts->devices.push_back(
          c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    } else {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>("smoe/gloo", store);
    auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(
        prefixed, info.rank, info.world_size, opts);
    return std::unique_ptr<Communicator>(
        std::make_unique<GlooCommunicator>(info, std::move(pg), timeout));
  } catch (const c10::Error& e) {
    return absl::UnavailableError(absl::StrCat(
        "gloo rendezvous at ", info.rendezvous, " as rank ", info.rank, "/",
        info.world_size, ": ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("gloo rendezvous at ", info.rendezvous, ": ", e.what()));
  }
}

#else  // !SMOE_WITH_GLOO

absl::StatusOr<std::unique_ptr<kernels::Communicator>> CreateGlooCommunicator(
    const RendezvousInfo&, const kernels::CommunicatorOptions&) {
  return absl::UnimplementedError(
      "this build has no Gloo (LibTorch c10d ProcessGroupGloo headers)");
}

#endif  // SMOE_WITH_GLOO

}  // namespace smoe::model
