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
// CPU LibTorch keeps tensors on the host, while NcclCommunicator reports
// MemorySpace::kCudaDevice: HostStagingCommunicator below forwards every call
// to it but reports kHost and stages the buffers through fake device memory
// (cudaMalloc + cudaMemcpy), as payload.cc's device path does.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
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
#include "tests/fakes/fake_nccl_control.h"
#include "tests/fakes/rank_threads.h"
#include "worker/data/sraven/sraven.h"
#include "worker/model/expert_parallel.h"
#include "worker/model/transformer.h"

namespace smoe::model {
namespace {

namespace fake = ::smoe::fake_nccl;
using kernels::Communicator;
using kernels::DType;

// Test-only decorator: the fake-backed NcclCommunicator with host buffers.
// Created on the main thread (the model needs its rank/world before the rank
// threads start); Connect()/Disconnect() run on the rank's thread, whose
// current CUDA device is then the rank's.
class HostStagingCommunicator : public Communicator {
 public:
  HostStagingCommunicator(int rank, int world) : rank_(rank), world_(world) {}

  void Connect(std::unique_ptr<Communicator> inner) {
    inner_ = std::move(inner);
  }
  void Disconnect() { inner_.reset(); }

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  kernels::MemorySpace memory_space() const override {
    return kernels::MemorySpace::kHost;
  }
  std::string name() const override { return "nccl(fake, host-staged)"; }

  absl::Status AllToAllCounts(const int64_t* send_counts,
                              int64_t* recv_counts) override {
    if (inner_ == nullptr) return absl::FailedPreconditionError("no inner");
    return inner_->AllToAllCounts(send_counts, recv_counts);
  }

  absl::Status AllToAllV(const void* send, const int64_t* send_counts,
                         void* recv, const int64_t* recv_counts,
                         DType dtype) override {
    if (inner_ == nullptr) return absl::FailedPreconditionError("no inner");
    const size_t es = kernels::DTypeSize(dtype);
    const size_t sb = kernels::TotalCount(send_counts, world_) * es;
    const size_t rb = kernels::TotalCount(recv_counts, world_) * es;
    Staged d_send(sb), d_recv(rb);
    if (absl::Status s = d_send.Upload(send); !s.ok()) return s;
    if (absl::Status s = inner_->AllToAllV(d_send.ptr, send_counts, d_recv.ptr,
                                           recv_counts, dtype);
        !s.ok()) {
      return s;
    }
    return d_recv.Download(recv);
  }

  absl::Status AllReduceSum(void* buffer, int64_t count, DType dtype) override {
    if (inner_ == nullptr) return absl::FailedPreconditionError("no inner");
    Staged d(static_cast<size_t>(count) * kernels::DTypeSize(dtype));
    if (absl::Status s = d.Upload(buffer); !s.ok()) return s;
    if (absl::Status s = inner_->AllReduceSum(d.ptr, count, dtype); !s.ok()) {
      return s;
    }
    return d.Download(buffer);
  }

  absl::Status Barrier() override {
    if (inner_ == nullptr) return absl::FailedPreconditionError("no inner");
    return inner_->Barrier();
  }

 private:
  // Fake device memory of `bytes` (nullptr when 0).
  struct Staged {
    explicit Staged(size_t b) : bytes(b) {
      if (bytes > 0 && cudaMalloc(&ptr, bytes) != cudaSuccess) ptr = nullptr;
    }
    ~Staged() { cudaFree(ptr); }
    absl::Status Upload(const void* host) {
      if (bytes == 0) return absl::OkStatus();
      if (ptr == nullptr) return absl::InternalError("cudaMalloc failed");
      return cudaMemcpy(ptr, host, bytes, cudaMemcpyHostToDevice) == cudaSuccess
                 ? absl::OkStatus()
                 : absl::InternalError("cudaMemcpy H2D failed");
    }
    absl::Status Download(void* host) {
      if (bytes == 0) return absl::OkStatus();
      return cudaMemcpy(host, ptr, bytes, cudaMemcpyDeviceToHost) == cudaSuccess
                 ? absl::OkStatus()
                 : absl::InternalError("cudaMemcpy D2H failed");
    }
    size_t bytes;
    void* ptr = nullptr;
  };

