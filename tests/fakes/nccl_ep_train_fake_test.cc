// Copyright 2026 SMoE Lab authors.
//
// A short SRAVEN expert-parallel training run (world 2, ranks as threads)
// over the production NcclCommunicator compiled against the fake CUDA + NCCL
// of tests/fakes: its per-step losses must be bit-identical to the same run
// over LocalCommunicator, and equal the single-process run up to float32
// rounding (the tolerance of tests/ep/ep_train_test.cc). This is the path
// a GPU trial takes through worker/model/expert_parallel.cc
// (AllToAllCounts, dispatch/combine AllToAllV in forward and backward,
// SyncGradients' AllReduceSum, the loss all-reduce), minus the GPU.
//
// No test-only adapter: the model (CPU LibTorch) hands the fake-backed
// NcclCommunicator, which reports MemorySpace::kCudaDevice, its buffers on
// CommDevice(comm, model device) (worker/model/device.h), the same lines a
// GPU run takes. The fake's "device memory" is host memory, so CPU tensors
// stand in for the rank's GPU tensors (Config::strict_device_pointers off:
// they are not cudaMalloc'ed); the fake still runs every NCCL kernel on its
// stream thread after a delay, so a missing wait reads stale data.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cuda_runtime_api.h"
#include "kernels/all_to_all/local_communicator.h"
#include "kernels/all_to_all/nccl_communicator.h"
#include "tests/fakes/fake_kernels_control.h"
#include "tests/fakes/fake_nccl_control.h"
#include "tests/fakes/rank_threads.h"
#include "worker/data/sraven/sraven.h"
#include "worker/model/device.h"
#include "worker/model/expert_parallel.h"
#include "worker/model/mixtral/mixtral_checkpoint.h"
#include "worker/model/mixtral/mixtral_expert_parallel.h"
#include "worker/model/mixtral/mixtral_model.h"
#include "worker/model/ops/launch.h"
#include "worker/model/transformer.h"

