// Copyright 2026 SMoE Lab authors.
#include "worker/model/mixtral/mixtral_checkpoint.h"

#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "worker/model/mixtral/mixtral_expert_parallel.h"

namespace smoe::model::mixtral {
namespace {

namespace fs = std::filesystem;

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

std::string LayerPrefix(int64_t i) {
  return absl::StrCat("model.layers.", i, ".");
}

}  // namespace

// ---- reading
// ---------------------------------------------------------------------

absl::StatusOr<CheckpointTensors> CheckpointTensors::Open(
    const std::string& dir) {
  CheckpointTensors ct;
  ct.dir_ = dir;
  const std::string index_path = dir + "/model.safetensors.index.json";
  const std::string single_path = dir + "/model.safetensors";
  if (fs::exists(index_path)) {
    std::ifstream in(index_path);
    std::stringstream text;
    text << in.rdbuf();
    const auto j = nlohmann::json::parse(text.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") ||
        !j["weight_map"].is_object()) {
      return absl::DataLossError(absl::StrCat(
          index_path, ": not a JSON object with a \"weight_map\" object"));
    }
    std::map<std::string, const SafetensorsFile*> by_file;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string()) {
        return absl::DataLossError(absl::StrCat(
            index_path, ": weight_map entry '", name, "' is not a file name"));
      }
      const std::string shard = file.get<std::string>();
      if (shard.find('/') != std::string::npos) {
        return absl::DataLossError(absl::StrCat(index_path, ": shard name '",
                                                shard,
                                                "' must be a plain file name"));
      }
      auto it = by_file.find(shard);
      if (it == by_file.end()) {
        SMOE_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> f,
                              SafetensorsFile::Open(dir + "/" + shard));
        ct.files_.push_back(std::move(f));
        it = by_file.emplace(shard, ct.files_.back().get()).first;
      }
      if (!it->second->Contains(name)) {
        return absl::DataLossError(absl::StrCat(index_path, ": maps tensor '",
                                                name, "' to ", shard,
                                                ", which does not contain it"));
      }
      ct.where_[name] = it->second;
    }
    return ct;
  }
  if (!fs::exists(single_path)) {
    return absl::NotFoundError(absl::StrCat(
        dir, ": neither model.safetensors nor model.safetensors.index.json"));
  }
  SMOE_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> f,
                        SafetensorsFile::Open(single_path));
  ct.files_.push_back(std::move(f));
  for (const auto& [name, e] : ct.files_.back()->entries()) {
    ct.where_[name] = ct.files_.back().get();
  }
  return ct;
}

absl::StatusOr<const SafetensorsFile*> CheckpointTensors::Find(
    const std::string& name, const std::vector<int64_t>& shape) const {
  auto it = where_.find(name);
  if (it == where_.end()) {
    return absl::NotFoundError(
        absl::StrCat(dir_, ": missing tensor '", name, "'"));
  }
  const SafetensorsEntry& e = it->second->entries().at(name);
  if (e.shape != shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        it->second->path(), ": tensor '", name, "' has shape ",
        ShapeString(e.shape), " but config.json implies ", ShapeString(shape)));
  }
  return it->second;
}

absl::StatusOr<torch::Tensor> CheckpointTensors::Read(
    const std::string& name, const std::vector<int64_t>& shape,
    const torch::TensorOptions& options) const {
  SMOE_ASSIGN_OR_RETURN(const SafetensorsFile* f, Find(name, shape));
  return f->Read(name, options);
}

absl::StatusOr<torch::Tensor> CheckpointTensors::ReadRows(
    const std::string& name, const std::vector<int64_t>& shape, int64_t first,
    int64_t count, const torch::TensorOptions& options) const {
  SMOE_ASSIGN_OR_RETURN(const SafetensorsFile* f, Find(name, shape));
  return f->ReadRows(name, first, count, options);
}

