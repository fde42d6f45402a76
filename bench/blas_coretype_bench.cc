// Copyright 2026 SMoE Lab authors.
//
// blas_coretype_bench: single-thread SGEMM GFLOP/s at the SRAVEN model's
// shapes under different OpenBLAS kernel sets, in one run (issue 20). Each
// kernel set runs in a child process of its own (OpenBLAS reads
// OPENBLAS_CORETYPE only when it loads):
//
//   Prescott   the SSE3 kernels OpenBLAS fell back to on the 2-vCPU dev VM
//              (the misdetection of issue 20);
//   auto       OpenBLAS's own choice on this machine (OPENBLAS_CORETYPE
//              unset, SMOE_CPU_TUNING=off);
//   tuned      what common/cpu_tuning.h sets for this CPU (SkylakeX on
//              AVX-512, Haswell on AVX2, Sandybridge on AVX).
//
// Two paths per shape: cblas_sgemm directly (row-major C = A * B^T, the
// nn.Linear layout) and LibTorch's at::mm on the same shape (what the
// trainer runs). Each number is the best of --rounds rounds (every set once
// per round, order rotated) x --reps timed batches of at least --min-ms each,
// after one warm-up batch: best-of filters out the other processes of a
// shared machine.
//
//   blas_coretype_bench [--rounds 3] [--reps 3] [--min-ms 200]
//                       [--cores Prescott,auto,tuned]
//
// Prints a Markdown table with each set's GFLOP/s and the ratios tuned/
// Prescott and tuned/auto. Threads: 1 (OMP_NUM_THREADS=1,
// OPENBLAS_NUM_THREADS=1 in the children).
#include <dlfcn.h>
#include <spawn.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/cpu_features.h"
#include "common/cpu_tuning.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

// C[M, N] = A[M, K] * B[N, K]^T. SRAVEN default model: D = 128, expert MLP
// 256, 8 experts, batch 128 x T 36 = 4608 tokens, 16 heads of 8.
struct Shape {
  int m, n, k;
  const char* what;
};
constexpr Shape kShapes[] = {
    {4608, 256, 128, "all tokens, D -> MLP (dense dispatch / up-proj)"},
    {4608, 128, 256, "all tokens, MLP -> D (down-proj)"},
    {4608, 128, 128, "all tokens, D -> D (attention projections)"},
    {576, 256, 128, "one expert's tokens at k=1 (4608/8), up-proj"},
    {128, 256, 128, "128 tokens, up-proj"},
    {36, 36, 8, "T x T scores of one head"},
};

using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int,
                         const float*, int, float, float*, int);

double BestGflops(const std::function<void()>& op, double flops, int reps,
                  double min_ms) {
  op();  // warm-up
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    int iters = 0;
    const auto t0 = Clock::now();
    double ms = 0;
    do {
      op();
      ++iters;
      ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    } while (ms < min_ms);
    best = std::max(best, flops * iters / (ms * 1e6));
  }
  return best;
}

// Child: prints "core NAME" then "SHAPE_INDEX cblas GFLOPS torch GFLOPS".
int Child(int reps, double min_ms) {
  auto sgemm = reinterpret_cast<SgemmFn>(dlsym(RTLD_DEFAULT, "cblas_sgemm"));
  const std::string core = smoe::cpu::LoadedOpenBlasCoreName();
  std::printf("core %s\n", core.empty() ? "(not-OpenBLAS)" : core.c_str());
  torch::manual_seed(0);
  at::set_num_threads(1);
  for (size_t i = 0; i < std::size(kShapes); ++i) {
    const Shape& s = kShapes[i];
    const double flops = 2.0 * s.m * s.n * s.k;
    torch::Tensor a = torch::randn({s.m, s.k});
    torch::Tensor b = torch::randn({s.n, s.k});
    torch::Tensor c = torch::zeros({s.m, s.n});
    double cblas = -1;
    if (sgemm != nullptr) {
      cblas = BestGflops(
          [&] {
            sgemm(101, 111, 112, s.m, s.n, s.k, 1.0f, a.data_ptr<float>(), s.k,
                  b.data_ptr<float>(), s.k, 0.0f, c.data_ptr<float>(), s.n);
          },
          flops, reps, min_ms);
    }
    torch::Tensor bt = b.t();
    const double mm =
        BestGflops([&] { at::mm_out(c, a, bt); }, flops, reps, min_ms);
    std::printf("%zu %.2f %.2f\n", i, cblas, mm);
    std::fflush(stdout);
  }
  return 0;
}

struct Run {
  std::string core;
  std::map<size_t, std::pair<double, double>> gflops;  // cblas, torch
};

