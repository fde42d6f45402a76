// Copyright 2026 SMoE Lab authors.
//
// File: common/cpu_tuning.h
//
// Applies common/cpu_features.h's plan to the running process: the first
// thing main() of smoe-trainer and of the CPU benchmarks calls.
//
// Why a re-exec: libopenblas reads OPENBLAS_CORETYPE and libgomp reads
// OMP_WAIT_POLICY in their constructors, when the dynamic loader maps them,
// before main() runs; setting them later changes nothing. So when the plan
// wants either, TuneCpuRuntime() sets them and execv()s /proc/self/exe with
// the same argv once (same pid, same open files; one more load of LibTorch,
// 0.6-0.7 s on the dev VM; SMOE_CPU_TUNED stops a second round). The
// alternative, having each parent (worker daemon, `smoe run`/`smoe up`) set
// them in the child's environment, cannot see which kernels the child's
// OpenBLAS picked (the parents link no BLAS), misses direct runs of
// smoe-trainer and the benches, and cannot fall back when the self-test fails;
// the re-exec decides where the BLAS is loaded and is self-contained.
//
// After a re-exec that changed the core type, a GEMM self-test (cblas_sgemm
// on random data, several shapes and transposes, against a double reference
// within the float rounding bound; one thread; SIGILL caught) must pass
// before the faster kernels are trusted; otherwise the process re-execs once
// more without OPENBLAS_CORETYPE and warns.
//
// Never overrides a user-set OPENBLAS_CORETYPE or OMP_WAIT_POLICY;
// SMOE_CPU_TUNING=off turns it all off. Logs one line (INFO, or WARNING when
// the BLAS runs below the CPU and nothing could fix it). Never fails: any
// problem is logged and the process goes on as it was.
//
// The BLAS is found with dlsym(RTLD_DEFAULT, ...) (openblas_get_corename,
// openblas_get_config, cblas_sgemm, openblas_{get,set}_num_threads), so
// binaries without OpenBLAS, or without any BLAS, link and run unchanged.
#ifndef SMOE_COMMON_CPU_TUNING_H_
#define SMOE_COMMON_CPU_TUNING_H_

#include <string>

#include "common/cpu_features.h"

namespace smoe::cpu {

// See above. `argv` is main()'s (nullptr-terminated). Returns in the final
// process image. Returns the plan's message (also logged).
// Also calls KeepFreedMemory() first.
std::string TuneCpuRuntime(char** argv);

// glibc malloc: serve blocks up to 32 MiB from the heap and keep freed heap
// memory in the process (no page faults for each step's activations).
// No-op with SMOE_CPU_TUNING=off or without glibc.
void KeepFreedMemory();

// The inputs of PlanCpuEnvironment() for this process (CPUID, the loaded
// OpenBLAS, the environment).
CpuEnvInputs CollectCpuEnvInputs();

// The loaded OpenBLAS's core name and config string ("" when the BLAS is not
// OpenBLAS).
std::string LoadedOpenBlasCoreName();
std::string LoadedOpenBlasConfig();

// Runs the loaded BLAS's cblas_sgemm on fixed pseudo-random data (shapes
// 128x256x128, 97x211x53 with B^T, 33x7x129 with A^T, 1x64x300, 64x1x64
// with alpha/beta) and checks each result with CheckGemm(). Single-threaded
// while it runs; a SIGILL is caught and reported. Returns "" on success, else
// what went wrong (also when no cblas_sgemm is loaded).
std::string RunBlasSelfTest();

}  // namespace smoe::cpu

#endif  // SMOE_COMMON_CPU_TUNING_H_
