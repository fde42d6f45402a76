// Copyright 2026 SMoE Lab authors.
//
// Coordinator benchmark (issue 3, item 9).
//
//   smoe_bench_coordinator [--seconds S] [--workers N] [--submit-steps 100]
//
// --submit-steps N: the big sweep has N x 1,000 points (smoke runs: 1).
//
// 1. Lease + complete round trips per second: N simulated workers (threads,
//    one gRPC channel each) against an in-process CoordinatorServer over
//    loopback, SQLite with synchronous=FULL (an fsync per commit). Each worker
//    loops Lease(1 slot) -> Complete. Baseline in the same run: group commit
//    off (one commit per transition, under the scheduler lock); then group
//    commit on (FULL), and group commit with synchronous=NORMAL (durable
//    across process crashes, not power loss).
// 2. Time to submit a 100,000-point sweep over gRPC (parse, expand, hash ids,
//    one durable commit), then time for a restarted coordinator to load it.
// 3. Resident memory added by 100,000 trials (VmRSS delta of this process,
//    which hosts the coordinator; the client side is negligible).
//
// Targets (2-core machine): >= 1,000 round trips/s, < 3 s submit, < 200 MB.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/server.h"
#include "proto/auth.h"
#include "proto/smoe.grpc.pb.h"

namespace {

namespace fs = std::filesystem;
namespace pb = smoe::v1;
using smoe::coordinator::CoordinatorServer;
using smoe::coordinator::ServerOptions;
using Sync = smoe::store::SqliteOptions::Synchronous;

double RssMb() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      double kb;
      in >> kb;
      return kb / 1024.0;
    }
  }
  return 0;
}

std::string GridYaml(const std::string& name, int steps_values,
                     int seed_values) {
  std::string steps = "[", seeds = "[";
  for (int i = 0; i < steps_values; ++i) {
    absl::StrAppend(&steps, i ? ", " : "", 2000 + i);  // > warmup
  }
  for (int i = 0; i < seed_values; ++i)
    absl::StrAppend(&seeds, i ? ", " : "", i);
  return absl::StrCat(
      "name: ", name, "\nkind: sraven\ngrid:\n  steps: ", steps,
      "]\n  batch_size: [16, 32, 64, 128, 256, 512, 1024, 2048, "
      "4096, 8192]\n  lr: [0.0001, 0.0002, 0.0003, 0.0005, "
      "0.0007, 0.001, 0.002, 0.003, 0.005, 0.007]\nseeds: ",
      seeds, "]\n");
}

