// Copyright 2026 SMoE Lab authors.
//
// File: tests/fakes/include/cuda_runtime.h
//
// TEST-ONLY FAKE: the real cuda_runtime.h adds C++ templates on top of
// cuda_runtime_api.h; the fake needs none of them.
#ifndef SMOE_TESTS_FAKES_INCLUDE_CUDA_RUNTIME_H_
#define SMOE_TESTS_FAKES_INCLUDE_CUDA_RUNTIME_H_

#include "cuda_runtime_api.h"

#endif  // SMOE_TESTS_FAKES_INCLUDE_CUDA_RUNTIME_H_