absl::StatusOr<MixtralWeights> LoadMixtralWeights(
    const std::string& dir, const MixtralConfig& c,
    const MixtralLoadOptions& options) {
  SMOE_ASSIGN_OR_RETURN(
      const MixtralExpertShard shard,
      MixtralExpertShardFor(c.num_local_experts, options.comm));
  SMOE_ASSIGN_OR_RETURN(CheckpointTensors ct, CheckpointTensors::Open(dir));
  const auto opts = torch::TensorOptions(options.dtype).device(options.device);
  const int64_t h = c.hidden_size, v = c.vocab_size, f = c.intermediate_size;
  const int64_t e = c.num_local_experts;
  const int64_t q = c.num_attention_heads * c.head_dim;
  const int64_t kv = c.num_key_value_heads * c.head_dim;
  MixtralWeights w;
  try {
    torch::NoGradGuard no_grad;
    SMOE_ASSIGN_OR_RETURN(w.embed_tokens,
                          ct.Read("model.embed_tokens.weight", {v, h}, opts));
    SMOE_ASSIGN_OR_RETURN(w.norm, ct.Read("model.norm.weight", {h}, opts));
    if (c.tie_word_embeddings && !ct.Contains("lm_head.weight")) {
      w.lm_head = w.embed_tokens;
    } else {
      SMOE_ASSIGN_OR_RETURN(w.lm_head, ct.Read("lm_head.weight", {v, h}, opts));
    }
    for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
      const std::string p = LayerPrefix(i);
      MixtralLayerWeights l;
      SMOE_ASSIGN_OR_RETURN(l.input_layernorm,
                            ct.Read(p + "input_layernorm.weight", {h}, opts));
      SMOE_ASSIGN_OR_RETURN(
          l.post_attention_layernorm,
          ct.Read(p + "post_attention_layernorm.weight", {h}, opts));
      SMOE_ASSIGN_OR_RETURN(
          l.q_proj, ct.Read(p + "self_attn.q_proj.weight", {q, h}, opts));
      SMOE_ASSIGN_OR_RETURN(
          l.k_proj, ct.Read(p + "self_attn.k_proj.weight", {kv, h}, opts));
      SMOE_ASSIGN_OR_RETURN(
          l.v_proj, ct.Read(p + "self_attn.v_proj.weight", {kv, h}, opts));
      SMOE_ASSIGN_OR_RETURN(
          l.o_proj, ct.Read(p + "self_attn.o_proj.weight", {h, q}, opts));
      if (ct.Contains(p + "mlp.gate.weight")) {  // HF 5.x packed layout
        SMOE_ASSIGN_OR_RETURN(l.gate,
                              ct.Read(p + "mlp.gate.weight", {e, h}, opts));
        SMOE_ASSIGN_OR_RETURN(
            torch::Tensor gate_up,
            ct.ReadRows(p + "mlp.experts.gate_up_proj", {e, 2 * f, h},
                        shard.first, shard.count, opts));
        l.w1 = gate_up.narrow(1, 0, f).contiguous();
        l.w3 = gate_up.narrow(1, f, f).contiguous();
        SMOE_ASSIGN_OR_RETURN(
            l.w2, ct.ReadRows(p + "mlp.experts.down_proj", {e, h, f},
                              shard.first, shard.count, opts));
      } else {
        SMOE_ASSIGN_OR_RETURN(
            l.gate, ct.Read(p + "block_sparse_moe.gate.weight", {e, h}, opts));
        std::vector<torch::Tensor> w1, w2, w3;
        for (int64_t j = shard.first; j < shard.first + shard.count; ++j) {
          const std::string ep =
              absl::StrCat(p, "block_sparse_moe.experts.", j, ".");
          SMOE_ASSIGN_OR_RETURN(torch::Tensor t1,
                                ct.Read(ep + "w1.weight", {f, h}, opts));
          SMOE_ASSIGN_OR_RETURN(torch::Tensor t2,
                                ct.Read(ep + "w2.weight", {h, f}, opts));
          SMOE_ASSIGN_OR_RETURN(torch::Tensor t3,
                                ct.Read(ep + "w3.weight", {f, h}, opts));
          w1.push_back(std::move(t1));
          w2.push_back(std::move(t2));
          w3.push_back(std::move(t3));
        }
        l.w1 = torch::stack(w1);
        l.w2 = torch::stack(w2);
        l.w3 = torch::stack(w3);
      }
      l.first_expert = shard.first;
      w.layers.push_back(std::move(l));
    }
  } catch (const std::exception& ex) {
    return absl::InternalError(
        absl::StrCat(dir, ": loading weights: ", ex.what()));
  }
  return w;
}

// ---- random checkpoints
// ---------------------------------------------------------

