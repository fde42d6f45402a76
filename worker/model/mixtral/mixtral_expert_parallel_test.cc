// Copyright 2026 SMoE Lab authors.
//
// Expert-parallel Mixtral inference over LocalCommunicator (W ranks as
// threads): sharded loading from disk, logits and generation equal to the
// single-process model, identical on every rank, deadlines.
#include "worker/model/mixtral/mixtral_expert_parallel.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "kernels/all_to_all/local_communicator.h"
#include "worker/model/mixtral/mixtral_checkpoint.h"

namespace smoe::model::mixtral {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// fp32 on the CPU: the sharded model computes the same expert outputs and
// differs from the single-process one only in the order in which the (up to
// E) weighted expert outputs of a token are summed, ~1e-7 relative per
// layer; 1e-5 absolute on logits of magnitude <~10 after 2 layers leaves a
// wide margin while still catching any missing or doubled expert (those
// move logits by ~1e-1).
constexpr double kAtol = 1e-5;
constexpr double kRtol = 1e-5;

MixtralConfig TestConfig() {
  MixtralConfig c = MixtralConfig::Tiny();  // E = 8, 2 layers, hidden 64
  c.vocab_size = 320;
  c.max_position_embeddings = 64;
  return c;
}

std::string TempDir(const std::string& tag) {
  static std::atomic<int> n{0};
  const fs::path p = fs::temp_directory_path() /
                     ("smoe-mixtral-ep-" + std::to_string(getpid()) + "-" +
                      tag + "-" + std::to_string(n++));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

// Writes a random checkpoint of TestConfig() and returns its directory.
std::string WriteCheckpoint(ExpertLayout layout, uint64_t max_shard_bytes,
                            uint64_t seed = 7) {
  const std::string dir = TempDir("ckpt");
  RandomCheckpointOptions o;
  o.seed = seed;
  o.layout = layout;
  o.max_shard_bytes = max_shard_bytes;
  const absl::Status s = WriteRandomMixtralCheckpoint(dir, TestConfig(), o);
  EXPECT_TRUE(s.ok()) << s;
  return dir;
}

const torch::Tensor& Tokens() {
  static const torch::Tensor t =
      torch::tensor({1, 15, 27, 300, 4, 99, 12, 250, 7, 64, 33, 2},
                    torch::kInt64)
          .view({2, 6});
  return t;
}

std::vector<std::vector<int32_t>> Prompts() {
  return {{1, 15, 27, 300}, {1, 5}, {1, 200, 201, 9, 17}};
}

// What one run (single process or one rank) produces.
struct RunResult {
  absl::Status status;
  std::vector<torch::Tensor> logits;  // at EPT 1, 2, E
  std::vector<std::vector<int32_t>> greedy, sampled;
  int64_t parameters = 0;
  std::vector<int64_t> local_experts, first_expert;  // per layer
};

RunResult RunModel(const std::string& dir, kernels::Communicator* comm) {
  RunResult r;
  MixtralLoadOptions opts;
  opts.comm = comm;
  auto model = MixtralModel::Load(dir, opts);
  if (!model.ok()) {
    r.status = model.status();
    return r;
  }
  MixtralModel& m = **model;
  const MixtralWeights& w = m.weights();
  for (const torch::Tensor& t : {w.embed_tokens, w.norm, w.lm_head}) {
    r.parameters += t.numel();
  }
  for (const MixtralLayerWeights& l : w.layers) {
    for (const torch::Tensor& t :
         {l.input_layernorm, l.q_proj, l.k_proj, l.v_proj, l.o_proj,
          l.post_attention_layernorm, l.gate, l.w1, l.w2, l.w3}) {
      r.parameters += t.numel();
    }
    r.local_experts.push_back(l.w1.size(0));
    r.first_expert.push_back(l.first_expert);
  }
  for (int64_t ept : {int64_t{1}, int64_t{2}, m.config().num_local_experts}) {
    auto logits = m.Forward(Tokens(), ept);
    if (!logits.ok()) {
      r.status = logits.status();
      return r;
    }
    r.logits.push_back(*logits);
  }
  MixtralGenerationOptions gen;
  gen.max_new_tokens = 6;
  gen.temperature = 0;
  gen.stop_at_eos = false;
  gen.experts_per_token = 2;
  auto greedy = m.Generate(Prompts(), gen);
  if (!greedy.ok()) {
    r.status = greedy.status();
    return r;
  }
  r.greedy = *greedy;
  gen.temperature = 0.8;
  gen.top_k = 40;
  gen.seed = 11;
  gen.experts_per_token = 3;
  auto sampled = m.Generate(Prompts(), gen);
  if (!sampled.ok()) {
    r.status = sampled.status();
    return r;
  }
  r.sampled = *sampled;
  return r;
}

// Runs every rank of a LocalCommunicator group in its own thread.
std::vector<RunResult> RunRanks(const std::string& dir, int world) {
  kernels::CommunicatorOptions co;
  co.op_timeout_ms = 30'000;
  auto comms = kernels::CreateLocalCommunicators(world, co);
  std::vector<RunResult> out(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] { out[r] = RunModel(dir, comms[r].get()); });
  }
  for (std::thread& t : threads) t.join();
  return out;
}

