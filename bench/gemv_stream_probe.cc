// Copyright 2026 SMoE Lab authors.
//
// gemv_stream_probe: how fast the decode loops' matrix-vector stream runs
// from DRAM with float32 vs bfloat16 weights (issue 19, bf16 decode). It
// times the real kernel, mixtral_decode_cpu.h's MatVec (the version
// DecodeKernelsIsa() names), over 256 MiB matrices (far beyond the L3) with
// rows of k = 512 / 1536 / 4096, and prints GB/s of weights read (best of
// 6). One thread unless OMP_NUM_THREADS says otherwise; per CPU second with
// bench/cpu_clock_preload.cc preloaded:
//
//   LD_PRELOAD=./cpu_clock.so build/bench/gemv_stream_probe [--mib 256]
//
// If bf16 reads as many bytes per second as f32, a bf16 token costs half
// the time of an f32 one once the weights stream from DRAM (the 8x7B case).
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "worker/model/mixtral/mixtral_decode_cpu.h"

namespace {

void Run(const char* name, torch::ScalarType dtype, int64_t k, int64_t mib) {
  const int64_t bytes = mib << 20;
  const int64_t n = bytes / torch::elementSize(dtype) / k;
  const torch::Tensor w = torch::ones({n, k}, torch::dtype(dtype));
  const torch::Tensor x = torch::ones({k});
  double best = 1e9;
  torch::Tensor y;
  for (int it = 0; it < 6; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    y = smoe::model::mixtral::MatVec(x, w);
    const double dt =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (dt < best) best = dt;
  }
  std::printf("%s k=%lld: %.1f GB/s (%.2f ms for %lld MiB) y0=%g\n", name,
              static_cast<long long>(k), bytes / best / 1e9, best * 1e3,
              static_cast<long long>(mib), y[0].item<float>());
}

}  // namespace

int main(int argc, char** argv) {
  // --mib N: matrix size (default 256, far beyond the L3; smoke runs: 1).
  int64_t mib = 256;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--mib")
      mib = std::max(1, std::atoi(argv[i + 1]));
  }
  const char* threads = std::getenv("OMP_NUM_THREADS");
  torch::set_num_threads(threads != nullptr ? std::max(1, std::atoi(threads))
                                            : 1);
  std::printf("# gemv_stream_probe: MatVec (%s), %d thread(s)\n",
              smoe::model::mixtral::DecodeKernelsIsa(),
              torch::get_num_threads());
  for (int64_t k : {512, 1536, 4096}) {
    Run("f32 ", torch::kFloat32, k, mib);
    Run("bf16", torch::kBFloat16, k, mib);
  }
}
