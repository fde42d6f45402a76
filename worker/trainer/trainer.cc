// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/trainer.h"

#include <sys/stat.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/rng.h"
#include "common/status_macros.h"
#include "kernels/all_to_all/nccl_communicator.h"
#include "nlohmann/json.hpp"
#include "trials/events.h"
#include "worker/data/sraven/sraven.h"
#include "worker/model/autocast.h"
#include "worker/model/device.h"
#include "worker/model/expert_parallel.h"
#include "worker/model/fused_ops.h"
#include "worker/model/gloo_communicator.h"
#include "worker/model/transformer.h"
#include "worker/trainer/checkpoint.h"

namespace smoe::trainer {
namespace {

using json = nlohmann::json;
using sraven::Split;

constexpr uint64_t kInitStream = 0x494E4954;     // "INIT"
constexpr uint64_t kDropoutStream = 0x44524F50;  // "DROP"
constexpr int kCheckpointVersion = 1;

class Emitter {
 public:
  explicit Emitter(EventSink* sink) : sink_(sink) {}
  // One line of trials/events.h.
  void Emit(const std::string& line) {
    if (sink_ != nullptr) sink_->Emit(line);
  }
  void Metric(int64_t step, const std::string& name, double value) {
    Emit(trials::MetricEvent(step, name, value));
  }

 private:
  EventSink* sink_;
};

struct EvalStats {
  int64_t problems = 0;
  int64_t all_correct = 0;
  int64_t tokens_correct = 0;
  std::vector<model::RouterStats> router;  // weighted sums, then means

  double acc() const {
    return problems ? static_cast<double>(all_correct) / problems
                    : std::numeric_limits<double>::quiet_NaN();
  }
  double acc_per_feature(int m) const {
    return problems ? static_cast<double>(tokens_correct) / (problems * m)
                    : std::numeric_limits<double>::quiet_NaN();
  }
};

bool ShouldStop(const RunOptions& opt, int64_t step) {
  if (opt.stop != nullptr && opt.stop->load()) return true;
  return opt.stop_at_step >= 0 && step >= opt.stop_at_step;
}

class Batcher {
 public:
  Batcher(const sraven::Generator& gen, int f, torch::Device device)
      : gen_(gen), f_(f), device_(device) {}

  // Returns (inputs [n, T, F] float32, targets [n, M] int64) on the device.
  std::pair<torch::Tensor, torch::Tensor> Get(Split split, uint64_t index,
                                              int n) {
    const int t = gen_.seq_len();
    const int m = gen_.config().num_features;
    inputs_.resize(static_cast<size_t>(n) * t * f_);
    targets_.resize(static_cast<size_t>(n) * m);
    gen_.SampleBatch(split, index, n, inputs_.data(), targets_.data());
    torch::Tensor x =
        torch::from_blob(inputs_.data(), {n, t, f_}, torch::kFloat32).clone();
    torch::Tensor y =
        torch::from_blob(targets_.data(), {n, m}, torch::kInt64).clone();
    return {x.to(device_), y.to(device_)};
  }
  torch::Device device() const { return device_; }

