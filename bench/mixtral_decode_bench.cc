// Copyright 2026 SMoE Lab authors.
//
// mixtral_decode_bench: decode throughput of the Mixtral runtime
// (worker/model/mixtral) against the weight-streaming floor.
//
//   mixtral_decode_bench [--model DIR | --shape small|tiny|mixtral-8x7b]
//       [--device cpu|cuda] [--dtype f32|bf16|f16] [--ept 1,2,8]
//       [--batch 1,32] [--prompt 32] [--steps 16] [--in-memory 1]
//
// --in-memory 1 builds the random weights directly on the device instead of
// writing and loading a checkpoint (the 8x7B shape is 93 GB in bf16, more
// than the GPU machines' disk): on an H200,
//   mixtral_decode_bench --shape mixtral-8x7b --device cuda --dtype bf16
//       --in-memory 1
//
// On the CPU, --dtype bf16 loads the checkpoint as bf16: batch-1 rows run
// the decode loops with bf16 weights (mixtral_decode_cpu.h; float32 KV
// cache), other rows LibTorch in bf16; the floor counts 2 bytes per weight.
// bench/mixtral_decode_bf16_compare.sh compares it with f32 and the peers.
//
// Napkin math. Decoding is memory-bound: every step streams the weights the
// step touches. At batch B and EPT K a layer touches its attention and router
// weights plus the distinct experts the B*K routing choices land on; under
// uniform routing E * (1 - (1 - K/E)^B) of the E experts (K at B = 1, nearly
// all E at B = 32). Adding the LM head (V * H) gives bytes/step; divided by
// the measured copy bandwidth (a 512 MiB device-to-device copy, read + write)
// that is the floor time per step, and B / floor the ceiling in tokens/s.
// Mixtral-8x7B bf16 at B = 1, K = 2: 12.88 B active params ~ 25.8 GB/token,
// i.e. ~130 tokens/s at 3.35 TB/s (H100 SXM) before any other cost.
//
// Each row: a random prompt of --prompt tokens per sequence is prefilled,
// 2 warm-up decode steps run, then --steps timed decode steps (synchronised
// on CUDA). tokens/s = B * steps / time.
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/cpu_tuning.h"
#include "worker/model/mixtral/mixtral_checkpoint.h"
#include "worker/model/mixtral/mixtral_model.h"

namespace mx = smoe::model::mixtral;

namespace {

std::vector<int64_t> ParseList(const std::string& s) {
  std::vector<int64_t> out;
  for (absl::string_view t : absl::StrSplit(s, ',')) {
    int64_t v = 0;
    if (absl::SimpleAtoi(t, &v)) out.push_back(v);
  }
  return out;
}

void Sync(const torch::Device& d) {
  if (d.is_cuda()) torch::cuda::synchronize();
}

double Seconds(std::chrono::steady_clock::time_point a) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - a)
      .count();
}

// Bytes/s of a large copy on `device` (bytes read + bytes written).
double MeasureBandwidth(const torch::Device& device) {
  const int64_t n = 128ll << 20;  // 128 Mi floats = 512 MiB
  const auto opts = torch::TensorOptions(torch::kFloat32).device(device);
  torch::Tensor a = torch::ones({n}, opts), b = torch::empty({n}, opts);
  b.copy_(a);
  Sync(device);
  double best = 1e30;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    b.copy_(a);
    Sync(device);
    best = std::min(best, Seconds(t0));
  }
  return 2.0 * n * 4 / best;
}

