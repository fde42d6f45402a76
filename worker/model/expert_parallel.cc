// Copyright 2026 SMoE Lab authors.
#include "worker/model/expert_parallel.h"

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "worker/model/autocast.h"
#include "worker/model/device.h"
#include "worker/model/moe.h"
#include "worker/model/ops/moe_ops.h"

namespace smoe::model {
namespace {

using kernels::Communicator;
using kernels::DType;

kernels::DType ToDType(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat32:
      return DType::kFloat32;
    case torch::kFloat64:
      return DType::kFloat64;
    case torch::kBFloat16:
      return DType::kBFloat16;
    case torch::kFloat16:
      return DType::kFloat16;
    case torch::kInt32:
      return DType::kInt32;
    case torch::kInt64:
      return DType::kInt64;
    default:
      TORCH_CHECK(false, "expert parallel: unsupported dtype ", t);
  }
  return DType::kFloat32;
}

// Moves `t`, a tensor of the model on `t.device()`, to where `comm` wants
// its buffers (contiguous).
torch::Tensor ToCommMemory(const torch::Tensor& t, const Communicator& comm) {
  return t.to(CommDevice(comm, t.device())).contiguous();
}

void Check(const absl::Status& s) {
  TORCH_CHECK(s.ok(), "expert parallel: ", s.ToString());
}

template <typename T>
T Ok(absl::StatusOr<T> v) {
  Check(v.status());
  return *std::move(v);
}

// Non-differentiable all-to-all of the rows of x [n, D].
torch::Tensor ExchangeRaw(const torch::Tensor& x,
                          const std::vector<int64_t>& send_rows,
                          const std::vector<int64_t>& recv_rows,
                          Communicator* comm) {
  TORCH_CHECK(x.dim() == 2, "AllToAllRows: x must be [n, D], got ", x.sizes());
  const int w = comm->world_size();
  TORCH_CHECK(static_cast<int>(send_rows.size()) == w &&
                  static_cast<int>(recv_rows.size()) == w,
              "AllToAllRows: counts must have world_size entries");
  const int64_t d = x.size(1);
  int64_t rows_out = 0, rows_in = 0;
  std::vector<int64_t> send(w), recv(w);
  for (int j = 0; j < w; ++j) {
    send[j] = send_rows[j] * d;
    recv[j] = recv_rows[j] * d;
    rows_in += send_rows[j];
    rows_out += recv_rows[j];
  }
  TORCH_CHECK(rows_in == x.size(0), "AllToAllRows: sum(send_rows)=", rows_in,
              " but x has ", x.size(0), " rows");
  torch::Tensor src = ToCommMemory(x, *comm);
  torch::Tensor out = torch::empty({rows_out, d}, src.options());
  Check(comm->AllToAllV(src.numel() > 0 ? src.data_ptr() : nullptr, send.data(),
                        out.numel() > 0 ? out.data_ptr() : nullptr, recv.data(),
                        ToDType(x.scalar_type())));
  return out.to(x.device());
}

class AllToAllFunction : public torch::autograd::Function<AllToAllFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               const torch::Tensor& x,
                               std::vector<int64_t> send_rows,
                               std::vector<int64_t> recv_rows,
                               int64_t comm_address) {
    ctx->saved_data["send"] = send_rows;
    ctx->saved_data["recv"] = recv_rows;
    ctx->saved_data["comm"] = comm_address;
    return ExchangeRaw(x, send_rows, recv_rows,
                       reinterpret_cast<Communicator*>(comm_address));
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grads) {
    // Reverse all-to-all: gradient rows go back where their inputs came from.
    const std::vector<int64_t> send = ctx->saved_data["send"].toIntVector();
    const std::vector<int64_t> recv = ctx->saved_data["recv"].toIntVector();
    auto* comm =
        reinterpret_cast<Communicator*>(ctx->saved_data["comm"].toInt());
    torch::Tensor g = ExchangeRaw(grads[0].contiguous(), recv, send, comm);
    return {g, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

class EpDispatcher : public ExpertDispatcher {
 public:
  EpDispatcher(Communicator* comm, int64_t num_experts)
      : comm_(comm), experts_(num_experts) {}

  // DeepEP's dispatch/combine over the same permute plan as the
  // single-process ops path (ops::RoutedExperts): permute into expert-major
  // rows, which also groups them by owning rank; send each rank its rows;
  // permute the received rows by local expert; run the local experts
  // (ops::ExpertMlp); un-permute; send the results back; combine.
  torch::Tensor Dispatch(const SmoeLayerImpl& layer, const torch::Tensor& flat,
                         const RouterOutput& r) override {
    const int w = comm_->world_size();
    const int64_t local = experts_ / w;
    const std::optional<at::ScalarType> low = AutocastDtype(flat);
    auto cast = [&](const torch::Tensor& t) {
      return low.has_value() ? t.to(*low) : t;
    };
    // 1. The plan over all E experts: rows of rank j's experts are
    //    [expert_offsets[j * local], expert_offsets[(j + 1) * local]).
    ops::Plan plan = Ok(ops::BuildPermutePlan(r.topk_idx, experts_));
    torch::Tensor permuted_x = Ok(ops::Permute(cast(flat), plan));
    std::vector<int64_t> num_tokens_per_rank(w), num_recv_tokens_per_rank(w, 0);
    for (int j = 0; j < w; ++j) {
      num_tokens_per_rank[j] =
          plan.host_offsets[(j + 1) * local] - plan.host_offsets[j * local];
    }
    // 2. Row counts first, then each rank's num_tokens_per_expert for its
    //    experts and the rows themselves (dispatch).
    Check(comm_->AllToAllCounts(num_tokens_per_rank.data(),
                                num_recv_tokens_per_rank.data()));
    torch::Tensor num_recv_tokens_per_expert =
        ExchangeRaw(r.num_tokens_per_expert.to(torch::kInt64).view({w, local}),
                    std::vector<int64_t>(w, 1), std::vector<int64_t>(w, 1),
                    comm_)
            .to(torch::kCPU);  // [w, local]: row j = from rank j
    torch::Tensor recv_x = AllToAllRows(permuted_x, num_tokens_per_rank,
                                        num_recv_tokens_per_rank, comm_);
    // 3. Received rows come by source rank, then by expert; the local plan
    //    (top_k 1 over the local experts) groups them by expert.
    torch::Tensor expert_of =
        torch::arange(local, torch::kInt64)
            .repeat({w})
            .repeat_interleave(num_recv_tokens_per_expert.reshape({-1}))
            .view({-1, 1})
            .to(recv_x.device());
    ops::Plan local_plan =
        Ok(ops::BuildPermutePlan(expert_of, static_cast<int>(local)));
    torch::Tensor expert_x = Ok(ops::Permute(recv_x, local_plan));
    torch::Tensor expert_y = Ok(ops::ExpertMlp(
        expert_x, cast(layer.expert_w1), cast(layer.expert_b1),
        cast(layer.expert_w2), cast(layer.expert_b2), local_plan));
    // Un-permute: received row t is expert row dest_idx[t] (k = 1).
    torch::Tensor recv_y =
        expert_y.index_select(0, local_plan.dest_idx.to(torch::kInt64));
    // 4. Back to the tokens' ranks in plan order (combine), then the
    //    gate-weighted sum per token.
    torch::Tensor y = AllToAllRows(recv_y, num_recv_tokens_per_rank,
                                   num_tokens_per_rank, comm_);
    return Ok(ops::Combine(y, r.topk_weights, plan));
  }

  torch::Tensor GlobalExpertCounts(const torch::Tensor& counts) override {
    std::vector<double> v(static_cast<size_t>(counts.numel()));
    torch::Tensor c =
        counts.detach().to(torch::kCPU, torch::kFloat64).contiguous();
    std::memcpy(v.data(), c.data_ptr<double>(), v.size() * sizeof(double));
    Check(AllReduceSum(&v, comm_, counts.device()));
    return torch::from_blob(v.data(), {counts.numel()}, torch::kFloat64)
        .clone()
        .to(counts.device(), counts.scalar_type());
  }

 private:
  Communicator* comm_;
  const int64_t experts_;
};

}  // namespace

torch::Tensor AllToAllRows(const torch::Tensor& x,
                           const std::vector<int64_t>& send_rows,
                           const std::vector<int64_t>& recv_rows,
                           kernels::Communicator* comm) {
  return AllToAllFunction::apply(x.contiguous(), send_rows, recv_rows,
                                 reinterpret_cast<int64_t>(comm));
}

bool IsExpertParameter(const std::string& name) {
  for (const char* s : {"expert_w1", "expert_b1", "expert_w2", "expert_b2"}) {
    if (absl::EndsWith(name, s)) return true;
  }
  return false;
}

torch::Tensor ExpertShard(const torch::Tensor& full, int rank, int world) {
  const int64_t local = full.size(0) / world;
  return full.narrow(0, rank * local, local);
}

std::pair<int64_t, int64_t> SliceRows(int64_t n, int rank, int world) {
  return {n * rank / world, n * (rank + 1) / world};
}

absl::Status EnableExpertParallel(SmoeTransformerImpl& net,
                                  kernels::Communicator* comm) {
  const ModelConfig& c = net.config();
  const int w = comm->world_size();
  if (c.router != RouterKind::kTopK) {
    return absl::InvalidArgumentError(
        absl::StrCat("router=", RouterKindName(c.router),
                     ": expert parallelism needs router=topk"));
  }
  if (c.num_experts % w != 0 || (c.num_experts == 1 && w > 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ep_size=", w, " must divide num_experts=", c.num_experts,
                     " (and num_experts > 1 for ep_size > 1)"));
  }
  torch::NoGradGuard no_grad;
  auto dispatcher = std::make_shared<EpDispatcher>(comm, c.num_experts);
  for (Block& b : net.blocks) {
    SmoeLayerImpl& moe = *b->moe;
    for (torch::Tensor* p :
         {&moe.expert_w1, &moe.expert_b1, &moe.expert_w2, &moe.expert_b2}) {
      p->set_data(ExpertShard(*p, comm->rank(), w).clone());
    }
    if (c.num_experts > 1) moe.set_expert_dispatcher(dispatcher);
  }
  return absl::OkStatus();
}