 private:
  const sraven::Generator& gen_;
  int f_;
  torch::Device device_;
  std::vector<float> inputs_;
  std::vector<int64_t> targets_;
};

// Evaluates num_eval problems of `split`. Cancelled if asked to stop.
// Returns whether any rank asked to stop (one all-reduce; `local` alone when
// `comm` is null).
absl::StatusOr<bool> AgreeStop(bool local, kernels::Communicator* comm,
                               torch::Device device) {
  if (comm == nullptr || comm->world_size() == 1) return local;
  std::vector<double> v = {local ? 1.0 : 0.0};
  SMOE_RETURN_IF_ERROR(model::AllReduceSum(&v, comm, device));
  return v[0] > 0;
}

// With expert parallelism (`comm` set) every rank evaluates its SliceRows of
// each eval batch and the counts are summed over ranks. Emits about 20
// "eval/<split>" progress events on `emit` (rank 0's; null elsewhere).
absl::Status Evaluate(model::SmoeTransformer& net, Batcher& batcher,
                      Split split, const TrainConfig& c, const RunOptions& opt,
                      bool want_router, bool bf16, EvalStats* out,
                      kernels::Communicator* comm, Emitter* emit) {
  *out = EvalStats();
  net->eval();
  torch::NoGradGuard no_grad;
  const int64_t bs = c.batch_size;
  const int rank = comm != nullptr ? comm->rank() : 0;
  const int world = comm != nullptr ? comm->world_size() : 1;
  if (want_router && world > 1) {
    out->router.resize(static_cast<size_t>(c.model.depth));
    for (auto& r : out->router) {
      r.expert_fraction.assign(static_cast<size_t>(c.model.num_experts), 0.0);
    }
  }
  const std::string phase = absl::StrCat("eval/", sraven::SplitName(split));
  const int64_t batches = (c.num_eval + bs - 1) / bs;
  const int64_t report_every = std::max<int64_t>(1, batches / 20);
  for (int64_t j = 0; j * bs < c.num_eval; ++j) {
    if (emit != nullptr && j % report_every == 0) {
      emit->Emit(trials::PhaseProgressEvent(phase, j * bs, c.num_eval));
    }
    SMOE_ASSIGN_OR_RETURN(
        bool stop, AgreeStop(opt.stop != nullptr && opt.stop->load(), comm,
                             batcher.device()));
    if (stop) return absl::CancelledError("stopped during evaluation");
    int n = static_cast<int>(std::min<int64_t>(bs, c.num_eval - j * bs));
    auto [x, y] = batcher.Get(split, static_cast<uint64_t>(j), n);
    if (world > 1) {
      auto [lo, hi] = model::SliceRows(n, rank, world);
      x = x.slice(0, lo, hi);
      y = y.slice(0, lo, hi);
      n = static_cast<int>(hi - lo);
    }
    model::ForwardOutput fo;
    {
      model::AutocastGuard autocast(x.device(), bf16);
      fo = net->forward(x, want_router);
    }
    auto [all, tokens] = model::SravenCorrect(fo.logits, y);
    out->problems += n;
    out->all_correct += all;
    out->tokens_correct += tokens;
    if (want_router && n > 0) {
      if (out->router.empty()) {
        out->router.resize(fo.router_stats.size());
        for (size_t l = 0; l < fo.router_stats.size(); ++l) {
          out->router[l].expert_fraction.assign(
              fo.router_stats[l].expert_fraction.size(), 0.0);
        }
      }
      for (size_t l = 0; l < fo.router_stats.size(); ++l) {
        for (size_t e = 0; e < fo.router_stats[l].expert_fraction.size(); ++e) {
          out->router[l].expert_fraction[e] +=
              n * fo.router_stats[l].expert_fraction[e];
        }
        out->router[l].entropy += n * fo.router_stats[l].entropy;
      }
    }
  }
  if (world > 1) {
    std::vector<double> v = {static_cast<double>(out->problems),
                             static_cast<double>(out->all_correct),
                             static_cast<double>(out->tokens_correct)};
    for (const auto& r : out->router) {
      v.insert(v.end(), r.expert_fraction.begin(), r.expert_fraction.end());
      v.push_back(r.entropy);
    }
    SMOE_RETURN_IF_ERROR(model::AllReduceSum(&v, comm, batcher.device()));
    out->problems = static_cast<int64_t>(v[0] + 0.5);
    out->all_correct = static_cast<int64_t>(v[1] + 0.5);
    out->tokens_correct = static_cast<int64_t>(v[2] + 0.5);
    size_t i = 3;
    for (auto& r : out->router) {
      for (double& f : r.expert_fraction) f = v[i++];
      r.entropy = v[i++];
    }
  }
  for (auto& r : out->router) {
    for (double& f : r.expert_fraction) f /= out->problems;
    r.entropy /= out->problems;
  }
  return absl::OkStatus();
}

struct LoopState {
  int64_t step = 0;            // updates done
  int64_t last_eval_step = 0;  // step of the last completed eval (0 = none)
  double window_sum = 0;       // train loss sum since the last log
  int64_t window_n = 0;
  double last_train_loss = std::numeric_limits<double>::quiet_NaN();
  json eval = json::object();  // last eval's metrics
};

uint64_t InitSeed(uint64_t seed) {
  return Rng::ForStream(seed, {kInitStream}).Next64() >> 1;
}
uint64_t StepSeed(uint64_t seed, int64_t step, int rank, int world) {
  if (world == 1) {
    return Rng::ForStream(seed, {kDropoutStream, static_cast<uint64_t>(step)})
               .Next64() >>
           1;
  }
  // Expert parallel: each rank's slice gets its own dropout stream.
  return Rng::ForStream(seed, {kDropoutStream, static_cast<uint64_t>(step),
                               static_cast<uint64_t>(rank)})
             .Next64() >>
         1;
}

struct Optimizer {
  std::vector<std::string> names;
  std::vector<torch::Tensor> params, m, v;
  std::vector<bool> decay;
};

// Expert parallel: the expert shards (and their Adam moments) are gathered to
// rank 0, which alone writes the full checkpoint, in the single-process
// format (so any ep_size can resume it); then all ranks meet at a barrier.
absl::Status SaveState(const std::string& path, const TrainConfig& c,
                       const LoopState& s, const Optimizer& opt,
                       kernels::Communicator* comm) {
  if (comm != nullptr && comm->world_size() > 1) {
    Optimizer full = opt;
    for (size_t i = 0; i < opt.params.size(); ++i) {
      if (!model::IsExpertParameter(opt.names[i])) continue;
      SMOE_ASSIGN_OR_RETURN(full.params[i],
                            model::GatherExpertShards(opt.params[i], comm));
      SMOE_ASSIGN_OR_RETURN(full.m[i],
                            model::GatherExpertShards(opt.m[i], comm));
      SMOE_ASSIGN_OR_RETURN(full.v[i],
                            model::GatherExpertShards(opt.v[i], comm));
    }
    absl::Status written = absl::OkStatus();
    if (comm->rank() == 0) written = SaveState(path, c, s, full, nullptr);
    absl::Status met = comm->Barrier();
    return written.ok() ? met : written;
  }
  Checkpoint ckpt;
  json meta = {
      {"version", kCheckpointVersion},
      {"fingerprint", TrajectoryFingerprint(c)},
      {"step", s.step},
      {"last_eval_step", s.last_eval_step},
      {"window_sum", s.window_sum},
      {"window_n", s.window_n},
      {"last_train_loss",
       std::isnan(s.last_train_loss) ? json(nullptr) : json(s.last_train_loss)},
      {"eval", s.eval}};
  ckpt.meta_json = meta.dump();
  for (size_t i = 0; i < opt.params.size(); ++i) {
    ckpt.tensors.emplace_back("param/" + opt.names[i], opt.params[i]);
    ckpt.tensors.emplace_back("adam_m/" + opt.names[i], opt.m[i]);
    ckpt.tensors.emplace_back("adam_v/" + opt.names[i], opt.v[i]);
  }
  return WriteCheckpoint(path, ckpt);
}

absl::Status LoadState(const std::string& path, const TrainConfig& c,
                       LoopState* s, Optimizer* opt,
                       kernels::Communicator* comm) {
  const int rank = comm != nullptr ? comm->rank() : 0;
  const int world = comm != nullptr ? comm->world_size() : 1;
  SMOE_ASSIGN_OR_RETURN(Checkpoint ckpt, ReadCheckpoint(path));
  json meta = json::parse(ckpt.meta_json, nullptr, false);
  if (meta.is_discarded() || !meta.is_object() || !meta.contains("step") ||
      !meta["step"].is_number_integer() || meta["step"].get<int64_t>() < 0) {
    return absl::DataLossError(
        absl::StrCat("checkpoint ", path, " has unreadable metadata"));
  }
  if (meta.value("fingerprint", std::string()) != TrajectoryFingerprint(c)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", path, " belongs to a different trial configuration (",
        meta.value("fingerprint", std::string()), " vs ",
        TrajectoryFingerprint(c), "); delete it or use another workdir"));
  }
  std::map<std::string, at::Tensor> by_name(ckpt.tensors.begin(),
                                            ckpt.tensors.end());
  // Every tensor is checked before any is copied: a checkpoint that fails
  // here leaves the freshly initialised state untouched.
  std::vector<std::pair<torch::Tensor*, torch::Tensor>> copies;
  for (size_t i = 0; i < opt->params.size(); ++i) {
    for (auto [prefix, dst] :
         {std::pair<const char*, torch::Tensor*>{"param/", &opt->params[i]},
          {"adam_m/", &opt->m[i]},
          {"adam_v/", &opt->v[i]}}) {
      auto it = by_name.find(prefix + opt->names[i]);
      torch::Tensor src;
      if (it != by_name.end()) {
        src = world > 1 && model::IsExpertParameter(opt->names[i]) &&
                      it->second.size(0) % world == 0
                  ? model::ExpertShard(it->second, rank, world)
                  : it->second;
      }
      if (!src.defined() || src.sizes() != dst->sizes()) {
        return absl::DataLossError(absl::StrCat("checkpoint ", path,
                                                " lacks or misshapes ", prefix,
                                                opt->names[i]));
      }
      copies.emplace_back(dst, src);
    }
  }
  torch::NoGradGuard no_grad;
  for (auto& [dst, src] : copies) dst->copy_(src);
  s->step = meta.at("step").get<int64_t>();
  s->last_eval_step = meta.value("last_eval_step", int64_t{0});
  s->window_sum = meta.value("window_sum", 0.0);
  s->window_n = meta.value("window_n", int64_t{0});
  s->last_train_loss = meta["last_train_loss"].is_number()
                           ? meta["last_train_loss"].get<double>()
                           : std::numeric_limits<double>::quiet_NaN();
  s->eval = meta.value("eval", json::object());
  return absl::OkStatus();
}

// What RestoreState did.
struct Restored {
  bool loaded = false;  // s and opt hold a checkpoint's state
  // "" (the latest checkpoint, or a fresh start with none), "previous" or
  // "scratch" (a checkpoint failed verification and was set aside).
  std::string fallback;
  std::string detail;  // what was set aside, and why
};

// Resumes from the newest checkpoint in the workdir that verifies: the
// latest, else the previous one (checkpoint.h). One that fails verification
// (DataLoss: truncated, checksum mismatch, unreadable) is renamed aside by
// rank 0, never deleted, and the next is tried; with none left the run
// starts from scratch. Other errors (another configuration's checkpoint,
// another format version) stop the run: they are not corruption.
absl::StatusOr<Restored> RestoreState(const std::string& ckpt_path,
                                      const TrainConfig& c, LoopState* s,
                                      Optimizer* opt,
                                      kernels::Communicator* comm) {
  const int rank = comm != nullptr ? comm->rank() : 0;
  Restored r;
  for (const std::string& path :
       {ckpt_path, PreviousCheckpointPath(ckpt_path)}) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) continue;
    absl::Status loaded = LoadState(path, c, s, opt, comm);
    if (loaded.ok()) {
      r.loaded = true;
      if (!r.detail.empty()) r.fallback = "previous";
      SMOE_LOG(INFO) << "resumed from " << path << " at step " << s->step;
      return r;
    }
    if (!absl::IsDataLoss(loaded)) return loaded;
    std::string aside = "(left for rank 0)";
    if (rank == 0) {
      absl::StatusOr<std::string> moved = SetAsideCheckpoint(path);
      if (!moved.ok()) return moved.status();
      aside = *moved;
    }
    SMOE_LOG(WARNING) << loaded.message() << "; set aside as " << aside;
    absl::StrAppend(&r.detail, r.detail.empty() ? "" : "; ", loaded.message(),
                    ": set aside as ", aside);
  }
  if (!r.detail.empty()) r.fallback = "scratch";
  return r;
}

