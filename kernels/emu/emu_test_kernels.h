// Copyright 2026 SMoE Lab authors.
//
// File: kernels/emu/emu_test_kernels.h
//
// Launchers of kernels/emu/emu_test_kernels.cu (emulator self-tests). Each
// enqueues one launch on the default stream; device pointers are fake
// cudaMalloc memory.
#ifndef SMOE_KERNELS_EMU_EMU_TEST_KERNELS_H_
#define SMOE_KERNELS_EMU_EMU_TEST_KERNELS_H_

namespace smoe::emu::test {

// op: 0 __shfl_sync, 1 _up, 2 _down, 3 _xor; lanes outside `mask` exit.
void LaunchShuffle(int* out, int op, int arg, int width, unsigned mask);
void LaunchVote(unsigned* ballot, unsigned* match);
void LaunchBlockSum(const int* in, int* out, int blocks);
void LaunchHistogram(const int* in, int n, int bins, int* counts, float* total,
                     int blocks);
void LaunchExitEarly(int* out);
void LaunchSyncwarpOrders(int* out);
// Broken on purpose: each must be reported.
void LaunchDivergentBarrier();
void LaunchDeadlock(int* out);
void LaunchMaskMismatch(int* out);
void LaunchShuffleOrdersNothing(int* out);
void LaunchSharedRace(int* out);
void LaunchGlobalRace(int* out);
void LaunchUninitShared(int* out);
void LaunchSharedOutOfBounds(int* out);

}  // namespace smoe::emu::test

#endif  // SMOE_KERNELS_EMU_EMU_TEST_KERNELS_H_
