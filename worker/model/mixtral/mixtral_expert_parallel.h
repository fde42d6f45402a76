// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/mixtral/mixtral_expert_parallel.h
//
// Expert parallelism for Mixtral-format inference (issue #7 item 1) through
// the kernels::Communicator interface (LocalCommunicator in unit tests,
// GlooCommunicator across CPU processes, NcclCommunicator across GPUs).
//
// Design (worker/model/mixtral/README.md, "Expert parallelism"): rank r of W
// holds every non-expert weight (replicated, router included) and only the
// experts [r*E/W, (r+1)*E/W) of every layer, read from the checkpoint by name
// without materialising the others. Every rank runs the same tokens; the
// router (over all E logits) picks the same experts everywhere; each rank
// computes the contributions of its own experts (a partial sum) and one
// AllReduceSum per layer gives every rank the full MoE output, bit-identical
// on all ranks, so seeded sampling yields the same tokens everywhere.
//
// Usage:
//   MixtralLoadOptions opts;
//   opts.comm = comm.get();            // rank and world come from it
//   auto model = MixtralModel::Load(dir, opts);
//   // every rank calls Forward/Step/Generate with the same arguments
//
// Thread safety: the functions are stateless; the Communicator passed in must
// be used by one thread at a time (its contract).
#ifndef SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_EXPERT_PARALLEL_H_
#define SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_EXPERT_PARALLEL_H_

#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/all_to_all/communicator.h"
#include "worker/model/mixtral/mixtral_model.h"

namespace smoe::model::mixtral {

// The contiguous range of global expert indices one rank holds.
struct MixtralExpertShard {
  int64_t first = 0;  // global index of the first local expert
  int64_t count = 0;  // number of local experts (>= 1)
};

// Returns rank `rank`'s experts [rank*E/W, (rank+1)*E/W) of `num_experts`
// split over `world` ranks (integer division: shard sizes differ by at most
// one when W does not divide E). InvalidArgument naming the value when
// world < 1, rank is outside [0, world), or world > num_experts (a rank
// would hold no expert).
absl::StatusOr<MixtralExpertShard> MixtralExpertShardFor(int64_t num_experts,
                                                         int rank, int world);

// The shard of `comm`'s rank ({0, E} when comm is null).
absl::StatusOr<MixtralExpertShard> MixtralExpertShardFor(
    int64_t num_experts, const kernels::Communicator* comm);

// Returns a copy of `weights` whose layers keep only the experts of `shard`
// (w1/w3/w2 narrowed along the expert dimension and made contiguous,
// first_expert set); non-expert tensors are shared, not copied. For tests and
// in-memory models; Load reads a shard directly from disk.
// REQUIRES: every layer holds all experts of `shard`.
MixtralWeights SliceMixtralExperts(const MixtralWeights& weights,
                                   const MixtralExpertShard& shard);

// Sums the MoE partial outputs `partial` (any float dtype, any device) over
// the ranks of `comm` and returns the full sum in partial's dtype and device.
// The reduction runs in fp32 on CommDevice(*comm, partial.device())
// (host communicators: a CPU copy; device communicators: partial's device).
// Every rank must call it with the same shape, in the same order. Returns
// `partial` unchanged when comm is null or has one rank. Communicator errors
// (DeadlineExceeded, Aborted, ...) keep their code and gain "layer N" context.
absl::StatusOr<torch::Tensor> AllReduceMoePartial(const torch::Tensor& partial,
                                                  kernels::Communicator* comm,
                                                  int64_t layer);

// ---- leader / follower generation
// When only rank 0 decides what to generate (e.g. the Skill-Mix pipeline and
// its grader run on rank 0 only), rank 0 calls LeadMixtralGenerate instead of
// MixtralModel::Generate, and ranks 1..W-1 sit in FollowMixtralGenerate,
// which receives each call's inputs (model index, prompts, sampling
// parameters, seed, EPT) and joins the forwards. StopMixtralFollowers ends
// the followers' loops. Several models may be served (e.g. a Skill-Mix
// student and a local grader): every rank holds the same list, in the same
// order, and each call names its model by index. The inputs travel over the
// Communicator itself: two AllReduceSum calls of int64 (a fixed header, then
// the row lengths and token ids) to which the followers contribute zeros,
// i.e. a broadcast built from the existing interface. Every call is bounded
// by the communicator's deadline, including a follower's wait for the next
// call (create the communicator with a deadline longer than the leader's
// longest pause between calls).

// Rank 0: sends the call to the followers, then runs model->Generate. The
// result equals model->Generate(prompts, options) on a single process.
// `model_index` is `model`'s position in the followers' list.
// Errors: the model's (InvalidArgument for bad inputs, which the followers
// see too and skip), or the communicator's.
// REQUIRES: model loaded with options.comm == comm, comm->rank() == 0,
// model_index >= 0.
absl::StatusOr<std::vector<std::vector<int32_t>>> LeadMixtralGenerate(
    MixtralModel* model, kernels::Communicator* comm,
    const std::vector<std::vector<int32_t>>& prompts,
    const MixtralGenerationOptions& options, int model_index = 0);

// Rank 0: tells the followers to return from FollowMixtralGenerate. Call it
// once at the end (also after a failure, so followers exit promptly rather
// than at their deadline). `device`: the leader's model device (the message
// is staged on CommDevice of it).
absl::Status StopMixtralFollowers(kernels::Communicator* comm,
                                  torch::Device device);

// Ranks 1..W-1: serves LeadMixtralGenerate calls until StopMixtralFollowers.
// Returns OK after the stop message; a call the model rejects with
// InvalidArgument (the leader got the same error) is skipped; a call naming
// a model index outside `models` is DataLoss; any other error (the leader
// died: DeadlineExceeded / Aborted, ...) is returned. `calls_served`, when
// non-null, counts the calls joined.
// REQUIRES: every model loaded with options.comm == comm, comm->rank() > 0,
// models non-empty and non-null.
absl::Status FollowMixtralGenerate(const std::vector<MixtralModel*>& models,
                                   kernels::Communicator* comm,
                                   int64_t* calls_served = nullptr);

// One model: FollowMixtralGenerate({model}, comm).
absl::Status FollowMixtralGenerate(MixtralModel* model,
                                   kernels::Communicator* comm);

}  // namespace smoe::model::mixtral

#endif  // SMOE_WORKER_MODEL_MIXTRAL_MIXTRAL_EXPERT_PARALLEL_H_