TEST(MixtralExpertShardTest, ContiguousRanges) {
  auto s = MixtralExpertShardFor(8, 1, 2);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->first, 4);
  EXPECT_EQ(s->count, 4);
  // W does not divide E: sizes differ by at most one and cover 0..E.
  int64_t next = 0;
  for (int r = 0; r < 3; ++r) {
    auto t = MixtralExpertShardFor(8, r, 3);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->first, next);
    EXPECT_GE(t->count, 2);
    EXPECT_LE(t->count, 3);
    next = t->first + t->count;
  }
  EXPECT_EQ(next, 8);
  auto all = MixtralExpertShardFor(8, nullptr);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->first, 0);
  EXPECT_EQ(all->count, 8);
}

TEST(MixtralExpertShardTest, BadArgumentsNameTheValue) {
  EXPECT_THAT(MixtralExpertShardFor(8, 0, 0).status().message(),
              HasSubstr("world size 0"));
  EXPECT_THAT(MixtralExpertShardFor(8, 2, 2).status().message(),
              HasSubstr("rank 2 outside [0, 2)"));
  const absl::Status s = MixtralExpertShardFor(8, 0, 9).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("world size 9 exceeds num_local_experts"));
}

// Classic layout in one file; packed layout in several shards with an index
// (the packed path reads only the rows of this rank's experts).
class MixtralExpertParallelTest
    : public ::testing::TestWithParam<ExpertLayout> {};

TEST_P(MixtralExpertParallelTest, EqualsSingleProcessOnEveryRank) {
  const bool packed = GetParam() == ExpertLayout::kPacked;
  const std::string dir =
      WriteCheckpoint(GetParam(), packed ? 200'000 : 5'000'000'000);
  ASSERT_EQ(fs::exists(dir + "/model.safetensors.index.json"), packed);
  const MixtralConfig c = TestConfig();
  const RunResult single = RunModel(dir, nullptr);
  ASSERT_TRUE(single.status.ok()) << single.status;
  ASSERT_EQ(single.logits.size(), 3u);
  const int64_t expert_params =
      3 * c.intermediate_size * c.hidden_size;  // w1 + w2 + w3
  const int64_t dense = single.parameters - c.num_hidden_layers *
                                                c.num_local_experts *
                                                expert_params;
  EXPECT_EQ(single.parameters, c.TotalParameters());

  float max_diff = 0;
  for (int world : {2, 4}) {
    SCOPED_TRACE(testing::Message() << "world " << world);
    const std::vector<RunResult> ranks = RunRanks(dir, world);
    const int64_t per_rank = c.num_local_experts / world;
    for (int r = 0; r < world; ++r) {
      SCOPED_TRACE(testing::Message() << "rank " << r);
      const RunResult& got = ranks[r];
      ASSERT_TRUE(got.status.ok()) << got.status;
      // Memory: only this rank's experts, everything else replicated.
      EXPECT_EQ(got.parameters,
                dense + c.num_hidden_layers * per_rank * expert_params);
      for (size_t l = 0; l < got.local_experts.size(); ++l) {
        EXPECT_EQ(got.local_experts[l], per_rank);
        EXPECT_EQ(got.first_expert[l], r * per_rank);
      }
      for (size_t i = 0; i < single.logits.size(); ++i) {
        SCOPED_TRACE(testing::Message() << "ept index " << i);
        const float diff =
            (got.logits[i] - single.logits[i]).abs().max().item<float>();
        max_diff = std::max(max_diff, diff);
        EXPECT_TRUE(
            torch::allclose(got.logits[i], single.logits[i], kRtol, kAtol))
            << "max diff " << diff;
        // Identical bits on every rank (the all-reduce result is shared).
        EXPECT_TRUE(torch::equal(got.logits[i], ranks[0].logits[i]));
      }
      EXPECT_EQ(got.greedy, single.greedy);
      EXPECT_EQ(got.sampled, single.sampled);
    }
  }
  std::printf("max |logit difference| vs single process: %g\n", max_diff);
  // The two generation settings must exercise different paths.
  EXPECT_NE(single.greedy, single.sampled);
}

