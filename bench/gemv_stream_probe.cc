// Copyright 2026 SMoE Lab authors.
//
// gemv_stream_probe: how fast a read-only matrix-vector stream runs from
// DRAM with float32 vs bfloat16 weights (issue 19, bf16 decode). Each
// matrix is 256 MiB (far beyond the L3), rows of k = 512 / 1536 / 4096; the
// loop is a copy of mixtral_decode_cpu.cc's Dot (16 lane-wise partial sums,
// bf16 widened to f32 in registers) with the same target_clones and flags.
// Prints GB/s of weights read (best of 6). Torch-free, built by hand:
//
//   g++ -std=c++17 -O3 -fno-math-errno -fassociative-math -fno-signed-zeros
//       -fno-trapping-math bench/gemv_stream_probe.cc -o gemv_stream_probe
//   LD_PRELOAD=./cpu_clock.so ./gemv_stream_probe   # per CPU second
//
// (cpu_clock.so: bench/cpu_clock_preload.cc.) If bf16 reads as many bytes
// per second as f32, a bf16 token costs half the time of an f32 one once
// the weights stream from DRAM (the 8x7B case).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>
constexpr int64_t kLanes = 16;
inline __attribute__((always_inline)) float Widen(float v) { return v; }
inline __attribute__((always_inline)) float Widen(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
template <typename W>
inline __attribute__((always_inline)) float Dot(const W* __restrict w,
                                                const float* __restrict x,
                                                int64_t k) {
  float acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= k; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) acc[l] += Widen(w[j + l]) * x[j + l];
  float r = 0;
  for (; j < k; ++j) r += Widen(w[j]) * x[j];
  for (int64_t l = 0; l < kLanes; ++l) r += acc[l];
  return r;
}
template <typename W>
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3",
                             "default"))) void
Rows(const W* w, const float* x, float* y, int64_t k, int64_t lo, int64_t hi) {
  for (int64_t r = lo; r < hi; ++r) y[r] = Dot(w + r * k, x, k);
}
template <typename W>
void Run(const char* name, int64_t k) {
  const int64_t bytes = 256ll << 20;
  const int64_t n = bytes / sizeof(W) / k;
  std::vector<W> w(n * k);
  for (auto& v : w) {
    if constexpr (sizeof(W) == 2)
      v = W(0x3f80);
    else
      v = W(1);
  }
  std::vector<float> x(k, 1.0f), y(n);
  double best = 1e9;
  for (int it = 0; it < 6; ++it) {
    auto t0 = std::chrono::steady_clock::now();
    Rows(w.data(), x.data(), y.data(), k, 0, n);
    double dt =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (dt < best) best = dt;
  }
  std::printf("%s k=%lld: %.1f GB/s (%.2f ms for 256 MiB) y0=%g\n", name,
              (long long)k, bytes / best / 1e9, best * 1e3, y[0]);
}
int main() {
  for (int64_t k : {512, 1536, 4096}) {
    Run<float>("f32 ", k);
    Run<uint16_t>("bf16", k);
  }
}
