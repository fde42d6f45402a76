// Copyright 2026 SMoE Lab authors.
//
// smoe-mixtral-ep-rank MODEL_DIR OUT_PREFIX: one rank of the multi-process
// expert-parallel Mixtral check, started W times by mixtral_ep_test with
// SMOE_RANK / SMOE_WORLD_SIZE / SMOE_RENDEZVOUS. Joins the Gloo group, loads
// only this rank's experts of MODEL_DIR, and writes to OUT_PREFIX<rank>
// .safetensors (safetensors, F32):
//   logits_ept1, logits_ept2, logits_eptE   Forward of kMixtralEpTokens
//   greedy                                  Generate, greedy, EPT 2 [rows, n]
//   local_experts, first_expert             per layer
// The test compares them with the single-process model it computes itself.
// Exit 0 on success, 1 on a model error, 2 on a communicator error.
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "tests/ep/mixtral_ep_inputs.h"
#include "worker/model/gloo_communicator.h"
#include "worker/model/mixtral/mixtral_model.h"
#include "worker/model/mixtral/safetensors.h"

namespace {

namespace mx = smoe::model::mixtral;

int Fail(int rank, int code, const absl::Status& s) {
  std::fprintf(stderr, "rank %d: %s\n", rank, s.ToString().c_str());
  return code;
}

int Main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s MODEL_DIR OUT_PREFIX\n", argv[0]);
    return 64;
  }
  at::set_num_threads(1);
  absl::StatusOr<smoe::model::RendezvousInfo> info =
      smoe::model::RendezvousFromEnv();
  if (!info.ok()) return Fail(-1, 2, info.status());
  smoe::kernels::CommunicatorOptions opt;
  opt.op_timeout_ms = 30000;
  if (const char* t = std::getenv("SMOE_EP_TIMEOUT_MS")) {
    opt.op_timeout_ms = std::atoll(t);
  }
  auto comm = smoe::model::CreateGlooCommunicator(*info, opt);
  if (!comm.ok()) return Fail(info->rank, 2, comm.status());
  const int rank = (*comm)->rank();

  mx::MixtralLoadOptions load;
  load.comm = comm->get();
  auto model = mx::MixtralModel::Load(argv[1], load);
  if (!model.ok()) return Fail(rank, 1, model.status());
  mx::MixtralModel& m = **model;

  std::vector<std::pair<std::string, torch::Tensor>> out;
  const torch::Tensor tokens = smoe::ep_test::MixtralEpTokens();
  for (int64_t ept : smoe::ep_test::MixtralEpEpts(m.config())) {
    auto logits = m.Forward(tokens, ept);
    if (!logits.ok()) return Fail(rank, 1, logits.status());
    out.emplace_back("logits_ept" + std::to_string(ept), *logits);
  }
  auto greedy = m.Generate(smoe::ep_test::MixtralEpPrompts(),
                           smoe::ep_test::MixtralEpGreedy());
  if (!greedy.ok()) return Fail(rank, 1, greedy.status());
  out.emplace_back("greedy", smoe::ep_test::TokensToTensor(*greedy));
  std::vector<float> local, first;
  for (const mx::MixtralLayerWeights& l : m.weights().layers) {
    local.push_back(static_cast<float>(l.w1.size(0)));
    first.push_back(static_cast<float>(l.first_expert));
  }
  out.emplace_back("local_experts", torch::tensor(local));
  out.emplace_back("first_expert", torch::tensor(first));
  if (absl::Status s = mx::WriteSafetensors(
          std::string(argv[2]) + std::to_string(rank) + ".safetensors", out);
      !s.ok()) {
    return Fail(rank, 1, s);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