// The MoE block on a slice is the partial sum over that slice's experts:
// the shards' partials add up to the full block (the property the
// all-reduce relies on), and no single shard alone gives the full output.
TEST(MixtralExpertParallelBlockTest, ShardPartialsSumToTheFullBlock) {
  const std::string dir =
      WriteCheckpoint(ExpertLayout::kClassic, 5'000'000'000);
  auto full = LoadMixtralWeights(dir, TestConfig(), {});
  ASSERT_TRUE(full.ok()) << full.status();
  torch::manual_seed(5);
  const torch::Tensor x = torch::randn({9, TestConfig().hidden_size});
  for (int64_t k : {1, 2, 8}) {
    const torch::Tensor want = MoeForward(x, full->layers[1], k);
    for (int world : {2, 4}) {
      torch::Tensor sum = torch::zeros_like(want);
      for (int r = 0; r < world; ++r) {
        auto shard = MixtralExpertShardFor(8, r, world);
        ASSERT_TRUE(shard.ok());
        const torch::Tensor part =
            MoeForward(x, SliceMixtralExperts(*full, *shard).layers[1], k);
        EXPECT_FALSE(torch::allclose(part, want, kRtol, kAtol));
        sum += part;
      }
      EXPECT_TRUE(torch::allclose(sum, want, kRtol, kAtol))
          << "k " << k << " world " << world;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, MixtralExpertParallelTest,
                         ::testing::Values(ExpertLayout::kClassic,
                                           ExpertLayout::kPacked),
                         [](const ::testing::TestParamInfo<ExpertLayout>& i) {
                           return i.param == ExpertLayout::kPacked
                                      ? std::string("PackedSharded")
                                      : std::string("ClassicSingleFile");
                         });

TEST(MixtralExpertParallelErrorsTest, WorldLargerThanExpertCount) {
  const std::string dir =
      WriteCheckpoint(ExpertLayout::kClassic, 5'000'000'000);
  auto comms = kernels::CreateLocalCommunicators(9, {});
  MixtralLoadOptions opts;
  opts.comm = comms[0].get();
  const absl::Status s = MixtralModel::Load(dir, opts).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("world size 9 exceeds"));
}

TEST(MixtralExpertParallelErrorsTest, FromWeightsChecksTheShard) {
  const std::string dir =
      WriteCheckpoint(ExpertLayout::kClassic, 5'000'000'000);
  auto full = LoadMixtralWeights(dir, TestConfig(), {});
  ASSERT_TRUE(full.ok()) << full.status();
  auto comms = kernels::CreateLocalCommunicators(2, {});
  MixtralLoadOptions opts;
  opts.comm = comms[1].get();
  const absl::Status s =
      MixtralModel::FromWeights(TestConfig(), *full, opts).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("holds experts [0, 8) but rank 1 needs "
                                     "[4, 8)"));
  // The matching slice is accepted; a slice without a communicator is not.
  const MixtralWeights slice = SliceMixtralExperts(*full, {4, 4});
  EXPECT_TRUE(MixtralModel::FromWeights(TestConfig(), slice, opts).ok());
  EXPECT_EQ(MixtralModel::FromWeights(TestConfig(), slice, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(MixtralExpertParallelErrorsTest, MissingPeerGivesDeadlineNotHang) {
  const std::string dir =
      WriteCheckpoint(ExpertLayout::kClassic, 5'000'000'000);
  kernels::CommunicatorOptions co;
  co.op_timeout_ms = 300;
  auto comms = kernels::CreateLocalCommunicators(2, co);
  MixtralLoadOptions opts;
  opts.comm = comms[0].get();
  auto model = MixtralModel::Load(dir, opts);
  ASSERT_TRUE(model.ok()) << model.status();
  // Rank 1 never joins: rank 0's first layer all-reduce times out.
  const absl::Status s = (*model)->Forward(Tokens(), 2).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_THAT(s.message(), HasSubstr("layer 0"));
}

// Rank 0 drives, ranks 1..W-1 follow: the leader's results equal the
// single-process model's for greedy, sampled, EPT-overridden and rejected
// calls; the followers return OK after the stop message. W = 3 also covers
// uneven shards (3, 3, 2 experts... here 2, 3, 3).
TEST(MixtralExpertParallelLeaderTest, FollowersServeEveryCall) {
  const std::string dir =
      WriteCheckpoint(ExpertLayout::kClassic, 5'000'000'000);
  auto single = MixtralModel::Load(dir);
  ASSERT_TRUE(single.ok()) << single.status();
  ASSERT_TRUE((*single)->SetExpertsPerToken(3).ok());

  std::vector<MixtralGenerationOptions> calls(4);
  calls[0].max_new_tokens = 5;
  calls[0].temperature = 0;
  calls[0].stop_at_eos = false;
  calls[1].max_new_tokens = 6;
  calls[1].temperature = 0.9;
  calls[1].top_p = 0.9;
  calls[1].seed = 21;
  calls[1].first_stream = 5;
  calls[2] = calls[0];  // rejected below (bad token id)
  calls[3] = calls[1];
  calls[3].experts_per_token = 8;
  calls[3].top_k = 10;
  auto prompts_for = [](size_t i) {
    std::vector<std::vector<int32_t>> p = Prompts();
    if (i == 2) p[1].push_back(100000);
    return p;
  };
  std::vector<absl::StatusOr<std::vector<std::vector<int32_t>>>> want;
  for (size_t i = 0; i < calls.size(); ++i) {
    want.push_back((*single)->Generate(prompts_for(i), calls[i]));
  }
  ASSERT_EQ(want[2].status().code(), absl::StatusCode::kInvalidArgument);

  const int world = 3;
  kernels::CommunicatorOptions co;
  co.op_timeout_ms = 30'000;
  auto comms = kernels::CreateLocalCommunicators(world, co);
  std::vector<absl::Status> status(world);
  std::vector<absl::StatusOr<std::vector<std::vector<int32_t>>>> got;
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      MixtralLoadOptions opts;
      opts.comm = comms[r].get();
      auto model = MixtralModel::Load(dir, opts);
      if (!model.ok()) {
        status[r] = model.status();
        if (r == 0) (void)StopMixtralFollowers(comms[r].get(), torch::kCPU);
        return;  // the other ranks fail at their deadline
      }
      if (r > 0) {
        status[r] = FollowMixtralGenerate(model->get(), comms[r].get());
        return;
      }
      // Only the leader changes its current EPT: it must reach followers.
      status[r] = (*model)->SetExpertsPerToken(3);
      for (size_t i = 0; i < calls.size(); ++i) {
        got.push_back(LeadMixtralGenerate(model->get(), comms[r].get(),
                                          prompts_for(i), calls[i]));
      }
      if (status[r].ok())
        status[r] = StopMixtralFollowers(comms[r].get(), torch::kCPU);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < world; ++r) {
    EXPECT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
  }
  ASSERT_EQ(got.size(), calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "call " << i);
    ASSERT_EQ(got[i].status().code(), want[i].status().code())
        << got[i].status();
    if (want[i].ok()) {
      EXPECT_EQ(*got[i], *want[i]);
    }
  }
}

// Two models served by index (a Skill-Mix student and a local grader): each
// call runs the model the leader named, on every rank; the followers count
// the calls; an index the followers do not hold is DataLoss there.
TEST(MixtralExpertParallelLeaderTest, ServesSeveralModelsByIndex) {
  const std::vector<std::string> dirs = {
      WriteCheckpoint(ExpertLayout::kClassic, 5'000'000'000, 7),
      WriteCheckpoint(ExpertLayout::kPacked, 5'000'000'000, 8)};
  MixtralGenerationOptions gen;
  gen.max_new_tokens = 4;
  gen.temperature = 0.8;
  gen.seed = 3;
  gen.stop_at_eos = false;
  std::vector<std::vector<std::vector<int32_t>>> want;
  for (const std::string& d : dirs) {
    auto single = MixtralModel::Load(d);
    ASSERT_TRUE(single.ok()) << single.status();
    auto out = (*single)->Generate(Prompts(), gen);
    ASSERT_TRUE(out.ok()) << out.status();
    want.push_back(*out);
  }
  ASSERT_NE(want[0], want[1]);  // the two models are distinguishable

  const int world = 2;
  kernels::CommunicatorOptions co;
  co.op_timeout_ms = 3'000;  // bounds the last, abandoned call
  auto comms = kernels::CreateLocalCommunicators(world, co);
  std::vector<absl::Status> status(world);
  std::vector<absl::StatusOr<std::vector<std::vector<int32_t>>>> got;
  int64_t served = 0;
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      MixtralLoadOptions opts;
      opts.comm = comms[r].get();
      std::vector<std::unique_ptr<MixtralModel>> models;
      for (const std::string& d : dirs) {
        auto m = MixtralModel::Load(d, opts);
        if (!m.ok()) {
          status[r] = m.status();
          if (r == 0) (void)StopMixtralFollowers(comms[r].get(), torch::kCPU);
          return;
        }
        models.push_back(*std::move(m));
      }
      if (r > 0) {
        status[r] = FollowMixtralGenerate({models[0].get(), models[1].get()},
                                          comms[r].get(), &served);
        return;
      }
      for (int i : {1, 0, 1}) {
        got.push_back(LeadMixtralGenerate(models[i].get(), comms[r].get(),
                                          Prompts(), gen, i));
      }
      // The follower holds two models: index 2 ends its loop with DataLoss
      // (the leader's own call then waits out its deadline for the body).
      (void)LeadMixtralGenerate(models[1].get(), comms[r].get(), Prompts(), gen,
                                2);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(status[0].ok()) << status[0];
  EXPECT_EQ(status[1].code(), absl::StatusCode::kDataLoss) << status[1];
  EXPECT_THAT(status[1].message(), HasSubstr("named model 2"));
  EXPECT_EQ(served, 3);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].status();
    EXPECT_EQ(*got[i], want[i % 2 == 0 ? 1 : 0]) << "call " << i;
  }
}

TEST(MixtralExpertParallelLeaderTest, FollowerGivesUpWhenTheLeaderIsGone) {
  const std::string dir =
      WriteCheckpoint(ExpertLayout::kClassic, 5'000'000'000);
  kernels::CommunicatorOptions co;
  co.op_timeout_ms = 300;
  auto comms = kernels::CreateLocalCommunicators(2, co);
  MixtralLoadOptions opts;
  opts.comm = comms[1].get();
  auto model = MixtralModel::Load(dir, opts);
  ASSERT_TRUE(model.ok()) << model.status();
  const absl::Status s = FollowMixtralGenerate(model->get(), comms[1].get());
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_THAT(s.message(), HasSubstr("generate broadcast"));
}

}  // namespace
}  // namespace smoe::model::mixtral
