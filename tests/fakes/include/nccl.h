// Copyright 2026 SMoE Lab authors.
//
// File: tests/fakes/include/nccl.h
//
// TEST-ONLY FAKE of the NCCL API subset that
// kernels/all_to_all/nccl_communicator.cc uses, with the names, signatures,
// enum names and values of NCCL 2.28's nccl.h, so that file compiles
// unchanged against it. The ranks of a communicator are threads of one
// process; "device" buffers are host memory from the fake cudaMalloc. The
// semantics follow real NCCL with config.blocking = 0: ncclCommInitRankConfig,
// ncclGroupEnd and a bare ncclAllReduce return ncclInProgress and a
// background thread enqueues the work onto the stream LATER;
// ncclCommGetAsyncError reports ncclInProgress until that happened. See
// tests/fakes/fake_nccl_cuda.cc for the model and fake_nccl_control.h for the
// fault knobs.
//
// Declared in namespace smoe_fake (see cuda_runtime_api.h for why).
#ifndef SMOE_TESTS_FAKES_INCLUDE_NCCL_H_
#define SMOE_TESTS_FAKES_INCLUDE_NCCL_H_

#include <climits>
#include <cstddef>

#include "cuda_runtime.h"

#define SMOE_FAKE_NCCL 1
#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_SUFFIX ""
#define NCCL_VERSION_CODE 22809
#define NCCL_VERSION(X, Y, Z)                        \
  (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) \
                          : (X)*10000 + (Y)*100 + (Z))

#define NCCL_COMM_NULL NULL
#define NCCL_UNIQUE_ID_BYTES 128
#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL

namespace smoe_fake {

struct ncclComm;
typedef struct ncclComm* ncclComm_t;

typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

typedef struct ncclConfig_v22800 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} ncclConfig_t;

typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclNumTypes = 12
} ncclDataType_t;

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks,
                                    ncclUniqueId commId, int rank,
                                    ncclConfig_t* config);
ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
const char* ncclGetErrorString(ncclResult_t result);
// NCCL_VERSION_CODE of this fake.
ncclResult_t ncclGetVersion(int* version);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void* sendbuff, size_t count,
                      ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype,
                      int peer, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGroupStart();
ncclResult_t ncclGroupEnd();

}  // namespace smoe_fake

// NOLINTNEXTLINE(build/namespaces): stands in for a C API.
using namespace smoe_fake;

#define NCCL_CONFIG_INITIALIZER                                              \
  {                                                                          \
    sizeof(ncclConfig_t), 0xcafebeef,                                        \
        NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),                    \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT, \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT, \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                        \
  }

#endif  // SMOE_TESTS_FAKES_INCLUDE_NCCL_H_
