// Copyright 2026 SMoE Lab authors.
//
// File: tests/fakes/include/cuda_bf16.h
//
// TEST-ONLY FAKE of the host side of CUDA's cuda_bf16.h that
// kernels/selfcheck/selfcheck.cc and the kernel tests use: the 2-byte
// __nv_bfloat16 (constructible from float) and its float conversions (round to
// nearest even, NaN kept quiet), as the real header's host functions compute
// them.
#ifndef SMOE_TESTS_FAKES_INCLUDE_CUDA_BF16_H_
#define SMOE_TESTS_FAKES_INCLUDE_CUDA_BF16_H_

#include <cstdint>
#include <cstring>

struct __nv_bfloat16 {
  uint16_t __x;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f);  // NOLINT(runtime/explicit): as CUDA's
};

inline float __bfloat162float(__nv_bfloat16 h) {
  const uint32_t u = static_cast<uint32_t>(h.__x) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

inline __nv_bfloat16 __float2bfloat16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  __nv_bfloat16 h;
  if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN
    h.__x = static_cast<uint16_t>((u >> 16) | 0x40u);
    return h;
  }
  u += 0x7fffu + ((u >> 16) & 1u);
  h.__x = static_cast<uint16_t>(u >> 16);
  return h;
}

inline __nv_bfloat16::__nv_bfloat16(float f) : __x(__float2bfloat16(f).__x) {}

#endif  // SMOE_TESTS_FAKES_INCLUDE_CUDA_BF16_H_