void AdamWUpdate(Optimizer& opt, const TrainConfig& c, int64_t step) {
  torch::NoGradGuard no_grad;
  const double lr = LearningRate(c, step);
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  const double bc1 = 1.0 - std::pow(b1, static_cast<double>(step + 1));
  const double bc2 = 1.0 - std::pow(b2, static_cast<double>(step + 1));
  // One fused pass per parameter on CPU float tensors, the LibTorch ops
  // elsewhere (model::AdamWStep, worker/model/fused_ops.h).
  model::AdamWHyper h;
  h.lr = lr;
  h.b1 = b1;
  h.b2 = b2;
  h.eps = eps;
  h.bc1 = bc1;
  h.bc2 = bc2;
  for (size_t i = 0; i < opt.params.size(); ++i) {
    h.weight_decay = opt.decay[i] ? c.weight_decay : 0.0;
    model::AdamWStep(opt.params[i], opt.params[i].grad(), opt.m[i], opt.v[i],
                     h);
  }
}

absl::StatusOr<TrainResult> RunTrainingImpl(const TrainConfig& config,
                                            const RunOptions& options) {
  SMOE_RETURN_IF_ERROR(ValidateTrainConfig(config));
  // Expert parallelism: ep_size from the trial, else from the daemon's
  // SMOE_WORLD_SIZE (resources.ep_size); the two must agree.
  SMOE_ASSIGN_OR_RETURN(model::RendezvousInfo rdv, model::RendezvousFromEnv());
  TrainConfig c = config;
  if (c.ep_size == 1 && rdv.world_size > 1) c.ep_size = rdv.world_size;
  if (c.ep_size != rdv.world_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ep_size=", c.ep_size, " but SMOE_WORLD_SIZE=", rdv.world_size,
        " (set resources.ep_size to ep_size in the sweep)"));
  }
  SMOE_RETURN_IF_ERROR(ValidateTrainConfig(c));
  const int rank = rdv.rank;
  const int world = rdv.world_size;
  Emitter emit(rank == 0 ? options.events : nullptr);
  // The rank's device (its own GPU: the launcher's single visible one, else
  // GPU `rank` of those visible) and its communicator kind.
  SMOE_ASSIGN_OR_RETURN(const model::DeviceSelection sel,
                        model::SelectDeviceHere(c.device, rank, world));
  const torch::Device device = sel.device;
  const bool cuda = device.is_cuda();
  sraven::SravenConfig data_cfg;
  data_cfg.num_features = c.model.num_features;
  data_cfg.num_values = c.model.num_values;
  data_cfg.num_rules = c.num_rules;
  data_cfg.frac_ood = c.frac_ood;
  data_cfg.seed = c.seed;
  data_cfg.shared_stream = c.shared_stream;
  SMOE_ASSIGN_OR_RETURN(sraven::Generator gen,
                        sraven::Generator::Create(data_cfg));
  const bool has_ood = !gen.latents(Split::kOod).empty();
  const int m = c.model.num_features;

  if (!options.workdir.empty()) {
    ::mkdir(options.workdir.c_str(), 0755);  // exists is fine
  }
  const std::string ckpt_path = CheckpointPath(options.workdir);

  std::unique_ptr<kernels::Communicator> comm;
  if (world > 1) {
    kernels::CommunicatorOptions copt;  // kDefaultCommOpTimeoutMs per call
    absl::StatusOr<std::unique_ptr<kernels::Communicator>> made =
        sel.comm == model::CommKind::kNccl
            ? model::CreateNcclCommunicator(rdv, device.index(), copt)
            : model::CreateGlooCommunicator(rdv, copt);
    if (!made.ok()) {
      return absl::UnavailableError(absl::StrCat(
          "expert-parallel rendezvous failed: ", made.status().ToString()));
    }
    comm = *std::move(made);
    SMOE_LOG(INFO) << "expert parallel: rank " << rank << " of " << world
                   << " over " << comm->name();
  }
  kernels::Communicator* cm = comm.get();

  torch::manual_seed(InitSeed(c.seed));
  model::SmoeTransformer net(c.model);
  if (cm != nullptr)
    SMOE_RETURN_IF_ERROR(model::EnableExpertParallel(*net, cm));
  net->to(device);
  Optimizer opt;
  for (const auto& p : net->named_parameters()) {
    opt.names.push_back(p.key());
    opt.params.push_back(p.value());
    opt.m.push_back(torch::zeros_like(p.value()));
    opt.v.push_back(torch::zeros_like(p.value()));
    opt.decay.push_back(model::DecayParameter(p.key(), p.value()));
  }
  LoopState s;
  SMOE_ASSIGN_OR_RETURN(const Restored restored,
                        RestoreState(ckpt_path, c, &s, &opt, cm));
  if (!restored.fallback.empty()) {
    emit.Emit(trials::CheckpointRestoredEvent(s.step, restored.fallback,
                                              restored.detail));
  }

  Batcher batcher(gen, c.model.num_values, device);
  int64_t trained_here = 0;
  double train_seconds = 0;
  torch::Tensor window = torch::zeros(
      {}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
  auto flush_window = [&]() {
    double sum = s.window_sum + window.item<double>();
    window.zero_();
    s.window_sum = sum;
  };
  auto checkpoint = [&]() -> absl::Status {
    flush_window();
    SMOE_RETURN_IF_ERROR(SaveState(ckpt_path, c, s, opt, cm));
    emit.Emit(trials::CheckpointEvent(s.step));
    return absl::OkStatus();
  };

  const int64_t tokens_per_step = c.batch_size * gen.seq_len();
  while (true) {
    const bool eval_due = EvalDue(c, s.step);
    if (eval_due && s.last_eval_step != s.step) {
      EvalStats test, val, ood;
      absl::Status st =
          Evaluate(net, batcher, Split::kTest, c, options,
                   /*want_router=*/true, c.bf16, &test, cm, &emit);
      // The validation split (issue 33): what hyperparameters are selected
      // on, so that the reported test accuracy never took part in selection.
      if (st.ok()) {
        st = Evaluate(net, batcher, Split::kVal, c, options,
                      /*want_router=*/false, c.bf16, &val, cm, &emit);
      }
      if (st.ok() && has_ood) {
        st = Evaluate(net, batcher, Split::kOod, c, options,
                      /*want_router=*/false, c.bf16, &ood, cm, &emit);
      }
      if (absl::IsCancelled(st)) {
        SMOE_RETURN_IF_ERROR(checkpoint());
        return absl::CancelledError(
            absl::StrCat("stopped at step ", s.step, "; checkpoint saved"));
      }
      SMOE_RETURN_IF_ERROR(st);
      s.eval = {{"test_acc", test.acc()},
                {"test_acc_per_feature", test.acc_per_feature(m)},
                {"val_acc", val.acc()},
                {"val_acc_per_feature", val.acc_per_feature(m)},
                {"ood_acc", has_ood ? json(ood.acc()) : json(nullptr)},
                {"ood_acc_per_feature",
                 has_ood ? json(ood.acc_per_feature(m)) : json(nullptr)}};
      for (auto it = s.eval.begin(); it != s.eval.end(); ++it) {
        if (it.value().is_number()) {
          emit.Metric(s.step, "eval/" + it.key(), it.value().get<double>());
        }
      }
      for (size_t l = 0; l < test.router.size(); ++l) {
        for (size_t e = 0; e < test.router[l].expert_fraction.size(); ++e) {
          emit.Metric(s.step,
                      absl::StrCat("router/layer", l, "/expert", e, "_frac"),
                      test.router[l].expert_fraction[e]);
        }
        emit.Metric(s.step, absl::StrCat("router/layer", l, "/entropy"),
                    test.router[l].entropy);
      }
      s.last_eval_step = s.step;
      SMOE_LOG(INFO) << "step " << s.step << " test_acc " << test.acc()
                     << " val_acc " << val.acc() << " ood_acc " << ood.acc();
    }
    if (s.step >= c.steps) break;
    SMOE_ASSIGN_OR_RETURN(bool stop_now,
                          AgreeStop(ShouldStop(options, s.step), cm, device));
    if (stop_now) {
      SMOE_RETURN_IF_ERROR(checkpoint());
      return absl::CancelledError(
          absl::StrCat("stopped at step ", s.step, "; checkpoint saved"));
    }

    // One update.
    const auto t0 = std::chrono::steady_clock::now();
    torch::manual_seed(StepSeed(c.seed, s.step, rank, world));
    auto [x, y] = batcher.Get(Split::kTrain, static_cast<uint64_t>(s.step),
                              static_cast<int>(c.batch_size));
    if (world > 1) {  // this rank's slice of the global batch
      auto [lo, hi] = model::SliceRows(c.batch_size, rank, world);
      x = x.slice(0, lo, hi);
      y = y.slice(0, lo, hi);
    }
    net->train();
    torch::Tensor loss, total;
    {
      model::AutocastGuard autocast(x.device(), c.bf16);
      model::ForwardOutput fo = net->forward(x);
      loss = model::SravenLoss(fo.logits, y);
      total = loss + fo.aux_loss;
    }
    net->zero_grad(/*set_to_none=*/true);
    total.backward();
    if (cm != nullptr) {
      SMOE_RETURN_IF_ERROR(model::SyncGradients(*net, cm));
      // The reported loss is the global batch's: the mean of the ranks'.
      std::vector<double> global = {loss.item<double>() / world};
      SMOE_RETURN_IF_ERROR(model::AllReduceSum(&global, cm, device));
      loss = torch::full({}, global[0], loss.options());
    }
    AdamWUpdate(opt, c, s.step);
    window.add_(loss.detach().to(torch::kFloat64));
    s.window_n += 1;
    s.step += 1;
    ++trained_here;
    if (options.on_step) options.on_step(s.step, loss.item<double>());
    if (cuda) torch::cuda::synchronize();
    train_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();

    if (s.step % c.log_every == 0 || s.step == c.steps) {
      flush_window();
      s.last_train_loss = s.window_sum / static_cast<double>(s.window_n);
      s.window_sum = 0;
      s.window_n = 0;
      emit.Emit(trials::ProgressEvent(s.step, c.steps));
      emit.Metric(s.step, "train/loss", s.last_train_loss);
      emit.Metric(s.step, "train/lr", LearningRate(c, s.step - 1));
    }
    if (s.step % c.checkpoint_every == 0 && s.step < c.steps) {
      SMOE_RETURN_IF_ERROR(checkpoint());
    }
  }
  SMOE_RETURN_IF_ERROR(checkpoint());

  TrainResult r;
  auto num = [&](const char* key) {
    return s.eval.contains(key) && s.eval[key].is_number()
               ? s.eval[key].get<double>()
               : std::numeric_limits<double>::quiet_NaN();
  };
  r.steps = s.step;
  r.test_acc = num("test_acc");
  r.ood_acc = num("ood_acc");
  r.test_acc_per_feature = num("test_acc_per_feature");
  r.ood_acc_per_feature = num("ood_acc_per_feature");
  r.val_acc = num("val_acc");
  r.val_acc_per_feature = num("val_acc_per_feature");
  r.train_loss = s.last_train_loss;
  r.steps_per_s = train_seconds > 0 ? trained_here / train_seconds : 0.0;
  r.tokens_per_s = r.steps_per_s * static_cast<double>(tokens_per_step);
  auto j = [](double v) { return std::isnan(v) ? json(nullptr) : json(v); };
  emit.Emit(
      trials::ResultEvent({{"test_acc", j(r.test_acc)},
                           {"ood_acc", j(r.ood_acc)},
                           {"test_acc_per_feature", j(r.test_acc_per_feature)},
                           {"ood_acc_per_feature", j(r.ood_acc_per_feature)},
                           {"val_acc", j(r.val_acc)},
                           {"val_acc_per_feature", j(r.val_acc_per_feature)},
                           {"train_loss", j(r.train_loss)},
                           {"steps", r.steps},
                           {"steps_per_s", r.steps_per_s},
                           {"tokens_per_s", r.tokens_per_s}}));
  return r;
}

}  // namespace

void StdoutEventSink::Emit(const std::string& json_line) {
  std::fwrite(json_line.data(), 1, json_line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

std::string CheckpointPath(const std::string& workdir) {
  return (workdir.empty() ? std::string(".") : workdir) +
         "/checkpoint.smoeckpt";
}

void ConfigureTorchThreads() {
  int threads = 1;
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) threads = n;
  }
  at::set_num_threads(threads);
}

absl::StatusOr<TrainResult> RunTraining(const TrainConfig& config,
                                        const RunOptions& options) {
  try {
    return RunTrainingImpl(config, options);
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("LibTorch error: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("error: ", e.what()));
  }
}

}  // namespace smoe::trainer
