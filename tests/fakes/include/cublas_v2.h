// Copyright 2026 SMoE Lab authors.
//
// File: tests/fakes/include/cublas_v2.h
//
// TEST-ONLY FAKE: the real cublas_v2.h maps the API names to their _v2
// symbols on top of cublas_api.h; the fake declares the plain names.
#ifndef SMOE_TESTS_FAKES_INCLUDE_CUBLAS_V2_H_
#define SMOE_TESTS_FAKES_INCLUDE_CUBLAS_V2_H_

#include "cublas_api.h"

#endif  // SMOE_TESTS_FAKES_INCLUDE_CUBLAS_V2_H_
