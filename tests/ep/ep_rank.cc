// Copyright 2026 SMoE Lab authors.
//
// smoe-ep-rank: one rank of the multi-process expert-parallel checks, started
// W times by ep_gloo_test with SMOE_RANK / SMOE_WORLD_SIZE / SMOE_RENDEZVOUS.
//   1. Payload all-to-all over Gloo (kernels/all_to_all/payload.h): every
//      received element is checked in closed form.
//   2. One training step of a tiny SMoE transformer with expert parallelism:
//      this rank's logits, the loss and every gradient must equal the
//      single-process model's on the full batch (which every rank computes
//      itself from the same seeds, so no reference file is exchanged).
// Exit 0 when all checks pass, 1 on a mismatch, 2 on a communicator error.
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/all_to_all/payload.h"
#include "worker/model/expert_parallel.h"
#include "worker/model/gloo_communicator.h"
#include "worker/model/transformer.h"

namespace {

using smoe::model::ModelConfig;

// Same tolerance and reasoning as worker/model/expert_parallel_test.cc: only
// float32 rounding differs (row groupings in the expert matmuls; gradients
// summed per process, then across processes in float64), a few ulp deep.
constexpr double kRtol = 1e-5, kAtol = 1e-6;

int Fail(int rank, const std::string& what) {
  std::fprintf(stderr, "rank %d: %s\n", rank, what.c_str());
  return 1;
}

int Main() {
  at::set_num_threads(1);
  absl::StatusOr<smoe::model::RendezvousInfo> info =
      smoe::model::RendezvousFromEnv();
  if (!info.ok()) return Fail(-1, info.status().ToString());
  smoe::kernels::CommunicatorOptions opt;
  opt.op_timeout_ms = 30000;
  if (const char* t = std::getenv("SMOE_EP_TIMEOUT_MS")) {
    opt.op_timeout_ms = std::atoll(t);
  }
  auto comm = smoe::model::CreateGlooCommunicator(*info, opt);
  if (!comm.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", info->rank,
                 comm.status().ToString().c_str());
    return 2;
  }
  smoe::kernels::Communicator* c = comm->get();
  const int rank = c->rank(), world = c->world_size();

  // 1. Payload all-to-all.
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    smoe::kernels::PayloadCheck check;
    absl::Status s = smoe::kernels::RunPayloadAllToAll(*c, 3, seed, &check);
    if (!s.ok()) return Fail(rank, s.ToString());
    if (check.wrong != 0) {
      return Fail(rank, absl::StrCat("payload: ", check.wrong, " of ",
                                     check.checked, " elements wrong"));
    }
  }

  // 2. EP training step vs the single-process model.
  ModelConfig mc;
  mc.num_features = 1;
  mc.width = 0.125;
  mc.depth = 2;
  mc.num_experts = 4;
  mc.top_k = 2;
  mc.attention_dropout = 0.0;
  mc.load_balance_alpha = 0.01;
  const int64_t batch = 8;
  torch::manual_seed(11);
  torch::Tensor x = torch::randn({batch, mc.seq_len(), mc.num_values});
  torch::Tensor y =
      torch::randint(0, mc.num_values, {batch, mc.num_features}, torch::kInt64);
  torch::manual_seed(3);
  smoe::model::SmoeTransformer ref(mc);
  smoe::model::ForwardOutput rf = ref->forward(x);
  torch::Tensor ref_loss = smoe::model::SravenLoss(rf.logits, y) + rf.aux_loss;
  ref_loss.backward();

  torch::manual_seed(3);
  smoe::model::SmoeTransformer net(mc);
  if (absl::Status s = smoe::model::EnableExpertParallel(*net, c); !s.ok()) {
    return Fail(rank, s.ToString());
  }
  auto [lo, hi] = smoe::model::SliceRows(batch, rank, world);
  smoe::model::ForwardOutput fo = net->forward(x.slice(0, lo, hi));
  torch::Tensor loss =
      smoe::model::SravenLoss(fo.logits, y.slice(0, lo, hi)) + fo.aux_loss;
  loss.backward();
  if (absl::Status s = smoe::model::SyncGradients(*net, c); !s.ok()) {
    return Fail(rank, s.ToString());
  }
  if (!torch::allclose(fo.logits, rf.logits.slice(0, lo, hi), kRtol, kAtol)) {
    return Fail(rank, "logits differ from the single-process model");
  }
  std::vector<double> mean_loss = {loss.item<double>() / world};
  if (absl::Status s = smoe::model::AllReduceSum(&mean_loss, c, torch::kCPU);
      !s.ok()) {
    return Fail(rank, s.ToString());
  }
  if (std::abs(mean_loss[0] - ref_loss.item<double>()) >
      kRtol * std::abs(ref_loss.item<double>())) {
    return Fail(rank, absl::StrCat("loss ", mean_loss[0], " vs ",
                                   ref_loss.item<double>()));
  }
  std::map<std::string, torch::Tensor> want;
  for (const auto& p : ref->named_parameters()) {
    want[p.key()] = p.value().grad();
  }
  int checked = 0;
  for (const auto& p : net->named_parameters()) {
    torch::Tensor w = want.at(p.key());
    if (smoe::model::IsExpertParameter(p.key())) {
      w = smoe::model::ExpertShard(w, rank, world);
    }
    if (!torch::allclose(p.value().grad(), w, kRtol, kAtol)) {
      return Fail(rank,
                  "gradient of " + p.key() + " differs, max |diff| " +
                      std::to_string(
                          (p.value().grad() - w).abs().max().item<double>()));
    }
    ++checked;
  }
  if (absl::Status s = c->Barrier(); !s.ok()) return Fail(rank, s.ToString());
  std::fprintf(stderr, "rank %d/%d: payload ok, %d gradients ok\n", rank, world,
               checked);
  return 0;
}

}  // namespace

int main() {
  try {
    return Main();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exception: %s\n", e.what());
    return 2;
  }
}
