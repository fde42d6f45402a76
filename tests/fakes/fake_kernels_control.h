// Copyright 2026 SMoE Lab authors.
//
// File: tests/fakes/fake_kernels_control.h
//
// Test-only control of tests/fakes/fake_kernels.cc: fake definitions of the
// kernel launch functions of kernels/*/*_launch.h (LaunchRouterTopK,
// LaunchBuildPermutePlan, LaunchGatherRows, LaunchCombine, ...,
// LaunchGroupedGemm) and of the cuBLAS calls of tests/fakes/include/
// cublas_api.h, over the fake CUDA runtime (fake_nccl_control.h). They let the
// UNCHANGED host code around the kernels (the kernels/*/foo.cc wrappers and
// kernels/selfcheck/selfcheck.cc) run on a machine without a GPU:
//
//  * Each launch validates its arguments as the .cu launcher does, then
//    enqueues one stream operation (cudaLaunchHostFunc on the launch's
//    stream) that runs the kernel's CPU reference (kernels/*/*_ref.cc) on the
//    fake's host-memory "device" pointers. The fake runs stream operations
//    in order after a random delay, so a caller that reads a result without
//    synchronising reads the poison of cudaMalloc, not the result.
//  * bfloat16 operands are converted to float, computed, and rounded once.
//  * cublasGemmEx computes on the host on the handle's stream
//    (cublasSetStream), column-major, float accumulation.
//  * FailCall (fake_nccl_control.h) with the launch's or the cuBLAS call's
//    name makes it return that error without enqueueing anything.
//
// They are test doubles for the host logic around the kernels: they say
// nothing about the CUDA kernels themselves (the `gpu` tests do).
#ifndef SMOE_TESTS_FAKES_FAKE_KERNELS_CONTROL_H_
#define SMOE_TESTS_FAKES_FAKE_KERNELS_CONTROL_H_

#include <cstdint>
#include <string>

namespace smoe::fake_kernels {

// The `skip`+1-th run of launch `launch` (e.g. "LaunchRouterTopK",
// "LaunchGatherRows", "LaunchGroupedGemm", "cublasGemmEx") from now on
// computes the right result, then adds 1 to the first element of its first
// output (a wrong kernel). Once. Cleared by Reset.
void CorruptLaunch(const std::string& launch, int skip = 0);

// Launch runs that completed on a stream since Reset, by name ("" = all).
int64_t LaunchesRun(const std::string& launch = "");

// Clears CorruptLaunch faults and the counts (call with fake_nccl::Reset).
void Reset();

}  // namespace smoe::fake_kernels

#endif  // SMOE_TESTS_FAKES_FAKE_KERNELS_CONTROL_H_
