// Copyright 2026 SMoE Lab authors.
//
// File: tests/fakes/include/cuda_runtime_api.h
//
// TEST-ONLY FAKE of the CUDA runtime API subset that
// kernels/all_to_all/nccl_communicator.cc, kernels/all_to_all/payload.cc,
// kernels/common/device.cc, kernels/selfcheck/selfcheck.cc and the fake tests
// use. Same names, signatures,
// enum names and values as CUDA 13's cuda_runtime_api.h / driver_types.h, so
// those sources compile unchanged when tests/fakes/include comes first on the
// include path. No GPU: host memory stands in for device memory and every
// stream is a FIFO run by its own background thread (see
// tests/fakes/fake_nccl_cuda.cc and tests/fakes/fake_nccl_control.h for the
// semantics and the fault knobs).
//
// Everything is declared in namespace smoe_fake and pulled into the global
// namespace with a using-directive: the linker symbols are C++-mangled in
// smoe_fake, so a binary may also link the real libcudart (smoe_kernels does
// when CUDA is enabled) without the two interposing each other.
#ifndef SMOE_TESTS_FAKES_INCLUDE_CUDA_RUNTIME_API_H_
#define SMOE_TESTS_FAKES_INCLUDE_CUDA_RUNTIME_API_H_

#include <cstddef>

#define SMOE_FAKE_CUDA_RUNTIME 1
#define CUDART_VERSION 13000

namespace smoe_fake {

// driver_types.h values.
enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchFailure = 719,
  cudaErrorUnknown = 999
};
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};

struct CUstream_st;
typedef struct CUstream_st* cudaStream_t;
struct CUevent_st;
typedef struct CUevent_st* cudaEvent_t;
typedef void (*cudaHostFn_t)(void* userData);

const char* cudaGetErrorName(cudaError_t error);
const char* cudaGetErrorString(cudaError_t error);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();

// driver_types.h's cudaDeviceProp, the fields kernels/common/device.cc and
// kernels/selfcheck/selfcheck.cc read (the real struct has many more; code
// that reads only these compiles unchanged).
struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  int major;
  int minor;
  int multiProcessorCount;
  int pciBusID;
  int pciDeviceID;
  int pciDomainID;
};
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaDriverGetVersion(int* driverVersion);
cudaError_t cudaRuntimeGetVersion(int* runtimeVersion);

cudaError_t cudaMalloc(void** devPtr, size_t size);
cudaError_t cudaFree(void* devPtr);
cudaError_t cudaMallocHost(void** ptr, size_t size);
cudaError_t cudaFreeHost(void* ptr);

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count,
                       cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count,
                            cudaMemcpyKind kind, cudaStream_t stream = 0);
cudaError_t cudaMemset(void* devPtr, int value, size_t count);
cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count,
                            cudaStream_t stream = 0);

cudaError_t cudaStreamCreate(cudaStream_t* pStream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream,
                                      unsigned int flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn,
                               void* userData);

// Events: a record is a stream operation that takes the host clock when it
// runs; elapsed time is the difference of two completed records.
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

}  // namespace smoe_fake

// NOLINTNEXTLINE(build/namespaces): stands in for a C API.
using namespace smoe_fake;

#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)

#endif  // SMOE_TESTS_FAKES_INCLUDE_CUDA_RUNTIME_API_H_
