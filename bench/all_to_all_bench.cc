// Copyright 2026 SMoE Lab authors.
//
// all_to_all_bench: the expert-parallel dispatch collective,
// Communicator::AllToAllV with equal counts, over W ranks, in the units of
// nccl-tests (alltoall_perf):
//   size   bytes each rank sends in one call (its whole send buffer; 1/W of
//          it to each peer, its own share included);
//   algbw  size / time;
//   busbw  algbw * (W - 1) / W: the bytes that actually cross between ranks,
//          comparable across W and with the link's bandwidth.
// Baseline, same run, same buffers: one copy of `size` bytes in the
// communicator's memory (host memcpy for gloo/local, device-to-device copy
// for nccl), counted the same way (size / time). busbw / copy says how close
// the collective gets to moving the bytes through memory once; for NCCL
// across GPUs the link (NVLink) is the real ceiling: read it off busbw.
// Every call's payload is self-verifying (each element encodes sender,
// receiver and index) and checked after the warm-up of every size.
//
//   all_to_all_bench [--comm gloo|local|nccl] [--world W] [--sizes 1K,...]
//                    [--iters N] [--warmup N]
//
// gloo / nccl: the binary starts W copies of itself as ranks with
// launch::RankGroup (worker/launch/rank_group.h: SMOE_RANK, SMOE_WORLD_SIZE,
// SMOE_RENDEZVOUS = a FileStore in a temp dir, as the worker daemon and
// `smoe train --ep-size` do) and rank 0 prints the Markdown table; nccl gives
// rank r GPU r (W <= visible GPUs). local: W threads of one process
// (LocalCommunicator). Time per call: the mean over ranks of each rank's median
// of --iters calls, each call preceded by a barrier.
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "kernels/all_to_all/communicator.h"
#include "kernels/all_to_all/local_communicator.h"
#include "worker/launch/process_launcher.h"
#include "worker/launch/rank_group.h"
#include "worker/model/gloo_communicator.h"

namespace {

namespace kn = smoe::kernels;
using Clock = std::chrono::steady_clock;

struct Flags {
  std::string comm = "gloo";
  int world = 2;
  std::vector<int64_t> sizes = {1 << 10, 16 << 10, 256 << 10, 1 << 20,
                                4 << 20, 16 << 20, 64 << 20};
  int iters = 20;
  int warmup = 3;
};

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "all_to_all_bench: %s\n", why.c_str());
  std::exit(64);
}

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "all_to_all_bench: %s: %s\n", what,
                 s.ToString().c_str());
    std::exit(1);
  }
}

int64_t ParseSize(absl::string_view s) {
  int64_t mult = 1;
  if (!s.empty() && (s.back() == 'K' || s.back() == 'M' || s.back() == 'G')) {
    mult = s.back() == 'K' ? 1 << 10 : s.back() == 'M' ? 1 << 20 : 1 << 30;
    s.remove_suffix(1);
  }
  int64_t v = 0;
  if (!absl::SimpleAtoi(s, &v) || v <= 0) {
    Die(absl::StrCat("--sizes: '", s, "' is not a positive size"));
  }
  return v * mult;
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(a + ": missing value");
      return argv[++i];
    };
    auto integer = [&](const std::string& v, int lo) {
      int n = 0;
      if (!absl::SimpleAtoi(v, &n) || n < lo) {
        Die(absl::StrCat(a, ": '", v, "' is not an integer >= ", lo));
      }
      return n;
    };
    if (a == "--comm") {
      f.comm = value();
      if (f.comm != "gloo" && f.comm != "local" && f.comm != "nccl") {
        Die("--comm: '" + f.comm + "' is not one of gloo, local, nccl");
      }
    } else if (a == "--world") {
      f.world = integer(value(), 1);
    } else if (a == "--sizes") {
      f.sizes.clear();
      for (absl::string_view p : absl::StrSplit(value(), ',')) {
        f.sizes.push_back(ParseSize(p));
      }
    } else if (a == "--iters") {
      f.iters = integer(value(), 1);
    } else if (a == "--warmup") {
      f.warmup = integer(value(), 0);
    } else {
      Die("unknown argument " + a);
    }
  }
  return f;
}

torch::Device DeviceOf(const kn::Communicator& c) {
  return c.memory_space() == kn::MemorySpace::kCudaDevice
             ? torch::Device(torch::kCUDA, 0)
             : torch::Device(torch::kCPU);
}

