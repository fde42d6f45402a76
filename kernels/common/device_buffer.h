// Copyright 2026 SMoE Lab authors.
//
// File: kernels/common/device_buffer.h
//
// Device memory for the kernel checks (kernels/<k>/<k>_check.h), `smoe
// doctor` (kernels/selfcheck) and the GPU tests, one implementation:
//   * DeviceMem: an owning untyped allocation; Upload / Zeros / Download
//     return the Status of kernels/common/cuda_status.h (library code: no
//     aborts). Download synchronises first, so asynchronous kernel errors
//     surface there.
//   * DeviceBuffer<T>: the tests' typed buffer over the same calls, which
//     aborts the test binary on a CUDA error (tests fail loudly).
// REQUIRES: CUDA runtime headers (the real ones, or tests/fakes/include);
// link kernels/common/cuda_status.cc.
#ifndef SMOE_KERNELS_COMMON_DEVICE_BUFFER_H_
#define SMOE_KERNELS_COMMON_DEVICE_BUFFER_H_

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/status_macros.h"
#include "kernels/common/cuda_status.h"

namespace smoe::kernels {

class DeviceMem {
 public:
  DeviceMem() = default;
  ~DeviceMem() {
    if (p_ != nullptr) cudaFree(p_);
  }
  DeviceMem(DeviceMem&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  DeviceMem& operator=(DeviceMem&& o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;

  // `bytes` (at least 1) of uninitialised device memory.
  absl::Status Alloc(size_t bytes) {
    return CudaStatus(cudaMalloc(&p_, bytes == 0 ? 1 : bytes), "cudaMalloc");
  }
  void* get() const { return p_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
};

// Allocates `d` for `h` and copies it up.
template <typename T>
absl::Status Upload(const std::vector<T>& h, DeviceMem* d) {
  SMOE_RETURN_IF_ERROR(d->Alloc(h.size() * sizeof(T)));
  if (h.empty()) return absl::OkStatus();
  return CudaStatus(cudaMemcpy(d->get(), h.data(), h.size() * sizeof(T),
                               cudaMemcpyHostToDevice),
                    "cudaMemcpy H2D");
}

// Allocates `d` for `n` elements of T, every byte 0xff (NaN floats, -1
// integers): a kernel output, so that an element the kernel does not write
// (or adds to instead of setting) fails its comparison.
template <typename T>
absl::Status Poisoned(size_t n, DeviceMem* d) {
  SMOE_RETURN_IF_ERROR(d->Alloc(n * sizeof(T)));
  return CudaStatus(cudaMemset(d->get(), 0xff, n * sizeof(T)), "cudaMemset");
}

// Allocates `d` for `n` zeroed elements of T.
template <typename T>
absl::Status Zeros(size_t n, DeviceMem* d) {
  SMOE_RETURN_IF_ERROR(d->Alloc(n * sizeof(T)));
  return CudaStatus(cudaMemset(d->get(), 0, n * sizeof(T)), "cudaMemset");
}

// Synchronises (so asynchronous kernel errors surface here), then copies `n`
// elements back.
template <typename T>
absl::StatusOr<std::vector<T>> Download(const DeviceMem& d, size_t n) {
  SMOE_RETURN_IF_ERROR(
      CudaStatus(cudaDeviceSynchronize(), "kernel (cudaDeviceSynchronize)"));
  std::vector<T> h(n);
  if (n == 0) return h;
  SMOE_RETURN_IF_ERROR(CudaStatus(
      cudaMemcpy(h.data(), d.get(), n * sizeof(T), cudaMemcpyDeviceToHost),
      "cudaMemcpy D2H"));
  return h;
}

// The tests' buffer: DeviceMem of n elements of T; aborts on CUDA errors.
template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) { Check(mem_.Alloc(sizeof(T) * n)); }
  explicit DeviceBuffer(const std::vector<T>& h) : n_(h.size()) {
    Check(Upload(h, &mem_));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return mem_.as<T>(); }
  // Synchronises the device, then copies the buffer back.
  std::vector<T> ToHost() const {
    absl::StatusOr<std::vector<T>> h = Download<T>(mem_, n_);
    Check(h.status());
    return *std::move(h);
  }

 private:
  static void Check(const absl::Status& s) {
    if (!s.ok()) {
      std::fprintf(stderr, "CUDA error: %s\n", s.ToString().c_str());
      std::abort();
    }
  }
  size_t n_;
  DeviceMem mem_;
};

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_COMMON_DEVICE_BUFFER_H_
