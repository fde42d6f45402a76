// Copyright 2026 SMoE Lab authors.
#include "worker/model/rendezvous.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#if defined(SMOE_WITH_TORCH_CUDA)
#include <c10/cuda/CUDAStream.h>
#endif

#if defined(SMOE_WITH_C10D_STORE)
#include <c10/util/Exception.h>

#include <chrono>
#include <exception>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "worker/model/rendezvous_store.h"
#endif

namespace smoe::model {

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

absl::Status CheckRendezvousInfo(const RendezvousInfo& info) {
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

bool SplitRendezvousHostPort(const std::string& s, std::string* host,
                             uint16_t* port) {
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

#if defined(SMOE_WITH_C10D_STORE)

namespace {
constexpr char kNcclIdKey[] = "smoe/nccl_unique_id";
}  // namespace

bool BuiltWithC10dStore() { return true; }

c10::intrusive_ptr<c10d::Store> MakeRendezvousStore(
    const RendezvousInfo& info, std::chrono::milliseconds timeout) {
  std::string host;
  uint16_t port = 0;
  c10::intrusive_ptr<c10d::Store> store;
  if (SplitRendezvousHostPort(info.rendezvous, &host, &port)) {
    c10d::TCPStoreOptions o;
    o.port = port;
    o.isServer = info.rank == 0;
    o.numWorkers = static_cast<size_t>(info.world_size);
    o.waitWorkers = true;
    o.timeout = timeout;
    store = c10::make_intrusive<c10d::TCPStore>(host, o);
  } else {
    store =
        c10::make_intrusive<c10d::FileStore>(info.rendezvous, info.world_size);
  }
  store->setTimeout(timeout);
  return store;
}

absl::StatusOr<kernels::NcclUniqueIdBytes> ExchangeNcclUniqueId(
    const RendezvousInfo& info, const kernels::CommunicatorOptions& options,
    const std::function<absl::StatusOr<kernels::NcclUniqueIdBytes>()>&
        make_id) {
  if (absl::Status s = CheckRendezvousInfo(info); !s.ok()) return s;
  const std::chrono::milliseconds timeout(options.op_timeout_ms);
  kernels::NcclUniqueIdBytes id{};
  try {
    c10::intrusive_ptr<c10d::Store> store = MakeRendezvousStore(info, timeout);
    // NOTE: rank 0 hosts the TCP store; it must outlive every rank's lookup,
    // so the store lives as long as the process.
    static auto* keep_alive = new std::vector<c10::intrusive_ptr<c10d::Store>>;
    keep_alive->push_back(store);
    if (info.rank == 0) {
      absl::StatusOr<kernels::NcclUniqueIdBytes> fresh = make_id();
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
  return id;
}

#else  // !SMOE_WITH_C10D_STORE

bool BuiltWithC10dStore() { return false; }

absl::StatusOr<kernels::NcclUniqueIdBytes> ExchangeNcclUniqueId(
    const RendezvousInfo&, const kernels::CommunicatorOptions&,
    const std::function<absl::StatusOr<kernels::NcclUniqueIdBytes>()>&) {
  return absl::UnimplementedError(
      "this build has no c10d store (LibTorch's "
      "torch/csrc/distributed/c10d headers) for the NCCL id exchange");
}

#endif  // SMOE_WITH_C10D_STORE

absl::StatusOr<std::unique_ptr<kernels::Communicator>> CreateNcclCommunicator(
    const RendezvousInfo& info, int device,
    const kernels::CommunicatorOptions& options) {
  if (!kernels::BuiltWithNccl()) {
    return absl::UnimplementedError("this build has no NCCL");
  }
  absl::StatusOr<kernels::NcclUniqueIdBytes> id =
      ExchangeNcclUniqueId(info, options, &kernels::NewNcclUniqueId);
  if (!id.ok()) return id.status();
  kernels::NcclCommunicatorOptions o;
  o.common = options;
  o.device = device;
#if defined(SMOE_WITH_TORCH_CUDA)
  // Review A13: collectives go on LibTorch's CURRENT stream of this rank's
  // device at each call (ordered after the kernels that produced the send
  // buffers, whatever stream guard is active), not the legacy stream.
  o.current_stream = [device] {
    return static_cast<void*>(
        c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device))
            .stream());
  };
#endif
  return kernels::CreateNcclCommunicator(info.rank, info.world_size, *id, o);
}

}  // namespace smoe::model