std::unique_ptr<CoordinatorServer> StartServer(const std::string& dir,
                                               Sync sync, bool group) {
  ServerOptions o;
  o.data_dir = dir;
  o.listen = "127.0.0.1:0";
  o.http_listen = "127.0.0.1:0";  // never the default :8080 (issue 20)
  o.synchronous = sync;
  o.scheduler.group_commit = group;
  o.scheduler.parse.max_points = 200000;
  auto s = CoordinatorServer::Start(o);
  if (!s.ok()) {
    std::fprintf(stderr, "server: %s\n", s.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*s);
}

bool Submit(CoordinatorServer& s, const std::string& yaml) {
  auto ch =
      grpc::CreateChannel(s.address(), grpc::InsecureChannelCredentials());
  auto stub = pb::Coordinator::NewStub(ch);
  grpc::ClientContext ctx;
  smoe::proto::PrepareClientContext(&ctx, s.token(), absl::Minutes(5));
  pb::SubmitSweepRequest req;
  req.set_spec_yaml(yaml);
  pb::SubmitSweepResponse resp;
  grpc::Status st = stub->SubmitSweep(&ctx, req, &resp);
  if (!st.ok())
    std::fprintf(stderr, "submit: %s\n", st.error_message().c_str());
  return st.ok();
}

struct RoundTrips {
  double per_s = 0;
  int64_t total = 0;
  int64_t commits = 0;
};

RoundTrips RunWorkers(CoordinatorServer& s, int workers, double seconds) {
  std::atomic<int64_t> done{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  absl::Time end;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      grpc::ChannelArguments args;
      args.SetInt("smoe.bench.worker", w);  // a distinct connection each
      auto ch = grpc::CreateCustomChannel(
          s.address(), grpc::InsecureChannelCredentials(), args);
      auto stub = pb::WorkerGateway::NewStub(ch);
      std::string id;
      {
        grpc::ClientContext ctx;
        smoe::proto::PrepareClientContext(&ctx, s.token(), absl::Seconds(30));
        pb::RegisterRequest req;
        req.set_hostname(absl::StrCat("bench-", w));
        req.set_slots(1);
        pb::RegisterResponse resp;
        if (!stub->Register(&ctx, req, &resp).ok()) return;
        id = resp.worker_id();
      }
      while (!go.load()) std::this_thread::yield();
      while (absl::Now() < end) {
        grpc::ClientContext lctx;
        smoe::proto::PrepareClientContext(&lctx, s.token(), absl::Seconds(30));
        pb::LeaseRequest lreq;
        lreq.set_worker_id(id);
        lreq.set_free_slots(1);
        pb::LeaseResponse lresp;
        if (!stub->Lease(&lctx, lreq, &lresp).ok() ||
            lresp.leases_size() == 0) {
          break;
        }
        const auto& l = lresp.leases(0);
        grpc::ClientContext cctx;
        smoe::proto::PrepareClientContext(&cctx, s.token(), absl::Seconds(30));
        pb::CompleteRequest creq;
        creq.set_worker_id(id);
        creq.set_trial_id(l.trial_id());
        creq.set_attempt(l.attempt());
        (*creq.mutable_results())["ood_acc"] = 0.5;
        creq.set_duration_s(1);
        pb::CompleteResponse cresp;
        if (!stub->Complete(&cctx, creq, &cresp).ok()) break;
        ++done;
      }
    });
  }
  // Let registrations finish before the clock starts.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const int64_t commits0 = s.scheduler()->group_commits();
  const absl::Time start = absl::Now();
  end = start + absl::Seconds(seconds);
  go = true;
  for (auto& t : threads) t.join();
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
  RoundTrips r;
  r.total = done.load();
  r.per_s = r.total / elapsed;
  r.commits = s.scheduler()->group_commits() - commits0;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 5;
  int workers = 50;
  int submit_steps = 100;  // x 10 x 10 x 10 seeds = 100,000 points
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--seconds")) seconds = std::atof(argv[i + 1]);
    if (!std::strcmp(argv[i], "--workers")) workers = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--submit-steps")) {
      submit_steps = std::max(1, std::atoi(argv[i + 1]));
    }
  }
  setenv("SMOE_LOG_LEVEL", "ERROR", 1);
  const fs::path root =
      fs::temp_directory_path() / absl::StrCat("smoe-bench-coord-", getpid());
  fs::remove_all(root);

  std::printf(
      "# coordinator benchmark: %d workers, %.0f s per config, %u cpus\n",
      workers, seconds, std::thread::hardware_concurrency());
  std::printf(
      "| config | round trips/s | vs baseline | commits | RPCs/commit |\n");
  std::printf("|---|---|---|---|---|\n");
  struct Config {
    const char* name;
    Sync sync;
    bool group;
  } configs[] = {{"per-RPC commit, sync=FULL (baseline)", Sync::kFull, false},
                 {"group commit, sync=FULL", Sync::kFull, true},
                 {"group commit, sync=NORMAL", Sync::kNormal, true}};
  double baseline = 0;
  int n = 0;
  for (const Config& c : configs) {
    const std::string dir = (root / absl::StrCat("rt", n++)).string();
    auto s = StartServer(dir, c.sync, c.group);
    // 40,000 points: more than any config completes in the window.
    if (!Submit(*s, GridYaml("rt", 40, 10))) return 1;
    RoundTrips r = RunWorkers(*s, workers, seconds);
    if (baseline == 0) baseline = r.per_s;
    std::printf("| %s | %.0f | %.2fx | %s | %s |\n", c.name, r.per_s,
                r.per_s / baseline,
                c.group ? absl::StrCat(r.commits).c_str() : "= transitions",
                c.group && r.commits > 0
                    ? absl::StrCat(2.0 * r.total / r.commits).c_str()
                    : "1");
    s->Shutdown();
  }

  // 100k-point submit, restart load, memory.
  const std::string dir = (root / "big").string();
  const double rss0 = RssMb();
  auto s = StartServer(dir, Sync::kFull, true);
  absl::Time t0 = absl::Now();
  if (!Submit(*s, GridYaml("big", submit_steps, 10))) return 1;  // Nx10x10x10
  const double submit_s = absl::ToDoubleSeconds(absl::Now() - t0);
  const double rss1 = RssMb();
  s->Shutdown();
  s.reset();
  t0 = absl::Now();
  auto s2 = StartServer(dir, Sync::kFull, true);
  const double load_s = absl::ToDoubleSeconds(absl::Now() - t0);
  s2->Shutdown();
  s2.reset();
  // A fresh `smoe coordinator` process on the same database: its whole RSS is
  // the coordinator's footprint at 100k trials.
  double fresh_rss = -1;
  const fs::path smoe =
      fs::read_symlink("/proc/self/exe").parent_path() / ".." / "bin" / "smoe";
  const std::string port_file = dir + "/bench.port";
  const pid_t pid = fork();
  if (pid == 0) {
    execl(smoe.c_str(), smoe.c_str(), "coordinator", "--data-dir", dir.c_str(),
          "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0",
          "--port-file", port_file.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 600 && !fs::exists(port_file); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (fs::exists(port_file)) {
    std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
    std::string key;
    while (in >> key) {
      if (key == "VmRSS:") {
        in >> fresh_rss;
        fresh_rss /= 1024.0;
        break;
      }
    }
  }
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  std::printf("\n| measurement | value | target |\n|---|---|---|\n");
  std::printf("| submit %d-point sweep (gRPC, durable) | %.2f s | < 3 s |\n",
              submit_steps * 1000, submit_s);
  std::printf("| restart: load %d trials | %.2f s | |\n", submit_steps * 1000,
              load_s);
  std::printf(
      "| RSS added by %d trials (after submit) | %.0f MB | < 200 MB |\n",
      submit_steps * 1000, rss1 - rss0);
  std::printf(
      "| RSS of a fresh `smoe coordinator` holding %d trials | %.0f MB | "
      "< 200 MB |\n",
      submit_steps * 1000, fresh_rss);
  fs::remove_all(root);
  return 0;
}
