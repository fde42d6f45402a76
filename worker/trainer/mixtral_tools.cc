// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/mixtral_tools.h"

#include <torch/torch.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
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

// --key value / --key=value / --flag; unknown keys are an error.
absl::StatusOr<std::map<std::string, std::string>> ParseFlags(
    int argc, char** argv, const std::set<std::string>& valued,
    const std::set<std::string>& switches) {
  std::map<std::string, std::string> out;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", arg, "'"));
    }
    arg = arg.substr(2);
    std::string value;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    if (switches.count(arg) != 0 && eq == std::string::npos) {
      out[arg] = "true";
      continue;
    }
    if (valued.count(arg) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", arg));
    }
    if (eq == std::string::npos) {
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", arg, " needs a value"));
      }
      value = argv[++i];
    }
    out[arg] = value;
  }
  return out;
}

absl::Status SetInt(const std::map<std::string, std::string>& f,
                    const std::string& key, int64_t* out) {
  auto it = f.find(key);
  if (it == f.end()) return absl::OkStatus();
  if (!absl::SimpleAtoi(it->second, out)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", key, " must be an integer, got '", it->second, "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<torch::Dtype> ParseDtype(const std::string& s) {
  if (s == "f32" || s == "float32") return torch::kFloat32;
  if (s == "bf16" || s == "bfloat16") return torch::kBFloat16;
  if (s == "f16" || s == "float16") return torch::kFloat16;
  return absl::InvalidArgumentError(
      absl::StrCat("--dtype must be f32, bf16 or f16, got '", s, "'"));
}

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

absl::Status MakeRandomModel(int argc, char** argv) {
  SMOE_ASSIGN_OR_RETURN(
      auto f,
      ParseFlags(argc, argv,
                 {"out", "shape", "layers", "hidden", "intermediate", "heads",
                  "kv-heads", "experts", "ept", "vocab", "max-position",
                  "sliding-window", "dtype", "layout", "max-shard-mb", "seed"},
                 {"no-tokenizer"}));
  if (f.count("out") == 0)
    return absl::InvalidArgumentError("--out is required");
  const std::string shape = f.count("shape") ? f["shape"] : "tiny";
  MixtralConfig c;
  if (shape == "tiny" || shape == "custom") {
    c = MixtralConfig::Tiny();
  } else if (shape == "mixtral-8x7b") {
    c = MixtralConfig::Mixtral8x7B();
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "--shape must be tiny, mixtral-8x7b or custom, got '", shape, "'"));
  }
  SMOE_RETURN_IF_ERROR(SetInt(f, "layers", &c.num_hidden_layers));
  SMOE_RETURN_IF_ERROR(SetInt(f, "hidden", &c.hidden_size));
  SMOE_RETURN_IF_ERROR(SetInt(f, "intermediate", &c.intermediate_size));
  SMOE_RETURN_IF_ERROR(SetInt(f, "heads", &c.num_attention_heads));
  SMOE_RETURN_IF_ERROR(SetInt(f, "kv-heads", &c.num_key_value_heads));
  SMOE_RETURN_IF_ERROR(SetInt(f, "experts", &c.num_local_experts));
  SMOE_RETURN_IF_ERROR(SetInt(f, "ept", &c.num_experts_per_tok));
  SMOE_RETURN_IF_ERROR(SetInt(f, "vocab", &c.vocab_size));
  SMOE_RETURN_IF_ERROR(SetInt(f, "max-position", &c.max_position_embeddings));
  if (f.count("sliding-window")) {
    int64_t w = 0;
    SMOE_RETURN_IF_ERROR(SetInt(f, "sliding-window", &w));
    c.sliding_window = w;
  }
  if (c.num_attention_heads > 0)
    c.head_dim = c.hidden_size / c.num_attention_heads;
  if (c.num_attention_heads > 0 && c.hidden_size % c.num_attention_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--hidden ", c.hidden_size,
                     " is not a multiple of --heads ", c.num_attention_heads));
  }
  model::mixtral::RandomCheckpointOptions o;
  int64_t seed = 0, shard_mb = 5000;
  SMOE_RETURN_IF_ERROR(SetInt(f, "seed", &seed));
  SMOE_RETURN_IF_ERROR(SetInt(f, "max-shard-mb", &shard_mb));
  if (shard_mb < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-shard-mb must be >= 1, got ", shard_mb));
  }
  o.seed = static_cast<uint64_t>(seed);
  o.max_shard_bytes = static_cast<uint64_t>(shard_mb) * 1'000'000;
  o.dtype = shape == "mixtral-8x7b" ? torch::kBFloat16 : torch::kFloat32;
  if (f.count("dtype")) {
    SMOE_ASSIGN_OR_RETURN(o.dtype, ParseDtype(f["dtype"]));
  }
  c.torch_dtype = TorchDtypeName(o.dtype);
  const std::string layout = f.count("layout") ? f["layout"] : "classic";
  if (layout != "classic" && layout != "packed") {
    return absl::InvalidArgumentError(
        absl::StrCat("--layout must be classic or packed, got '", layout, "'"));
  }
  o.layout = layout == "packed" ? model::mixtral::ExpertLayout::kPacked
                                : model::mixtral::ExpertLayout::kClassic;
  SMOE_RETURN_IF_ERROR(model::mixtral::ValidateMixtralConfig(c));
  std::fprintf(stderr,
               "writing %s: %lld layers, hidden %lld, %lld experts, %lld "
               "parameters, %s\n",
               f["out"].c_str(), static_cast<long long>(c.num_hidden_layers),
               static_cast<long long>(c.hidden_size),
               static_cast<long long>(c.num_local_experts),
               static_cast<long long>(c.TotalParameters()),
               c.torch_dtype.c_str());
  SMOE_RETURN_IF_ERROR(
      model::mixtral::WriteRandomMixtralCheckpoint(f["out"], c, o));
  if (f.count("no-tokenizer") == 0) {
    SMOE_RETURN_IF_ERROR(model::mixtral::TrainMixtralTokenizer(
        f["out"] + "/tokenizer.model", static_cast<int>(c.vocab_size), o.seed));
  }
  return absl::OkStatus();
}

