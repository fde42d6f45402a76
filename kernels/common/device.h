// Copyright 2026 SMoE Lab authors.
//
// File: kernels/common/device.h
//
// Device discovery for GPU tests and benchmarks. Built with and without CUDA: a
// CPU-only build reports no devices, so GPU tests skip themselves honestly.
#ifndef SMOE_KERNELS_COMMON_DEVICE_H_
#define SMOE_KERNELS_COMMON_DEVICE_H_

#include <string>

namespace smoe::kernels {

// Returns true when this binary was compiled with CUDA support.
bool BuiltWithCuda();

// Returns the number of CUDA devices visible to this process; 0 when the build
// has no CUDA, the driver is missing, or no device is present.
int CudaDeviceCount();

// Returns a one-line description ("NVIDIA H100 80GB HBM3, sm_90, 132 SMs") of
// device `index`, or a reason why there is none.
std::string DescribeDevice(int index);

}  // namespace smoe::kernels

// Skips the current gtest when no CUDA device is present.
#define SMOE_SKIP_WITHOUT_GPU()                           \
  do {                                                    \
    if (::smoe::kernels::CudaDeviceCount() == 0) {        \
      GTEST_SKIP() << "no CUDA device: "                  \
                   << ::smoe::kernels::DescribeDevice(0); \
    }                                                     \
  } while (false)

#endif  // SMOE_KERNELS_COMMON_DEVICE_H_