std::vector<SafetensorsWriter::Spec> MixtralTensorSpecs(const MixtralConfig& c,
                                                        torch::Dtype dtype,
                                                        ExpertLayout layout) {
  const int64_t h = c.hidden_size, v = c.vocab_size, f = c.intermediate_size;
  const int64_t e = c.num_local_experts;
  const int64_t q = c.num_attention_heads * c.head_dim;
  const int64_t kv = c.num_key_value_heads * c.head_dim;
  std::vector<SafetensorsWriter::Spec> specs;
  specs.push_back({"model.embed_tokens.weight", dtype, {v, h}});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = LayerPrefix(i);
    specs.push_back({p + "input_layernorm.weight", dtype, {h}});
    specs.push_back({p + "self_attn.q_proj.weight", dtype, {q, h}});
    specs.push_back({p + "self_attn.k_proj.weight", dtype, {kv, h}});
    specs.push_back({p + "self_attn.v_proj.weight", dtype, {kv, h}});
    specs.push_back({p + "self_attn.o_proj.weight", dtype, {h, q}});
    specs.push_back({p + "post_attention_layernorm.weight", dtype, {h}});
    if (layout == ExpertLayout::kPacked) {
      specs.push_back({p + "mlp.gate.weight", dtype, {e, h}});
      specs.push_back({p + "mlp.experts.gate_up_proj", dtype, {e, 2 * f, h}});
      specs.push_back({p + "mlp.experts.down_proj", dtype, {e, h, f}});
    } else {
      specs.push_back({p + "block_sparse_moe.gate.weight", dtype, {e, h}});
      for (int64_t j = 0; j < e; ++j) {
        const std::string ep =
            absl::StrCat(p, "block_sparse_moe.experts.", j, ".");
        specs.push_back({ep + "w1.weight", dtype, {f, h}});
        specs.push_back({ep + "w2.weight", dtype, {h, f}});
        specs.push_back({ep + "w3.weight", dtype, {f, h}});
      }
    }
  }
  specs.push_back({"model.norm.weight", dtype, {h}});
  if (!c.tie_word_embeddings)
    specs.push_back({"lm_head.weight", dtype, {v, h}});
  return specs;
}

torch::Tensor RandomMixtralTensor(const SafetensorsWriter::Spec& spec,
                                  uint64_t seed) {
  torch::NoGradGuard no_grad;
  at::Generator gen = at::detail::createCPUGenerator(
      seed * 0x9E3779B97F4A7C15ull ^ Fnv1a(spec.name));
  torch::Tensor t = torch::empty(spec.shape, torch::kFloat32);
  if (spec.shape.size() == 1) {
    t.normal_(1.0, 0.1, gen);
  } else if (spec.name == "model.embed_tokens.weight") {
    t.normal_(0.0, 1.0, gen);
  } else {
    t.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(spec.shape.back())),
              gen);
  }
  return t;
}

absl::Status WriteRandomMixtralCheckpoint(
    const std::string& dir, const MixtralConfig& config,
    const RandomCheckpointOptions& options) {
  SMOE_RETURN_IF_ERROR(ValidateMixtralConfig(config));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat(dir, ": cannot create: ", ec.message()));
  }
  {
    std::ofstream out(dir + "/config.json");
    out << MixtralConfigToJson(config);
    if (!out) {
      return absl::UnavailableError(
          absl::StrCat(dir, "/config.json: write failed"));
    }
  }
  const std::vector<SafetensorsWriter::Spec> specs =
      MixtralTensorSpecs(config, options.dtype, options.layout);
  // Greedy packing into shards of at most max_shard_bytes.
  std::vector<std::vector<SafetensorsWriter::Spec>> shards(1);
  uint64_t in_shard = 0;
  for (const auto& s : specs) {
    const uint64_t bytes = SafetensorsWriter::DataBytes({s});
    if (!shards.back().empty() && in_shard + bytes > options.max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(s);
    in_shard += bytes;
  }
  const size_t n = shards.size();
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  try {
    for (size_t i = 0; i < n; ++i) {
      const std::string file =
          n == 1 ? "model.safetensors"
                 : absl::StrFormat("model-%05d-of-%05d.safetensors", i + 1, n);
      SMOE_ASSIGN_OR_RETURN(
          std::unique_ptr<SafetensorsWriter> w,
          SafetensorsWriter::Create(dir + "/" + file, shards[i],
                                    {{"format", "pt"}}));
      for (const auto& s : shards[i]) {
        SMOE_RETURN_IF_ERROR(
            w->Write(s.name, RandomMixtralTensor(s, options.seed)));
        weight_map[s.name] = file;
      }
      SMOE_RETURN_IF_ERROR(w->Close());
    }
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat(dir, ": writing random weights: ", e.what()));
  }
  if (n > 1) {
    nlohmann::ordered_json index = {
        {"metadata", {{"total_size", SafetensorsWriter::DataBytes(specs)}}},
        {"weight_map", weight_map}};
    std::ofstream out(dir + "/model.safetensors.index.json");
    out << index.dump(2) << "\n";
    if (!out) {
      return absl::UnavailableError(
          absl::StrCat(dir, "/model.safetensors.index.json: write failed"));
    }
  }
  return absl::OkStatus();
}

}  // namespace smoe::model::mixtral
