// Copyright 2026 SMoE Lab authors.
#include "kernels/selfcheck/selfcheck.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kernels/all_to_all/communicator.h"
#include "kernels/all_to_all/local_communicator.h"
#include "kernels/all_to_all/nccl_communicator.h"
#include "kernels/all_to_all/payload.h"
#include "kernels/common/compare.h"
#include "kernels/common/device.h"
#include "kernels/grouped_gemm/grouped_gemm.h"
#include "kernels/permute/permute.h"
#include "kernels/router_topk/router_topk.h"

#if defined(SMOE_WITH_CUDA)
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "kernels/common/cuda_status.h"
#endif
#if defined(SMOE_WITH_NCCL)
#include <nccl.h>
#endif

namespace smoe::kernels {
namespace {

// ---- Comparisons (host vectors; public as Compare*Output) -------------------

KernelComparison Close(std::string what, const std::vector<float>& ref,
                       const std::vector<float>& got, double atol, double eps) {
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

#if defined(SMOE_WITH_CUDA)

// The fault injection of the header for kernel outputs: adds 1 to element 0
// (far outside every tolerance; a one-ulp flip would pass the float checks).
void MaybeFault(bool fault, std::vector<float>* v) {
  if (fault && !v->empty()) (*v)[0] += 1.0f;
}
void MaybeFault(bool fault, std::vector<int32_t>* v) {
  if (fault && !v->empty()) (*v)[0] += 1;
}

uint32_t SeedOf(const KernelCheckOptions& o) {
  if (o.seed != 0) return o.seed;
  std::random_device rd;
  const uint32_t s = rd();
  return s == 0 ? 1 : s;
}
#endif  // SMOE_WITH_CUDA

// ---- Communicator checks ----------------------------------------------------

#if defined(SMOE_WITH_CUDA)
absl::Status FlipFirstDeviceByte(void* p) {
  unsigned char b = 0;
  SMOE_RETURN_IF_ERROR(
      CudaStatus(cudaMemcpy(&b, p, 1, cudaMemcpyDeviceToHost), "cudaMemcpy"));
  b ^= 1;
  return CudaStatus(cudaMemcpy(p, &b, 1, cudaMemcpyHostToDevice), "cudaMemcpy");
}
#endif

// Flips the lowest bit of the first received element on rank 0 after every
// collective (fault injection; the payload checks must then fail).
class FaultyCommunicator : public Communicator {
 public:
  explicit FaultyCommunicator(std::unique_ptr<Communicator> inner)
      : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  MemorySpace memory_space() const override { return inner_->memory_space(); }
  std::string name() const override { return inner_->name(); }
  absl::Status AllToAllCounts(const int64_t* send_counts,
                              int64_t* recv_counts) override {
    return inner_->AllToAllCounts(send_counts, recv_counts);
  }
  absl::Status AllToAllV(const void* send, const int64_t* send_counts,
                         void* recv, const int64_t* recv_counts,
                         DType dtype) override {
    SMOE_RETURN_IF_ERROR(
        inner_->AllToAllV(send, send_counts, recv, recv_counts, dtype));
    if (TotalCount(recv_counts, world_size()) == 0) return absl::OkStatus();
    return Flip(recv);
  }
  absl::Status AllReduceSum(void* buffer, int64_t count, DType dtype) override {
    SMOE_RETURN_IF_ERROR(inner_->AllReduceSum(buffer, count, dtype));
    return count > 0 ? Flip(buffer) : absl::OkStatus();
  }
  absl::Status Barrier() override { return inner_->Barrier(); }

 private:
  absl::Status Flip(void* p) {
    if (rank() != 0) return absl::OkStatus();
    if (memory_space() == MemorySpace::kHost) {
      *static_cast<unsigned char*>(p) ^= 1;
      return absl::OkStatus();
    }
#if defined(SMOE_WITH_CUDA)
    return FlipFirstDeviceByte(p);
#else
    return absl::FailedPreconditionError("device memory without CUDA");
#endif
  }
  std::unique_ptr<Communicator> inner_;
};

// Rank r contributes (r + 1) * (i % 1000 + 1) at element i: small integers,
// so the sum over W <= 64 ranks is exact in float32 and float64.
template <typename T>
absl::Status VerifiedAllReduce(Communicator& comm, int64_t count, DType dtype,
                               int64_t* checked, int64_t* wrong) {
  const int w = comm.world_size();
  const int r = comm.rank();
  std::vector<T> buf(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    buf[i] = static_cast<T>((r + 1) * (i % 1000 + 1));
  }
  if (comm.memory_space() == MemorySpace::kHost) {
    SMOE_RETURN_IF_ERROR(comm.AllReduceSum(buf.data(), count, dtype));
  } else {
#if defined(SMOE_WITH_CUDA)
    void* d = nullptr;
    const size_t bytes = buf.size() * sizeof(T);
    SMOE_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&d, bytes), "cudaMalloc"));
    absl::Status s = CudaStatus(
        cudaMemcpy(d, buf.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    if (s.ok()) s = comm.AllReduceSum(d, count, dtype);
    if (s.ok()) {
      s = CudaStatus(cudaMemcpy(buf.data(), d, bytes, cudaMemcpyDeviceToHost),
                     "cudaMemcpy");
    }
    cudaFree(d);
    SMOE_RETURN_IF_ERROR(s);
#else
    return absl::FailedPreconditionError("device communicator without CUDA");
#endif
  }
  const int64_t ranks_sum = static_cast<int64_t>(w) * (w + 1) / 2;
  for (int64_t i = 0; i < count; ++i) {
    ++*checked;
    if (buf[i] != static_cast<T>(ranks_sum * (i % 1000 + 1))) ++*wrong;
  }
  return absl::OkStatus();
}

#if defined(SMOE_WITH_CUDA)
// ---- Device memory helpers (status-returning; no aborts) --------------------

class DeviceMem {
 public:
  DeviceMem() = default;
  ~DeviceMem() {
    if (p_ != nullptr) cudaFree(p_);
  }
  DeviceMem(DeviceMem&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  DeviceMem& operator=(DeviceMem&& o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;

  absl::Status Alloc(size_t bytes) {
    return CudaStatus(cudaMalloc(&p_, bytes == 0 ? 1 : bytes), "cudaMalloc");
  }
  void* get() const { return p_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
};

template <typename T>
absl::Status Upload(const std::vector<T>& h, DeviceMem* d) {
  SMOE_RETURN_IF_ERROR(d->Alloc(h.size() * sizeof(T)));
  if (h.empty()) return absl::OkStatus();
  return CudaStatus(cudaMemcpy(d->get(), h.data(), h.size() * sizeof(T),
                               cudaMemcpyHostToDevice),
                    "cudaMemcpy H2D");
}

template <typename T>
absl::Status Zeros(size_t n, DeviceMem* d) {
  SMOE_RETURN_IF_ERROR(d->Alloc(n * sizeof(T)));
  return CudaStatus(cudaMemset(d->get(), 0, n * sizeof(T)), "cudaMemset");
}

// Synchronises (so asynchronous kernel errors surface here), then copies `n`
// elements back.
template <typename T>
absl::StatusOr<std::vector<T>> Download(const DeviceMem& d, size_t n) {
  SMOE_RETURN_IF_ERROR(
      CudaStatus(cudaDeviceSynchronize(), "kernel (cudaDeviceSynchronize)"));
  std::vector<T> h(n);
  if (n == 0) return h;
  SMOE_RETURN_IF_ERROR(CudaStatus(
      cudaMemcpy(h.data(), d.get(), n * sizeof(T), cudaMemcpyDeviceToHost),
      "cudaMemcpy D2H"));
  return h;
}

std::vector<__nv_bfloat16> ToBf16(const std::vector<float>& v) {
  std::vector<__nv_bfloat16> o(v.size());
  for (size_t i = 0; i < v.size(); ++i) o[i] = __float2bfloat16(v[i]);
  return o;
}
std::vector<float> FromBf16(const std::vector<__nv_bfloat16>& v) {
  std::vector<float> o(v.size());
  for (size_t i = 0; i < v.size(); ++i) o[i] = __bfloat162float(v[i]);
  return o;
}

void MaybeFault(bool fault, std::vector<__nv_bfloat16>* v) {
  if (fault && !v->empty()) {
    (*v)[0] = __float2bfloat16(__bfloat162float((*v)[0]) + 1.0f);
  }
}

// Restores the calling thread's current device on scope exit, so a check on
// GPU 3 does not leave later work (LibTorch's current stream) on GPU 3.
class CurrentDeviceGuard {
 public:
  CurrentDeviceGuard() {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      previous_ = -1;
      cudaGetLastError();
    }
  }
  ~CurrentDeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  CurrentDeviceGuard(const CurrentDeviceGuard&) = delete;
  CurrentDeviceGuard& operator=(const CurrentDeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

class CublasHandle {
 public:
  CublasHandle() = default;
  ~CublasHandle() {
    if (h_ != nullptr) cublasDestroy(h_);
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  absl::Status Create() {
    return CublasStatus(cublasCreate(&h_), "cublasCreate");
  }
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

// Downloads `n` elements of `d`, applies the fault injection and compares.
absl::StatusOr<KernelComparison> CloseDevice(std::string what,
                                             const std::vector<float>& ref,
                                             const DeviceMem& d, double atol,
                                             double eps, bool fault) {
  SMOE_ASSIGN_OR_RETURN(std::vector<float> got, Download<float>(d, ref.size()));
  MaybeFault(fault, &got);
  return Close(std::move(what), ref, got, atol, eps);
}

template <typename T>
absl::StatusOr<KernelComparison> ExactDevice(std::string what,
                                             const std::vector<T>& ref,
                                             const DeviceMem& d, bool fault) {
  SMOE_ASSIGN_OR_RETURN(std::vector<T> got, Download<T>(d, ref.size()));
  MaybeFault(fault, &got);
  return Exact(std::move(what), ref, got);
}

// ---- router_topk ------------------------------------------------------------

absl::Status CheckRouterOne(int64_t t, int e, int k, RouterGating g, bool tied,
                            bool fault, std::mt19937& rng,
                            KernelCheckResult* out) {
  const std::string name =
      absl::StrCat("router T=", t, " E=", e, " k=", k,
                   g == RouterGating::kRenormalized ? " renorm" : " norenorm",
                   tied ? " tied" : "", ": ");
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::uniform_int_distribution<int> ui(-4, 4);
  std::vector<float> logits(t * e);
  for (float& x : logits) x = tied ? 0.5f * ui(rng) : u(rng);
  std::vector<int32_t> idx(t * k), cnt(e), off(e + 1);
  std::vector<float> w(t * k);
  RouterTopKRef(logits.data(), t, e, k, g, idx.data(), w.data(), cnt.data(),
                off.data());
  DeviceMem d_logits, d_w, d_idx, d_cnt, d_off;
  SMOE_RETURN_IF_ERROR(Upload(logits, &d_logits));
  SMOE_RETURN_IF_ERROR(Zeros<float>(t * k, &d_w));
  SMOE_RETURN_IF_ERROR(Zeros<int32_t>(t * k, &d_idx));
  SMOE_RETURN_IF_ERROR(Zeros<int32_t>(e, &d_cnt));
  SMOE_RETURN_IF_ERROR(Zeros<int32_t>(e + 1, &d_off));
  SMOE_RETURN_IF_ERROR(RouterTopK(
      d_logits.as<float>(), t, e, k, g, d_idx.as<int32_t>(), d_w.as<float>(),
      d_cnt.as<int32_t>(), d_off.as<int32_t>(), nullptr));
  auto add = [&](absl::StatusOr<KernelComparison> c) -> absl::Status {
    SMOE_RETURN_IF_ERROR(c.status());
    out->comparisons.push_back(*std::move(c));
    return absl::OkStatus();
  };
  SMOE_RETURN_IF_ERROR(add(ExactDevice(name + "topk_idx", idx, d_idx, fault)));
  SMOE_RETURN_IF_ERROR(
      add(ExactDevice(name + "num_tokens_per_expert", cnt, d_cnt, fault)));
  SMOE_RETURN_IF_ERROR(
      add(ExactDevice(name + "expert_offsets", off, d_off, fault)));
  // router_topk_test.cc: device expf within 2 ulp, tree vs left-fold sum.
  SMOE_RETURN_IF_ERROR(
      add(CloseDevice(name + "topk_weights", w, d_w, 1e-6, 1e-5, fault)));

  std::vector<float> gup(t * k), gl(t * e);
  for (float& x : gup) x = u(rng);
  RouterTopKBackwardRef(logits.data(), idx.data(), w.data(), gup.data(), t, e,
                        k, g, gl.data());
  DeviceMem d_gup, d_gl;
  SMOE_RETURN_IF_ERROR(Upload(gup, &d_gup));
  SMOE_RETURN_IF_ERROR(Zeros<float>(t * e, &d_gl));
  // The backward reads the device forward's idx/weights (checked above).
  SMOE_RETURN_IF_ERROR(RouterTopKBackward(
      d_logits.as<float>(), d_idx.as<int32_t>(), d_w.as<float>(),
      d_gup.as<float>(), t, e, k, g, d_gl.as<float>(), nullptr));
  // router_topk_test.cc: products of values <= 3, weights <= 1, k-term sums.
  return add(CloseDevice(name + "grad_logits", gl, d_gl, 1e-5, 1e-4, fault));
}

// ---- permute ----------------------------------------------------------------

absl::Status CheckPermuteOne(int64_t t, int e, int k, int64_t hidden,
                             bool with_bf16, bool fault, std::mt19937& rng,
                             KernelCheckResult* out) {
  const std::string name = absl::StrCat("permute T=", t, " E=", e, " k=", k,
                                        " hidden=", hidden, ": ");
  auto add = [&](absl::StatusOr<KernelComparison> c) -> absl::Status {
    SMOE_RETURN_IF_ERROR(c.status());
    out->comparisons.push_back(*std::move(c));
    return absl::OkStatus();
  };
  std::vector<int32_t> topk;
  std::vector<int> experts(e);
  for (int64_t r = 0; r < t; ++r) {
    for (int i = 0; i < e; ++i) experts[i] = i;
    std::shuffle(experts.begin(), experts.end(), rng);
    topk.insert(topk.end(), experts.begin(), experts.begin() + k);
  }
  const int64_t rows = t * k;
  std::vector<int32_t> sorted(rows), dest(rows), off(e + 1);
  const PermutePlan hp{sorted.data(), dest.data(), off.data(), t, k, e};
  BuildPermutePlanRef(topk.data(), hp);

  DeviceMem d_topk, d_sorted, d_dest, d_off, d_cnt, d_ws;
  SMOE_RETURN_IF_ERROR(Upload(topk, &d_topk));
  SMOE_RETURN_IF_ERROR(Zeros<int32_t>(rows, &d_sorted));
  SMOE_RETURN_IF_ERROR(Zeros<int32_t>(rows, &d_dest));
  SMOE_RETURN_IF_ERROR(Zeros<int32_t>(e + 1, &d_off));
  SMOE_RETURN_IF_ERROR(Zeros<int32_t>(e, &d_cnt));
  SMOE_RETURN_IF_ERROR(d_ws.Alloc(PermutePlanWorkspaceBytes(t, k, e)));
  const PermutePlan dp{d_sorted.as<int32_t>(),
                       d_dest.as<int32_t>(),
                       d_off.as<int32_t>(),
                       t,
                       k,
                       e};
  SMOE_RETURN_IF_ERROR(BuildPermutePlan(
      d_topk.as<int32_t>(), dp, d_cnt.as<int32_t>(), d_ws.get(), nullptr));
  SMOE_RETURN_IF_ERROR(
      add(ExactDevice(name + "plan sorted_idx", sorted, d_sorted, fault)));
  SMOE_RETURN_IF_ERROR(
      add(ExactDevice(name + "plan dest_idx", dest, d_dest, fault)));
  SMOE_RETURN_IF_ERROR(
      add(ExactDevice(name + "plan expert_offsets", off, d_off, fault)));

  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(t * hidden), w(rows), y(rows * hidden), gout(t * hidden);
  for (float& v : x) v = u(rng);
  for (float& v : w) v = u(rng);
  for (float& v : y) v = u(rng);
  for (float& v : gout) v = u(rng);
  std::vector<float> perm(rows * hidden), unperm(rows * hidden), gx(t * hidden),
      comb(t * hidden), gy(rows * hidden), gw(rows);
  PermuteRef(x.data(), hidden, hp, perm.data());
  UnpermuteRef(perm.data(), hidden, hp, unperm.data());
  PermuteBackwardRef(y.data(), hidden, hp, gx.data());
  CombineRef(y.data(), w.data(), hidden, hp, comb.data());
  CombineBackwardRef(gout.data(), y.data(), w.data(), hidden, hp, gy.data(),
                     gw.data());

  DeviceMem d_x, d_w, d_y, d_gout, d_perm, d_unperm, d_gx, d_comb, d_gy, d_gw;
  SMOE_RETURN_IF_ERROR(Upload(x, &d_x));
  SMOE_RETURN_IF_ERROR(Upload(w, &d_w));
  SMOE_RETURN_IF_ERROR(Upload(y, &d_y));
  SMOE_RETURN_IF_ERROR(Upload(gout, &d_gout));
  SMOE_RETURN_IF_ERROR(Zeros<float>(rows * hidden, &d_perm));
  SMOE_RETURN_IF_ERROR(Zeros<float>(rows * hidden, &d_unperm));
  SMOE_RETURN_IF_ERROR(Zeros<float>(t * hidden, &d_gx));
  SMOE_RETURN_IF_ERROR(Zeros<float>(t * hidden, &d_comb));
  SMOE_RETURN_IF_ERROR(Zeros<float>(rows * hidden, &d_gy));
  SMOE_RETURN_IF_ERROR(Zeros<float>(rows, &d_gw));
  const DType f32 = DType::kFloat32;
  SMOE_RETURN_IF_ERROR(
      Permute(d_x.get(), f32, hidden, dp, d_perm.get(), nullptr));
  SMOE_RETURN_IF_ERROR(
      Unpermute(d_perm.get(), f32, hidden, dp, d_unperm.get(), nullptr));
  SMOE_RETURN_IF_ERROR(
      PermuteBackward(d_y.get(), f32, hidden, dp, d_gx.get(), nullptr));
  SMOE_RETURN_IF_ERROR(Combine(d_y.get(), d_w.as<float>(), f32, hidden, dp,
                               d_comb.get(), nullptr));
  SMOE_RETURN_IF_ERROR(CombineBackward(d_gout.get(), d_y.get(), d_w.as<float>(),
                                       f32, hidden, dp, d_gy.get(),
                                       d_gw.as<float>(), nullptr));
  // Copies are exact; sums as in permute_test.cc (k-term sums in the same
  // order, FMA contraction: <= k ulps of values <= k; the weight gradient is
  // a hidden-long dot product reduced as a tree).
  SMOE_RETURN_IF_ERROR(
      add(ExactDevice(name + "permute f32", perm, d_perm, fault)));
  SMOE_RETURN_IF_ERROR(
      add(ExactDevice(name + "unpermute f32", unperm, d_unperm, fault)));
  SMOE_RETURN_IF_ERROR(add(
      CloseDevice(name + "permute backward f32", gx, d_gx, 1e-5, 1e-5, fault)));
  SMOE_RETURN_IF_ERROR(
      add(CloseDevice(name + "combine f32", comb, d_comb, 1e-5, 1e-5, fault)));
  SMOE_RETURN_IF_ERROR(add(CloseDevice(name + "combine backward grad_out f32",
                                       gy, d_gy, 1e-6, 1e-5, fault)));
  SMOE_RETURN_IF_ERROR(
      add(CloseDevice(name + "combine backward grad_weights f32", gw, d_gw,
                      1e-6 * static_cast<double>(hidden), 1e-5, fault)));
  if (!with_bf16) return absl::OkStatus();

  // bf16: permute copies exactly; combine rounds once at the end (2^-8).
  const std::vector<__nv_bfloat16> xb = ToBf16(x);
  DeviceMem d_xb, d_pb, d_cb;
  SMOE_RETURN_IF_ERROR(Upload(xb, &d_xb));
  SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(rows * hidden, &d_pb));
  SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(t * hidden, &d_cb));
  SMOE_RETURN_IF_ERROR(
      Permute(d_xb.get(), DType::kBFloat16, hidden, dp, d_pb.get(), nullptr));
  SMOE_RETURN_IF_ERROR(Combine(d_pb.get(), d_w.as<float>(), DType::kBFloat16,
                               hidden, dp, d_cb.get(), nullptr));
  std::vector<float> xbf = FromBf16(xb), pref(rows * hidden), cref(t * hidden);
  PermuteRef(xbf.data(), hidden, hp, pref.data());
  CombineRef(pref.data(), w.data(), hidden, hp, cref.data());
  SMOE_ASSIGN_OR_RETURN(std::vector<__nv_bfloat16> pb,
                        Download<__nv_bfloat16>(d_pb, rows * hidden));
  MaybeFault(fault, &pb);
  out->comparisons.push_back(Exact(name + "permute bf16", pref, FromBf16(pb)));
  SMOE_ASSIGN_OR_RETURN(std::vector<__nv_bfloat16> cb,
                        Download<__nv_bfloat16>(d_cb, t * hidden));
  MaybeFault(fault, &cb);
  out->comparisons.push_back(
      Close(name + "combine bf16", cref, FromBf16(cb), 1e-5, 1.0 / 256));
  return absl::OkStatus();
}

// ---- grouped_gemm -----------------------------------------------------------

template <typename T>
std::vector<T> CastTo(const std::vector<float>& v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else {
    return ToBf16(v);
  }
}

template <typename T>
std::vector<float> BackToFloat(const std::vector<T>& v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else {
    return FromBf16(v);
  }
}

template <typename T>
absl::Status CheckGroupedGemmOne(cublasHandle_t h, DType dtype,
                                 GroupedGemmVariant variant, bool fault,
                                 std::mt19937& rng, KernelCheckResult* out) {
  const std::string name = absl::StrCat(
      "grouped_gemm ", DTypeName(dtype),
      variant == GroupedGemmVariant::kGroupedBatched ? " grouped-batched"
                                                     : " per-expert-loop",
      ": ");
  // grouped_gemm_test.cc's shape: expert 2 empty, sizes not multiples of 8.
  const std::vector<int64_t> off = {0, 37, 100, 100, 129};
  const int e = 4;
  const int64_t rows = off.back(), k = 72, n = 40;
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(rows * k), b(e * k * n), dc(rows * n);
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  for (float& v : dc) v = u(rng);
  if (dtype == DType::kBFloat16) {  // the reference sees the rounded inputs
    a = FromBf16(ToBf16(a));
    b = FromBf16(ToBf16(b));
    dc = FromBf16(ToBf16(dc));
  }
  std::vector<float> c(rows * n), da(rows * k), db(e * k * n);
  GroupedGemmRef(a.data(), b.data(), c.data(), off.data(), e, k, n, false);
  GroupedGemmRef(dc.data(), b.data(), da.data(), off.data(), e, n, k, true);
  GroupedGemmWeightGradRef(a.data(), dc.data(), db.data(), off.data(), e, k, n);
  DeviceMem d_a, d_b, d_dc, d_c, d_da, d_db, ws;
  SMOE_RETURN_IF_ERROR(Upload(CastTo<T>(a), &d_a));
  SMOE_RETURN_IF_ERROR(Upload(CastTo<T>(b), &d_b));
  SMOE_RETURN_IF_ERROR(Upload(CastTo<T>(dc), &d_dc));
  SMOE_RETURN_IF_ERROR(Zeros<T>(rows * n, &d_c));
  SMOE_RETURN_IF_ERROR(Zeros<T>(rows * k, &d_da));
  // Non-zero garbage: the empty expert's weight gradient must be zeroed.
  SMOE_RETURN_IF_ERROR(
      Upload(CastTo<T>(std::vector<float>(e * k * n, 7.0f)), &d_db));
  SMOE_RETURN_IF_ERROR(ws.Alloc(GroupedGemmWorkspaceBytes(e)));
  const absl::Status s =
      GroupedGemm(h, d_a.get(), d_b.get(), d_c.get(), dtype, off.data(), e, k,
                  n, false, variant, ws.get(), nullptr);
  if (absl::IsUnimplemented(s)) {
    out->notes.push_back(absl::StrCat(name, "not supported by this cuBLAS (",
                                      s.message(), "); not checked"));
    return absl::OkStatus();
  }
  SMOE_RETURN_IF_ERROR(s);
  SMOE_RETURN_IF_ERROR(GroupedGemm(h, d_dc.get(), d_b.get(), d_da.get(), dtype,
                                   off.data(), e, n, k, true, variant, ws.get(),
                                   nullptr));
  SMOE_RETURN_IF_ERROR(GroupedGemmWeightGrad(h, d_a.get(), d_dc.get(),
                                             d_db.get(), dtype, off.data(), e,
                                             k, n, variant, ws.get(), nullptr));
  // grouped_gemm_test.cc: f32 compute over <= 129-term dot products of values
  // <= 1 (~1e-5; cuBLAS may sum in another order); bf16 output adds 2^-8.
  const double atol = 1e-4;
  const double eps = dtype == DType::kBFloat16 ? 1.0 / 128 : 1e-5;
  auto cmp = [&](const std::string& what, const std::vector<float>& ref,
                 const DeviceMem& d) -> absl::Status {
    SMOE_ASSIGN_OR_RETURN(std::vector<T> got, Download<T>(d, ref.size()));
    MaybeFault(fault, &got);
    out->comparisons.push_back(
        Close(name + what, ref, BackToFloat(got), atol, eps));
    return absl::OkStatus();
  };
  SMOE_RETURN_IF_ERROR(cmp("forward", c, d_c));
  SMOE_RETURN_IF_ERROR(cmp("dgrad (trans_b)", da, d_da));
  return cmp("wgrad (empty expert zeroed)", db, d_db);
}

// ---- Timing -----------------------------------------------------------------

class CudaEvent {
 public:
  CudaEvent() = default;
  ~CudaEvent() {
    if (e_ != nullptr) cudaEventDestroy(e_);
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  absl::Status Create() {
    return CudaStatus(cudaEventCreate(&e_), "cudaEventCreate");
  }
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// bench.h's method with statuses: `warmup` untimed calls, then `reps` timed
// ones, each after overwriting `flush` (a buffer larger than L2), timed with
// CUDA events. Returns the median in microseconds.
absl::StatusOr<double> TimeMedianUs(
    const std::function<absl::Status(cudaStream_t)>& fn, cudaStream_t stream,
    const DeviceMem& flush, size_t flush_bytes, int warmup, int reps) {
  CudaEvent start, stop;
  SMOE_RETURN_IF_ERROR(start.Create());
  SMOE_RETURN_IF_ERROR(stop.Create());
  for (int i = 0; i < warmup; ++i) SMOE_RETURN_IF_ERROR(fn(stream));
  std::vector<float> ms(reps);
  for (int i = 0; i < reps; ++i) {
    SMOE_RETURN_IF_ERROR(
        CudaStatus(cudaMemsetAsync(flush.get(), i & 0xff, flush_bytes, stream),
                   "cudaMemsetAsync (L2 flush)"));
    SMOE_RETURN_IF_ERROR(
        CudaStatus(cudaEventRecord(start.get(), stream), "cudaEventRecord"));
    SMOE_RETURN_IF_ERROR(fn(stream));
    SMOE_RETURN_IF_ERROR(
        CudaStatus(cudaEventRecord(stop.get(), stream), "cudaEventRecord"));
    SMOE_RETURN_IF_ERROR(
        CudaStatus(cudaEventSynchronize(stop.get()), "cudaEventSynchronize"));
    SMOE_RETURN_IF_ERROR(
        CudaStatus(cudaEventElapsedTime(&ms[i], start.get(), stop.get()),
                   "cudaEventElapsedTime"));
  }
  std::sort(ms.begin(), ms.end());
  return 1e3 * ms[reps / 2];
}
#endif  // SMOE_WITH_CUDA

[[maybe_unused]] absl::Status NoCuda() {
  return absl::FailedPreconditionError(
      "built without CUDA (SMOE_WITH_CUDA=OFF)");
}

}  // namespace

// ---- Public API -------------------------------------------------------------

bool KernelCheckResult::ok() const {
  for (const KernelComparison& c : comparisons) {
    if (c.num_bad > 0) return false;
  }
  return true;
}

double KernelCheckResult::max_abs_err() const {
  double m = 0;
  for (const KernelComparison& c : comparisons) {
    if (!c.exact) m = std::max(m, c.max_abs_err);
  }
  return m;
}

std::string KernelCheckResult::first_failure() const {
  for (const KernelComparison& c : comparisons) {
    if (c.num_bad > 0) return absl::StrCat(c.what, ": ", c.message);
  }
  return "";
}

KernelComparison CompareCloseOutput(std::string what,
                                    const std::vector<float>& ref,
                                    const std::vector<float>& got, double atol,
                                    double eps) {
  return Close(std::move(what), ref, got, atol, eps);
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

std::string FormatCudaVersion(int version) {
  if (version <= 0) return "";
  return absl::StrCat(version / 1000, ".", (version % 1000) / 10);
}

CudaStackInfo GetCudaStackInfo() {
  CudaStackInfo info;
  info.built_with_cuda = BuiltWithCuda();
  info.built_with_nccl = BuiltWithNccl();
#if defined(SMOE_WITH_CUDA)
  info.compiled_cuda_version = CUDART_VERSION;
  if (cudaDriverGetVersion(&info.driver_version) != cudaSuccess) {
    info.driver_version = 0;
    cudaGetLastError();
  }
  if (cudaRuntimeGetVersion(&info.runtime_version) != cudaSuccess) {
    info.runtime_version = 0;
    cudaGetLastError();
  }
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS) {
    info.cublas_version = major * 10000 + minor * 100 + patch;
  }
#endif
#if defined(SMOE_WITH_NCCL)
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) info.nccl_version = nccl;
#endif
  info.device_count = CudaDeviceCount();
  if (info.device_count == 0) info.device_error = DescribeDevice(0);
  for (int i = 0; i < info.device_count; ++i) {
    std::string line = DescribeDevice(i);
#if defined(SMOE_WITH_CUDA)
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) == cudaSuccess) {
      char bus[32];
      std::snprintf(bus, sizeof(bus), "%04x:%02x:%02x", prop.pciDomainID,
                    prop.pciBusID, prop.pciDeviceID);
      absl::StrAppend(&line, ", ",
                      static_cast<int64_t>(prop.totalGlobalMem >> 20),
                      " MiB, PCI ", bus);
    }
#endif
    info.devices.push_back(line);
  }
  return info;
}

absl::StatusOr<KernelCheckResult> CheckRouterTopKKernels(
    const KernelCheckOptions& options) {
#if defined(SMOE_WITH_CUDA)
  CurrentDeviceGuard restore;
  SMOE_RETURN_IF_ERROR(
      CudaStatus(cudaSetDevice(options.device), "cudaSetDevice"));
  KernelCheckResult r;
  r.seed = SeedOf(options);
  std::mt19937 rng(r.seed);
  const int64_t t = options.quick ? 1024 : 4096;
  const bool f = options.inject_fault;
  const RouterGating kRe = RouterGating::kRenormalized;
  const RouterGating kNo = RouterGating::kNoRenorm;
  SMOE_RETURN_IF_ERROR(CheckRouterOne(t, 8, 2, kRe, false, f, rng, &r));
  SMOE_RETURN_IF_ERROR(CheckRouterOne(t, 64, 4, kNo, false, f, rng, &r));
  SMOE_RETURN_IF_ERROR(CheckRouterOne(t, 200, 8, kRe, true, f, rng, &r));
  if (!options.quick) {
    SMOE_RETURN_IF_ERROR(CheckRouterOne(t, 8, 2, kNo, true, f, rng, &r));
    SMOE_RETURN_IF_ERROR(CheckRouterOne(7, 8, 8, kRe, false, f, rng, &r));
  }
  return r;
#else
  (void)options;
  return NoCuda();
#endif
}

absl::StatusOr<KernelCheckResult> CheckPermuteKernels(
    const KernelCheckOptions& options) {
#if defined(SMOE_WITH_CUDA)
  CurrentDeviceGuard restore;
  SMOE_RETURN_IF_ERROR(
      CudaStatus(cudaSetDevice(options.device), "cudaSetDevice"));
  KernelCheckResult r;
  r.seed = SeedOf(options);
  std::mt19937 rng(r.seed);
  const bool f = options.inject_fault;
  // hidden 256 takes the 16-byte vector path, 5 none.
  SMOE_RETURN_IF_ERROR(CheckPermuteOne(options.quick ? 1024 : 4096, 8, 2, 256,
                                       /*with_bf16=*/true, f, rng, &r));
  SMOE_RETURN_IF_ERROR(
      CheckPermuteOne(7, 8, 8, 5, /*with_bf16=*/false, f, rng, &r));
  if (!options.quick) {
    SMOE_RETURN_IF_ERROR(
        CheckPermuteOne(4096, 64, 1, 5, /*with_bf16=*/true, f, rng, &r));
  }
  return r;
#else
  (void)options;
  return NoCuda();
#endif
}

absl::StatusOr<KernelCheckResult> CheckGroupedGemmKernels(
    const KernelCheckOptions& options) {
#if defined(SMOE_WITH_CUDA)
  CurrentDeviceGuard restore;
  SMOE_RETURN_IF_ERROR(
      CudaStatus(cudaSetDevice(options.device), "cudaSetDevice"));
  KernelCheckResult r;
  r.seed = SeedOf(options);
  std::mt19937 rng(r.seed);
  CublasHandle h;
  SMOE_RETURN_IF_ERROR(h.Create());
  const bool f = options.inject_fault;
  for (GroupedGemmVariant v : {GroupedGemmVariant::kPerExpertLoop,
                               GroupedGemmVariant::kGroupedBatched}) {
    SMOE_RETURN_IF_ERROR(
        CheckGroupedGemmOne<float>(h.get(), DType::kFloat32, v, f, rng, &r));
    SMOE_RETURN_IF_ERROR(CheckGroupedGemmOne<__nv_bfloat16>(
        h.get(), DType::kBFloat16, v, f, rng, &r));
  }
  return r;
#else
  (void)options;
  return NoCuda();
#endif
}

absl::StatusOr<CommCheckResult> CheckCommunicators(
    const CommCheckOptions& options) {
  const int world = options.world_size;
  if (world < 1 || world > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("world_size=", world, ": must be in 1..64"));
  }
  CommunicatorOptions copt;
  copt.op_timeout_ms = options.op_timeout_ms;
  std::vector<std::unique_ptr<Communicator>> local;
  NcclUniqueIdBytes id{};
  if (options.backend == CommBackend::kLocal) {
    local = CreateLocalCommunicators(world, copt);
  } else {
    if (!BuiltWithNccl()) {
      return absl::UnimplementedError("built without NCCL (SMOE_WITH_NCCL)");
    }
    SMOE_ASSIGN_OR_RETURN(id, NewNcclUniqueId());
  }
  struct RankOut {
    absl::Status status;
    std::string name;
    int64_t a2a = 0, a2a_wrong = 0, ar = 0, ar_wrong = 0;
    double seconds = 0;
  };
  std::vector<RankOut> outs(world);
  auto run_rank = [&](int rank) {
    RankOut& o = outs[rank];
    std::unique_ptr<Communicator> comm;
    if (options.backend == CommBackend::kLocal) {
      comm = std::move(local[rank]);
    } else {
#if defined(SMOE_WITH_CUDA)
      o.status = CudaStatus(cudaSetDevice(rank), "cudaSetDevice");
      if (!o.status.ok()) return;
#endif
      NcclCommunicatorOptions nopt;
      nopt.common = copt;
      nopt.device = rank;
      absl::StatusOr<std::unique_ptr<Communicator>> made =
          CreateNcclCommunicator(rank, world, id, nopt);
      if (!made.ok()) {
        o.status = made.status();
        return;
      }
      comm = *std::move(made);
    }
    if (options.inject_fault) {
      comm = std::make_unique<FaultyCommunicator>(std::move(comm));
    }
    o.name = comm->name();
    const auto t0 = std::chrono::steady_clock::now();
    for (int round = 1; round <= options.rounds && o.status.ok(); ++round) {
      PayloadCheck check;
      o.status = RunPayloadAllToAll(*comm, options.columns,
                                    static_cast<uint64_t>(round), &check);
      o.a2a += check.checked;
      o.a2a_wrong += check.wrong;
    }
    if (o.status.ok()) {
      o.status = VerifiedAllReduce<double>(*comm, options.allreduce_count,
                                           DType::kFloat64, &o.ar, &o.ar_wrong);
    }
    if (o.status.ok()) {
      o.status = VerifiedAllReduce<float>(*comm, options.allreduce_count,
                                          DType::kFloat32, &o.ar, &o.ar_wrong);
    }
    if (o.status.ok()) o.status = comm->Barrier();
    o.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) threads.emplace_back(run_rank, r);
  for (std::thread& t : threads) t.join();

  // A rank that fails makes its peers time out or abort: report the root
  // cause, i.e. the first error that is neither of those.
  int failed = -1;
  for (int pass = 0; pass < 2 && failed < 0; ++pass) {
    for (int r = 0; r < world && failed < 0; ++r) {
      const absl::Status& s = outs[r].status;
      const bool secondary = absl::IsDeadlineExceeded(s) || absl::IsAborted(s);
      if (!s.ok() && (pass == 1 || !secondary)) failed = r;
    }
  }
  if (failed >= 0) {
    const absl::Status& s = outs[failed].status;
    return absl::Status(s.code(),
                        absl::StrCat("rank ", failed, ": ", s.message()));
  }
  CommCheckResult result;
  result.backend = outs[0].name;
  result.world_size = world;
  for (const RankOut& o : outs) {
    result.alltoall_elements += o.a2a;
    result.alltoall_wrong += o.a2a_wrong;
    result.allreduce_elements += o.ar;
    result.allreduce_wrong += o.ar_wrong;
    result.seconds = std::max(result.seconds, o.seconds);
  }
  return result;
}

DeviceRatesOptions DeviceRatesOptionsFor(int device, bool quick) {
  DeviceRatesOptions o;
  o.device = device;
  if (quick) {
    o.warmup = 2;
    o.reps = 5;
    o.copy_bytes = int64_t{256} << 20;
    o.gemm_size = 4096;
    o.grouped_tokens = 4096;
    o.permute_tokens = 4096;
    o.permute_hidden = 1024;
  }
  return o;
}

absl::Status ValidateDeviceRatesOptions(const DeviceRatesOptions& o) {
  const std::pair<const char*, int64_t> fields[] = {
      {"warmup", o.warmup},
      {"reps", o.reps},
      {"flush_bytes", o.flush_bytes},
      {"copy_bytes", o.copy_bytes},
      {"gemm_size", o.gemm_size},
      {"grouped_tokens", o.grouped_tokens},
      {"grouped_dim", o.grouped_dim},
      {"permute_tokens", o.permute_tokens},
      {"permute_hidden", o.permute_hidden}};
  for (const auto& [name, value] : fields) {
    // warmup may be 0; everything else must be positive.
    if (value < 0 || (value == 0 && std::string_view(name) != "warmup")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "DeviceRatesOptions.", name, "=", value,
          value < 0 ? ": must not be negative" : ": must be positive"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<DeviceRates> MeasureDeviceRates(int device, bool quick) {
  return MeasureDeviceRates(DeviceRatesOptionsFor(device, quick));
}

absl::StatusOr<DeviceRates> MeasureDeviceRates(
    const DeviceRatesOptions& options) {
  SMOE_RETURN_IF_ERROR(ValidateDeviceRatesOptions(options));
#if defined(SMOE_WITH_CUDA)
  CurrentDeviceGuard restore;
  SMOE_RETURN_IF_ERROR(
      CudaStatus(cudaSetDevice(options.device), "cudaSetDevice"));
  DeviceRates rates;
  rates.device = options.device;
  const int warmup = options.warmup;
  const int reps = options.reps;
  // 256 MiB by default: 5x the H100's 50 MB L2 (bench.h's L2Flusher).
  const size_t flush_bytes = static_cast<size_t>(options.flush_bytes);
  DeviceMem flush;
  SMOE_RETURN_IF_ERROR(flush.Alloc(flush_bytes));
  cudaStream_t stream = nullptr;  // legacy default stream

  {  // D2D copy, read + write bytes.
    const size_t bytes = static_cast<size_t>(options.copy_bytes);
    DeviceMem a, b;
    SMOE_RETURN_IF_ERROR(Zeros<char>(bytes, &a));
    SMOE_RETURN_IF_ERROR(b.Alloc(bytes));
    SMOE_ASSIGN_OR_RETURN(
        const double us, TimeMedianUs(
                             [&](cudaStream_t s) {
                               return CudaStatus(
                                   cudaMemcpyAsync(b.get(), a.get(), bytes,
                                                   cudaMemcpyDeviceToDevice, s),
                                   "cudaMemcpyAsync");
                             },
                             stream, flush, flush_bytes, warmup, reps));
    rates.copy_gbps = 2.0 * static_cast<double>(bytes) / (us * 1e3);
  }
  CublasHandle handle;
  SMOE_RETURN_IF_ERROR(handle.Create());
  SMOE_RETURN_IF_ERROR(
      CublasStatus(cublasSetStream(handle.get(), stream), "cublasSetStream"));
  {  // Dense bf16 GEMM, fp32 accumulation.
    const int size = options.gemm_size;
    const size_t elems = static_cast<size_t>(size) * size;
    DeviceMem a, b, c;
    SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(elems, &a));
    SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(elems, &b));
    SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(elems, &c));
    const float alpha = 1.0f, beta = 0.0f;
    SMOE_ASSIGN_OR_RETURN(
        const double us,
        TimeMedianUs(
            [&](cudaStream_t) {
              return CublasStatus(
                  cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, size,
                               size, size, &alpha, a.get(), CUDA_R_16BF, size,
                               b.get(), CUDA_R_16BF, size, &beta, c.get(),
                               CUDA_R_16BF, size, CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT),
                  "cublasGemmEx");
            },
            stream, flush, flush_bytes, warmup, reps));
    rates.dense_bf16_tflops =
        2.0 * size * static_cast<double>(size) * size / (us * 1e6);
  }
  {  // Grouped GEMM bf16 forward, balanced: best of the two variants.
    const int e = 8, k = 2;
    const int64_t t = options.grouped_tokens, d = options.grouped_dim,
                  hdim = options.grouped_dim;
    const int64_t rows = t * k;
    std::vector<int64_t> off(e + 1);
    for (int x = 0; x <= e; ++x) off[x] = rows * x / e;
    DeviceMem a, b, c, ws;
    SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(rows * d, &a));
    SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(e * d * hdim, &b));
    SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(rows * hdim, &c));
    SMOE_RETURN_IF_ERROR(ws.Alloc(GroupedGemmWorkspaceBytes(e)));
    double best_us = 0;
    for (GroupedGemmVariant v : {GroupedGemmVariant::kGroupedBatched,
                                 GroupedGemmVariant::kPerExpertLoop}) {
      const auto grouped = [&](cudaStream_t s) {
        return GroupedGemm(handle.get(), a.get(), b.get(), c.get(),
                           DType::kBFloat16, off.data(), e, d, hdim, false, v,
                           ws.get(), s);
      };
      absl::StatusOr<double> us =
          TimeMedianUs(grouped, stream, flush, flush_bytes, warmup, reps);
      if (absl::IsUnimplemented(us.status())) continue;
      SMOE_RETURN_IF_ERROR(us.status());
      if (best_us == 0 || *us < best_us) best_us = *us;
    }
    if (best_us > 0) {
      rates.grouped_gemm_tflops = 2.0 * rows * d * hdim / (best_us * 1e6);
      rates.grouped_gemm_fraction =
          rates.grouped_gemm_tflops / rates.dense_bf16_tflops;
    }
    rates.grouped_gemm_shape =
        absl::StrCat("bf16 fwd E=", e, " T=", t, " k=", k, " d=", d,
                     " h=", hdim, " balanced (", rows / e, " rows/expert)");
  }
  {  // Permute and combine bf16 (bytes as in permute_bench.cu).
    const int e = 8, k = 2;
    const int64_t t = options.permute_tokens, d = options.permute_hidden;
    const int64_t rows = t * k;
    std::vector<int32_t> topk(rows);
    for (int64_t r = 0; r < t; ++r) {
      for (int j = 0; j < k; ++j)
        topk[r * k + j] = static_cast<int>((r + j) % e);
    }
    DeviceMem d_topk, sorted, dest, offs, cnt, ws, x, perm, out, w;
    SMOE_RETURN_IF_ERROR(Upload(topk, &d_topk));
    SMOE_RETURN_IF_ERROR(Zeros<int32_t>(rows, &sorted));
    SMOE_RETURN_IF_ERROR(Zeros<int32_t>(rows, &dest));
    SMOE_RETURN_IF_ERROR(Zeros<int32_t>(e + 1, &offs));
    SMOE_RETURN_IF_ERROR(Zeros<int32_t>(e, &cnt));
    SMOE_RETURN_IF_ERROR(ws.Alloc(PermutePlanWorkspaceBytes(t, k, e)));
    SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(t * d, &x));
    SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(rows * d, &perm));
    SMOE_RETURN_IF_ERROR(Zeros<__nv_bfloat16>(t * d, &out));
    SMOE_RETURN_IF_ERROR(Upload(std::vector<float>(rows, 0.5f), &w));
    const PermutePlan plan{
        sorted.as<int32_t>(), dest.as<int32_t>(), offs.as<int32_t>(), t, k, e};
    SMOE_RETURN_IF_ERROR(BuildPermutePlan(d_topk.as<int32_t>(), plan,
                                          cnt.as<int32_t>(), ws.get(), stream));
    SMOE_ASSIGN_OR_RETURN(const double perm_us,
                          TimeMedianUs(
                              [&](cudaStream_t s) {
                                return Permute(x.get(), DType::kBFloat16, d,
                                               plan, perm.get(), s);
                              },
                              stream, flush, flush_bytes, warmup, reps));
    SMOE_ASSIGN_OR_RETURN(const double comb_us,
                          TimeMedianUs(
                              [&](cudaStream_t s) {
                                return Combine(perm.get(), w.as<float>(),
                                               DType::kBFloat16, d, plan,
                                               out.get(), s);
                              },
                              stream, flush, flush_bytes, warmup, reps));
    const double perm_bytes = 2.0 * 2 * rows * d + 4.0 * rows;
    const double comb_bytes = 2.0 * rows * d + 8.0 * rows + 2.0 * t * d;
    rates.permute_gbps = perm_bytes / (perm_us * 1e3);
    rates.combine_gbps = comb_bytes / (comb_us * 1e3);
    rates.permute_fraction = rates.permute_gbps / rates.copy_gbps;
    rates.combine_fraction = rates.combine_gbps / rates.copy_gbps;
    rates.permute_shape =
        absl::StrCat("bf16 E=", e, " T=", t, " k=", k, " d=", d, " balanced");
  }
  return rates;
#else
  return NoCuda();
#endif
}

}  // namespace smoe::kernels
