// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/cpu_math.h
//
// Small branch-free float math for the CPU fused ops' loops
// (fused_cpu_kernels.cc), written so GCC vectorises the loops that call it.
// Include only from translation units compiled with the fused ops' flags
// (-O3 and reassociation; worker/model/CMakeLists.txt).
#ifndef SMOE_WORKER_MODEL_CPU_MATH_H_
#define SMOE_WORKER_MODEL_CPU_MATH_H_

#include <cmath>
#include <cstdint>
#include <cstring>

// Marks a function to be compiled for AVX-512 (x86-64-v4), AVX2+FMA (v3)
// and baseline x86-64, the version picked at load time by the CPU (GCC
// function multi-versioning); nothing elsewhere.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SMOE_CPU_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SMOE_CPU_CLONES
#endif

namespace smoe::model {

// exp(x) for x <= 0 in float: Cephes expf (range reduction by ln 2 in two
// parts, degree-6 polynomial, 2^n by exponent bits), about 1 ulp. Below -87
// it returns exactly 0 (exp < 1.7e-38 is nothing next to the row maximum's
// exp(0) = 1, and a true 0 keeps subnormals, which cost ~100x per
// operation, out of the padding lanes). Branch- and select-free (the clamp
// is a multiply by 0 or 1), so GCC vectorises the row loop without
// -ffinite-math-only.
inline float ExpNonPositive(float x) {
  const float in = static_cast<float>(x >= -87.0f);  // 1, or 0 below -87
  x = x * in + (1.0f - in) * -87.0f;                 // exact for either
  const float t = x * 1.44269504088896341f;
  const int n = static_cast<int>(t - 0.5f);  // round to nearest, t <= 0
  const float fn = static_cast<float>(n);
  float r = x - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
  const float z = r * r;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * z + r + 1.0f;
  const int32_t bits = (n + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return y * scale * in;
}

inline double ExpNonPositive(double x) { return std::exp(x); }

// tanh(u) = sign(u) (1 - e) / (1 + e), e = exp(-2|u|) <= 1: about 2 ulp
// of 1 + tanh(u) (what GELU uses), no overflow for any finite u.
inline float TanhViaExp(float u) {
  const float e = ExpNonPositive(-2.0f * std::fabs(u));
  return std::copysign((1.0f - e) / (1.0f + e), u);
}

inline double TanhViaExp(double u) { return std::tanh(u); }

}  // namespace smoe::model

#endif  // SMOE_WORKER_MODEL_CPU_MATH_H_
