// Copyright 2026 SMoE Lab authors.
//
// File: kernels/common/kernel_check.h
//
// What a kernel check (kernels/<k>/<k>_check.h) reports: one
// KernelComparison per output compared with its CPU reference. The checks
// are written once and called by the kernel's GPU test (kernels/<k>/
// <k>_test.cc, also run on the CPU emulator under `ctest -L emu`) and by
// `smoe doctor`'s kernel checks (kernels/selfcheck/selfcheck.h).
// Pure host code (no CUDA types): compiled in every build.
#ifndef SMOE_KERNELS_COMMON_KERNEL_CHECK_H_
#define SMOE_KERNELS_COMMON_KERNEL_CHECK_H_

#include <cstdint>
#include <string>
#include <vector>

namespace smoe::kernels {

// One element-wise comparison of a GPU output with its reference.
struct KernelComparison {
  std::string what;          // "router fwd E=8 k=2 renorm: topk_weights"
  bool exact = false;        // integers and copies: bitwise equality
  double atol = 0, eps = 0;  // compare.h's rule when !exact
  int64_t elements = 0;
  int64_t num_bad = 0;
  double max_abs_err = 0;
  std::string message;  // first mismatch, "" when it passed
};

// The comparisons of a downloaded output `got` with its reference (pure host
// functions): element-wise under compare.h's rule (|got - ref| <= atol +
// eps |ref|), or bitwise. A size mismatch counts every reference element as
// bad. The message names the first mismatch.
KernelComparison CompareCloseOutput(std::string what,
                                    const std::vector<float>& ref,
                                    const std::vector<float>& got, double atol,
                                    double eps);
KernelComparison CompareExactOutput(std::string what,
                                    const std::vector<float>& ref,
                                    const std::vector<float>& got);
KernelComparison CompareExactOutput(std::string what,
                                    const std::vector<int32_t>& ref,
                                    const std::vector<int32_t>& got);

// "" when every comparison passed, else one line per failing comparison
// ("<what>: <message>"); what the GPU tests print.
std::string ComparisonFailures(const std::vector<KernelComparison>& all);

}  // namespace smoe::kernels

#endif  // SMOE_KERNELS_COMMON_KERNEL_CHECK_H_
