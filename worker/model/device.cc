// Copyright 2026 SMoE Lab authors.
#include "worker/model/device.h"

#include <torch/torch.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernels/all_to_all/nccl_communicator.h"

namespace smoe::model {

torch::Device CommDevice(const kernels::Communicator& comm,
                         torch::Device model_device) {
  return comm.memory_space() == kernels::MemorySpace::kHost
             ? torch::Device(torch::kCPU)
             : model_device;
}

int CudaDeviceForRank(int rank, int world, int visible) {
  if (visible <= 1 || world <= 1) return 0;
  return rank % visible;
}

const char* CommKindName(CommKind k) {
  switch (k) {
    case CommKind::kNone:
      return "none";
    case CommKind::kNccl:
      return "nccl";
    case CommKind::kGloo:
      return "gloo";
  }
  return "?";
}

absl::StatusOr<DeviceSelection> SelectDevice(const std::string& device,
                                             int rank, int world,
                                             bool cuda_available,
                                             int device_count,
                                             bool nccl_built) {
  if (device != "cpu" && device != "cuda") {
    return absl::InvalidArgumentError(absl::StrCat(
        "device: must be \"cpu\" or \"cuda\", got \"", device, "\""));
  }
  if (world < 1 || rank < 0 || rank >= world) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", rank, " of world ", world, ": need 0 <= rank < world"));
  }
  DeviceSelection out;
  const bool cuda = device == "cuda";
  if (world > 1) {
    out.comm = cuda && nccl_built ? CommKind::kNccl : CommKind::kGloo;
  }
  if (!cuda) return out;
  if (!cuda_available || device_count < 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "device: cuda but no CUDA device is visible (LibTorch reports CUDA ",
        cuda_available ? "available" : "unavailable", ", ", device_count,
        " device(s); a CPU-only LibTorch, no driver, or an empty "
        "CUDA_VISIBLE_DEVICES?)"));
  }
  if (out.comm == CommKind::kNccl && device_count > 1 && device_count < world) {
    return absl::FailedPreconditionError(absl::StrCat(
        "device: cuda with ", world, " NCCL ranks but ", device_count,
        " GPUs visible: rank ", rank, " would share GPU ", rank % device_count,
        " with another rank, which NCCL rejects; give each rank its own GPU "
        "(CUDA_VISIBLE_DEVICES of one device per rank) or use at least ",
        world, " GPUs"));
  }
  out.device = torch::Device(torch::kCUDA,
                             static_cast<c10::DeviceIndex>(
                                 CudaDeviceForRank(rank, world, device_count)));
  return out;
}

absl::StatusOr<DeviceSelection> SelectDeviceHere(const std::string& device,
                                                 int rank, int world) {
  return SelectDevice(device, rank, world, torch::cuda::is_available(),
                      static_cast<int>(torch::cuda::device_count()),
                      kernels::BuiltWithNccl());
}

}  // namespace smoe::model