// Runs this binary as a child with OPENBLAS_CORETYPE = coretype ("" unset).
bool RunChild(const std::string& coretype, int reps, double min_ms, Run* run) {
  std::vector<std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "OPENBLAS_CORETYPE" || key == "SMOE_CPU_TUNING" ||
        key == "SMOE_CPU_TUNED" || key == "OMP_NUM_THREADS" ||
        key == "OPENBLAS_NUM_THREADS") {
      continue;
    }
    vars.push_back(kv);
  }
  if (!coretype.empty()) vars.push_back("OPENBLAS_CORETYPE=" + coretype);
  vars.push_back("SMOE_CPU_TUNING=off");
  vars.push_back("OMP_NUM_THREADS=1");
  vars.push_back("OPENBLAS_NUM_THREADS=1");
  std::vector<char*> envp;
  for (std::string& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  std::string self = "/proc/self/exe", flag = "--child",
              reps_s = std::to_string(reps), ms_s = std::to_string(min_ms);
  std::string reps_f = "--reps", ms_f = "--min-ms";
  char* argv[] = {self.data(), flag.data(), reps_f.data(), reps_s.data(),
                  ms_f.data(), ms_s.data(), nullptr};
  int fds[2];
  if (pipe(fds) != 0) return false;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return false;
  }
  FILE* out = fdopen(fds[0], "r");
  char line[256];
  while (std::fgets(line, sizeof(line), out) != nullptr) {
    std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() == 2 && f[0] == "core") {
      run->core = std::string(absl::StripAsciiWhitespace(f[1]));
    } else if (f.size() == 3) {
      size_t i = 0;
      double x = 0, y = 0;
      if (absl::SimpleAtoi(f[0], &i) && absl::SimpleAtod(f[1], &x) &&
          absl::SimpleAtod(absl::StripAsciiWhitespace(f[2]), &y)) {
        run->gflops[i] = {x, y};
      }
    }
  }
  std::fclose(out);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 3;
  int rounds = 3;
  double min_ms = 200;
  bool child = false;
  std::vector<std::string> sets = {"Prescott", "auto", "tuned"};
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--child") {
      child = true;
    } else if (flag == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (flag == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (flag == "--min-ms" && i + 1 < argc) {
      min_ms = std::atof(argv[++i]);
    } else if (flag == "--cores" && i + 1 < argc) {
      sets = absl::StrSplit(argv[++i], ',', absl::SkipEmpty());
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 64;
    }
  }
  if (child) return Child(reps, min_ms);

  const smoe::cpu::CpuFeatures cpu = smoe::cpu::DetectCpuFeatures();
  const std::string tuned =
      smoe::cpu::OpenBlasCoreFor(smoe::cpu::BestSimdLevel(cpu));
  std::printf("# blas_coretype_bench: %s\n", cpu.Summary().c_str());
  std::printf("# OpenBLAS: %s\n", smoe::cpu::LoadedOpenBlasConfig().c_str());
  std::printf(
      "# single-thread GEMM C[M,N] = A[M,K] * B[N,K]^T; GFLOP/s, best of %d "
      "rounds x %d batches >= %.0f ms\n\n",
      rounds, reps, min_ms);
  // Rounds: every set once per round, in rotated order; each number is the
  // best over the rounds, so a burst of load on the shared machine during
  // one set's turn does not decide the comparison.
  std::vector<std::pair<std::string, Run>> runs;
  for (const std::string& set : sets) {
    if (set == "tuned" && tuned.empty()) {
      std::fprintf(stderr, "no tuned core for this CPU: skipped\n");
      continue;
    }
    runs.emplace_back(set, Run{});
  }
  for (int round = 0; round < rounds; ++round) {
    for (size_t j = 0; j < runs.size(); ++j) {
      auto& [set, best] = runs[(j + round) % runs.size()];
      const std::string coretype = set == "auto"    ? ""
                                   : set == "tuned" ? tuned
                                                    : set;
      Run run;
      if (!RunChild(coretype, reps, min_ms, &run)) {
        std::fprintf(stderr, "child for %s failed\n", set.c_str());
        return 1;
      }
      best.core = run.core;
      for (const auto& [i, g] : run.gflops) {
        auto& b = best.gflops[i];
        b.first = std::max(b.first, g.first);
        b.second = std::max(b.second, g.second);
      }
    }
  }
  std::printf("| M x N x K | what | path |");
  for (const auto& [set, run] : runs) {
    std::printf(" %s (%s) |", set.c_str(), run.core.c_str());
  }
  const bool ratios = runs.size() == 3 && runs[0].first == "Prescott" &&
                      runs[1].first == "auto" && runs[2].first == "tuned";
  if (ratios) std::printf(" tuned / Prescott | tuned / auto |");
  std::printf("\n| --- | --- | --- |");
  for (size_t i = 0; i < runs.size() + (ratios ? 2 : 0); ++i) {
    std::printf(" ---: |");
  }
  std::printf("\n");
  for (size_t i = 0; i < std::size(kShapes); ++i) {
    const Shape& s = kShapes[i];
    for (int path = 0; path < 2; ++path) {
      std::printf("| %dx%dx%d | %s | %s |", s.m, s.n, s.k, s.what,
                  path == 0 ? "cblas_sgemm" : "at::mm");
      std::vector<double> v;
      for (const auto& [set, run] : runs) {
        auto it = run.gflops.find(i);
        const double g =
            it == run.gflops.end()
                ? -1
                : (path == 0 ? it->second.first : it->second.second);
        v.push_back(g);
        std::printf(" %.1f |", g);
      }
      if (ratios) std::printf(" %.2fx | %.2fx |", v[2] / v[0], v[2] / v[1]);
      std::printf("\n");
    }
  }
  return 0;
}
