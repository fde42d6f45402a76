// Copyright 2026 SMoE Lab authors.
//
// sraven_train_bench: training throughput of the default SRAVEN SMoE model
// (w = 1, L = 4, 8 experts, batch 128, M = 4; docs/sraven.md) through the
// real trainer loop (data generation + forward + backward + AdamW), for top-k
// in {1, 2, 4, 8}, softmax and HYLA attention, and the MoE dispatch strategies
// (ops = worker/model/ops: route, permute, per-expert GEMM on contiguous
// slices, gate-weighted combine - the default; gather = index_select /
// index_add per expert; dense = run every expert on every token and mask by
// the gates). The second table gives each dispatch's speed relative to the
// first one listed (the baseline).
//
//   sraven_train_bench [--steps N] [--device cpu|cuda] [--k 1,2,4,8]
//                      [--attention softmax,hyla] [--dispatch gather,ops,dense]
//                      [--profile trace.json] [--roofline 1]
//
// --roofline 1: also measure this process's GEMM rate (at::mm, fp32, the
// step's own shapes: qkv/output projections over all tokens, each expert's
// slice at this k) and print, per k, the step's GEMM FLOPs (forward + both
// backward products), the GEMM-only time at the measured rates (the
// roofline) and the achieved fraction of it.
//
// --profile: record every LibTorch op of every row with the autograd
// profiler (chrome trace; bench/sraven_profile.py aggregates it per op
// class).
//
// Prints a Markdown table. Threads: OMP_NUM_THREADS (default 1).
#include <time.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/cpu_tuning.h"
#include "worker/model/model_config.h"
#include "worker/trainer/train_config.h"
#include "worker/trainer/trainer.h"

namespace {

std::vector<std::string> Split(const std::string& s) {
  return absl::StrSplit(s, ',', absl::SkipEmpty());
}

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

// Best-of GFLOP/s of at::mm for [m, k] x [k, n] (fp32, this thread count),
// per second of this process's CPU time (robust to other load on the
// machine; equals wall time for one busy thread).
double MmRate(int64_t m, int64_t k, int64_t n) {
  torch::NoGradGuard no_grad;
  torch::Tensor a = torch::randn({m, k}), b = torch::randn({k, n});
  torch::Tensor c = torch::empty({m, n});
  torch::mm_out(c, a, b);
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const int iters = std::max<int64_t>(1, 200000000 / (2 * m * k * n));
    const double t0 = ProcessCpuSeconds();
    for (int i = 0; i < iters; ++i) torch::mm_out(c, a, b);
    best = std::min(best, (ProcessCpuSeconds() - t0) / iters);
  }
  return 2.0 * m * k * n / best / 1e9;
}

struct Roofline {
  double gflop;    // GEMM FLOPs per step (forward + backward), 1e9
  double seconds;  // at the measured rates
};

