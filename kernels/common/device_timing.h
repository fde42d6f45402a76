// Copyright 2026 SMoE Lab authors.
//
// File: kernels/common/device_timing.h
//
// Timing of device work, one implementation for the benches
// (kernels/common/bench.h, which aborts on its errors) and `smoe doctor`'s
// rates (kernels/selfcheck): `warmup` untimed calls, then `reps` timed ones,
// each after overwriting an L2 flush buffer (larger than L2), timed with
// CUDA events; the median.
// REQUIRES: CUDA runtime headers (real or tests/fakes/include); link
// kernels/common/cuda_status.cc.
#ifndef SMOE_KERNELS_COMMON_DEVICE_TIMING_H_
#define SMOE_KERNELS_COMMON_DEVICE_TIMING_H_

#include <cuda_runtime_api.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/status_macros.h"
#include "kernels/common/cuda_status.h"

namespace smoe::kernels {

class CudaEvent {
 public:
  CudaEvent() = default;
  ~CudaEvent() {
    if (e_ != nullptr) cudaEventDestroy(e_);
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  absl::Status Create() {
    return CudaStatus(cudaEventCreate(&e_), "cudaEventCreate");
  }
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// Runs `fn` `warmup` times, then `reps` (>= 1) times, each after a memset of
// the `flush_bytes` at `flush` (byte value rep & 0xff). Returns the median
// in microseconds, or the first error of `fn` or of a CUDA call.
inline absl::StatusOr<double> TimeDeviceMedianUs(
    const std::function<absl::Status(cudaStream_t)>& fn, cudaStream_t stream,
    void* flush, size_t flush_bytes, int warmup, int reps) {
  CudaEvent start, stop;
  SMOE_RETURN_IF_ERROR(start.Create());
  SMOE_RETURN_IF_ERROR(stop.Create());
  for (int i = 0; i < warmup; ++i) SMOE_RETURN_IF_ERROR(fn(stream));
  std::vector<float> ms(reps);
  for (int i = 0; i < reps; ++i) {
    SMOE_RETURN_IF_ERROR(
        CudaStatus(cudaMemsetAsync(flush, i & 0xff, flush_bytes, stream),
                   "cudaMemsetAsync (L2 flush)"));
    SMOE_RETURN_IF_ERROR(
        CudaStatus(cudaEventRecord(start.get(), stream), "cudaEventRecord"));
    SMOE_RETURN_IF_ERROR(fn(stream));
    SMOE_RETURN_IF_ERROR(
        CudaStatus(cudaEventRecord(stop.get(), stream), "cudaEventRecord"));
    SMOE_RETURN_IF_ERROR(
        CudaStatus(cudaEventSynchronize(stop.get()), "cudaEventSynchronize"));
    SMOE_RETURN_IF_ERROR(
        CudaStatus(cudaEventElapsedTime(&ms[i], start.get(), stop.get()),
                   "cudaEventElapsedTime"));
  }
  std::sort(ms.begin(), ms.end());
  return 1e3 * ms[reps / 2];
}

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_COMMON_DEVICE_TIMING_H_
