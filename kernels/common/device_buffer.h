// Copyright 2026 SMoE Lab authors.
//
// File: kernels/common/device_buffer.h
//
// Test/bench helper: an owning device buffer of T with host round trips.
// Aborts the test binary on CUDA errors (tests fail loudly, not silently).
// REQUIRES: CUDA runtime headers; include only from GPU tests and benches.
#ifndef SMOE_KERNELS_COMMON_DEVICE_BUFFER_H_
#define SMOE_KERNELS_COMMON_DEVICE_BUFFER_H_

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace smoe::kernels {

template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) {
    Check(cudaMalloc(reinterpret_cast<void**>(&p_),
                     sizeof(T) * (n == 0 ? 1 : n)));
  }
  explicit DeviceBuffer(const std::vector<T>& h) : DeviceBuffer(h.size()) {
    Check(cudaMemcpy(p_, h.data(), sizeof(T) * n_, cudaMemcpyHostToDevice));
  }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return p_; }
  // Synchronises the device, then copies the buffer back.
  std::vector<T> ToHost() const {
    Check(cudaDeviceSynchronize());
    std::vector<T> h(n_);
    Check(cudaMemcpy(h.data(), p_, sizeof(T) * n_, cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  static void Check(cudaError_t e) {
    if (e != cudaSuccess) {
      std::fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(e));
      std::abort();
    }
  }
  size_t n_;
  T* p_ = nullptr;
};

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_COMMON_DEVICE_BUFFER_H_
