// Copyright 2026 SMoE Lab authors.
//
// expert_gemm_lib_probe: can a library GEMM beat OpenBLAS at the SRAVEN
// expert-MLP shapes, one thread, f32? (bench/results/expert-gemm-libs-*.md)
//
// The six GEMMs of one expert per step at k = 2 (4608 tokens x 2 / 8
// experts = 1152 rows, D = 128, F = 256), all row-major:
//   fwd1  H  = X[1152x128] . W1[128x256]          (NN, weight resident)
//   fwd2  Y  = H[1152x256] . W2[256x128]          (NN, weight resident)
//   bwdH  dH = dY[1152x128] . W2^T                (NT, weight resident)
//   bwdX  dX = dH[1152x256] . W1^T                (NT, weight resident)
//   dW2   = H^T[256x1152] . dY[1152x128]          (TN, both activations)
//   dW1   = X^T[128x1152] . dH[1152x256]          (TN, both activations)
//
// Paths, each timed per call (median of --reps calls, the three paths
// interleaved call by call, after --warmup calls each):
//   openblas  cblas_sgemm with the transposes above (what LibTorch's addmm
//             calls; OpenBLAS packs both operands inside every call).
//   libxsmm   1.17 JIT kernels (libxsmm_smmdispatch, column-major view of the
//             row-major problem) over 64-row tiles of the activation; the
//             weight of an NT shape is transposed once, outside the timed
//             call ("pack once per step"); for TN the activation is
//             transposed inside the timed call (libxsmm_otrans) unless the
//             JIT accepts LIBXSMM_GEMM_FLAG_TRANS_B.
//   onednn    2.6 matmul primitive created once per shape; weights of NN/NT
//             in the primitive's preferred layout (format_tag::any) by one
//             reorder outside the timed call; TN with plain strided layouts.
// Each result is checked against a naive double-precision reference:
// |c - ref| <= K * 2^-23 * sum_k |a_ik b_kj| + 1e-6 (the float rounding
// bound); exit 1 on any mismatch.
//
//   expert_gemm_lib_probe [--reps 400] [--warmup 20] [--rows 1152]
#include <dlfcn.h>
#include <libxsmm.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/cpu_tuning.h"

extern "C" {
// OpenBLAS (linked directly; the same libopenblas.so.0 LibTorch loads).
enum { kRowMajor = 101, kNoTrans = 111, kTrans = 112 };
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k,
                 float alpha, const float* a, int lda, const float* b, int ldb,
                 float beta, float* c, int ldc);
void openblas_set_num_threads(int n);
char* openblas_get_corename(void);
}

namespace {

using Clock = std::chrono::steady_clock;

struct Shape {
  const char* name;
  int m, n, k;
  bool ta, tb;  // row-major op(A)[M,K], op(B)[K,N]
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Row-major A as stored: ta ? [K,M] : [M,K]; B: tb ? [N,K] : [K,N].
float At(const std::vector<float>& a, bool t, int i, int k, int rows_op,
         int cols_op) {
  return t ? a[static_cast<size_t>(k) * rows_op + i]
           : a[static_cast<size_t>(i) * cols_op + k];
}

struct Check {
  double worst = 0;  // max |c-ref| / bound
  bool ok = true;
};

Check CheckResult(const Shape& s, const std::vector<float>& a,
                  const std::vector<float>& b, const std::vector<float>& c) {
  Check r;
  const double u = std::ldexp(1.0, -23);
  for (int i = 0; i < s.m; ++i) {
    for (int j = 0; j < s.n; ++j) {
      double ref = 0, absdot = 0;
      for (int k = 0; k < s.k; ++k) {
        double x = At(a, s.ta, i, k, s.m, s.k);
        double y = s.tb ? b[static_cast<size_t>(j) * s.k + k]
                        : b[static_cast<size_t>(k) * s.n + j];
        ref += x * y;
        absdot += std::fabs(x * y);
      }
      double bound = s.k * u * absdot + 1e-6;
      double err = std::fabs(c[static_cast<size_t>(i) * s.n + j] - ref);
      r.worst = std::max(r.worst, err / bound);
      if (err > bound) r.ok = false;
    }
  }
  return r;
}

int Arg(int argc, char** argv, const char* name, int def) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  }
  return def;
}

}  // namespace