namespace smoe::model {
namespace {

namespace fake = ::smoe::fake_nccl;
using kernels::Communicator;
using kernels::DType;

constexpr int kWorld = 2;
constexpr int kSteps = 6;
constexpr int64_t kBatch = 8;

// Tiny SRAVEN model (as tests/ep/ep_train_test.cc): 2 layers, 4 experts,
// top-2; no dropout (masks would differ per rank slice).
ModelConfig Tiny() {
  ModelConfig c;
  c.num_features = 1;
  c.width = 0.125;
  c.depth = 2;
  c.num_experts = 4;
  c.top_k = 2;
  c.attention_dropout = 0.0;
  c.load_balance_alpha = 0.01;
  return c;
}

sraven::Generator MakeGenerator(const ModelConfig& c) {
  sraven::SravenConfig d;
  d.num_features = c.num_features;
  d.num_values = c.num_values;
  d.seed = 3;
  absl::StatusOr<sraven::Generator> g = sraven::Generator::Create(d);
  EXPECT_TRUE(g.ok()) << g.status();
  return *std::move(g);
}

// Rows [lo, hi) of SRAVEN batch `index` of `split` (the whole batch is
// generated, as every rank does in the trainer).
std::pair<torch::Tensor, torch::Tensor> Batch(const sraven::Generator& gen,
                                              sraven::Split split,
                                              uint64_t index, int64_t lo,
                                              int64_t hi) {
  const int m = gen.config().num_features;
  const int f = gen.config().num_values;
  std::vector<float> x(kBatch * gen.seq_len() * f);
  std::vector<int64_t> y(kBatch * m);
  gen.SampleBatch(split, index, kBatch, x.data(), y.data());
  torch::Tensor xt =
      torch::from_blob(x.data(), {kBatch, gen.seq_len(), f}).clone();
  torch::Tensor yt =
      torch::from_blob(y.data(), {kBatch, m}, torch::kInt64).clone();
  return {xt.slice(0, lo, hi), yt.slice(0, lo, hi)};
}

struct Trajectory {
  std::vector<double> loss;   // per step: the full-batch mean task loss
  torch::Tensor eval_logits;  // [kBatch, T, F] after training
};

torch::optim::AdamW MakeOptimizer(SmoeTransformer& net) {
  return torch::optim::AdamW(net->parameters(),
                             torch::optim::AdamWOptions(3e-3));
}

Trajectory TrainSingle() {
  const ModelConfig c = Tiny();
  const sraven::Generator gen = MakeGenerator(c);
  torch::manual_seed(3);
  SmoeTransformer net(c);
  torch::optim::AdamW opt = MakeOptimizer(net);
  Trajectory t;
  for (int step = 0; step < kSteps; ++step) {
    auto [x, y] = Batch(gen, sraven::Split::kTrain, step, 0, kBatch);
    net->train();
    opt.zero_grad();
    ForwardOutput fo = net->forward(x);
    torch::Tensor task = SravenLoss(fo.logits, y);
    (task + fo.aux_loss).backward();
    opt.step();
    t.loss.push_back(task.item<double>());
  }
  auto [x, y] = Batch(gen, sraven::Split::kTest, 0, 0, kBatch);
  net->eval();
  torch::NoGradGuard no_grad;
  t.eval_logits = net->forward(x).logits;
  return t;
}

// The EP run: `connect(r)` runs first on rank r's thread and returns the
// rank's communicator (it may create it there, as NCCL's init is
// collective); the model, built on the main thread with the same seed on
// every rank, is sharded there; `disconnect(r)` runs last. Returns rank 0's
// view.
Trajectory TrainEp(
    const std::function<absl::StatusOr<Communicator*>(int)>& connect,
    const std::function<void(int)>& disconnect) {
  const ModelConfig c = Tiny();
  const sraven::Generator gen = MakeGenerator(c);
  std::vector<SmoeTransformer> nets;
  for (int r = 0; r < kWorld; ++r) {
    torch::manual_seed(3);  // same init on every rank, then sharded
    nets.emplace_back(c);
  }
  std::vector<Trajectory> out(kWorld);
  std::vector<absl::Status> st = fake::RunRanks(
      kWorld,
      [&](int r) -> absl::Status {
        absl::StatusOr<Communicator*> comm = connect(r);
        if (!comm.ok()) return comm.status();
        absl::Status result;
        try {
          SmoeTransformer& net = nets[r];
          result = EnableExpertParallel(*net, *comm);
          torch::optim::AdamW opt(net->parameters(),
                                  torch::optim::AdamWOptions(3e-3));
          const torch::Device device = net->parameters()[0].device();
          for (int step = 0; step < kSteps && result.ok(); ++step) {
            auto [lo, hi] = SliceRows(kBatch, r, kWorld);
            auto [x, y] = Batch(gen, sraven::Split::kTrain, step, lo, hi);
            net->train();
            opt.zero_grad();
            ForwardOutput fo = net->forward(x);
            torch::Tensor task = SravenLoss(fo.logits, y);
            (task + fo.aux_loss).backward();
            result = SyncGradients(*net, *comm);
            if (!result.ok()) break;
            opt.step();
            std::vector<double> loss = {task.item<double>()};
            result = AllReduceSum(&loss, *comm, device);
            out[r].loss.push_back(loss[0] / kWorld);
          }
          if (result.ok()) {
            auto [lo, hi] = SliceRows(kBatch, r, kWorld);
            auto [x, y] = Batch(gen, sraven::Split::kTest, 0, lo, hi);
            net->eval();
            torch::NoGradGuard no_grad;
            out[r].eval_logits = net->forward(x).logits;
            result = (*comm)->Barrier();
          }
        } catch (const c10::Error& e) {
          result = absl::InternalError(e.what_without_backtrace());
        }
        disconnect(r);
        return result;
      },
      std::chrono::milliseconds(60000));
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_TRUE(st[r].ok()) << "rank " << r << ": " << st[r];
  }
  Trajectory t = out[0];
  if (out[0].eval_logits.defined() && out[1].eval_logits.defined()) {
    t.eval_logits = torch::cat({out[0].eval_logits, out[1].eval_logits}, 0);
  }
  for (int r = 1; r < kWorld; ++r) {
    EXPECT_EQ(out[r].loss, out[0].loss) << "ranks disagree on the loss";
  }
  return t;
}

// The EP run over the fake-backed NcclCommunicator (world 2): each rank's
// own non-blocking stream, handed over per call (A13).
Trajectory TrainEpOverFakeNccl(
    std::vector<std::unique_ptr<Communicator>>* local) {
  Trajectory none;
  absl::StatusOr<kernels::NcclUniqueIdBytes> id = kernels::NewNcclUniqueId();
  EXPECT_TRUE(id.ok()) << id.status();
  if (!id.ok()) return none;
  std::vector<std::unique_ptr<Communicator>> nccl(kWorld);
  std::vector<cudaStream_t> streams(kWorld, nullptr);
  return TrainEp(
      [&](int r) -> absl::StatusOr<Communicator*> {
        if (cudaSetDevice(r) != cudaSuccess ||
            cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking) !=
                cudaSuccess) {
          return absl::InternalError("fake CUDA setup failed");
        }
        kernels::NcclCommunicatorOptions o;
        o.common.op_timeout_ms = 10000;
        o.device = r;
        cudaStream_t s = streams[r];
        o.current_stream = [s] { return static_cast<void*>(s); };
        auto comm = kernels::CreateNcclCommunicator(r, kWorld, *id, o);
        if (!comm.ok()) return comm.status();
        EXPECT_EQ((*comm)->name(), "nccl");
        EXPECT_EQ((*comm)->memory_space(), kernels::MemorySpace::kCudaDevice);
        // A device communicator's buffers live on the model's device: the
        // rank's GPU in a CUDA build, the CPU here.
        EXPECT_EQ(CommDevice(**comm, torch::Device(torch::kCUDA, r)),
                  torch::Device(torch::kCUDA, r));
        EXPECT_EQ(CommDevice(**comm, torch::kCPU), torch::Device(torch::kCPU));
        if (local != nullptr) {
          EXPECT_EQ(CommDevice(*(*local)[r], torch::Device(torch::kCUDA, r)),
                    torch::Device(torch::kCPU));
        }
        nccl[r] = *std::move(comm);
        return nccl[r].get();
      },
      [&](int r) {
        nccl[r].reset();  // finalizes on the rank's thread
        cudaStreamDestroy(streams[r]);
      });
}

