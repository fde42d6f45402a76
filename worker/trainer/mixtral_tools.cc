// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/mixtral_tools.h"

#include <torch/torch.h>

#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "worker/model/device.h"
#include "worker/model/mixtral/mixtral_checkpoint.h"
#include "worker/model/mixtral/mixtral_model.h"
#include "worker/model/mixtral/mixtral_tokenizer.h"
#include "worker/model/mixtral/safetensors.h"

namespace smoe::trainer {
namespace {

using model::mixtral::MixtralConfig;

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 64;

const std::vector<std::string>& DtypeNames() {
  static const auto* names = new std::vector<std::string>{
      "f32", "float32", "bf16", "bfloat16", "f16", "float16"};
  return *names;
}

// REQUIRES: `s` is one of DtypeNames() (the flag's check).
torch::Dtype ParseDtype(const std::string& s) {
  if (s == "bf16" || s == "bfloat16") return torch::kBFloat16;
  if (s == "f16" || s == "float16") return torch::kFloat16;
  return torch::kFloat32;
}

// "1,2,3" -> {1, 2, 3}; InvalidArgument naming `flag` and the bad item.
absl::StatusOr<std::vector<int64_t>> ParseIntList(const std::string& flag,
                                                  const std::string& list) {
  std::vector<int64_t> out;
  for (absl::string_view t : absl::StrSplit(list, ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(t, &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": '", t, "' is not an integer"));
    }
    out.push_back(v);
  }
  return out;
}

struct MakeRandomModelFlags {
  std::string out;
  std::string shape = "tiny";
  // The size flags given (--layers ... --sliding-window), by flag name.
  std::map<std::string, int64_t> sizes;
  std::string dtype;  // empty: f32 (bf16 for mixtral-8x7b)
  std::string layout = "classic";
  int64_t max_shard_mb = 5000;
  uint64_t seed = 0;
  bool no_tokenizer = false;
};

struct MixtralLogitsFlags {
  std::string model, tokens, ept, out, device = "cpu", dtype;
};

const char* TorchDtypeName(torch::Dtype d) {
  return d == torch::kBFloat16  ? "bfloat16"
         : d == torch::kFloat16 ? "float16"
                                : "float32";
}

int Fail(const char* cmd, const absl::Status& s) {
  std::fprintf(stderr, "smoe-trainer %s: %s\n", cmd, s.ToString().c_str());
  return absl::IsInvalidArgument(s) || absl::IsNotFound(s) ? kExitUsage
                                                           : kExitError;
}

absl::Status MakeRandomModel(const MakeRandomModelFlags& f) {
  MixtralConfig c = f.shape == "mixtral-8x7b" ? MixtralConfig::Mixtral8x7B()
                                              : MixtralConfig::Tiny();
  for (const auto& [flag, field] :
       std::vector<std::pair<std::string, int64_t*>>{
           {"layers", &c.num_hidden_layers},
           {"hidden", &c.hidden_size},
           {"intermediate", &c.intermediate_size},
           {"heads", &c.num_attention_heads},
           {"kv-heads", &c.num_key_value_heads},
           {"experts", &c.num_local_experts},
           {"ept", &c.num_experts_per_tok},
           {"vocab", &c.vocab_size},
           {"max-position", &c.max_position_embeddings}}) {
    if (auto it = f.sizes.find(flag); it != f.sizes.end()) *field = it->second;
  }
  if (auto it = f.sizes.find("sliding-window"); it != f.sizes.end()) {
    c.sliding_window = it->second;
  }
  if (c.num_attention_heads > 0)
    c.head_dim = c.hidden_size / c.num_attention_heads;
  if (c.num_attention_heads > 0 && c.hidden_size % c.num_attention_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--hidden ", c.hidden_size,
                     " is not a multiple of --heads ", c.num_attention_heads));
  }
  model::mixtral::RandomCheckpointOptions o;
  o.seed = f.seed;
  o.max_shard_bytes = static_cast<uint64_t>(f.max_shard_mb) * 1'000'000;
  o.dtype = f.shape == "mixtral-8x7b" ? torch::kBFloat16 : torch::kFloat32;
  if (!f.dtype.empty()) o.dtype = ParseDtype(f.dtype);
  c.torch_dtype = TorchDtypeName(o.dtype);
  o.layout = f.layout == "packed" ? model::mixtral::ExpertLayout::kPacked
                                  : model::mixtral::ExpertLayout::kClassic;
  SMOE_RETURN_IF_ERROR(model::mixtral::ValidateMixtralConfig(c));
  std::fprintf(stderr,
               "writing %s: %lld layers, hidden %lld, %lld experts, %lld "
               "parameters, %s\n",
               f.out.c_str(), static_cast<long long>(c.num_hidden_layers),
               static_cast<long long>(c.hidden_size),
               static_cast<long long>(c.num_local_experts),
               static_cast<long long>(c.TotalParameters()),
               c.torch_dtype.c_str());
  SMOE_RETURN_IF_ERROR(
      model::mixtral::WriteRandomMixtralCheckpoint(f.out, c, o));
  if (!f.no_tokenizer) {
    SMOE_RETURN_IF_ERROR(model::mixtral::TrainMixtralTokenizer(
        f.out + "/tokenizer.model", static_cast<int>(c.vocab_size), o.seed));
  }
  return absl::OkStatus();
}

