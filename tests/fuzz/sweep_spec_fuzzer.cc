// Copyright 2026 SMoE Lab authors.
//
// libFuzzer target for the sweep-file parser: any byte string must give either
// a valid spec or an InvalidArgument status, never a crash, hang or exception.
// Valid specs must survive a YAML round trip with identical trial ids.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sweeps/sweep_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  smoe::sweeps::ParseOptions opts;
  opts.max_points = 64;  // keep expansions cheap
  auto spec = smoe::sweeps::ParseSweepYaml(text, opts);
  if (!spec.ok()) {
    if (spec.status().code() != absl::StatusCode::kInvalidArgument) abort();
    return 0;
  }
  auto again =
      smoe::sweeps::ParseSweepYaml(smoe::sweeps::SweepSpecToYaml(*spec), opts);
  if (!again.ok()) abort();
  // kind command: the program and the declared params survive too.
  if (again->command != spec->command ||
      !smoe::sweeps::SameSchema(again->command_kind, spec->command_kind)) {
    abort();
  }
  const auto a = smoe::sweeps::ExpandGrid(*spec);
  const auto b = smoe::sweeps::ExpandGrid(*again);
  if (a.size() != b.size()) abort();
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].trial_id != b[i].trial_id) abort();
  }
  return 0;
}
