// Copyright 2026 SMoE Lab authors.
//
// File: tests/fakes/kernels_on_emu.h
//
// Included first by the generated translation units that compile a kernel
// source (kernels/*/*.cu) as C++ over the CUDA emulator for the fake runtime
// (tests/fakes/CMakeLists.txt, smoe_emu_kernels): the launchers get an Emu
// prefix, so tests/fakes/fake_kernels.cc (built with SMOE_FAKE_KERNELS_EMU)
// can wrap them with the fault knobs and run counts of
// fake_kernels_control.h.
#ifndef SMOE_TESTS_FAKES_KERNELS_ON_EMU_H_
#define SMOE_TESTS_FAKES_KERNELS_ON_EMU_H_

#define LaunchRouterTopK EmuLaunchRouterTopK
#define LaunchRouterTopKBackward EmuLaunchRouterTopKBackward
#define LaunchExclusiveScan EmuLaunchExclusiveScan
#define LaunchPermutePlanWorkspaceBytes EmuLaunchPermutePlanWorkspaceBytes
#define LaunchBuildPermutePlan EmuLaunchBuildPermutePlan
#define LaunchGatherRows EmuLaunchGatherRows
#define LaunchCombine EmuLaunchCombine
#define LaunchCombineBackward EmuLaunchCombineBackward
#define LaunchGroupedGemm EmuLaunchGroupedGemm

#endif  // SMOE_TESTS_FAKES_KERNELS_ON_EMU_H_