  const int rank_, world_;
  std::unique_ptr<Communicator> inner_;
};

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

// The EP run over `comms` (rank r's communicator; `connect(r)` runs first on
// rank r's thread and `disconnect(r)` last). Returns rank 0's view.
Trajectory TrainEp(const std::vector<Communicator*>& comms,
                   const std::function<absl::Status(int)>& connect,
                   const std::function<void(int)>& disconnect) {
  const ModelConfig c = Tiny();
  const sraven::Generator gen = MakeGenerator(c);
  std::vector<SmoeTransformer> nets;
  std::vector<std::unique_ptr<torch::optim::AdamW>> opts;
  for (int r = 0; r < kWorld; ++r) {
    torch::manual_seed(3);  // same init on every rank, then sharded
    nets.emplace_back(c);
    EXPECT_TRUE(EnableExpertParallel(*nets.back(), comms[r]).ok());
    opts.push_back(std::make_unique<torch::optim::AdamW>(
        nets.back()->parameters(), torch::optim::AdamWOptions(3e-3)));
  }
  std::vector<Trajectory> out(kWorld);
  std::vector<absl::Status> st = fake::RunRanks(
      kWorld,
      [&](int r) -> absl::Status {
        if (absl::Status s = connect(r); !s.ok()) return s;
        absl::Status result;
        try {
          SmoeTransformer& net = nets[r];
          for (int step = 0; step < kSteps && result.ok(); ++step) {
            auto [lo, hi] = SliceRows(kBatch, r, kWorld);
            auto [x, y] = Batch(gen, sraven::Split::kTrain, step, lo, hi);
            net->train();
            opts[r]->zero_grad();
            ForwardOutput fo = net->forward(x);
            torch::Tensor task = SravenLoss(fo.logits, y);
            (task + fo.aux_loss).backward();
            result = SyncGradients(*net, comms[r]);
            if (!result.ok()) break;
            opts[r]->step();
            std::vector<double> loss = {task.item<double>()};
            result = AllReduceSum(&loss, comms[r]);
            out[r].loss.push_back(loss[0] / kWorld);
          }
          if (result.ok()) {
            auto [lo, hi] = SliceRows(kBatch, r, kWorld);
            auto [x, y] = Batch(gen, sraven::Split::kTest, 0, lo, hi);
            net->eval();
            torch::NoGradGuard no_grad;
            out[r].eval_logits = net->forward(x).logits;
            result = comms[r]->Barrier();
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

TEST(NcclEpTrainFakeTest, LossesEqualTheLocalAndSingleProcessRuns) {
  torch::set_num_threads(1);
  const uint64_t seed = fake::Reset();
  SCOPED_TRACE(absl::StrCat("SMOE_FAKE_NCCL_SEED=", seed));

  const Trajectory single = TrainSingle();

  auto local = kernels::CreateLocalCommunicators(kWorld, {});
  std::vector<Communicator*> local_ptrs;
  for (auto& c : local) local_ptrs.push_back(c.get());
  const Trajectory ep_local = TrainEp(
      local_ptrs, [](int) { return absl::OkStatus(); }, [](int) {});

  absl::StatusOr<kernels::NcclUniqueIdBytes> id = kernels::NewNcclUniqueId();
  ASSERT_TRUE(id.ok()) << id.status();
  std::vector<std::unique_ptr<HostStagingCommunicator>> staged;
  std::vector<Communicator*> nccl_ptrs;
  std::vector<cudaStream_t> streams(kWorld, nullptr);
  for (int r = 0; r < kWorld; ++r) {
    staged.push_back(std::make_unique<HostStagingCommunicator>(r, kWorld));
    nccl_ptrs.push_back(staged.back().get());
  }
  const Trajectory ep_nccl = TrainEp(
      nccl_ptrs,
      [&](int r) -> absl::Status {
        // The rank's own non-blocking stream, handed over per call (A13).
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
        staged[r]->Connect(*std::move(comm));
        return absl::OkStatus();
      },
      [&](int r) {
        staged[r]->Disconnect();  // finalizes on the rank's thread
        cudaStreamDestroy(streams[r]);
      });

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

}  // namespace
}  // namespace smoe::model
