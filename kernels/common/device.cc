// Copyright 2026 SMoE Lab authors.
#include "kernels/common/device.h"

#include <string>

#if defined(SMOE_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace smoe::kernels {

bool BuiltWithCuda() {
#if defined(SMOE_WITH_CUDA)
  return true;
#else
  return false;
#endif
}

int CudaDeviceCount() {
#if defined(SMOE_WITH_CUDA)
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return count;
#else
  return 0;
#endif
}

std::string DescribeDevice(int index) {
#if defined(SMOE_WITH_CUDA)
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("CUDA unavailable: ") + cudaGetErrorName(err) + ": " +
           cudaGetErrorString(err);
  }
  if (index >= count) return "device index out of range";
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) {
    return "cudaGetDeviceProperties failed";
  }
  return std::string(prop.name) + ", sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ", " +
         std::to_string(prop.multiProcessorCount) + " SMs";
#else
  (void)index;
  return "built without CUDA (SMOE_WITH_CUDA=OFF)";
#endif
}

}  // namespace smoe::kernels
