// Copyright 2026 SMoE Lab authors.
//
// File: tests/quality/gpu_branches.h
//
// The inventory of device-conditional code in kernels/, worker/model/ and
// worker/trainer/ (issue 13: "one code path, only the launch differs"), and
// the checker that keeps docs/gpu-only-lines.md in step with it. A site is
//   * a preprocessor conditional on a device macro (SMOE_WITH_TORCH_CUDA,
//     SMOE_WITH_CUDA, SMOE_WITH_NCCL, SMOE_OPS_CUDA, __CUDACC__): the region
//     a CPU-only build compiles differently;
//   * a runtime device branch outside such a region (`is_cuda()`, `kCUDA`,
//     `torch::cuda::`, a comparison with "cuda", `MemorySpace::kCudaDevice`):
//     the line whose one side CI never takes;
//   * a CUDA-only file: a .cu/.cuh, or a .cc/.h that includes a CUDA, cuBLAS
//     or NCCL header (or another CUDA-only project header) outside a device
//     conditional, so CMake compiles it only with CUDA and a GPU runs it.
// Sites are compared by (file, normalised text of the site's line), not by
// line number, so unrelated edits do not churn the list.
#ifndef SMOE_TESTS_QUALITY_GPU_BRANCHES_H_
#define SMOE_TESTS_QUALITY_GPU_BRANCHES_H_

#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace smoe::quality {

struct DeviceSite {
  std::string file;  // relative to the repository root
  int line = 0;      // 1-based; 0 for whole-file sites of .cu/.cuh
  std::string kind;  // "#if", "branch" or "file"
  std::string text;  // normalised (comments removed, whitespace collapsed)
};

// True for the files the inventory covers: .cc/.h/.cu/.cuh under kernels/,
// worker/model/, worker/trainer/, except tests (*_test.*) and benchmarks
// (*bench*).
bool InGpuInventoryScope(absl::string_view path);

// `source` with // and /* */ comments blanked (newlines kept), string and
// character literals left intact.
std::string StripComments(absl::string_view source);

// Sites of one file. `cuda_only_headers` are the project headers
// ("kernels/common/cuda_status.h") already known to be CUDA-only; including
// one of them outside a device conditional makes this file CUDA-only too.
std::vector<DeviceSite> ScanFile(
    absl::string_view path, absl::string_view source,
    const std::vector<std::string>& cuda_only_headers);

// Sites of a set of files (path -> contents), CUDA-only headers resolved to a
// fixed point; sorted by file, then line.
std::vector<DeviceSite> ScanFiles(
    const std::map<std::string, std::string>& files);

// One line of the machine-readable block: "<file> | <kind> | <text>".
std::string FormatSite(const DeviceSite& site);

// The entry lines between the markers below in `doc` (blank lines and ```
// fences skipped); empty when the markers are missing.
inline constexpr absl::string_view kInventoryBegin = "<!-- gpu-branches:begin";
inline constexpr absl::string_view kInventoryEnd = "<!-- gpu-branches:end";
std::vector<std::string> ParseInventoryBlock(absl::string_view doc);

// The block to paste into docs/gpu-only-lines.md, markers included.
std::string RenderInventoryBlock(const std::vector<DeviceSite>& sites);

}  // namespace smoe::quality

#endif  // SMOE_TESTS_QUALITY_GPU_BRANCHES_H_