TEST(NcclEpTrainFakeTest, LossesEqualTheLocalAndSingleProcessRuns) {
  torch::set_num_threads(1);
  fake::Config fc;
  fc.strict_device_pointers = false;  // CPU tensors as "device" memory
  const uint64_t seed = fake::Reset(fc);
  SCOPED_TRACE(absl::StrCat("SMOE_FAKE_NCCL_SEED=", seed));

  const Trajectory single = TrainSingle();

  auto local = kernels::CreateLocalCommunicators(kWorld, {});
  const Trajectory ep_local = TrainEp(
      [&](int r) -> absl::StatusOr<Communicator*> { return local[r].get(); },
      [](int) {});

  const Trajectory ep_nccl = TrainEpOverFakeNccl(&local);

  const fake::Stats stats = fake::GetStats();
  EXPECT_GT(stats.kernels_run, 6 * kSteps)
      << "too few NCCL kernels ran on the fake";
  const std::vector<std::string> v = fake::Violations();
  EXPECT_TRUE(v.empty()) << absl::StrJoin(v, "\n");
  EXPECT_EQ(stats.live_comms, 0);

  ASSERT_EQ(single.loss.size(), static_cast<size_t>(kSteps));
  ASSERT_EQ(ep_local.loss.size(), single.loss.size());
  ASSERT_EQ(ep_nccl.loss.size(), single.loss.size());
  for (int step = 0; step < kSteps; ++step) {
    // Same bytes moved, same summation order: bit-identical.
    EXPECT_EQ(ep_nccl.loss[step], ep_local.loss[step]) << "step " << step;
    // Tolerance as tests/ep/ep_train_test.cc (float32 rounding, 6 steps).
    EXPECT_NEAR(ep_nccl.loss[step], single.loss[step],
                1e-4 * std::abs(single.loss[step]))
        << "step " << step;
  }
  ASSERT_TRUE(ep_nccl.eval_logits.defined());
  EXPECT_TRUE(torch::equal(ep_nccl.eval_logits, ep_local.eval_logits));
  EXPECT_TRUE(torch::allclose(ep_nccl.eval_logits, single.eval_logits,
                              /*rtol=*/1e-4, /*atol=*/1e-5))
      << "max |diff| = "
      << (ep_nccl.eval_logits - single.eval_logits).abs().max().item<double>();
  // The losses moved: the run trained.
  EXPECT_NE(single.loss.front(), single.loss.back());
}

