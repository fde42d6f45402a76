// Copyright 2026 SMoE Lab authors.
//
// File: kernels/common/compare.h
//
// Tolerance comparison used by every kernel test (docs/kernels.md 3): element i
// passes when |got[i] - ref[i]| <= atol + |ref[i]| * eps (llm.c's rule). Each
// caller states why its atol and eps are what they are. Header-only, no CUDA,
// no gtest; tests wrap the result in EXPECT_TRUE(r.ok) << r.message.
#ifndef SMOE_KERNELS_COMMON_COMPARE_H_
#define SMOE_KERNELS_COMMON_COMPARE_H_

#include <cmath>
#include <cstddef>
#include <sstream>
#include <string>

namespace smoe::kernels {

struct CompareResult {
  bool ok = true;
  size_t num_bad = 0;        // elements outside the tolerance (NaN counts)
  double max_abs_err = 0.0;  // over all elements
  std::string message;       // first mismatch and counts, empty when ok
};

// Compares `n` elements of `got` against `ref`. T is float or double.
template <typename T>
CompareResult CompareClose(const T* ref, const T* got, size_t n, double atol,
                           double eps) {
  CompareResult r;
  size_t first = n;
  for (size_t i = 0; i < n; ++i) {
    const double a = static_cast<double>(ref[i]);
    const double b = static_cast<double>(got[i]);
    const double err = std::fabs(a - b);
    if (err > r.max_abs_err || std::isnan(err)) r.max_abs_err = err;
    if (!(err <= atol + std::fabs(a) * eps)) {
      if (first == n) first = i;
      ++r.num_bad;
    }
  }
  if (r.num_bad > 0) {
    r.ok = false;
    std::ostringstream os;
    os << r.num_bad << " of " << n << " elements outside atol=" << atol
       << " eps=" << eps << "; first at " << first << ": ref=" << ref[first]
       << " got=" << got[first] << "; max |err|=" << r.max_abs_err;
    r.message = os.str();
  }
  return r;
}

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_COMMON_COMPARE_H_
