// Copyright 2026 SMoE Lab authors.
//
// moe_layer_bench: one top-k SMoE layer (E = 8 experts, each the SRAVEN
// GELU(tanh) MLP d -> 2d -> d with biases), forward + backward of
// sum(y * probe), for three dispatch implementations on the same parameters:
//   loop   LibTorch per-expert loop (the common baseline): for each expert,
//          find its (token, choice) pairs with nonzero(), index_select the
//          tokens, run the MLP, scale by the gate, index_add back;
//   gather the model's Dispatch::kGather (one stable sort, one index_select,
//          contiguous expert slices, one index_add);
//   ops    the model's Dispatch::kOps (worker/model/ops: router top-k,
//          permute plan, permute, grouped expert GEMM, combine; the CUDA
//          kernels on CUDA tensors, the CPU references + per-expert mm on
//          CPU).
// Napkin math: the expert MLPs cost 2 GEMMs of 2*d*2d flops per (token,
// choice) row forward and twice that backward, i.e. ~24 d^2 flops per row:
// T * k * 24 d^2 per step (T = 4096, k = 2, d = 512: 0.05 TFLOP). At k = 1 the
// gathers/scatters and router are a visible share on the CPU; on the GPU the
// loop's E nonzero() host syncs are the cost the ops remove.
//
//   moe_layer_bench [--device cpu|cuda] [--T 1024,4096] [--d 128,512]
//                   [--k 1,2,4,8] [--reps N] [--impl loop,gather,ops]
//
// Prints a Markdown table: ms per forward+backward (median of --reps timed
// repetitions after one warm-up) and the speedup of ops over loop and gather.
// Threads: OMP_NUM_THREADS (default 1 here, like the trainer).
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/cpu_tuning.h"
#include "worker/model/model_config.h"
#include "worker/model/moe.h"
#include "worker/model/ops/moe_ops.h"

namespace {

using smoe::model::Dispatch;
using smoe::model::ModelConfig;
using smoe::model::SmoeLayer;

std::vector<int64_t> Ints(const std::string& s) {
  std::vector<int64_t> out;
  for (absl::string_view p : absl::StrSplit(s, ',', absl::SkipEmpty())) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(p, &v)) {
      std::fprintf(stderr, "not an integer list: %s\n", s.c_str());
      std::exit(64);
    }
    out.push_back(v);
  }
  return out;
}

// The per-expert-loop baseline (HF-Mixtral style) on the layer's parameters.
torch::Tensor LoopForward(SmoeLayer& layer, const torch::Tensor& x, int k) {
  torch::Tensor flat = x.reshape({-1, x.size(-1)});
  absl::StatusOr<smoe::model::RouterOutput> r = smoe::model::ops::RouterTopK(
      layer->RouterLogits(flat), k, layer->config().gating);
  TORCH_CHECK(r.ok(), r.status().ToString());
  torch::Tensor out = torch::zeros_like(flat);
  for (int64_t e = 0; e < layer->config().num_experts; ++e) {
    torch::Tensor hit = (r->topk_idx == e).nonzero();  // [n_e, 2]: token, j
    if (hit.size(0) == 0) continue;
    torch::Tensor tok = hit.select(1, 0), j = hit.select(1, 1);
    torch::Tensor y = layer->Expert(e, flat.index_select(0, tok)) *
                      r->topk_weights.index({tok, j}).unsqueeze(1);
    out = out.index_add(0, tok, y);
  }
  return out.view(x.sizes());
}

void Sync(const torch::Device& d) {
  // A device-to-host copy waits for the queued work (no CUDA headers here).
  if (d.is_cuda()) torch::zeros({1}, torch::TensorOptions().device(d)).cpu();
}

}  // namespace

int main(int argc, char** argv) {
  // The trainer's OpenBLAS/OpenMP tuning (may re-exec once; one log line).
  smoe::cpu::TuneCpuRuntime(argv);
  std::string device_name = "cpu";
  std::vector<int64_t> ts = {1024, 4096}, ds = {128, 512}, ks = {1, 2, 4, 8};
  std::vector<std::string> impls = {"loop", "gather", "ops"};
  int reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], v = argv[i + 1];
    if (flag == "--device") {
      device_name = v;
    } else if (flag == "--T") {
      ts = Ints(v);
    } else if (flag == "--d") {
      ds = Ints(v);
    } else if (flag == "--k") {
      ks = Ints(v);
    } else if (flag == "--reps") {
      reps = static_cast<int>(Ints(v).at(0));
    } else if (flag == "--impl") {
      impls = absl::StrSplit(v, ',', absl::SkipEmpty());
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 64;
    }
  }
  if (const char* t = std::getenv("OMP_NUM_THREADS"); t == nullptr) {
    torch::set_num_threads(1);
  }
  const torch::Device device(device_name);
  std::printf(
      "# moe_layer_bench: E=8, mlp=2d, fwd+bwd, device=%s, threads=%d, "
      "median of %d reps after 1 warm-up\n\n",
      device_name.c_str(), torch::get_num_threads(), reps);
  std::printf("| T | d | k |");
  for (const auto& m : impls) std::printf(" %s ms |", m.c_str());
  std::printf(" ops vs loop | ops vs gather |\n|---|---|---|");
  for (size_t i = 0; i < impls.size() + 2; ++i) std::printf("---|");
  std::printf("\n");
  for (int64_t t : ts) {
    for (int64_t d : ds) {
      for (int64_t k : ks) {
        torch::manual_seed(0);
        ModelConfig c;
        c.width = static_cast<double>(d) / 128.0;  // D = d, mlp = 2d
        c.num_experts = 8;
        c.top_k = static_cast<int>(k);
        SmoeLayer layer(c);
        layer->to(device);
        torch::Tensor x =
            torch::randn({1, t, d}, torch::TensorOptions().device(device));
        torch::Tensor probe = torch::randn_like(x);
        std::map<std::string, double> ms;
        for (const std::string& impl : impls) {
          std::vector<double> times;
          for (int rep = 0; rep <= reps; ++rep) {
            layer->zero_grad();
            torch::Tensor xx = x.detach().requires_grad_(true);
            Sync(device);
            const auto t0 = std::chrono::steady_clock::now();
            torch::Tensor y;
            if (impl == "loop") {
              y = LoopForward(layer, xx, static_cast<int>(k));
            } else {
              layer->set_dispatch(impl == "ops" ? Dispatch::kOps
                                                : Dispatch::kGather);
              y = layer->forward(xx, nullptr, nullptr);
            }
            (y * probe).sum().backward();
            Sync(device);
            const double dt = std::chrono::duration<double, std::milli>(
                                  std::chrono::steady_clock::now() - t0)
                                  .count();
            if (rep > 0) times.push_back(dt);
          }
          std::sort(times.begin(), times.end());
          ms[impl] = times[times.size() / 2];
        }
        std::printf("| %lld | %lld | %lld |", static_cast<long long>(t),
                    static_cast<long long>(d), static_cast<long long>(k));
        for (const auto& m : impls) std::printf(" %.1f |", ms[m]);
        auto ratio = [&](const char* a, const char* b) {
          if (!ms.count(a) || !ms.count(b)) return std::string("-");
          char buf[32];
          std::snprintf(buf, sizeof(buf), "%.2fx", ms[b] / ms[a]);
          return std::string(buf);
        };
        std::printf(" %s | %s |\n", ratio("ops", "loop").c_str(),
                    ratio("ops", "gather").c_str());
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
