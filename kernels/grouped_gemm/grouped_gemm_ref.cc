// Copyright 2026 SMoE Lab authors.
//
// CPU reference of the grouped expert GEMM (grouped_gemm.h), and the
// host-only helpers every build has (argument validation, variant fallback).
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernels/grouped_gemm/grouped_gemm.h"

namespace smoe::kernels {

absl::Status ValidateGroupedGemmArgs(const int64_t* expert_offsets,
                                     int num_experts, int64_t k, int64_t n) {
  if (num_experts < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_experts must be >= 1, got ", num_experts));
  }
  if (k < 1 || k >= (int64_t{1} << 31)) {
    return absl::InvalidArgumentError(
        absl::StrCat("k must be in [1, 2^31), got ", k));
  }
  if (n < 1 || n >= (int64_t{1} << 31)) {
    return absl::InvalidArgumentError(
        absl::StrCat("n must be in [1, 2^31), got ", n));
  }
  if (expert_offsets[0] != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("expert_offsets[0] must be 0, got ", expert_offsets[0]));
  }
  for (int e = 0; e < num_experts; ++e) {
    const int64_t m = expert_offsets[e + 1] - expert_offsets[e];
    if (m < 0 || m >= (int64_t{1} << 31)) {
      return absl::InvalidArgumentError(
          absl::StrCat("expert_offsets must be non-decreasing with rows < "
                       "2^31; expert ",
                       e, " has ", m, " rows"));
    }
  }
  return absl::OkStatus();
}

std::optional<GroupedGemmVariant> GroupedGemmFallbackVariant(
    GroupedGemmVariant tried, const absl::Status& status) {
  if (tried == GroupedGemmVariant::kGroupedBatched &&
      absl::IsUnimplemented(status)) {
    return GroupedGemmVariant::kPerExpertLoop;
  }
  return std::nullopt;
}

GroupedGemmVariant ChooseGroupedGemmVariant(const int64_t* expert_offsets,
                                            int num_experts, int64_t k,
                                            int64_t n) {
  int nonempty = 0;
  for (int e = 0; e < num_experts; ++e) {
    if (expert_offsets[e + 1] > expert_offsets[e]) ++nonempty;
  }
  if (nonempty == 0) return GroupedGemmVariant::kGroupedBatched;
  const double rows =
      static_cast<double>(expert_offsets[num_experts] - expert_offsets[0]);
  const double mean_flops =
      2.0 * rows * static_cast<double>(k) * static_cast<double>(n) / nonempty;
  return mean_flops >= kGroupedLoopMinFlops
             ? GroupedGemmVariant::kPerExpertLoop
             : GroupedGemmVariant::kGroupedBatched;
}

void GroupedGemmRef(const float* a, const float* b, float* c,
                    const int64_t* expert_offsets, int num_experts, int64_t k,
                    int64_t n, bool trans_b) {
  for (int e = 0; e < num_experts; ++e) {
    const float* be = b + e * k * n;
    for (int64_t r = expert_offsets[e]; r < expert_offsets[e + 1]; ++r) {
      for (int64_t col = 0; col < n; ++col) {
        float acc = 0.0f;
        for (int64_t i = 0; i < k; ++i) {
          acc += a[r * k + i] * (trans_b ? be[col * k + i] : be[i * n + col]);
        }
        c[r * n + col] = acc;
      }
    }
  }
}

void GroupedGemmWeightGradRef(const float* a, const float* dc, float* db,
                              const int64_t* expert_offsets, int num_experts,
                              int64_t k, int64_t n) {
  for (int e = 0; e < num_experts; ++e) {
    float* dbe = db + e * k * n;
    for (int64_t i = 0; i < k; ++i) {
      for (int64_t col = 0; col < n; ++col) {
        float acc = 0.0f;
        for (int64_t r = expert_offsets[e]; r < expert_offsets[e + 1]; ++r) {
          acc += a[r * k + i] * dc[r * n + col];
        }
        dbe[i * n + col] = acc;
      }
    }
  }
}

}  // namespace smoe::kernels
