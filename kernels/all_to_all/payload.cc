// Copyright 2026 SMoE Lab authors.
#include "kernels/all_to_all/payload.h"

#include <vector>

#include "absl/strings/str_cat.h"

#if defined(SMOE_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace smoe::kernels {
namespace {

#if defined(SMOE_WITH_CUDA)
absl::Status CudaStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorName(e), ": ",
                                          cudaGetErrorString(e)));
}
#endif

// Runs AllToAllV on host vectors, staging through device memory when the
// communicator wants device buffers.
absl::Status HostAllToAllV(Communicator& comm, const std::vector<double>& send,
                           const std::vector<int64_t>& send_counts,
                           std::vector<double>* recv,
                           const std::vector<int64_t>& recv_counts) {
  if (comm.memory_space() == MemorySpace::kHost) {
    return comm.AllToAllV(send.data(), send_counts.data(), recv->data(),
                          recv_counts.data(), DType::kFloat64);
  }
#if defined(SMOE_WITH_CUDA)
  void* d_send = nullptr;
  void* d_recv = nullptr;
  const size_t sb = send.size() * sizeof(double) + 8;
  const size_t rb = recv->size() * sizeof(double) + 8;
  absl::Status s = CudaStatus(cudaMalloc(&d_send, sb), "cudaMalloc");
  if (s.ok()) s = CudaStatus(cudaMalloc(&d_recv, rb), "cudaMalloc");
  if (s.ok() && !send.empty()) {
    s = CudaStatus(cudaMemcpy(d_send, send.data(), send.size() * sizeof(double),
                              cudaMemcpyHostToDevice),
                   "cudaMemcpy");
  }
  if (s.ok()) {
    s = comm.AllToAllV(d_send, send_counts.data(), d_recv, recv_counts.data(),
                       DType::kFloat64);
  }
  if (s.ok() && !recv->empty()) {
    s = CudaStatus(
        cudaMemcpy(recv->data(), d_recv, recv->size() * sizeof(double),
                   cudaMemcpyDeviceToHost),
        "cudaMemcpy");
  }
  cudaFree(d_send);
  cudaFree(d_recv);
  return s;
#else
  return absl::FailedPreconditionError(
      "device communicator in a build without CUDA");
#endif
}

}  // namespace

int64_t PayloadRows(uint64_t seed, int src, int dst, int world) {
  const uint64_t h =
      seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(src) * 31 +
      static_cast<uint64_t>(dst) * 17 + static_cast<uint64_t>(src * dst) +
      static_cast<uint64_t>(world);
  return static_cast<int64_t>((h ^ (h >> 29)) % 6);
}

double PayloadValue(int src, int dst, int64_t t, int64_t c) {
  return src * 1e9 + dst * 1e6 + static_cast<double>(t) * 1e3 +
         static_cast<double>(c);
}

absl::Status RunPayloadAllToAll(Communicator& comm, int64_t columns,
                                uint64_t seed, PayloadCheck* check) {
  if (columns < 1 || columns > 999) {
    return absl::InvalidArgumentError(
        absl::StrCat("columns=", columns, ": must be in 1..999"));
  }
  const int w = comm.world_size();
  const int me = comm.rank();
  std::vector<int64_t> send_rows(w), recv_rows(w);
  for (int j = 0; j < w; ++j) send_rows[j] = PayloadRows(seed, me, j, w);
  if (absl::Status s = comm.AllToAllCounts(send_rows.data(), recv_rows.data());
      !s.ok()) {
    return s;
  }
  for (int j = 0; j < w; ++j) {
    if (recv_rows[j] != PayloadRows(seed, j, me, w)) {
      return absl::InternalError(absl::StrCat(
          "AllToAllCounts: rank ", me, " got ", recv_rows[j], " rows from ", j,
          ", expected ", PayloadRows(seed, j, me, w)));
    }
  }
  std::vector<int64_t> send_counts(w), recv_counts(w);
  std::vector<double> send;
  for (int j = 0; j < w; ++j) {
    send_counts[j] = send_rows[j] * columns;
    recv_counts[j] = recv_rows[j] * columns;
    for (int64_t t = 0; t < send_rows[j]; ++t) {
      for (int64_t c = 0; c < columns; ++c) {
        send.push_back(PayloadValue(me, j, t, c));
      }
    }
  }
  std::vector<double> recv(
      static_cast<size_t>(TotalCount(recv_counts.data(), w)), -1.0);
  if (absl::Status s =
          HostAllToAllV(comm, send, send_counts, &recv, recv_counts);
      !s.ok()) {
    return s;
  }
  size_t k = 0;
  for (int j = 0; j < w; ++j) {
    for (int64_t t = 0; t < recv_rows[j]; ++t) {
      for (int64_t c = 0; c < columns; ++c, ++k) {
        ++check->checked;
        if (recv[k] != PayloadValue(j, me, t, c)) ++check->wrong;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace smoe::kernels