// Prints the table for every (batch, EPT) row; returns the exit code.
int RunRows(mx::MixtralModel& model, const mx::MixtralLoadOptions& load,
            const std::string& device_name, const std::string& dtype_name,
            const std::string& name, const std::vector<int64_t>& epts,
            const std::vector<int64_t>& batches, int64_t prompt,
            int64_t steps) {
  const mx::MixtralConfig& c = model.config();
  const double elem = static_cast<double>(c10::elementSize(load.dtype));
  const double bw = MeasureBandwidth(load.device);
  const double h = c.hidden_size, f = c.intermediate_size,
               e = c.num_local_experts;
  const double attn = h * (c.num_attention_heads * c.head_dim) * 2 +
                      h * (c.num_key_value_heads * c.head_dim) * 2;
  std::printf(
      "# model %s: %lld layers, hidden %lld, %lld experts x %lld, "
      "vocab %lld, %.3f B params; device %s %s; copy bandwidth "
      "%.1f GB/s\n",
      name.c_str(), static_cast<long long>(c.num_hidden_layers),
      static_cast<long long>(c.hidden_size),
      static_cast<long long>(c.num_local_experts),
      static_cast<long long>(c.intermediate_size),
      static_cast<long long>(c.vocab_size), c.TotalParameters() / 1e9,
      device_name.c_str(), dtype_name.c_str(), bw / 1e9);
  std::printf(
      "| batch | EPT | prompt | steps | ms/step | tokens/s | "
      "MB/step (floor) | floor tokens/s | %% of floor |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  torch::NoGradGuard no_grad;
  for (int64_t b : batches) {
    for (int64_t k : epts) {
      if (k < 1 || k > c.num_local_experts) continue;
      const double experts_touched =
          e * (1.0 - std::pow(1.0 - static_cast<double>(k) / e, b));
      const double bytes =
          elem *
          (c.num_hidden_layers * (attn + e * h + experts_touched * 3 * h * f) +
           c.vocab_size * h);
      const double floor_s = bytes / bw;
      auto cache = model.NewCache(b, prompt + steps + 2);
      if (!cache.ok()) return 1;
      torch::manual_seed(1);
      const torch::Tensor p = torch::randint(3, c.vocab_size, {b, prompt});
      if (!model.Step(p, &*cache, k).ok()) return 1;
      torch::Tensor next = torch::randint(3, c.vocab_size, {b, 1});
      for (int w = 0; w < 2; ++w) (void)model.Step(next, &*cache, k);
      Sync(load.device);
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t s = 0; s < steps; ++s) {
        auto logits = model.Step(next, &*cache, k);
        if (!logits.ok()) return 1;
        next = logits->select(1, 0).argmax(-1).view({b, 1}).to(torch::kCPU);
      }
      Sync(load.device);
      const double dt = Seconds(t0) / steps;
      std::printf(
          "| %lld | %lld | %lld | %lld | %.2f | %.1f | %.1f | %.1f | "
          "%.0f%% |\n",
          static_cast<long long>(b), static_cast<long long>(k),
          static_cast<long long>(prompt), static_cast<long long>(steps),
          dt * 1e3, b / dt, bytes / 1e6, b / floor_s, 100.0 * floor_s / dt);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // The trainer's OpenBLAS/OpenMP tuning (may re-exec once; one log line).
  smoe::cpu::TuneCpuRuntime(argv);
  std::string model_dir, shape = "small", device_name = "cpu",
                         dtype_name = "f32";
  std::vector<int64_t> epts = {1, 2, 8}, batches = {1, 32};
  bool in_memory = false;
  int64_t prompt = 32, steps = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--model")
      model_dir = v;
    else if (k == "--shape")
      shape = v;
    else if (k == "--device")
      device_name = v;
    else if (k == "--dtype")
      dtype_name = v;
    else if (k == "--ept")
      epts = ParseList(v);
    else if (k == "--batch")
      batches = ParseList(v);
    else if (k == "--prompt" || k == "--steps") {
      int64_t* out = k == "--prompt" ? &prompt : &steps;
      if (!absl::SimpleAtoi(v, out) || *out < 1) {
        std::fprintf(stderr, "%s: '%s' (expected an integer >= 1)\n", k.c_str(),
                     v.c_str());
        return 64;
      }
    } else if (k == "--in-memory") {
      if (v != "0" && v != "1") {
        std::fprintf(stderr, "--in-memory: '%s' (expected 0 or 1)\n",
                     v.c_str());
        return 64;
      }
      in_memory = v == "1";
    } else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 64;
    }
  }
  auto one_of = [](const char* flag, const std::string& v,
                   std::initializer_list<const char*> ok) {
    for (const char* o : ok) {
      if (v == o) return true;
    }
    std::fprintf(stderr, "%s: '%s' (expected one of:", flag, v.c_str());
    for (const char* o : ok) std::fprintf(stderr, " %s", o);
    std::fprintf(stderr, ")\n");
    return false;
  };
  if (!one_of("--shape", shape, {"small", "tiny", "mixtral-8x7b"}) ||
      !one_of("--device", device_name, {"cpu", "cuda"}) ||
      !one_of("--dtype", dtype_name, {"f32", "bf16", "f16"})) {
    return 64;
  }
  mx::MixtralLoadOptions load;
  load.device = device_name == "cuda" ? torch::Device(torch::kCUDA, 0)
                                      : torch::Device(torch::kCPU);
  load.dtype = dtype_name == "bf16"  ? torch::kBFloat16
               : dtype_name == "f16" ? torch::kFloat16
                                     : torch::kFloat32;
  std::string tmp;
  if (model_dir.empty()) {
    mx::MixtralConfig c = shape == "tiny" ? mx::MixtralConfig::Tiny()
                          : shape == "mixtral-8x7b"
                              ? mx::MixtralConfig::Mixtral8x7B()
                              : mx::MixtralConfig::Tiny();
    if (shape == "small") {  // ~0.2 B params: a CPU-sized stand-in
      c.vocab_size = 8000;
      c.hidden_size = 512;
      c.intermediate_size = 1536;
      c.num_hidden_layers = 4;
      c.num_attention_heads = 8;
      c.num_key_value_heads = 2;
      c.head_dim = 64;
    }
    if (in_memory) {
      // Random weights made directly on the device (no disk: the 8x7B shape
      // is 93 GB in bf16), same distributions as RandomMixtralTensor.
      torch::NoGradGuard no_grad;
      const auto opts = torch::TensorOptions(load.dtype).device(load.device);
      auto rnd = [&](std::vector<int64_t> shape, bool norm) {
        torch::Tensor t = torch::randn(shape, opts);
        return norm
                   ? t.mul_(0.1).add_(1.0)
                   : t.mul_(1.0 / std::sqrt(static_cast<double>(shape.back())));
      };
      const int64_t h = c.hidden_size, f = c.intermediate_size;
      const int64_t q = c.num_attention_heads * c.head_dim;
      const int64_t kv = c.num_key_value_heads * c.head_dim;
      const int64_t e = c.num_local_experts;
      mx::MixtralWeights w;
      w.embed_tokens = torch::randn({c.vocab_size, h}, opts);
      w.norm = rnd({h}, true);
      w.lm_head = rnd({c.vocab_size, h}, false);
      for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
        mx::MixtralLayerWeights l;
        l.input_layernorm = rnd({h}, true);
        l.post_attention_layernorm = rnd({h}, true);
        l.q_proj = rnd({q, h}, false);
        l.k_proj = rnd({kv, h}, false);
        l.v_proj = rnd({kv, h}, false);
        l.o_proj = rnd({h, q}, false);
        l.gate = rnd({e, h}, false);
        l.w1 = rnd({e, f, h}, false);
        l.w3 = rnd({e, f, h}, false);
        l.w2 = rnd({e, h, f}, false);
        w.layers.push_back(std::move(l));
      }
      auto m = mx::MixtralModel::FromWeights(c, std::move(w), load);
      if (!m.ok()) {
        std::fprintf(stderr, "%s\n", m.status().ToString().c_str());
        return 1;
      }
      return RunRows(**m, load, device_name, dtype_name, "random (in memory)",
                     epts, batches, prompt, steps);
    }
    tmp = (std::filesystem::temp_directory_path() /
           ("smoe_mixtral_bench_" + std::to_string(::getpid())))
              .string();
    mx::RandomCheckpointOptions o;
    o.dtype = shape == "mixtral-8x7b" ? torch::kBFloat16 : torch::kFloat32;
    const absl::Status s = mx::WriteRandomMixtralCheckpoint(tmp, c, o);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    model_dir = tmp;
  }
  auto model = mx::MixtralModel::Load(model_dir, load);
  if (!tmp.empty()) std::filesystem::remove_all(tmp);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    return 1;
  }
  return RunRows(**model, load, device_name, dtype_name, model_dir, epts,
                 batches, prompt, steps);
}
