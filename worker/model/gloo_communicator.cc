// Copyright 2026 SMoE Lab authors.
#include "worker/model/gloo_communicator.h"

#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#if defined(SMOE_WITH_GLOO)
#include <torch/torch.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <string>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "kernels/all_to_all/nccl_communicator.h"
#endif

namespace smoe::model {

int CudaDeviceForRank(int rank, int world, int visible) {
  if (visible <= 1 || world <= 1) return 0;
  return rank % visible;
}

absl::StatusOr<RendezvousInfo> RendezvousFromEnv() {
  RendezvousInfo info;
  const char* rank = std::getenv("SMOE_RANK");
  const char* world = std::getenv("SMOE_WORLD_SIZE");
  const char* rdv = std::getenv("SMOE_RENDEZVOUS");
  if (world != nullptr && !absl::SimpleAtoi(world, &info.world_size)) {
    return absl::InvalidArgumentError(
        absl::StrCat("SMOE_WORLD_SIZE=\"", world, "\": not an integer"));
  }
  if (info.world_size < 1 || info.world_size > 4096) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SMOE_WORLD_SIZE=", info.world_size, ": must be in 1..4096"));
  }
  if (rank != nullptr && !absl::SimpleAtoi(rank, &info.rank)) {
    return absl::InvalidArgumentError(
        absl::StrCat("SMOE_RANK=\"", rank, "\": not an integer"));
  }
  if (info.rank < 0 || info.rank >= info.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SMOE_RANK=", info.rank, ": must be in 0..", info.world_size - 1,
        " (SMOE_WORLD_SIZE=", info.world_size, ")"));
  }
  if (rdv != nullptr) info.rendezvous = rdv;
  if (info.world_size > 1 && info.rendezvous.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SMOE_RENDEZVOUS: required when SMOE_WORLD_SIZE=", info.world_size,
        " (host:port or a file path)"));
  }
  return info;
}

#if defined(SMOE_WITH_GLOO)
namespace {

using kernels::Communicator;
using kernels::DType;

constexpr char kNcclIdKey[] = "smoe/nccl_unique_id";

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

// Splits "host:port"; false when `s` is not of that form (then a file path).
bool SplitHostPort(const std::string& s, std::string* host, uint16_t* port) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) {
    return false;
  }
  const std::string p = s.substr(colon + 1);
  for (char c : p) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  uint32_t v = 0;
  if (!absl::SimpleAtoi(p, &v) || v == 0 || v > 65535) return false;
  *host = s.substr(0, colon);
  *port = static_cast<uint16_t>(v);
  return true;
}

bool IsLoopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1";
}

// Throws (c10::Error) on failure; callers convert.
c10::intrusive_ptr<c10d::Store> MakeStore(const RendezvousInfo& info,
                                          std::chrono::milliseconds timeout,
                                          std::string* gloo_host) {
  std::string host;
  uint16_t port = 0;
  c10::intrusive_ptr<c10d::Store> store;
  if (SplitHostPort(info.rendezvous, &host, &port)) {
    c10d::TCPStoreOptions o;
    o.port = port;
    o.isServer = info.rank == 0;
    o.numWorkers = static_cast<size_t>(info.world_size);
    o.waitWorkers = true;
    o.timeout = timeout;
    store = c10::make_intrusive<c10d::TCPStore>(host, o);
    *gloo_host = IsLoopback(host) ? "127.0.0.1" : "";
  } else {
    store =
        c10::make_intrusive<c10d::FileStore>(info.rendezvous, info.world_size);
    *gloo_host = "127.0.0.1";
  }
  store->setTimeout(timeout);
  return store;
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
    for (int j = 0; j < w; ++j) {
      if (send_counts[j] < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("AllToAllCounts: send_counts[", j,
                         "]=", send_counts[j], " is negative"));
      }
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

absl::Status CheckInfo(const RendezvousInfo& info) {
  if (info.world_size < 1 || info.rank < 0 || info.rank >= info.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank=", info.rank, " world_size=", info.world_size,
                     ": need 0 <= rank < world_size"));
  }
  if (info.rendezvous.empty()) {
    return absl::InvalidArgumentError(
        "SMOE_RENDEZVOUS: empty (need host:port or a file path)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> CreateGlooCommunicator(
    const RendezvousInfo& info, const kernels::CommunicatorOptions& options) {
  if (absl::Status s = CheckInfo(info); !s.ok()) return s;
  const std::chrono::milliseconds timeout(options.op_timeout_ms);
  try {
    std::string gloo_host;
    c10::intrusive_ptr<c10d::Store> store =
        MakeStore(info, timeout, &gloo_host);
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

absl::StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(
    const RendezvousInfo& info, int device,
    const kernels::CommunicatorOptions& options) {
  if (!kernels::BuiltWithNccl()) {
    return absl::UnimplementedError("this build has no NCCL");
  }
  if (absl::Status s = CheckInfo(info); !s.ok()) return s;
  const std::chrono::milliseconds timeout(options.op_timeout_ms);
  kernels::NcclUniqueIdBytes id{};
  try {
    std::string unused;
    c10::intrusive_ptr<c10d::Store> store = MakeStore(info, timeout, &unused);
    // NOTE: rank 0 hosts the TCP store; it must outlive every rank's lookup,
    // so the store lives as long as the process.
    static auto* keep_alive = new std::vector<c10::intrusive_ptr<c10d::Store>>;
    keep_alive->push_back(store);
    if (info.rank == 0) {
      absl::StatusOr<kernels::NcclUniqueIdBytes> fresh =
          kernels::NewNcclUniqueId();
      if (!fresh.ok()) return fresh.status();
      id = *fresh;
      store->set(kNcclIdKey, std::vector<uint8_t>(id.begin(), id.end()));
    } else {
      std::vector<uint8_t> bytes = store->get(kNcclIdKey);  // waits
      if (bytes.size() != id.size()) {
        return absl::DataLossError(absl::StrCat(
            "NCCL unique id from the store has ", bytes.size(), " bytes"));
      }
      std::copy(bytes.begin(), bytes.end(), id.begin());
    }
  } catch (const c10::Error& e) {
    return absl::UnavailableError(absl::StrCat("NCCL id exchange at ",
                                               info.rendezvous, ": ",
                                               e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("NCCL id exchange at ", info.rendezvous, ": ", e.what()));
  }
  kernels::NcclCommunicatorOptions o;
  o.common = options;
  o.device = device;
  return kernels::CreateNcclCommunicator(info.rank, info.world_size, id, o);
}

#else  // !SMOE_WITH_GLOO

absl::StatusOr<std::unique_ptr<kernels::Communicator>> CreateGlooCommunicator(
    const RendezvousInfo&, const kernels::CommunicatorOptions&) {
  return absl::UnimplementedError(
      "this build has no Gloo (LibTorch c10d ProcessGroupGloo headers)");
}

absl::StatusOr<std::unique_ptr<kernels::Communicator>> CreateNcclCommunicator(
    const RendezvousInfo&, int, const kernels::CommunicatorOptions&) {
  return absl::UnimplementedError(
      "this build has no Gloo/c10d store for the NCCL id exchange");
}

#endif  // SMOE_WITH_GLOO

}  // namespace smoe::model
