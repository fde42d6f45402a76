// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/device.h
//
// Where the model's and the communicator's tensors live (issue 13: one code
// path, only the launch differs). Pure decisions (SelectDeviceHere adds the
// three queries of this process's devices), so the lines a GPU run takes
// through them run in CI too.
#ifndef SMOE_WORKER_MODEL_DEVICE_H_
#define SMOE_WORKER_MODEL_DEVICE_H_

#include <torch/types.h>

#include <string>

#include "absl/status/statusor.h"
#include "kernels/all_to_all/communicator.h"

namespace smoe::model {

// The device on which `comm`'s collective buffers live when the model runs on
// `model_device`: the CPU for a host communicator (local, gloo), the model's
// own device for a device-memory one (nccl: the rank's GPU, cuda:N). One
// rule, no device test: with the fake CUDA runtime + NCCL of tests/fakes,
// whose "device memory" is host memory, a CPU model hands the unchanged
// NcclCommunicator its CPU tensors through these same lines. Callers pick a
// device communicator only for a CUDA model.
torch::Device CommDevice(const kernels::Communicator& comm,
                         torch::Device model_device);

// The CUDA device index rank `rank` of `world` uses when `visible` devices
// are visible to it: 0 when the launcher gave each rank its own GPU
// (CUDA_VISIBLE_DEVICES of one device: the worker daemon, `smoe ...
// --gpu-ids`), else rank % visible (every rank sees all GPUs: rank r takes GPU
// r).
int CudaDeviceForRank(int rank, int world, int visible);

// Which communicator an expert-parallel group of this process uses.
enum class CommKind {
  kNone,  // world 1: no group
  kNccl,  // device memory (needs device "cuda" and a build with NCCL)
  kGloo,  // host memory
};

// "none", "nccl" or "gloo".
const char* CommKindName(CommKind k);

struct DeviceSelection {
  torch::Device device = torch::kCPU;  // cpu, or cuda:ordinal
  CommKind comm = CommKind::kNone;
};

// Where rank `rank` of `world` runs for a trial's `device` setting ("cpu" or
// "cuda"), given what the process sees: `cuda_available` (LibTorch has CUDA
// and a device is visible), `device_count` visible devices, `nccl_built`
// (kernels::BuiltWithNccl()). Pure, so every arm is unit-tested on the CPU
// with made-up counts. The rank -> GPU mapping is CudaDeviceForRank
// (rendezvous.h): GPU 0 when one device is visible (the launcher gave each
// rank its own), else GPU rank % device_count. The communicator: none for
// world 1, NCCL for "cuda" when built with it, else Gloo (host memory; CUDA
// tensors are staged on the CPU by CommDevice).
// Errors, naming the field and value: InvalidArgument for a device other
// than "cpu"/"cuda" or a rank outside [0, world); FailedPrecondition for
// "cuda" without a visible device ("device: cuda but no CUDA device is
// visible ...") and for NCCL with 1 < device_count < world (two ranks of one
// NCCL group on one GPU, which NCCL rejects at init).
absl::StatusOr<DeviceSelection> SelectDevice(const std::string& device,
                                             int rank, int world,
                                             bool cuda_available,
                                             int device_count, bool nccl_built);

// SelectDevice with this process's view: torch::cuda::is_available(),
// torch::cuda::device_count() and kernels::BuiltWithNccl() (the only
// device queries; on a CPU build they say "none").
absl::StatusOr<DeviceSelection> SelectDeviceHere(const std::string& device,
                                                 int rank, int world);

}  // namespace smoe::model

#endif  // SMOE_WORKER_MODEL_DEVICE_H_