absl::Status AllReduceSum(std::vector<double>* values,
                          kernels::Communicator* comm,
                          torch::Device model_device) {
  if (values->empty()) return comm->Barrier();
  torch::Tensor buf =
      torch::from_blob(values->data(), {static_cast<int64_t>(values->size())},
                       torch::kFloat64)
          .to(CommDevice(*comm, model_device), torch::kFloat64,
              /*non_blocking=*/false, /*copy=*/true)
          .contiguous();
  if (absl::Status s =
          comm->AllReduceSum(buf.data_ptr(), buf.numel(), DType::kFloat64);
      !s.ok()) {
    return s;
  }
  torch::Tensor back = buf.to(torch::kCPU).contiguous();
  std::memcpy(values->data(), back.data_ptr<double>(),
              values->size() * sizeof(double));
  return absl::OkStatus();
}

absl::Status SyncGradients(torch::nn::Module& net,
                           kernels::Communicator* comm) {
  const int w = comm->world_size();
  if (w == 1) return absl::OkStatus();
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> replicated;
  for (const auto& item : net.named_parameters()) {
    torch::Tensor p = item.value();
    if (IsExpertParameter(item.key())) {
      if (p.grad().defined()) p.mutable_grad().div_(static_cast<double>(w));
      continue;
    }
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    replicated.push_back(p);
  }
  if (replicated.empty()) return absl::OkStatus();
  // One reduction for all replicated gradients, summed in float64.
  std::vector<torch::Tensor> flat;
  for (const torch::Tensor& p : replicated) {
    flat.push_back(p.grad().reshape({-1}).to(torch::kFloat64));
  }
  torch::Tensor buf = ToCommMemory(torch::cat(flat), *comm);
  if (absl::Status s =
          comm->AllReduceSum(buf.data_ptr(), buf.numel(), DType::kFloat64);
      !s.ok()) {
    return s;
  }
  buf.div_(static_cast<double>(w));
  int64_t offset = 0;
  for (torch::Tensor& p : replicated) {
    const int64_t n = p.numel();
    p.mutable_grad().copy_(buf.narrow(0, offset, n).view_as(p));
    offset += n;
  }
  return absl::OkStatus();
}

absl::StatusOr<torch::Tensor> GatherExpertShards(const torch::Tensor& shard,
                                                 kernels::Communicator* comm) {
  const int w = comm->world_size();
  const int64_t n = shard.numel();
  std::vector<int64_t> send(w, 0), recv(w, 0);
  send[0] = n;
  if (comm->rank() == 0) std::fill(recv.begin(), recv.end(), n);
  torch::Tensor src = ToCommMemory(shard.detach().reshape({-1}), *comm);
  torch::Tensor out =
      torch::empty({comm->rank() == 0 ? n * w : 0}, src.options());
  if (absl::Status s = comm->AllToAllV(
          src.numel() > 0 ? src.data_ptr() : nullptr, send.data(),
          out.numel() > 0 ? out.data_ptr() : nullptr, recv.data(),
          ToDType(shard.scalar_type()));
      !s.ok()) {
    return s;
  }
  if (comm->rank() != 0) return torch::Tensor();
  std::vector<int64_t> sizes = shard.sizes().vec();
  sizes[0] *= w;
  return out.to(torch::kCPU).view(sizes);
}

}  // namespace smoe::model