void Sync(const torch::Device& d) {
  // A device-to-host copy waits for the queued work (no CUDA headers here).
  if (d.is_cuda()) torch::zeros({1}, torch::TensorOptions().device(d)).cpu();
}

// Payload: element i of the block rank `from` sends to rank `to` is
// from * 2^20 + to * 2^10 + (i % 1024), exact in float32 for W <= 16.
torch::Tensor Payload(int from, int to, int64_t n) {
  return torch::arange(n, torch::kInt64).remainder(1024).to(torch::kFloat32) +
         static_cast<float>(from * (1 << 20) + to * (1 << 10));
}

// Sums `v` over the ranks, in the communicator's memory space.
std::vector<double> SumOverRanks(kn::Communicator* comm,
                                 const std::vector<double>& v) {
  torch::Tensor t =
      torch::tensor(v, torch::kFloat64).to(DeviceOf(*comm)).contiguous();
  Check(comm->AllReduceSum(t.data_ptr(), t.numel(), kn::DType::kFloat64),
        "AllReduceSum");
  t = t.cpu();
  return std::vector<double>(t.data_ptr<double>(),
                             t.data_ptr<double>() + t.numel());
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Row {
  int64_t size = 0, per_peer = 0;
  double seconds = 0, copy_seconds = 0;
  bool verified = false;
};

// One rank's part of the whole sweep. Rows are filled on every rank (times
// are averaged over ranks with AllReduceSum).
std::vector<Row> RunRank(kn::Communicator* comm, const Flags& f) {
  const int w = comm->world_size();
  const int me = comm->rank();
  const torch::Device dev = DeviceOf(*comm);
  std::vector<Row> rows;
  for (int64_t size : f.sizes) {
    Row row;
    row.per_peer = std::max<int64_t>(1, size / (4 * w));
    row.size = row.per_peer * 4 * w;
    std::vector<torch::Tensor> blocks;
    for (int to = 0; to < w; ++to)
      blocks.push_back(Payload(me, to, row.per_peer));
    const torch::Tensor send = torch::cat(blocks).to(dev);
    torch::Tensor recv = torch::empty_like(send);
    const std::vector<int64_t> counts(w, row.per_peer);
    auto call = [&] {
      Check(comm->AllToAllV(send.data_ptr(), counts.data(), recv.data_ptr(),
                            counts.data(), kn::DType::kFloat32),
            "AllToAllV");
    };
    for (int i = 0; i < std::max(1, f.warmup); ++i) call();
    Sync(dev);
    std::vector<torch::Tensor> want;
    for (int from = 0; from < w; ++from) {
      want.push_back(Payload(from, me, row.per_peer));
    }
    const double ok = torch::equal(recv.cpu(), torch::cat(want)) ? 1 : 0;
    std::vector<double> t;
    for (int i = 0; i < f.iters; ++i) {
      Check(comm->Barrier(), "Barrier");
      const auto t0 = Clock::now();
      call();
      Sync(dev);
      t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    std::vector<double> c;
    for (int i = 0; i < f.iters; ++i) {
      const auto t0 = Clock::now();
      recv.copy_(send);
      Sync(dev);
      c.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    const std::vector<double> sums =
        SumOverRanks(comm, {ok, Median(t), Median(c)});
    row.verified = sums[0] == w;
    row.seconds = sums[1] / w;
    row.copy_seconds = sums[2] / w;
    rows.push_back(row);
  }
  return rows;
}

std::string Bytes(int64_t b) {
  if (b >= (1 << 20)) return absl::StrCat(b >> 20, " MiB");
  if (b >= (1 << 10)) return absl::StrCat(b >> 10, " KiB");
  return absl::StrCat(b, " B");
}

void PrintTable(const Flags& f, const std::string& name, int world,
                const std::vector<Row>& rows) {
  std::printf(
      "all_to_all_bench: comm %s, world %d, fp32, equal counts, median of %d "
      "calls (barrier before each), mean over ranks\n\n",
      name.c_str(), world, f.iters);
  std::printf(
      "| size/rank | elems/peer | time (us) | algbw GB/s | busbw GB/s | copy "
      "GB/s | busbw/copy | payload |\n|---:|---:|---:|---:|---:|---:|---:|:"
      "---|\n");
  for (const Row& r : rows) {
    const double alg = r.size / r.seconds / 1e9;
    const double bus = alg * (world - 1) / world;
    const double copy = r.size / r.copy_seconds / 1e9;
    std::printf("| %s | %lld | %.1f | %.2f | %.2f | %.2f | %.2f | %s |\n",
                Bytes(r.size).c_str(), static_cast<long long>(r.per_peer),
                r.seconds * 1e6, alg, bus, copy, bus / copy,
                r.verified ? "verified" : "WRONG");
  }
}

// gloo / nccl: this process is one rank (SMOE_RANK set by the launcher).
int RankMain(const Flags& f) {
  auto info = smoe::model::RendezvousFromEnv();
  Check(info.status(), "rendezvous");
  kn::CommunicatorOptions o;
  o.op_timeout_ms = 120'000;
  auto comm = f.comm == "nccl"
                  ? smoe::model::CreateNcclCommunicator(*info, info->rank, o)
                  : smoe::model::CreateGlooCommunicator(*info, o);
  Check(comm.status(), "communicator");
  const std::vector<Row> rows = RunRank(comm->get(), f);
  if (info->rank == 0) PrintTable(f, (*comm)->name(), info->world_size, rows);
  bool ok = true;
  for (const Row& r : rows) ok = ok && r.verified;
  return ok ? 0 : 1;
}

// Starts W copies of this binary as ranks and waits (10 min deadline).
// Rank 0's stdout and every rank's stderr are ours; ranks > 0 print nothing
// on stdout. Returns the group's decisive exit code, 124 past the deadline.
int LaunchRanks(const Flags& f, int argc, char** argv) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           absl::StrCat("smoe-a2a-bench-", ::getpid()))
                              .string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  namespace launch = smoe::launch;
  launch::RankGroupSpec spec;
  std::error_code ec;
  const std::string self =
      std::filesystem::read_symlink("/proc/self/exe", ec).string();
  spec.argv.push_back(ec ? "/proc/self/exe" : self);
  spec.argv.insert(spec.argv.end(), argv + 1, argv + argc);
  spec.world_size = f.world;
  spec.rendezvous_dir = dir;
  spec.grace = absl::Seconds(10);
  spec.output = [](int r) {
    return launch::RankOutput{r == 0 ? launch::OutputSpec::Inherit()
                                     : launch::OutputSpec::File("/dev/null"),
                              launch::OutputSpec::Inherit()};
  };
  spec.note = [](absl::string_view line) {
    std::fprintf(stderr, "all_to_all_bench: %.*s\n",
                 static_cast<int>(line.size()), line.data());
  };
  launch::PosixProcessLauncher launcher;
  auto group = launch::RankGroup::Start(&launcher, smoe::Clock::Real(), spec);
  if (!group.ok()) {
    std::fprintf(stderr, "all_to_all_bench: %s\n",
                 std::string(group.status().message()).c_str());
    std::filesystem::remove_all(dir);
    return 1;
  }
  const absl::Time deadline = absl::Now() + absl::Minutes(10);
  int rc = 0;
  while (!(*group)->Poll()) {
    if (absl::Now() > deadline && !(*group)->kill_sent()) {
      std::fprintf(stderr, "all_to_all_bench: deadline passed\n");
      (*group)->Kill();
      rc = 124;
    }
    if ((*group)->stuck()) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  if (rc == 0) {
    rc = (*group)->done() ? (*group)->DecisiveExit().ReportedCode() : 124;
  }
  if ((*group)->done()) {
    group->reset();
  } else {
    (void)group->release();  // a rank that survives SIGKILL: do not wait
  }
  std::filesystem::remove_all(dir);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags f = ParseFlags(argc, argv);
  torch::set_num_threads(1);
  if (f.comm == "local") {
    kn::CommunicatorOptions o;
    o.op_timeout_ms = 120'000;
    auto comms = kn::CreateLocalCommunicators(f.world, o);
    std::vector<std::vector<Row>> rows(f.world);
    std::vector<std::thread> threads;
    for (int r = 0; r < f.world; ++r) {
      threads.emplace_back([&, r] { rows[r] = RunRank(comms[r].get(), f); });
    }
    for (std::thread& t : threads) t.join();
    PrintTable(f, "local", f.world, rows[0]);
    for (const Row& r : rows[0]) {
      if (!r.verified) return 1;
    }
    return 0;
  }
  if (std::getenv("SMOE_RANK") != nullptr) return RankMain(f);
  return LaunchRanks(f, argc, argv);
}
