// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/expert_parallel.h
//
// Expert parallelism (EP) for the SRAVEN SMoE transformer over a
// kernels::Communicator (LocalCommunicator in tests, Gloo across CPU
// processes, NCCL across GPUs).
//
// Layout: W ranks, E experts per layer, E % W == 0. Rank r owns experts
// [r*E/W, (r+1)*E/W) of every layer: its expert_w1/b1/w2/b2 are the shards
// [E/W, ...] (the model is first built in full from the common seed on every
// rank, then narrowed, so the shards are bit-identical to the single-process
// initialisation). Everything else (attention, norms, embeddings, router) is
// replicated and kept identical by averaging gradients.
//
// Forward of one layer (per rank, on its own tokens), in DeepEP's terms and
// over the same permute plan as the single-process ops path
// (ops::RoutedExperts): route locally (ops::RouterTopK on the replicated
// router: RouterOutput) -> ops::BuildPermutePlan + ops::Permute into
// expert-major rows, which also groups them by owning rank -> exchange the
// per-rank row counts (AllToAllCounts) and each rank's
// num_tokens_per_expert for its experts -> all-to-all-v of the rows
// (dispatch) -> a second plan (top_k 1 over the local experts) groups the
// received rows by expert -> ops::ExpertMlp -> un-permute -> all-to-all-v of
// the results back to the tokens' ranks (combine) -> ops::Combine with
// topk_weights (per token, ascending choice j, as the single-process path).
// Backward is autograd through the ops and AllToAllRows, whose backward is
// the reverse all-to-all (the gradient of combine is a dispatch and vice
// versa).
//
// Data parallel: each rank trains on its slice of the global batch (see
// SliceRows). After backward, SyncGradients averages the replicated
// parameters' gradients over ranks (one AllReduceSum) and divides the local
// expert gradients by W: with per-rank losses being means over B/W rows, this
// gives exactly the gradients of the mean loss over the full batch B, i.e.
// the single-process run, up to floating-point summation order.
//
// Collectives happen inside forward and backward, so every rank must run the
// same sequence of forward/backward calls (same number of layers, same
// train/eval mode, same want-router-stats choice), including ranks that have
// zero rows (e.g. a short last eval batch): they still take part.
// Errors (a peer died, a deadline passed) surface as c10::Error thrown from
// forward/backward; entry points catch them (the trainer does).
#ifndef SMOE_WORKER_MODEL_EXPERT_PARALLEL_H_
#define SMOE_WORKER_MODEL_EXPERT_PARALLEL_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/all_to_all/communicator.h"
#include "worker/model/transformer.h"

namespace smoe::model {

// Sends row blocks of x [n, D] (contiguous; float32/float64/bfloat16) to the
// ranks of `comm`: send_rows[j] rows (in order) go to rank j; returns
// [sum(recv_rows), D] with recv_rows[j] rows from rank j, on x's device.
// Differentiable: the backward sends the gradient rows back (reverse
// all-to-all). Host communicators stage CUDA tensors through host memory.
// Collective. Throws c10::Error on a communicator error.
// REQUIRES: sum(send_rows) == n; recv_rows from an AllToAllCounts of
// send_rows; both of size comm->world_size(). `comm` outlives the autograd
// graph.
torch::Tensor AllToAllRows(const torch::Tensor& x,
                           const std::vector<int64_t>& send_rows,
                           const std::vector<int64_t>& recv_rows,
                           kernels::Communicator* comm);

// True for the per-expert (sharded) parameters: names ending in expert_w1,
// expert_b1, expert_w2 or expert_b2.
bool IsExpertParameter(const std::string& name);

// Shards every SMoE layer of `net` over `comm`'s ranks and installs the EP
// dispatcher. Call once, right after construction (before any optimizer state
// is built from the parameters). InvalidArgument (naming the value) when the
// router is not topk, num_experts % world_size != 0, or E == 1 with W > 1.
// `comm` must outlive `net`'s use.
absl::Status EnableExpertParallel(SmoeTransformerImpl& net,
                                  kernels::Communicator* comm);

// After backward: averages the gradients of the replicated parameters over
// ranks and scales the expert-shard gradients by 1/W (see the file comment).
// Undefined gradients count as zero. Collective.
absl::Status SyncGradients(torch::nn::Module& net, kernels::Communicator* comm);

// Rows [lo, hi) of a global batch of n rows that rank `rank` of `world`
// takes: lo = n*rank/W, hi = n*(rank+1)/W (balanced, any n, possibly empty).
std::pair<int64_t, int64_t> SliceRows(int64_t n, int rank, int world);

// Collects the expert shards of one parameter (or optimizer moment) onto rank
// 0: returns the full [E, ...] tensor (CPU) on rank 0 and an undefined tensor
// elsewhere. Collective.
absl::StatusOr<torch::Tensor> GatherExpertShards(const torch::Tensor& shard,
                                                 kernels::Communicator* comm);

// Returns this rank's shard [E/W, ...] of a full [E, ...] tensor.
torch::Tensor ExpertShard(const torch::Tensor& full, int rank, int world);

// Sums `values` (host doubles) over ranks in place, staged through
// CommDevice(*comm, model_device). Collective.
absl::Status AllReduceSum(std::vector<double>* values,
                          kernels::Communicator* comm,
                          torch::Device model_device);

}  // namespace smoe::model

#endif  // SMOE_WORKER_MODEL_EXPERT_PARALLEL_H_
