// Copyright 2026 SMoE Lab authors.
#include "kernels/all_to_all/communicator.h"

#include "absl/strings/str_cat.h"

namespace smoe::kernels {

int64_t TotalCount(const int64_t* counts, int n) {
  int64_t total = 0;
  for (int i = 0; i < n; ++i) total += counts[i];
  return total;
}

absl::Status ValidateAllToAllCountsArgs(int world_size,
                                        const int64_t* send_counts,
                                        const int64_t* recv_counts) {
  if (send_counts == nullptr || recv_counts == nullptr) {
    return absl::InvalidArgumentError(
        "AllToAllCounts: send_counts and recv_counts must be non-null");
  }
  for (int j = 0; j < world_size; ++j) {
    if (send_counts[j] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("AllToAllCounts: send_counts[", j, "]=", send_counts[j],
                       " is negative"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateAllToAllVArgs(int world_size, const void* send,
                                   const int64_t* send_counts, const void* recv,
                                   const int64_t* recv_counts) {
  if (send_counts == nullptr || recv_counts == nullptr) {
    return absl::InvalidArgumentError(
        "AllToAllV: send_counts and recv_counts must be non-null");
  }
  for (int j = 0; j < world_size; ++j) {
    if (send_counts[j] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "AllToAllV: send_counts[", j, "]=", send_counts[j], " is negative"));
    }
    if (recv_counts[j] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "AllToAllV: recv_counts[", j, "]=", recv_counts[j], " is negative"));
    }
  }
  if (send == nullptr && TotalCount(send_counts, world_size) > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("AllToAllV: send is null but sum(send_counts)=",
                     TotalCount(send_counts, world_size)));
  }
  if (recv == nullptr && TotalCount(recv_counts, world_size) > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("AllToAllV: recv is null but sum(recv_counts)=",
                     TotalCount(recv_counts, world_size)));
  }
  return absl::OkStatus();
}

}  // namespace smoe::kernels