absl::Status MixtralLogits(int argc, char** argv) {
  SMOE_ASSIGN_OR_RETURN(
      auto f,
      ParseFlags(argc, argv,
                 {"model", "tokens", "ept", "out", "device", "dtype"}, {}));
  for (const char* key : {"model", "tokens", "out"}) {
    if (f.count(key) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", key, " is required"));
    }
  }
  std::vector<int64_t> tokens;
  for (absl::string_view t : absl::StrSplit(f["tokens"], ',')) {
    int64_t id = 0;
    if (!absl::SimpleAtoi(t, &id)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tokens: '", t, "' is not an integer"));
    }
    tokens.push_back(id);
  }
  model::mixtral::MixtralLoadOptions load;
  if (f.count("dtype")) {
    SMOE_ASSIGN_OR_RETURN(load.dtype, ParseDtype(f["dtype"]));
  }
  const std::string device = f.count("device") ? f["device"] : "cpu";
  absl::StatusOr<model::DeviceSelection> sel =
      model::SelectDeviceHere(device, /*rank=*/0, /*world=*/1);
  if (!sel.ok()) {
    return absl::Status(sel.status().code(),
                        absl::StrCat("--", sel.status().message()));
  }
  load.device = sel->device;
  SMOE_ASSIGN_OR_RETURN(auto model,
                        model::mixtral::MixtralModel::Load(f["model"], load));
  std::vector<int64_t> epts;
  if (f.count("ept") == 0) {
    epts.push_back(model->experts_per_token());
  } else {
    for (absl::string_view t : absl::StrSplit(f["ept"], ',')) {
      int64_t k = 0;
      if (!absl::SimpleAtoi(t, &k)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--ept: '", t, "' is not an integer"));
      }
      epts.push_back(k);
    }
  }
  const torch::Tensor ids = torch::tensor(tokens).view({1, -1});
  std::vector<std::pair<std::string, torch::Tensor>> out = {
      {"tokens", ids[0].to(torch::kFloat32)}};
  for (int64_t k : epts) {
    SMOE_ASSIGN_OR_RETURN(torch::Tensor logits, model->Forward(ids, k));
    out.push_back({absl::StrCat("logits_ept", k), logits[0].to(torch::kCPU)});
  }
  return model::mixtral::WriteSafetensors(f["out"], out);
}

}  // namespace

int RunMakeRandomModel(int argc, char** argv) {
  try {
    const absl::Status s = MakeRandomModel(argc, argv);
    return s.ok() ? kExitOk : Fail("make-random-model", s);
  } catch (const std::exception& e) {
    return Fail("make-random-model", absl::InternalError(e.what()));
  }
}

int RunMixtralLogits(int argc, char** argv) {
  try {
    const absl::Status s = MixtralLogits(argc, argv);
    return s.ok() ? kExitOk : Fail("mixtral-logits", s);
  } catch (const std::exception& e) {
    return Fail("mixtral-logits", absl::InternalError(e.what()));
  }
}

}  // namespace smoe::trainer
