// Copyright 2026 SMoE Lab authors.
//
// Expert-parallel Mixtral inference across real processes (ctest label
// `ep`): a tiny random checkpoint (sharded, with an index) is written to
// disk; W = 2 smoe-mixtral-ep-rank processes join a Gloo group over a
// FileStore rendezvous in a temp dir, each loads only its experts and writes
// its logits (EPT 1, 2, E) and greedy tokens; they must equal this process's
// single-process model and be bit-identical across ranks. The launcher's
// deadline kills every rank on a hang.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "tests/ep/launcher.h"
#include "tests/ep/mixtral_ep_inputs.h"
#include "worker/model/mixtral/mixtral_checkpoint.h"
#include "worker/model/mixtral/mixtral_model.h"
#include "worker/model/mixtral/safetensors.h"

namespace smoe::ep_test {
namespace {

namespace mx = smoe::model::mixtral;

constexpr double kDeadlineS = 90;
// Same reasoning as worker/model/mixtral/mixtral_expert_parallel_test.cc:
// only the fp32 summation order of a token's expert outputs differs.
constexpr double kAtol = 1e-5, kRtol = 1e-5;

TEST(MixtralEpTest, TwoGlooProcessesEqualSingleProcess) {
  const std::string dir = MakeTempDir("smoe-mixtral-ep-");
  ASSERT_FALSE(dir.empty());
  mx::MixtralConfig c = mx::MixtralConfig::Tiny();  // E = 8
  c.vocab_size = 320;
  c.max_position_embeddings = 64;
  mx::RandomCheckpointOptions ro;
  ro.seed = 3;
  ro.max_shard_bytes = 200'000;  // several shards + index
  const std::string model_dir = dir + "/model";
  ASSERT_TRUE(mx::WriteRandomMixtralCheckpoint(model_dir, c, ro).ok());

  // Reference: one process, all experts.
  auto single = mx::MixtralModel::Load(model_dir);
  ASSERT_TRUE(single.ok()) << single.status();
  std::vector<torch::Tensor> want;
  for (int64_t ept : MixtralEpEpts(c)) {
    auto l = (*single)->Forward(MixtralEpTokens(), ept);
    ASSERT_TRUE(l.ok()) << l.status();
    want.push_back(*l);
  }
  auto greedy = (*single)->Generate(MixtralEpPrompts(), MixtralEpGreedy());
  ASSERT_TRUE(greedy.ok()) << greedy.status();

  const int world = 2;
  const std::vector<RankExit> exits =
      RunRanks({SMOE_MIXTRAL_EP_RANK_BINARY, model_dir, dir + "/rank"}, world,
               dir + "/rendezvous", dir, kDeadlineS);
  ASSERT_EQ(exits.size(), 2u);
  for (int r = 0; r < world; ++r) {
    ASSERT_EQ(exits[r].code, 0)
        << "rank " << r << (exits[r].killed ? " (killed)" : "") << " stderr:\n"
        << ReadFile(exits[r].stderr_path);
  }
  std::vector<std::unique_ptr<mx::SafetensorsFile>> files;
  for (int r = 0; r < world; ++r) {
    auto f = mx::SafetensorsFile::Open(dir + "/rank" + std::to_string(r) +
                                       ".safetensors");
    ASSERT_TRUE(f.ok()) << f.status();
    files.push_back(std::move(*f));
  }
  const auto f32 = torch::TensorOptions(torch::kFloat32);
  for (int r = 0; r < world; ++r) {
    SCOPED_TRACE(testing::Message() << "rank " << r);
    const mx::SafetensorsFile& f = *files[r];
    // Rank r holds experts [4r, 4r + 4) of every layer.
    auto local = f.Read("local_experts", f32);
    auto first = f.Read("first_expert", f32);
    ASSERT_TRUE(local.ok() && first.ok());
    EXPECT_TRUE(torch::equal(*local, torch::full({c.num_hidden_layers}, 4.0f)));
    EXPECT_TRUE(
        torch::equal(*first, torch::full({c.num_hidden_layers}, 4.0f * r)));
    const std::vector<int64_t> epts = MixtralEpEpts(c);
    for (size_t i = 0; i < epts.size(); ++i) {
      const std::string name = "logits_ept" + std::to_string(epts[i]);
      SCOPED_TRACE(name);
      auto got = f.Read(name, f32);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_TRUE(torch::allclose(*got, want[i], kRtol, kAtol))
          << "max diff " << (*got - want[i]).abs().max().item<float>();
      auto rank0 = files[0]->Read(name, f32);
      ASSERT_TRUE(rank0.ok());
      EXPECT_TRUE(torch::equal(*got, *rank0)) << "ranks disagree";
    }
    auto tokens = f.Read("greedy", f32);
    ASSERT_TRUE(tokens.ok()) << tokens.status();
    EXPECT_TRUE(torch::equal(*tokens, TokensToTensor(*greedy)));
  }
}

}  // namespace
}  // namespace smoe::ep_test