// Issue 29 item 6: the same training with the MoE ops' device launches
// taking the CPU tensors (launch::SetHostTensorsThroughKernelsForTesting):
// the router top-k, permute plan, permute, combine and their backwards run
// the REAL kernels on the CPU emulator and the expert GEMMs the fake cuBLAS,
// all through worker/model/ops/launch_cuda.cc, the lines a GPU run takes;
// single-process and expert-parallel over the fake NCCL. Both must match the
// CPU references' run up to float32 rounding (kernels and references sum in
// different orders), and the EP run the single-process one.
TEST(NcclEpTrainFakeTest, RealKernelsOnTheEmulatorTrainLikeTheReferences) {
#if !defined(SMOE_EP_TEST_KERNELS_ON_EMU)
  GTEST_SKIP() << "a build without the kernels (SMOE_WITH_CUDA off) or "
                  "without the emulator's kernels (SMOE_FAKE_KERNELS_ON_EMU)";
#else
  torch::set_num_threads(1);
  fake::Config fc;
  fc.strict_device_pointers = false;  // CPU tensors as "device" memory
  const uint64_t seed = fake::Reset(fc);
  fake_kernels::Reset();
  SCOPED_TRACE(absl::StrCat("SMOE_FAKE_NCCL_SEED=", seed));

  const Trajectory reference = TrainSingle();
  EXPECT_EQ(fake_kernels::LaunchesRun(), 0)
      << "the references' run launched kernels";

  bool was = true;
  ASSERT_TRUE(
      ops::launch::SetHostTensorsThroughKernelsForTesting(true, &was).ok());
  EXPECT_FALSE(was);
  const Trajectory single = TrainSingle();
  const int64_t single_launches = fake_kernels::LaunchesRun();
  const Trajectory ep = TrainEpOverFakeNccl(nullptr);
  ASSERT_TRUE(ops::launch::SetHostTensorsThroughKernelsForTesting(false).ok());

  // Every kernel of the layer ran, forward and backward, in both runs.
  for (const char* k : {"LaunchRouterTopK", "LaunchRouterTopKBackward",
                        "LaunchBuildPermutePlan", "LaunchGatherRows",
                        "LaunchCombine", "LaunchCombineBackward"}) {
    EXPECT_GE(fake_kernels::LaunchesRun(k), 2 * kSteps * Tiny().depth) << k;
  }
  EXPECT_GT(fake_kernels::LaunchesRun() - single_launches, 0)
      << "the EP run launched no kernel";
  const std::vector<std::string> v = fake::Violations();
  EXPECT_TRUE(v.empty()) << absl::StrJoin(v, "\n");

  ASSERT_EQ(single.loss.size(), static_cast<size_t>(kSteps));
  ASSERT_EQ(ep.loss.size(), single.loss.size());
  for (int step = 0; step < kSteps; ++step) {
    EXPECT_NEAR(single.loss[step], reference.loss[step],
                1e-4 * std::abs(reference.loss[step]))
        << "step " << step;
    EXPECT_NEAR(ep.loss[step], single.loss[step],
                1e-4 * std::abs(single.loss[step]))
        << "step " << step;
  }
  ASSERT_TRUE(single.eval_logits.defined() && ep.eval_logits.defined());
  EXPECT_TRUE(torch::allclose(single.eval_logits, reference.eval_logits,
                              /*rtol=*/1e-4, /*atol=*/1e-5))
      << "max |diff| = "
      << (single.eval_logits - reference.eval_logits)
             .abs()
             .max()
             .item<double>();
  EXPECT_TRUE(torch::allclose(ep.eval_logits, single.eval_logits,
                              /*rtol=*/1e-4, /*atol=*/1e-5))
      << "max |diff| = "
      << (ep.eval_logits - single.eval_logits).abs().max().item<double>();
  EXPECT_NE(single.loss.front(), single.loss.back());

  // The comparison sees a wrong kernel: one corrupted element of one
  // combine output (fake_kernels::CorruptLaunch) moves the losses.
  fake_kernels::CorruptLaunch("LaunchCombine");
  ASSERT_TRUE(ops::launch::SetHostTensorsThroughKernelsForTesting(true).ok());
  const Trajectory corrupted = TrainSingle();
  ASSERT_TRUE(ops::launch::SetHostTensorsThroughKernelsForTesting(false).ok());
  double worst = 0;
  for (int step = 0; step < kSteps; ++step) {
    worst = std::max(worst, std::abs(corrupted.loss[step] - single.loss[step]) /
                                std::abs(single.loss[step]));
  }
  EXPECT_GT(worst, 1e-4) << "a corrupted combine went unnoticed";
#endif
}