// The spec model's GEMMs per training step at top-k (N = 4608 tokens, D =
// 128, qk = v = 64, mlp = 256, E = 8, L = 4, T = 36, 16 heads of 4): each
// forward product counted 3x (forward, input gradient, weight gradient).
Roofline StepRoofline(int top_k, std::map<std::string, double>* rates) {
  const int64_t n = 128 * 36, d = 128, qk = 64, f = 256, e = 8, layers = 4;
  const int64_t rows = n * top_k / e;  // one expert's slice, uniform routing
  auto rate = [&](const std::string& key, int64_t m, int64_t k, int64_t nn) {
    if (!rates->count(key)) (*rates)[key] = MmRate(m, k, nn);
    return (*rates)[key];
  };
  struct G {
    double flop, gflops;
  };
  std::vector<G> g = {
      {2.0 * n * d * 3 * qk, rate("qkv", n, d, 3 * qk)},
      {2.0 * n * qk * d, rate("out", n, qk, d)},
      {2.0 * n * d * e, rate("router", n, d, e)},
      {2.0 * n * top_k * d * f, rate("up" + std::to_string(rows), rows, d, f)},
      {2.0 * n * top_k * f * d,
       rate("down" + std::to_string(rows), rows, f, d)},
  };
  Roofline r{0, 0};
  for (const G& x : g) {
    r.gflop += 3 * layers * x.flop / 1e9;
    r.seconds += 3 * layers * x.flop / (x.gflops * 1e9);
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  // The trainer's OpenBLAS/OpenMP tuning (may re-exec once; one log line).
  smoe::cpu::TuneCpuRuntime(argv);
  int steps = 5;
  std::string device = "cpu";
  std::vector<std::string> ks = {"1", "2", "4", "8"};
  std::vector<std::string> attentions = {"softmax", "hyla"};
  std::vector<std::string> dispatches = {"gather", "ops", "dense"};
  std::string profile;
  bool roofline = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--steps") {
      steps = std::atoi(value.c_str());
    } else if (flag == "--device") {
      device = value;
    } else if (flag == "--k") {
      ks = Split(value);
    } else if (flag == "--attention") {
      attentions = Split(value);
    } else if (flag == "--dispatch") {
      dispatches = Split(value);
    } else if (flag == "--profile") {
      profile = value;
    } else if (flag == "--roofline") {
      roofline = value == "1";
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 64;
    }
  }
  smoe::trainer::ConfigureTorchThreads();
  const char* threads = std::getenv("OMP_NUM_THREADS");
  const char* wait = std::getenv("OMP_WAIT_POLICY");
  const std::string core = smoe::cpu::LoadedOpenBlasCoreName();
  std::printf(
      "# sraven_train_bench: w=1 L=4 E=8 batch=128 M=4 (T=36, 4608 "
      "tokens/step), "
      "device=%s, OMP_NUM_THREADS=%s, %d timed steps per row (after 1 warm-up "
      "step), OpenBLAS core %s, OMP_WAIT_POLICY=%s\n\n",
      device.c_str(), threads ? threads : "(unset: 1)", steps,
      core.empty() ? "(not OpenBLAS)" : core.c_str(), wait ? wait : "(unset)");
  std::printf(
      "| attention | k | dispatch | steps/s | tokens/s | ms/step | CPU "
      "ms/step (all threads) |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  std::map<std::string, double> rate, cpu_rate;
  std::unique_ptr<torch::autograd::profiler::RecordProfile> recorder;
  if (!profile.empty()) {
    recorder =
        std::make_unique<torch::autograd::profiler::RecordProfile>(profile);
  }
  for (const std::string& attention : attentions) {
    for (const std::string& k : ks) {
      for (const std::string& dispatch : dispatches) {
        smoe::trainer::TrainConfig c;
        c.model.num_features = 4;
        c.model.width = 1;
        c.model.depth = 4;
        c.model.num_experts = 8;
        int top_k = 1;
        if (!absl::SimpleAtoi(k, &top_k)) return 64;
        c.model.top_k = top_k;
        auto a = smoe::model::ParseAttentionKind(attention);
        auto d = smoe::model::ParseDispatch(dispatch);
        if (!a.ok() || !d.ok()) return 64;
        c.model.attention = *a;
        c.model.dispatch = *d;
        c.batch_size = 128;
        c.steps = steps + 1;
        c.warmup = std::min<int64_t>(1000, steps);  // < steps (validated)
        c.eval_every = 1 << 30;
        c.num_eval = 1;
        c.checkpoint_every = 1 << 30;
        c.log_every = 1 << 30;
        c.device = device;
        // Time updates 2..steps+1 (the first one warms allocators up).
        std::vector<double> ends, cpu;
        smoe::trainer::RunOptions o;
        o.workdir = "";
        char tmpl[] = "/tmp/sraven_bench_XXXXXX";
        const char* dir = ::mkdtemp(tmpl);
        if (dir == nullptr) return 1;
        o.workdir = dir;
        o.on_step = [&](int64_t, double) {
          cpu.push_back(ProcessCpuSeconds());
          ends.push_back(
              std::chrono::duration<double>(
                  std::chrono::steady_clock::now().time_since_epoch())
                  .count());
        };
        auto r = smoe::trainer::RunTraining(c, o);
        std::error_code ignored;
        std::filesystem::remove_all(dir, ignored);
        if (!r.ok()) {
          std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
          return 1;
        }
        const double secs = ends.back() - ends.front();
        const double sps = steps / secs;
        rate[attention + "/" + k + "/" + dispatch] = sps;
        cpu_rate[attention + "/" + k + "/" + dispatch] =
            steps / (cpu.back() - cpu.front());
        std::printf("| %s | %s | %s | %.3f | %.0f | %.1f | %.1f |\n",
                    attention.c_str(), k.c_str(), dispatch.c_str(), sps,
                    sps * 128 * 36, 1000.0 / sps,
                    1000.0 * (cpu.back() - cpu.front()) / steps);
        std::fflush(stdout);
      }
    }
  }
  recorder.reset();  // writes the trace
  if (roofline) {
    std::map<std::string, double> rates;
    std::printf(
        "\n| k | GEMM GFLOP/step | GEMM-only CPU ms/step at measured rates | "
        "roofline steps/s | measured steps/s per CPU second (%s) | %% of "
        "roofline |\n",
        dispatches[0].c_str());
    std::printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (const std::string& k : ks) {
      int top_k = 1;
      if (!absl::SimpleAtoi(k, &top_k)) return 64;
      const Roofline r = StepRoofline(top_k, &rates);
      const double got =
          cpu_rate[attentions[0] + "/" + k + "/" + dispatches[0]];
      std::printf("| %s | %.2f | %.1f | %.3f | %.3f | %.0f%% |\n", k.c_str(),
                  r.gflop, 1000 * r.seconds, 1 / r.seconds, got,
                  100 * got * r.seconds);
    }
    std::printf("\nMeasured at::mm rates (GFLOP/s):");
    for (const auto& [key, v] : rates) std::printf(" %s %.1f;", key.c_str(), v);
    std::printf("\n");
  }
  if (dispatches.size() >= 2) {
    const std::string& base = dispatches[0];
    std::printf("\n| attention | k |");
    for (size_t d = 1; d < dispatches.size(); ++d) {
      std::printf(" %s / %s speed |", dispatches[d].c_str(), base.c_str());
    }
    std::printf("\n| --- | --- |");
    for (size_t d = 1; d < dispatches.size(); ++d) std::printf(" --- |");
    std::printf("\n");
    for (const std::string& attention : attentions) {
      for (const std::string& k : ks) {
        std::printf("| %s | %s |", attention.c_str(), k.c_str());
        const std::string key = attention + "/" + k + "/";
        for (size_t d = 1; d < dispatches.size(); ++d) {
          std::printf(" %.2fx |", rate[key + dispatches[d]] / rate[key + base]);
        }
        std::printf("\n");
      }
    }
  }
  return 0;
}
