// Copyright 2026 SMoE Lab authors.
//
// File: tests/quality/layering.h
//
// The dependency rule (docs/development.md, "Dependency rule") as data, and a
// checker that reads `#include` lines. Used by layering_test over the whole
// source tree.
#ifndef SMOE_TESTS_QUALITY_LAYERING_H_
#define SMOE_TESTS_QUALITY_LAYERING_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace smoe::quality {

// One violation: `file` includes `header`, which its folder may not use.
struct Violation {
  std::string file;
  int line = 0;
  std::string header;
  std::string reason;
};

// Returns the include targets ("a/b.h", "torch/torch.h") found in `source`,
// each with its 1-based line number.
std::vector<std::pair<int, std::string>> ExtractIncludes(
    absl::string_view source);

// Checks one file. `path` is relative to the repository root ("store/x.cc").
std::vector<Violation> CheckFile(absl::string_view path,
                                 absl::string_view source);

}  // namespace smoe::quality

#endif  // SMOE_TESTS_QUALITY_LAYERING_H_
