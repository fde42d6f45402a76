// Copyright 2026 SMoE Lab authors.
//
// File: kernels/emu/emu_internal.h
//
// Between the emulator's runtime (emu.cc) and its race checker
// (race_hooks.cc): the launch running on this OS thread, its vector clocks,
// shared arena and shadow memory. Not for kernels or tests.
#ifndef SMOE_KERNELS_EMU_EMU_INTERNAL_H_
#define SMOE_KERNELS_EMU_EMU_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace smoe::emu::internal {

struct Launch;
struct Shadow;

// The launch whose emulated thread is running on this OS thread, or nullptr
// (host code, the scheduler).
Launch* CurrentLaunch();
int CurrentThread(const Launch& L);
uint32_t BlockLinear(const Launch& L);
int NumThreads(const Launch& L);
// Thread t's vector clock over the block's threads (race build).
const uint32_t* ClockOf(const Launch& L, int t);
Shadow* ShadowOf(const Launch& L);
std::pair<const char*, size_t> Arena(const Launch& L);
std::pair<const char*, size_t> StackOf(const Launch& L, int t);
std::vector<uint8_t>& SharedInit(Launch& L);
bool InSharedAlloc(const Launch& L, const char* p, size_t n);
std::string DescribeThread(const Launch& L, uint32_t block, int t);
std::string DescribeShared(const Launch& L, const char* p);
void CountRaceCheck();

// Prints "smoe-emu: <check>", the launch, block and thread (t >= 0), then
// `detail`, and aborts.
[[noreturn]] void Fail(Launch& L, const char* check, int t,
                       const std::string& detail);

// Race build (race_hooks.cc).
Shadow* NewShadow();
void DeleteShadow(Shadow* s);
// Drops what the shadow knows about [p, p + n) (a block's fresh arena).
void ShadowForget(Launch& L, const void* p, size_t n);

}  // namespace smoe::emu::internal

#endif  // SMOE_KERNELS_EMU_EMU_INTERNAL_H_
