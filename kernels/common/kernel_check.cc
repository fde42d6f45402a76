// Copyright 2026 SMoE Lab authors.
#include "kernels/common/kernel_check.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/common/compare.h"

namespace smoe::kernels {
namespace {

template <typename T>
KernelComparison Exact(std::string what, const std::vector<T>& ref,
                       const std::vector<T>& got) {
  KernelComparison c;
  c.what = std::move(what);
  c.exact = true;
  c.elements = static_cast<int64_t>(ref.size());
  if (got.size() != ref.size()) {
    c.num_bad = c.elements;
    c.message = absl::StrCat("size ", got.size(), " != ", ref.size());
    return c;
  }
  size_t first = ref.size();
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::memcmp(&ref[i], &got[i], sizeof(T)) != 0) {
      if (first == ref.size()) first = i;
      ++c.num_bad;
    }
  }
  if (c.num_bad > 0) {
    c.message = absl::StrCat(c.num_bad, " of ", ref.size(),
                             " elements differ (exact); first at ", first);
  }
  return c;
}

}  // namespace

KernelComparison CompareCloseOutput(std::string what,
                                    const std::vector<float>& ref,
                                    const std::vector<float>& got, double atol,
                                    double eps) {
  KernelComparison c;
  c.what = std::move(what);
  c.atol = atol;
  c.eps = eps;
  c.elements = static_cast<int64_t>(ref.size());
  if (got.size() != ref.size()) {
    c.num_bad = c.elements;
    c.message = absl::StrCat("size ", got.size(), " != ", ref.size());
    return c;
  }
  const CompareResult r =
      CompareClose(ref.data(), got.data(), ref.size(), atol, eps);
  c.num_bad = static_cast<int64_t>(r.num_bad);
  c.max_abs_err = r.max_abs_err;
  c.message = r.message;
  return c;
}

KernelComparison CompareExactOutput(std::string what,
                                    const std::vector<float>& ref,
                                    const std::vector<float>& got) {
  return Exact(std::move(what), ref, got);
}

KernelComparison CompareExactOutput(std::string what,
                                    const std::vector<int32_t>& ref,
                                    const std::vector<int32_t>& got) {
  return Exact(std::move(what), ref, got);
}

std::string ComparisonFailures(const std::vector<KernelComparison>& all) {
  std::string out;
  for (const KernelComparison& c : all) {
    if (c.num_bad > 0) absl::StrAppend(&out, c.what, ": ", c.message, "\n");
  }
  return out;
}

}  // namespace smoe::kernels