int main(int argc, char** argv) {
  std::string tuning = smoe::cpu::TuneCpuRuntime(argv);
  const int reps = Arg(argc, argv, "--reps", 400);
  const int warmup = Arg(argc, argv, "--warmup", 20);
  const int rows = Arg(argc, argv, "--rows", 1152);
  if (reps < 1 || warmup < 0 || rows < 1) {
    std::fprintf(stderr, "bad --reps/--warmup/--rows\n");
    return 2;
  }
  openblas_set_num_threads(1);
  // oneDNN here runs on OpenMP (Debian's build): one thread as well. libgomp
  // is loaded as oneDNN's dependency; found by dlsym so the link needs no
  // -fopenmp.
  using OmpSetFn = void (*)(int);
  using OmpGetFn = int (*)();
  auto omp_set =
      reinterpret_cast<OmpSetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  auto omp_get =
      reinterpret_cast<OmpGetFn>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  if (omp_set != nullptr) omp_set(1);
  const int omp_threads = omp_get != nullptr ? omp_get() : -1;
  libxsmm_init();
  const int D = 128, F = 256;
  const Shape shapes[] = {
      {"fwd1 X.W1", rows, F, D, false, false},
      {"fwd2 H.W2", rows, D, F, false, false},
      {"bwdH dY.W2^T", rows, F, D, false, true},
      {"bwdX dH.W1^T", rows, D, F, false, true},
      {"dW2 H^T.dY", F, D, rows, true, false},
      {"dW1 X^T.dH", D, F, rows, true, false},
  };
  std::printf(
      "# tuning: %s\n# openblas core: %s; libxsmm %s target %s; "
      "oneDNN %d.%d.%d\n",
      tuning.c_str(), openblas_get_corename(), LIBXSMM_VERSION,
      libxsmm_get_target_arch(), dnnl_version()->major, dnnl_version()->minor,
      dnnl_version()->patch);
  std::printf(
      "# reps %d (median per call), warmup %d, 1 thread (OpenMP max "
      "threads for oneDNN: %d)\n\n",
      reps, warmup, omp_threads);
  std::printf(
      "| GEMM | M x N x K | OpenBLAS GFLOP/s | libxsmm GFLOP/s (x) | oneDNN "
      "GFLOP/s (x) | OpenBLAS us | libxsmm us | oneDNN us | check |\n"
      "|---|---|---:|---:|---:|---:|---:|---:|---|\n");

  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0.f, 1.f);
  bool all_ok = true;
  double tot_blas = 0, tot_xsmm = 0, tot_dnnl = 0;
  std::vector<std::string> notes;

  for (const Shape& s : shapes) {
    const int M = s.m, N = s.n, K = s.k;
    std::vector<float> a(static_cast<size_t>(M) * K),
        b(static_cast<size_t>(K) * N);
    for (float& x : a) x = nd(rng);
    for (float& x : b) x = nd(rng);
    std::vector<float> c_blas(static_cast<size_t>(M) * N),
        c_xsmm(c_blas.size()), c_dnnl(c_blas.size());
    const int lda = s.ta ? M : K, ldb = s.tb ? K : N;

    // (1) OpenBLAS.
    auto run_blas = [&] {
      cblas_sgemm(kRowMajor, s.ta ? kTrans : kNoTrans, s.tb ? kTrans : kNoTrans,
                  M, N, K, 1.f, a.data(), lda, b.data(), ldb, 0.f,
                  c_blas.data(), N);
    };

    // (2) libxsmm. Column-major view: C^T[N,M] = op(B)^T[N,K] . op(A)^T[K,M].
    // Row-major op(B)[K,N] not transposed is column-major N x K (ld N): the
    // kernel's A operand. For NT, B^T packed once to [K,N].
    std::vector<float> b_nn;  // B as [K,N] row-major
    const float* xb = b.data();
    if (s.tb) {
      b_nn.resize(b.size());
      libxsmm_otrans(b_nn.data(), b.data(), sizeof(float), K, N, K, N);
      xb = b_nn.data();
    }
    const float alpha = 1.f, beta = 0.f;
    const int kTile = 64;
    std::function<void()> run_xsmm;
    std::string xsmm_how;
    std::vector<float> a_t;  // TN: A^T materialised per call
    if (!s.ta) {
      libxsmm_blasint m_ = N, n_ = std::min(kTile, M), k_ = K, ld_a = N,
                      ld_b = K, ld_c = N;
      int flags = LIBXSMM_GEMM_FLAG_NONE, pf = LIBXSMM_GEMM_PREFETCH_NONE;
      libxsmm_smmfunction kern = libxsmm_smmdispatch(
          m_, n_, k_, &ld_a, &ld_b, &ld_c, &alpha, &beta, &flags, &pf);
      libxsmm_blasint tail = M % n_;
      libxsmm_smmfunction kern_tail =
          tail ? libxsmm_smmdispatch(m_, tail, k_, &ld_a, &ld_b, &ld_c, &alpha,
                                     &beta, &flags, &pf)
               : nullptr;
      if (kern == nullptr || (tail && kern_tail == nullptr)) {
        xsmm_how = "dispatch returned NULL";
      } else {
        xsmm_how = s.tb ? "64-row tiles, W^T packed once" : "64-row tiles";
        run_xsmm = [&, kern, kern_tail, n_] {
          int r = 0;
          for (; r + n_ <= M; r += n_) {
            kern(xb, a.data() + static_cast<size_t>(r) * K,
                 c_xsmm.data() + static_cast<size_t>(r) * N);
          }
          if (r < M) {
            kern_tail(xb, a.data() + static_cast<size_t>(r) * K,
                      c_xsmm.data() + static_cast<size_t>(r) * N);
          }
        };
      }
    } else {
      // TN: A stored [K,M]; column-major that is M x K, we need K x M.
      libxsmm_blasint m_ = N, n_ = M, k_ = K, ld_a = N, ld_b = M, ld_c = N;
      int flags = LIBXSMM_GEMM_FLAG_TRANS_B, pf = LIBXSMM_GEMM_PREFETCH_NONE;
      libxsmm_smmfunction kern = libxsmm_smmdispatch(
          m_, n_, k_, &ld_a, &ld_b, &ld_c, &alpha, &beta, &flags, &pf);
      if (kern != nullptr) {
        xsmm_how = "one kernel, TRANS_B flag";
        run_xsmm = [&, kern] { kern(xb, a.data(), c_xsmm.data()); };
      } else {
        // Fallback: transpose the activation inside the call, then NN.
        a_t.resize(a.size());
        libxsmm_blasint ld_b2 = K;
        flags = LIBXSMM_GEMM_FLAG_NONE;
        kern = libxsmm_smmdispatch(m_, n_, k_, &ld_a, &ld_b2, &ld_c, &alpha,
                                   &beta, &flags, &pf);
        if (kern == nullptr) {
          xsmm_how = "dispatch returned NULL (TRANS_B and NN)";
        } else {
          xsmm_how = "TRANS_B refused: otrans(A) per call + one NN kernel";
          run_xsmm = [&, kern] {
            libxsmm_otrans(a_t.data(), a.data(), sizeof(float), M, K, M, K);
            kern(xb, a_t.data(), c_xsmm.data());
          };
        }
      }
    }

    // (3) oneDNN matmul: src [M,K], weights [K,N], dst [M,N].
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    dnnl::memory::desc src_md({M, K}, dt::f32, s.ta ? tag::ba : tag::ab);
    dnnl::memory::desc w_user_md({K, N}, dt::f32, s.tb ? tag::ba : tag::ab);
    const bool weight_resident = !s.ta;
    dnnl::memory::desc w_md =
        weight_resident ? dnnl::memory::desc({K, N}, dt::f32, tag::any)
                        : w_user_md;
    dnnl::memory::desc dst_md({M, N}, dt::f32, tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, w_md, dst_md),
                                    eng);
    dnnl::matmul prim(pd);
    dnnl::memory src_mem(src_md, eng, a.data());
    dnnl::memory w_user_mem(w_user_md, eng, b.data());
    dnnl::memory w_mem = w_user_mem;
    if (pd.weights_desc() != w_user_md) {
      w_mem = dnnl::memory(pd.weights_desc(), eng);
      dnnl::reorder(w_user_mem, w_mem).execute(strm, w_user_mem, w_mem);
      strm.wait();
    }
    dnnl::memory dst_mem(dst_md, eng, c_dnnl.data());
    std::string dnnl_impl = pd.impl_info_str();
    auto run_dnnl = [&] {
      prim.execute(strm, {{DNNL_ARG_SRC, src_mem},
                          {DNNL_ARG_WEIGHTS, w_mem},
                          {DNNL_ARG_DST, dst_mem}});
      strm.wait();
    };

    // Timing, interleaved.
    std::vector<double> t_blas, t_xsmm, t_dnnl;
    auto time = [](const std::function<void()>& f) {
      auto t0 = Clock::now();
      f();
      return std::chrono::duration<double, std::micro>(Clock::now() - t0)
          .count();
    };
    for (int i = 0; i < warmup + reps; ++i) {
      double tb = time(run_blas);
      double tx = run_xsmm ? time(run_xsmm) : -1;
      double td = time(run_dnnl);
      if (i >= warmup) {
        t_blas.push_back(tb);
        if (run_xsmm) t_xsmm.push_back(tx);
        t_dnnl.push_back(td);
      }
    }
    const double flops = 2.0 * M * N * K;
    double mb = Median(t_blas), md = Median(t_dnnl);
    double mx = run_xsmm ? Median(t_xsmm) : -1;
    tot_blas += mb;
    tot_dnnl += md;
    tot_xsmm += mx;

    Check cb = CheckResult(s, a, b, c_blas);
    Check cx = run_xsmm ? CheckResult(s, a, b, c_xsmm) : Check{0, false};
    Check cd = CheckResult(s, a, b, c_dnnl);
    all_ok = all_ok && cb.ok && cd.ok && (cx.ok || !run_xsmm);
    char check[160];
    std::snprintf(check, sizeof(check), "%s/%s/%s (err/bound %.3f/%.3f/%.3f)",
                  cb.ok ? "ok" : "BAD",
                  run_xsmm ? (cx.ok ? "ok" : "BAD") : "n/a",
                  cd.ok ? "ok" : "BAD", cb.worst, cx.worst, cd.worst);
    auto g = [&](double us) { return flops / (us * 1e3); };
    std::printf(
        "| %s | %dx%dx%d | %.1f | %.1f (%.2f) | %.1f (%.2f) | %.1f | "
        "%.1f | %.1f | %s |\n",
        s.name, M, N, K, g(mb), run_xsmm ? g(mx) : 0.0,
        run_xsmm ? mb / mx : 0.0, g(md), mb / md, mb, mx, md, check);
    notes.push_back(std::string(s.name) + ": libxsmm " + xsmm_how +
                    "; oneDNN " + dnnl_impl +
                    (pd.weights_desc() != w_user_md ? " (weights reordered)"
                                                    : " (plain weights)"));
  }
  std::printf(
      "\nSum of the 6 medians (one expert, one layer): OpenBLAS %.1f us,"
      " libxsmm %.1f us (%.2fx), oneDNN %.1f us (%.2fx)\n",
      tot_blas, tot_xsmm, tot_blas / tot_xsmm, tot_dnnl, tot_blas / tot_dnnl);
  for (const std::string& n : notes) std::printf("# %s\n", n.c_str());
  libxsmm_finalize();
  if (!all_ok) {
    std::printf("RESULT CHECK FAILED\n");
    return 1;
  }
  return 0;
}