// Expert-parallel Mixtral generation (world 2) over the fake-backed
// NcclCommunicator: rank 0 leads (LeadMixtralGenerate: the header and body
// broadcasts of BroadcastFromLeader), rank 1 follows, and every MoE layer's
// partial sums are all-reduced (AllReduceMoePartial), all through
// CommDevice on a device communicator. The tokens must equal the
// single-process model's (fp32 on the CPU; the sharded sum differs only in
// the order of the expert outputs, far below a change of the argmax/sample).
TEST(NcclMixtralFakeTest, LeaderFollowerGenerationEqualsSingleProcess) {
  namespace mx = ::smoe::model::mixtral;
  torch::set_num_threads(1);
  fake::Config fc;
  fc.strict_device_pointers = false;  // CPU tensors as "device" memory
  const uint64_t seed = fake::Reset(fc);
  SCOPED_TRACE(absl::StrCat("SMOE_FAKE_NCCL_SEED=", seed));

  mx::MixtralConfig mc = mx::MixtralConfig::Tiny();  // E = 8, 2 layers
  mc.vocab_size = 320;
  mc.max_position_embeddings = 64;
  const std::string dir = (std::filesystem::temp_directory_path() /
                           absl::StrCat("smoe-nccl-mixtral-fake-", getpid()))
                              .string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  mx::RandomCheckpointOptions ro;
  ro.seed = 5;
  ASSERT_TRUE(mx::WriteRandomMixtralCheckpoint(dir, mc, ro).ok());

  const std::vector<std::vector<int32_t>> prompts = {{1, 15, 27, 300}, {1, 5}};
  std::vector<mx::MixtralGenerationOptions> calls(2);
  calls[0].max_new_tokens = 5;
  calls[0].temperature = 0;
  calls[0].stop_at_eos = false;
  calls[0].experts_per_token = 2;
  calls[1] = calls[0];
  calls[1].temperature = 0.9;
  calls[1].top_k = 40;
  calls[1].seed = 21;
  calls[1].experts_per_token = 8;
  auto single = mx::MixtralModel::Load(dir);
  ASSERT_TRUE(single.ok()) << single.status();
  std::vector<std::vector<std::vector<int32_t>>> want;
  for (const auto& call : calls) {
    auto w = (*single)->Generate(prompts, call);
    ASSERT_TRUE(w.ok()) << w.status();
    want.push_back(*w);
  }

  absl::StatusOr<kernels::NcclUniqueIdBytes> id = kernels::NewNcclUniqueId();
  ASSERT_TRUE(id.ok()) << id.status();
  std::vector<std::vector<std::vector<int32_t>>> got;
  const int64_t launches_before = fake::GetStats().launches;
  std::vector<absl::Status> st = fake::RunRanks(
      kWorld,
      [&](int r) -> absl::Status {
        cudaStream_t stream = nullptr;
        if (cudaSetDevice(r) != cudaSuccess ||
            cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) !=
                cudaSuccess) {
          return absl::InternalError("fake CUDA setup failed");
        }
        kernels::NcclCommunicatorOptions o;
        o.common.op_timeout_ms = 20000;
        o.device = r;
        o.current_stream = [stream] { return static_cast<void*>(stream); };
        absl::Status result;
        {
          auto comm = kernels::CreateNcclCommunicator(r, kWorld, *id, o);
          if (!comm.ok()) return comm.status();
          try {
            mx::MixtralLoadOptions lo;
            lo.comm = comm->get();
            auto model = mx::MixtralModel::Load(dir, lo);
            if (!model.ok()) {
              result = model.status();
            } else if (r > 0) {
              result = mx::FollowMixtralGenerate(model->get(), comm->get());
            } else {
              for (const auto& call : calls) {
                auto g = mx::LeadMixtralGenerate(model->get(), comm->get(),
                                                 prompts, call);
                if (!g.ok()) {
                  result = g.status();
                  break;
                }
                got.push_back(*g);
              }
              const absl::Status stop =
                  mx::StopMixtralFollowers(comm->get(), torch::kCPU);
              if (result.ok()) result = stop;
            }
          } catch (const std::exception& e) {
            result = absl::InternalError(e.what());
          }
        }
        cudaStreamDestroy(stream);
        return result;
      },
      std::chrono::milliseconds(120000));
  std::filesystem::remove_all(dir);
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_TRUE(st[r].ok()) << "rank " << r << ": " << st[r];
  }
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << i;
  // 2 launches per broadcast call x (2 calls + stop's 1), and one per MoE
  // layer per forward step: well over 10.
  EXPECT_GT(fake::GetStats().launches - launches_before, 10);
  const std::vector<std::string> v = fake::Violations();
  EXPECT_TRUE(v.empty()) << absl::StrJoin(v, "\n");
  EXPECT_EQ(fake::GetStats().live_comms, 0);
}

}  // namespace
}  // namespace smoe::model
