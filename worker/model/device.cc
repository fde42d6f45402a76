// Copyright 2026 SMoE Lab authors.
#include "worker/model/device.h"

namespace smoe::model {

torch::Device CommDevice(const kernels::Communicator& comm,
                         torch::Device model_device) {
  return comm.memory_space() == kernels::MemorySpace::kHost
             ? torch::Device(torch::kCPU)
             : model_device;
}

}  // namespace smoe::model