absl::Status MixtralLogits(const MixtralLogitsFlags& f) {
  SMOE_ASSIGN_OR_RETURN(std::vector<int64_t> tokens,
                        ParseIntList("--tokens", f.tokens));
  model::mixtral::MixtralLoadOptions load;
  if (!f.dtype.empty()) load.dtype = ParseDtype(f.dtype);
  absl::StatusOr<model::DeviceSelection> sel =
      model::SelectDeviceHere(f.device, /*rank=*/0, /*world=*/1);
  if (!sel.ok()) {
    return absl::Status(sel.status().code(),
                        absl::StrCat("--", sel.status().message()));
  }
  load.device = sel->device;
  SMOE_ASSIGN_OR_RETURN(auto model,
                        model::mixtral::MixtralModel::Load(f.model, load));
  std::vector<int64_t> epts = {model->experts_per_token()};
  if (!f.ept.empty()) {
    SMOE_ASSIGN_OR_RETURN(epts, ParseIntList("--ept", f.ept));
  }
  const torch::Tensor ids = torch::tensor(tokens).view({1, -1});
  std::vector<std::pair<std::string, torch::Tensor>> out = {
      {"tokens", ids[0].to(torch::kFloat32)}};
  for (int64_t k : epts) {
    SMOE_ASSIGN_OR_RETURN(torch::Tensor logits, model->Forward(ids, k));
    out.push_back({absl::StrCat("logits_ept", k), logits[0].to(torch::kCPU)});
  }
  return model::mixtral::WriteSafetensors(f.out, out);
}

// Runs `body` as subcommand `cmd`: the exit code of the contract, LibTorch
// exceptions included.
int RunTool(const char* cmd, const std::function<absl::Status()>& body) {
  try {
    const absl::Status s = body();
    return s.ok() ? kExitOk : Fail(cmd, s);
  } catch (const std::exception& e) {
    return Fail(cmd, absl::InternalError(e.what()));
  }
}

}  // namespace

Command AddMakeRandomModelCommand(CLI::App* app) {
  auto f = std::make_shared<MakeRandomModelFlags>();
  CLI::App* cmd = app->add_subcommand(
      "make-random-model",
      "write a random Mixtral-format checkpoint and tokenizer");
  cmd->add_option("--out", f->out, "output directory")
      ->required()
      ->check(NonEmpty("directory"));
  cmd->add_option("--shape", f->shape,
                  "tiny, mixtral-8x7b or custom (= tiny; any size flag "
                  "overrides any shape)")
      ->check(OneOf({"tiny", "mixtral-8x7b", "custom"}));
  for (const char* flag :
       {"layers", "hidden", "intermediate", "heads", "kv-heads", "experts",
        "ept", "vocab", "max-position", "sliding-window"}) {
    const std::string name = flag;
    cmd->add_option_function<int64_t>(
           "--" + name, [f, name](const int64_t& v) { f->sizes[name] = v; },
           "overrides the shape's " + name)
        ->check(IntAtLeast(1));
  }
  cmd->add_option("--dtype", f->dtype,
                  "f32, bf16 or f16 (default f32; bf16 "
                  "for mixtral-8x7b)")
      ->check(OneOf(DtypeNames()));
  cmd->add_option("--layout", f->layout, "classic or packed expert tensors")
      ->check(OneOf({"classic", "packed"}));
  cmd->add_option("--max-shard-mb", f->max_shard_mb,
                  "safetensors shard size in MB (default 5000)")
      ->check(IntAtLeast(1));
  cmd->add_option("--seed", f->seed, "weights and tokenizer seed")
      ->check(Uint64());
  cmd->add_flag("--no-tokenizer", f->no_tokenizer,
                "do not train tokenizer.model");
  return {cmd, [f] {
            return RunTool("make-random-model",
                           [&f] { return MakeRandomModel(*f); });
          }};
}

Command AddMixtralLogitsCommand(CLI::App* app) {
  auto f = std::make_shared<MixtralLogitsFlags>();
  CLI::App* cmd = app->add_subcommand(
      "mixtral-logits", "write one forward pass's logits per EPT");
  cmd->add_option("--model", f->model, "checkpoint directory")
      ->required()
      ->check(NonEmpty("directory"));
  cmd->add_option("--tokens", f->tokens, "token ids, e.g. 1,2,3")
      ->required()
      ->check(NonEmpty("token list"));
  cmd->add_option("--ept", f->ept,
                  "experts per token, e.g. 1,2,8 (default: the model's)");
  cmd->add_option("--out", f->out, "output file (safetensors)")
      ->required()
      ->check(NonEmpty("file name"));
  cmd->add_option("--device", f->device, "cpu, cuda or cuda:N (default cpu)");
  cmd->add_option("--dtype", f->dtype, "f32, bf16 or f16 (default f32)")
      ->check(OneOf(DtypeNames()));
  return {cmd, [f] {
            return RunTool("mixtral-logits",
                           [&f] { return MixtralLogits(*f); });
          }};
}

int RunMakeRandomModel(int argc, char** argv) {
  return RunOneCommand("smoe-trainer", &AddMakeRandomModelCommand, argc, argv,
                       std::cout, std::cerr);
}

int RunMixtralLogits(int argc, char** argv) {
  return RunOneCommand("smoe-trainer", &AddMixtralLogitsCommand, argc, argv,
                       std::cout, std::cerr);
}

}  // namespace smoe::trainer
