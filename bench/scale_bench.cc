// Copyright 2026 SMoE Lab authors.
//
// Growth benchmark (issue 35 item 3): one sweep size per run.
//
//   smoe_bench_scale [--trials 10000] [--hold 20000] [--live 30]
//                    [--requests 20] [--seconds 2] [--workers 16,64,256]
//                    [--search-trials N] [--search-reports 40]
//                    [--asha-trials N] [--asha-decisions N]
//                    [--skip-search] [--skip-coordinator]
//                    [--search-strategy asha|median|refine]
//                    [--per-group-plans] [--budget-gpu-hours H] [--full-plans]
//                    [--search-extra "aggregate_seeds: true"]
//                    [--refine-hold N]
//
// Coordinator part (a real CoordinatorServer: SQLite with its production
// synchronous=FULL, loopback HTTP):
//  1. submit: a forked child starts a coordinator on a fresh data dir and
//     times Scheduler::SubmitSweep of `trials` points (attention x M x top_k x
//     seeds); then, with the coordinator stopped, it marks all but `hold`
//     trials succeeded (results, one attempt) straight in the store in
//     batches of 10,000 - a setup shortcut, as if workers had finished them;
//  2. restart: the parent starts a coordinator on that data dir (timed) and
//     reads its RSS (the parent did nothing else before) and the SQLite file
//     size (smoe.db + -wal);
//  3. first page cold (snapshot load + sort + page), curves cold;
//  4. live: `live` held trials complete one at a time, each followed by the
//     dashboard's three refresh requests (analysis, curves, first page);
//  5. uncached curves: a new query each time (a new bootstrap count, so the
//     response cache misses; the parsed snapshot is reused);
//  6. lease+complete throughput over `seconds` with 16/64/256 simulated
//     workers: one thread and one registered worker (1 slot) each, calling
//     Scheduler::Lease / Complete in process (durable group commit; no gRPC:
//     bench/coordinator_bench measures the RPC path);
//  7. asha refresh: an adaptive (asha) sweep of `asha-trials` points
//     (default min(trials, 100000); 0 skips it) is submitted to the same
//     coordinator; `live` of its trials report the search metric and
//     complete, each followed by an adaptive sweep's dashboard refresh: the
//     three requests above and GET /api/sweeps/{sweep}/search. With
//     `asha-decisions` N, N synthetic decisions (promote, rung 0, of the
//     sweep's trials in turn) are first committed straight to the store, as
//     the log of a long-running asha sweep (the scheduler's planning does
//     not see them; the search summary reads them). The first refresh and
//     the first /search (cold: snapshot, labels) are printed on their own.
// Search part (in process, InMemoryStore, fake clock): an asha sweep of
// `search-trials` points (default: `trials`), 256 trials leased, then
// `search-reports` search-metric reports (eval/ood_acc at the first rung),
// each timed: Scheduler::ReportMetrics plans the sweep's search on every one
// (the first after the start from every trial, reported on its own).
// --search-strategy median: the same with the median rule (min_steps 300,
// the same group_by) instead of asha; --per-group-plans: the scheduler's
// incremental_stopping off (each report plans its group whole, as before
// the incremental asha / median), a same-binary baseline.
// --budget-gpu-hours H: the search has budget_gpu_hours H (the fake clock
// does not move, so it is never spent: the planning before it is);
// --full-plans: incremental_search off (every report plans from every
// trial, which budgeted sweeps did before). --search-extra: more keys for
// the search block (e.g. "aggregate_seeds: true", "keep_neighbors: top_k").
// --search-strategy refine (issue 35: refine's cost per change): a refine
// sweep (axis top_k, bounds [1, 8], add_seeds 1) whose groups stay small
// and whose group count grows with the size: grid batch_size (G values
// 16, 17, ...) x attention x M x top_k {1, 2, 4, 8} x 3 seeds, G =
// round(N / 120), group_by [M, attention, batch_size] (10 G groups of 12);
// --search-extra is appended as above ("early_stop: asha, min_steps: 300,
// reduction: 3" for refine + asha). All trials but the last `refine-hold`
// by ordinal (default min(N / 10, 2000): the groups of the last batch
// sizes) are marked succeeded straight in the store (ood_acc peaking at
// top_k = min(8, 2 M) per group, a per-seed offset; with asha also
// eval/ood_acc at every rung), a setup shortcut; then the scheduler is
// re-created on that store (timed: its start-up plans from every trial,
// which proposes the neighbours of every finished group), every pending
// trial is leased (the neighbours first), and `search-reports` of them
// complete, each Scheduler::Complete timed (refine plans on every trial's
// end); with early_stop: asha each first reports eval/ood_acc at the first
// rung (timed; the value 0.99, the best of its race, so it continues).
// The first completion / report after the restart is printed on its own.
// --full-plans is the same-binary baseline (incremental_search off).
//
// Prints markdown and one "row:" line per part for the growth table
// (bench/results/scale-*.md); the search part a "row-search:" line (refine:
// "row-refine: | N | completion p50 | p95 | report p50 | p95 |", "-" for
// the reports without early_stop). Timing is wall clock on a shared machine.
#include <httplib.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/clock.h"
#include "coordinator/scheduler.h"
#include "coordinator/server.h"
#include "nlohmann/json.hpp"
#include "store/in_memory_store.h"
#include "store/sqlite_store.h"

namespace {

namespace fs = std::filesystem;
using smoe::coordinator::CoordinatorServer;
using smoe::coordinator::ServerOptions;
using Clock = std::chrono::steady_clock;

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  const size_t i = static_cast<size_t>(q * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// A field of /proc/self/status in kB, as MB.
double StatusMb(const char* field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(f, line)) {
    if (line.compare(0, n, field) == 0) {
      return std::atof(line.c_str() + n) / 1024.0;
    }
  }
  return 0;
}

// VmRSS of this process in MB.
double RssMb() { return StatusMb("VmRSS:"); }

// Bytes malloc has handed out and not had back (all arenas, mmapped blocks
// included), in MB: its deltas around a phase are what that phase keeps.
double HeapMb() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks + m.hblkhd) / (1024.0 * 1024.0);
}

// One line of the memory breakdown: the heap in use and the RSS now.
void PrintMemory(const char* phase, double* last_heap) {
  const double heap = HeapMb();
  // VmHWM: this process's peak RSS so far (the coordinator's: the setup
  // ran in a forked child).
  std::printf(
      "memory: %s: heap in use %.0f MB (%+.0f MB), RSS %.0f MB, peak RSS "
      "%.0f MB\n",
      phase, heap, heap - *last_heap, RssMb(), StatusMb("VmHWM:"));
  *last_heap = heap;
}

double FileMb(const std::string& path) {
  std::error_code ec;
  const auto n = fs::file_size(path, ec);
  return ec ? 0 : static_cast<double>(n) / (1024.0 * 1024.0);
}

std::string SweepYaml(const std::string& name, int trials,
                      const std::string& extra) {
  const int cells = 2 * 5 * 4;  // attention x M x top_k
  const int seeds = std::max(1, trials / cells);
  std::string seed_list;
  for (int s = 0; s < seeds; ++s) absl::StrAppend(&seed_list, s ? ", " : "", s);
  return absl::StrCat(
      "name: ", name,
      "\nkind: sraven\ngrid:\n  attention: [softmax, hyla]\n"
      "  M: [1, 2, 3, 4, 5]\n  top_k: [1, 2, 4, 8]\n"
      "fixed: {num_experts: 8, steps: 2700, batch_size: 64}\nseeds: [",
      seed_list, "]\n", extra);
}

std::map<std::string, double> Results(int64_t i) {
  const double ood = 0.5 + 0.05 * (i % 9) / 9.0 + 0.001 * (i % 13);
  return {{"ood_acc", ood},
          {"test_acc", ood + 0.05},
          {"train_loss", 1 - ood},
          {"steps_per_s", 40}};
}

// The forked setup: submit (timed), then all but `hold` trials succeeded.
int Setup(const std::string& dir, int trials, int hold) {
  ServerOptions o;
  o.data_dir = dir;
  o.listen = "127.0.0.1:0";
  o.http_listen = "";
  o.scheduler.parse.max_points = std::max<int64_t>(100000, trials);
  auto server = CoordinatorServer::Start(o);
  if (!server.ok()) {
    std::fprintf(stderr, "start: %s\n", server.status().ToString().c_str());
    return 1;
  }
  const auto t0 = Clock::now();
  auto sub = (*server)->scheduler()->SubmitSweep(SweepYaml("bench", trials, ""),
                                                 false);
  const double submit_s = Ms(Clock::now() - t0) / 1000;
  if (!sub.ok()) {
    std::fprintf(stderr, "submit: %s\n", sub.status().ToString().c_str());
    return 1;
  }
  const int64_t total = sub->sweep.counts.total();
  std::printf(
      "submit: %lld trials in %.2f s (RSS of the submitting process %.0f MB)\n",
      static_cast<long long>(total), submit_s, RssMb());
  std::fflush(stdout);
  (*server)->Shutdown();
  server->reset();
  auto store = smoe::store::SqliteStore::Open(dir + "/smoe.db");
  if (!store.ok()) return 1;
  auto list = (*store)->ListTrials("bench");
  if (!list.ok()) return 1;
  const auto t1 = Clock::now();
  const absl::Time now = absl::Now();
  smoe::store::WriteBatch b;
  smoe::store::WorkerRecord w;
  w.worker_id = "bench-setup";
  w.hostname = "bench";
  w.registered_at = w.last_heartbeat_at = now;
  b.workers.push_back(w);
  const int64_t done = std::max<int64_t>(0, total - hold);
  for (int64_t i = 0; i < done; ++i) {
    smoe::store::TrialRecord t = (*list)[static_cast<size_t>(i)];
    t.state = smoe::store::TrialState::kSucceeded;
    t.attempt = 1;
    t.updated_at = now;
    smoe::store::AttemptRecord a;
    a.trial_id = t.trial_id;
    a.attempt = 1;
    a.worker_id = "bench-setup";
    a.outcome = smoe::store::AttemptOutcome::kSucceeded;
    a.started_at = now - absl::Seconds(12);
    a.ended_at = now;
    b.results.push_back({t.trial_id, 12.5, Results(i)});
    b.trials.push_back(std::move(t));
    b.attempts.push_back(std::move(a));
    if (b.trials.size() == 10000 || i + 1 == done) {
      absl::Status s = (*store)->Commit(b);
      if (!s.ok()) {
        std::fprintf(stderr, "setup commit: %s\n", s.ToString().c_str());
        return 1;
      }
      b = smoe::store::WriteBatch();
    }
  }
  std::printf("setup: %lld trials marked succeeded in %.1f s (not measured)\n",
              static_cast<long long>(done), Ms(Clock::now() - t1) / 1000);
  std::fflush(stdout);
  return 0;
}

struct Options {
  int trials = 10000, hold = 20000, live = 30, requests = 20;
  double seconds = 2;
  std::vector<int> workers = {16, 64, 256};
  int search_trials = -1, search_reports = 40;
  int asha_trials = -1;  // default: min(trials, 100000); 0: no asha part
  int asha_decisions = 0;
  bool skip_search = false, skip_coordinator = false;
  std::string search_strategy = "asha";
  bool per_group_plans = false;
  double budget_gpu_hours = 0;
  bool full_plans = false;
  std::string search_extra;
  int refine_hold = -1;  // default: min(trials / 10, 2000)
};

constexpr char kAshaSearch[] =
    "search: {strategy: asha, metric: ood_acc, min_steps: 300, reduction: 3, "
    "group_by: [M, attention]}\n";
constexpr char kMedianSearch[] =
    "search: {strategy: median, metric: ood_acc, min_steps: 300, "
    "group_by: [M, attention]}\n";

// The asha part of the coordinator bench: an adaptive sweep of `n` points
// (priority 10, so its trials lease before the grid's), then `live` of its
// trials each report the search metric at the first rung (planned by the
// scheduler) and complete, each followed by the dashboard's refresh of an
// adaptive sweep: analysis, curves, first page and the search summary
// (GET /api/sweeps/{sweep}/search, which the page reads on every refresh).
int AshaRefresh(smoe::coordinator::Scheduler* sched,
                smoe::store::ExperimentStore* store, int n, int live,
                int decisions,
                const std::function<bool(const std::string&, double*)>& get) {
  const auto t0 = Clock::now();
  auto sub = sched->SubmitSweep(
      SweepYaml("asha", n, absl::StrCat("priority: 10\n", kAshaSearch)), false);
  if (!sub.ok()) {
    std::fprintf(stderr, "asha submit: %s\n", sub.status().ToString().c_str());
    return 1;
  }
  const double submit_s = Ms(Clock::now() - t0) / 1000;
  if (decisions > 0) {
    auto trials = sched->ListTrials("asha");
    if (!trials.ok() || trials->empty()) return 1;
    const auto d0 = Clock::now();
    for (int done = 0; done < decisions;) {
      smoe::store::WriteBatch batch;
      for (int j = 0; j < 10000 && done < decisions; ++j, ++done) {
        smoe::store::DecisionRecord d;
        d.sweep_id = "asha";
        d.trial_id =
            (*trials)[static_cast<size_t>(done) % trials->size()].trial_id;
        d.action = "promote";
        d.group = "M=1 attention=softmax";
        d.rung = 0;
        d.step = 300;
        d.value = 0.5;
        d.cutoff = 0.4;
        d.reason = "synthetic (bench)";
        d.at = absl::Now();
        batch.decisions.push_back(std::move(d));
      }
      if (!store->Commit(batch).ok()) return 1;
    }
    std::printf("asha decisions: %d committed in %.2f s\n", decisions,
                Ms(Clock::now() - d0) / 1000);
  }
  smoe::coordinator::WorkerInfo wi;
  wi.hostname = "asha";
  wi.slots = 1024;
  const std::string worker = sched->Register(wi)->worker_id;
  auto held = sched->Lease(worker, live, 0);
  if (!held.ok()) return 1;
  std::vector<double> per_event, search_ms;
  int64_t i = 0;
  for (const auto& g : *held) {
    if (g.trial_id.rfind("asha/", 0) != 0) continue;
    smoe::store::MetricRecord m;
    m.name = "eval/ood_acc";
    m.step = 300;
    m.value = 0.3 + 0.001 * static_cast<double>((i * 37) % 100);
    // A stopped trial's completion is refused: fine, the change happened.
    (void)sched->ReportMetrics(worker, g.trial_id, g.attempt, {m});
    (void)sched->Complete(worker, g.trial_id, g.attempt, Results(i++), 12.5);
    const auto e0 = Clock::now();
    for (const char* path :
         {"/api/sweeps/asha/analysis?metric=ood_acc",
          "/api/sweeps/asha/curves?metric=test_acc",
          "/api/sweeps/asha?limit=50", "/api/sweeps/asha/search"}) {
      double ms = 0;
      if (!get(path, &ms)) return 1;
      if (absl::EndsWith(path, "/search")) search_ms.push_back(ms);
    }
    per_event.push_back(Ms(Clock::now() - e0));
  }
  if (!per_event.empty()) {
    std::printf("asha first refresh (cold): %.2f ms; first /search: %.2f ms\n",
                per_event.front(), search_ms.front());
  }
  std::printf(
      "asha sweep (%lld trials, submitted in %.2f s), %zu changes (report + "
      "complete): the four requests of a refresh p50 %.2f p95 %.2f max %.2f "
      "ms; /search alone p50 %.2f p95 %.2f ms\n"
      "row-asha: | %d | %.2f ms | %.2f ms | %.2f ms |\n",
      static_cast<long long>(sub->sweep.counts.total()), submit_s,
      per_event.size(), Percentile(per_event, 0.5), Percentile(per_event, 0.95),
      Percentile(per_event, 1.0), Percentile(search_ms, 0.5),
      Percentile(search_ms, 0.95), n, Percentile(per_event, 0.5),
      Percentile(per_event, 0.95), Percentile(search_ms, 0.95));
  return per_event.empty() ? 1 : 0;
}

int Coordinator(const Options& opt) {
  const std::string dir =
      (fs::temp_directory_path() / absl::StrCat("smoe-scale-bench-", getpid()))
          .string();
  fs::remove_all(dir);
  const int hold = std::min(opt.hold, opt.trials / 2);
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) _exit(Setup(dir, opt.trials, hold));
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;

  const double rss0 = RssMb();
  ServerOptions o;
  o.data_dir = dir;
  o.listen = "127.0.0.1:0";
  o.http_listen = "127.0.0.1:0";
  o.http_required = true;
  // A million-point grid is above the default sweep-file limit (100,000);
  // so is a million-point asha sweep (--asha-trials).
  o.scheduler.parse.max_points =
      std::max<int64_t>({100000, opt.trials, opt.asha_trials});
  const auto t0 = Clock::now();
  auto server = CoordinatorServer::Start(o);
  const double restart_s = Ms(Clock::now() - t0) / 1000;
  if (!server.ok()) {
    std::fprintf(stderr, "restart: %s\n", server.status().ToString().c_str());
    return 1;
  }
  const double rss = RssMb();
  const double db_mb = FileMb(dir + "/smoe.db") + FileMb(dir + "/smoe.db-wal");
  std::printf(
      "restart: %.2f s; RSS %.0f MB after it (%.0f MB before); SQLite %.0f "
      "MB\n",
      restart_s, rss, rss0, db_mb);
  double heap = 0;
  PrintMemory("after the restart", &heap);

  auto* sched = (*server)->scheduler();
  httplib::Client client("127.0.0.1", (*server)->http_port());
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);
  client.set_read_timeout(600, 0);
  const httplib::Headers auth = {
      {"Authorization", "Bearer " + (*server)->token()}};
  std::function<bool(const std::string&, double*)> get =
      [&](const std::string& path, double* ms) {
        const auto s = Clock::now();
        auto r = client.Get(path.c_str(), auth);
        *ms = Ms(Clock::now() - s);
        if (!r || r->status != 200) {
          std::fprintf(stderr, "%s: %d\n", path.c_str(), r ? r->status : -1);
          return false;
        }
        return true;
      };
  double first_page = 0, curves_cold = 0;
  if (!get("/api/sweeps/bench?limit=50", &first_page)) return 1;
  PrintMemory("after the first page (the read model's snapshot)", &heap);
  if (!get("/api/sweeps/bench/curves?metric=ood_acc", &curves_cold)) return 1;
  PrintMemory("after the cold curves (one aggregator)", &heap);
  std::printf("first page cold: %.1f ms; curves cold: %.1f ms\n", first_page,
              curves_cold);

  smoe::coordinator::WorkerInfo wi;
  wi.hostname = "bench";
  wi.slots = 1024;
  const std::string worker = sched->Register(wi)->worker_id;
  int64_t next = 0;
  std::vector<double> per_request, per_event;
  auto held = sched->Lease(worker, opt.live, 0);
  if (!held.ok()) return 1;
  for (const auto& g : *held) {
    (void)sched->Complete(worker, g.trial_id, g.attempt, Results(next++), 12.5);
    const auto e0 = Clock::now();
    for (const char* path : {"/api/sweeps/bench/analysis?metric=ood_acc",
                             "/api/sweeps/bench/curves?metric=test_acc",
                             "/api/sweeps/bench?limit=50"}) {
      double ms = 0;
      if (!get(path, &ms)) return 1;
      per_request.push_back(ms);
    }
    per_event.push_back(Ms(Clock::now() - e0));
  }
  std::printf(
      "live (%zu completions): one request p50 %.2f p95 %.2f ms; the three "
      "requests of a refresh p50 %.2f p95 %.2f max %.2f ms\n",
      held->size(), Percentile(per_request, 0.5), Percentile(per_request, 0.95),
      Percentile(per_event, 0.5), Percentile(per_event, 0.95),
      Percentile(per_event, 1.0));
  PrintMemory("after the live refreshes (two more queries)", &heap);
  std::vector<double> uncached;
  for (int i = 0; i < opt.requests; ++i) {
    double ms = 0;
    if (!get(absl::StrCat("/api/sweeps/bench/curves?metric=test_acc&bootstrap=",
                          1001 + i),
             &ms)) {
      return 1;
    }
    uncached.push_back(ms);
  }
  std::printf("uncached curves (new query each time): p50 %.1f p95 %.1f ms\n",
              Percentile(uncached, 0.5), Percentile(uncached, 0.95));
  // The read model's snapshot and aggregators are loaded by now.
  PrintMemory("after the uncached curves (a new query each)", &heap);
  std::printf("RSS after the dashboard reads: %.0f MB\n", RssMb());

  std::vector<double> rates;
  for (int nw : opt.workers) {
    std::atomic<bool> stop{false};
    std::atomic<int64_t> completed{0};
    std::vector<std::string> ids;
    for (int i = 0; i < nw; ++i) {
      smoe::coordinator::WorkerInfo w;
      w.hostname = absl::StrCat("sim", i);
      w.slots = 1;
      ids.push_back(sched->Register(w)->worker_id);
    }
    std::vector<std::thread> threads;
    const auto s = Clock::now();
    for (int i = 0; i < nw; ++i) {
      threads.emplace_back([&, i] {
        int64_t k = i;
        while (!stop.load()) {
          auto g = sched->Lease(ids[i], 1, 0);
          if (!g.ok() || g->empty()) break;
          if (sched
                  ->Complete(ids[i], (*g)[0].trial_id, (*g)[0].attempt,
                             Results(k), 1.0)
                  .ok()) {
            ++completed;
          }
          k += nw;
        }
      });
    }
    // Each worker count gets its share of the held trials, so that the
    // queue never runs dry mid-measurement.
    const int64_t budget = std::max<int64_t>(
        1, (hold - opt.live) / static_cast<int64_t>(opt.workers.size()));
    while (Ms(Clock::now() - s) < opt.seconds * 1000 &&
           completed.load() < budget) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    stop = true;
    for (auto& t : threads) t.join();
    const double el = Ms(Clock::now() - s) / 1000;
    rates.push_back(completed.load() / el);
    std::printf("lease+complete, %d workers: %.0f/s (%lld in %.2f s)\n", nw,
                rates.back(), static_cast<long long>(completed.load()), el);
  }
  std::printf(
      "row: | %d | %.0f MB | %.2f s | %s | %.1f ms | %.1f ms | %.1f ms | "
      "%.0f MB |\n",
      opt.trials, rss, restart_s,
      [&] {
        std::string s;
        for (double r : rates)
          absl::StrAppend(&s, s.empty() ? "" : " / ", static_cast<int64_t>(r));
        return s;
      }()
          .c_str(),
      Percentile(per_event, 0.95), Percentile(uncached, 0.95), first_page,
      db_mb);
  const int asha =
      opt.asha_trials >= 0 ? opt.asha_trials : std::min(opt.trials, 100000);
  if (asha > 0 && AshaRefresh(sched, (*server)->store(), asha, opt.live,
                              opt.asha_decisions, get) != 0) {
    return 1;
  }
  (*server)->Shutdown();
  server->reset();
  fs::remove_all(dir);
  return 0;
}

// The scheduler's own search-planning time since `before`, in ms (the call
// around it also commits, mirrors and applies).
double PlanMs(smoe::coordinator::Scheduler& sched,
              const smoe::coordinator::Scheduler::SearchPlanTiming& before) {
  return absl::ToDoubleMilliseconds(sched.GetSearchPlanTiming().total -
                                    before.total);
}

// --search-strategy refine: a refine sweep whose group count grows with the
// sweep and whose groups stay small (batch_size is a grid axis in group_by).
// `groups_bs` batch_size values x attention x M x top_k x 3 seeds.
std::string RefineYaml(int batch_sizes, const std::string& extra) {
  std::string bs;
  for (int b = 0; b < batch_sizes; ++b) {
    absl::StrAppend(&bs, b ? ", " : "", 16 + b);
  }
  std::string search =
      "search: {strategy: refine, metric: ood_acc, axis: top_k, bounds: [1, "
      "8], group_by: [M, attention, batch_size], add_seeds: 1}\n";
  if (!extra.empty()) {
    search =
        absl::StrCat(search.substr(0, search.rfind('}')), ", ", extra, "}\n");
  }
  // batch_size first: the last trials by ordinal (the ones held pending)
  // are the groups of the last batch sizes.
  return absl::StrCat(
      "name: refine\nkind: sraven\ngrid:\n  batch_size: [", bs,
      "]\n  attention: [softmax, hyla]\n  M: [1, 2, 3, 4, 5]\n"
      "  top_k: [1, 2, 4, 8]\nfixed: {num_experts: 8, steps: 2700}\n"
      "seeds: [0, 1, 2]\n",
      search);
}

// A trial's final ood_acc: per group a peak at top_k = min(8, 2 M), a
// per-(group, seed) offset (paired over top_k, as refine's bootstrap
// assumes) and a little per-trial noise.
double RefineValue(const std::string& params_json, int64_t seed) {
  const nlohmann::json p = nlohmann::json::parse(params_json);
  const int64_t m = p.value("M", 1), k = p.value("top_k", 1);
  const int64_t bs = p.value("batch_size", 16);
  const bool hyla = p.value("attention", "") == "hyla";
  const double best = std::log2(std::min<double>(8, 2.0 * m));
  const double d = std::log2(static_cast<double>(k)) - best;
  const uint64_t h =
      static_cast<uint64_t>(bs * 7919 + m * 131 + seed * 17 + (hyla ? 3 : 0));
  const double seed_offset = 0.004 * (static_cast<double>(h % 7) - 3) / 3;
  const double noise =
      0.001 * static_cast<double>((h * 31 + static_cast<uint64_t>(k)) % 5);
  return 0.9 - 0.05 * static_cast<double>(m) / 5 - 0.03 * d * d -
         (hyla ? 0.01 : 0) + seed_offset + noise;
}

// Refine planning per change: a refine sweep of n points whose trials but
// the last `hold` (by ordinal) are marked succeeded straight in the store
// (with the search metric at every asha rung when early_stop: asha), the
// scheduler restarted on that store (timed: its load plans from every
// trial), 256 trials leased, then `search-reports` of them report the
// search metric at the first rung (early_stop: asha only; timed) and
// complete (timed).
int Refine(const Options& opt) {
  const int n = opt.search_trials > 0 ? opt.search_trials : opt.trials;
  const int batch_sizes = std::max(1, (n + 60) / 120);
  smoe::store::InMemoryStore store;
  smoe::FakeClock clock;
  smoe::coordinator::SchedulerOptions so;
  so.lease_timeout = absl::Hours(1);
  so.parse.max_points = std::max<int64_t>(100000, n);
  so.incremental_stopping = !opt.per_group_plans;
  so.incremental_search = !opt.full_plans;
  auto sched_or = smoe::coordinator::Scheduler::Create(&store, &clock, so);
  if (!sched_or.ok()) return 1;
  const auto t0 = Clock::now();
  auto sub = (*sched_or)->SubmitSweep(RefineYaml(batch_sizes, opt.search_extra),
                                      false);
  if (!sub.ok()) {
    std::fprintf(stderr, "submit: %s\n", sub.status().ToString().c_str());
    return 1;
  }
  const double submit_s = Ms(Clock::now() - t0) / 1000;
  const smoe::sweeps::SweepSpec spec = sub->sweep.spec;
  const std::string sweep_id = sub->sweep.record.sweep_id;
  const bool asha = spec.search.early_stop == "asha";
  std::vector<int64_t> rungs;
  if (asha) {
    const int64_t max_steps = spec.search.max_steps > 0
                                  ? spec.search.max_steps
                                  : spec.fixed.value("steps", int64_t{2700});
    for (int64_t s = spec.search.min_steps; s > 0 && s <= max_steps;
         s *= std::max<int64_t>(2, spec.search.reduction)) {
      rungs.push_back(s);
    }
  }
  // Nothing leased yet: the restart below sees the same store.
  sched_or->reset();

  auto list = store.ListTrials(sweep_id);
  if (!list.ok()) return 1;
  std::sort(list->begin(), list->end(),
            [](const auto& a, const auto& b) { return a.ordinal < b.ordinal; });
  const int64_t total = static_cast<int64_t>(list->size());
  const int64_t hold = std::min<int64_t>(
      total, opt.refine_hold >= 0 ? opt.refine_hold
                                  : std::min<int64_t>(total / 10, 2000));
  const int64_t done = total - hold;
  const auto t1 = Clock::now();
  const absl::Time now = clock.Now();
  smoe::store::WriteBatch b;
  smoe::store::WorkerRecord wr;
  wr.worker_id = "bench-setup";
  wr.hostname = "bench";
  wr.registered_at = wr.last_heartbeat_at = now;
  b.workers.push_back(wr);
  for (int64_t i = 0; i < done; ++i) {
    smoe::store::TrialRecord t = (*list)[static_cast<size_t>(i)];
    const double v = RefineValue(t.params_json, t.seed);
    t.state = smoe::store::TrialState::kSucceeded;
    t.attempt = 1;
    t.updated_at = now;
    smoe::store::AttemptRecord a;
    a.trial_id = t.trial_id;
    a.attempt = 1;
    a.worker_id = "bench-setup";
    a.outcome = smoe::store::AttemptOutcome::kSucceeded;
    a.started_at = now - absl::Seconds(12);
    a.ended_at = now;
    for (int64_t step : rungs) {
      smoe::store::MetricRecord m;
      m.trial_id = t.trial_id;
      m.step = step;
      m.name = "eval/ood_acc";
      m.value = v;
      m.attempt = 1;
      b.metrics.push_back(std::move(m));
    }
    b.results.push_back({t.trial_id, 12.5, {{"ood_acc", v}}});
    b.trials.push_back(std::move(t));
    b.attempts.push_back(std::move(a));
    if (b.trials.size() == 10000 || i + 1 == done) {
      absl::Status s = store.Commit(b);
      if (!s.ok()) {
        std::fprintf(stderr, "setup commit: %s\n", s.ToString().c_str());
        return 1;
      }
      b = smoe::store::WriteBatch();
    }
  }
  const double setup_s = Ms(Clock::now() - t1) / 1000;

  // The restart: the scheduler's load plans refine from every trial (new
  // neighbours for every finished group, their group decisions).
  const auto t2 = Clock::now();
  sched_or = smoe::coordinator::Scheduler::Create(&store, &clock, so);
  const double restart_s = Ms(Clock::now() - t2) / 1000;
  if (!sched_or.ok()) {
    std::fprintf(stderr, "restart: %s\n", sched_or.status().ToString().c_str());
    return 1;
  }
  auto& sched = **sched_or;
  auto view = sched.GetSweep(sweep_id);
  if (!view.ok()) return 1;
  auto decisions = store.ListDecisions(sweep_id, 0, 0);
  const size_t logged = decisions.ok() ? decisions->size() : 0;
  std::printf(
      "refine sweep: %lld trials submitted (%d groups of <= 12 + refine's "
      "points; submit %.1f s in memory), %lld marked succeeded (setup %.1f "
      "s, not measured), %lld held; restart (load, plan from every trial) "
      "%.2f s: %d trials, %d pending, %zu decisions logged\n",
      static_cast<long long>(total), batch_sizes * 10, submit_s,
      static_cast<long long>(done), setup_s, static_cast<long long>(hold),
      restart_s, view->counts.total(), view->counts.pending, logged);

  smoe::coordinator::WorkerInfo wi;
  wi.hostname = "refine";
  // Every pending trial leased (a worker per trial in a real sweep); the
  // points refine added at the restart are measured first: their (group,
  // seed) races hold the finished points' rung values, so with early_stop:
  // asha a winning report continues and completes, where the first reports
  // of a held group's fresh race would be paused until 3 reach the rung.
  // (Workers of 1024 slots, the most one registers, until all are leased.)
  wi.slots = 1024;
  std::vector<std::pair<std::string, smoe::coordinator::LeaseGrant>> grants;
  for (int left = view->counts.pending; left > 0; left -= wi.slots) {
    const std::string w = sched.Register(wi)->worker_id;
    auto got = sched.Lease(w, wi.slots, 0);
    if (!got.ok()) return 1;
    for (auto& g : *got) grants.emplace_back(w, std::move(g));
  }
  {
    std::unordered_set<std::string> submitted;
    for (const auto& t : *list) submitted.insert(t.trial_id);
    std::stable_partition(grants.begin(), grants.end(), [&](const auto& g) {
      return !submitted.count(g.second.trial_id);
    });
  }
  std::vector<double> complete_ms, report_ms, complete_plan, report_plan;
  double first_complete = -1, first_report = -1;
  int refused = 0, changes = 0;
  for (const auto& [w, g] : grants) {
    if (changes >= opt.search_reports) break;
    const double v = RefineValue(g.params_json, g.seed);
    if (asha) {
      // The best value of its (group, seed) race at the first rung, so that
      // asha promotes it and it completes (a loser would be paused and its
      // completion refused).
      smoe::store::MetricRecord m;
      m.name = "eval/ood_acc";
      m.step = rungs.front();
      m.value = 0.99;
      const auto p = sched.GetSearchPlanTiming();
      const auto s = Clock::now();
      absl::Status st = sched.ReportMetrics(w, g.trial_id, g.attempt, {m});
      const double ms = Ms(Clock::now() - s);
      if (first_report < 0) {
        first_report = ms;
      } else {
        report_ms.push_back(ms);
        report_plan.push_back(PlanMs(sched, p));
      }
      if (!st.ok() && !absl::IsFailedPrecondition(st)) {
        std::fprintf(stderr, "report: %s\n", st.ToString().c_str());
        return 1;
      }
    }
    const auto p = sched.GetSearchPlanTiming();
    const auto s = Clock::now();
    absl::Status st =
        sched.Complete(w, g.trial_id, g.attempt, {{"ood_acc", v}}, 12.5);
    const double ms = Ms(Clock::now() - s);
    const double plan_ms = PlanMs(sched, p);
    if (absl::IsFailedPrecondition(st)) {
      ++refused;  // pruned by its report: no plan, not counted
      continue;
    }
    if (!st.ok()) {
      std::fprintf(stderr, "complete: %s\n", st.ToString().c_str());
      return 1;
    }
    ++changes;
    if (first_complete < 0) {
      first_complete = ms;
    } else {
      complete_ms.push_back(ms);
      complete_plan.push_back(plan_ms);
    }
  }
  std::printf(
      "refine planning per change (%s%s%s%s, %lld trials, %zu leased): "
      "completion p50 %.3f p95 %.3f ms over %zu (the first after the restart "
      "%.1f ms; %d refused: pruned by their report; the plan itself p50 "
      "%.3f p95 %.3f ms)",
      opt.full_plans ? "plans from every trial" : "incremental_search",
      opt.per_group_plans ? ", per-group plans" : "",
      opt.search_extra.empty() ? "" : ", ", opt.search_extra.c_str(),
      static_cast<long long>(view->counts.total()), grants.size(),
      Percentile(complete_ms, 0.5), Percentile(complete_ms, 0.95),
      complete_ms.size(), first_complete, refused,
      Percentile(complete_plan, 0.5), Percentile(complete_plan, 0.95));
  if (asha) {
    std::printf(
        "; search-metric report p50 %.3f p95 %.3f ms over %zu (the first "
        "%.1f ms; the plan itself p50 %.3f p95 %.3f ms)",
        Percentile(report_ms, 0.5), Percentile(report_ms, 0.95),
        report_ms.size(), first_report, Percentile(report_plan, 0.5),
        Percentile(report_plan, 0.95));
  }
  std::printf("\nrow-refine: | %d | %.3f ms | %.3f ms | ", n,
              Percentile(complete_ms, 0.5), Percentile(complete_ms, 0.95));
  if (asha) {
    std::printf("%.3f ms | %.3f ms |\n", Percentile(report_ms, 0.5),
                Percentile(report_ms, 0.95));
  } else {
    std::printf("- | - |\n");
  }
  return complete_ms.empty() && first_complete < 0 ? 1 : 0;
}

int Search(const Options& opt) {
  if (opt.search_strategy == "refine") return Refine(opt);
  const int n = opt.search_trials > 0 ? opt.search_trials : opt.trials;
  smoe::store::InMemoryStore store;
  smoe::FakeClock clock;
  smoe::coordinator::SchedulerOptions so;
  so.lease_timeout = absl::Hours(1);
  so.parse.max_points = std::max<int64_t>(100000, n);
  so.incremental_stopping = !opt.per_group_plans;
  so.incremental_search = !opt.full_plans;
  const bool median = opt.search_strategy == "median";
  std::string search = median ? kMedianSearch : kAshaSearch;
  if (opt.budget_gpu_hours > 0) {
    search = absl::StrCat(search.substr(0, search.rfind('}')),
                          ", budget_gpu_hours: ", opt.budget_gpu_hours, "}\n");
  }
  if (!opt.search_extra.empty()) {
    search = absl::StrCat(search.substr(0, search.rfind('}')), ", ",
                          opt.search_extra, "}\n");
  }
  auto sched_or = smoe::coordinator::Scheduler::Create(&store, &clock, so);
  if (!sched_or.ok()) return 1;
  auto& sched = **sched_or;
  const auto t0 = Clock::now();
  auto sub = sched.SubmitSweep(SweepYaml("asha", n, search), false);
  if (!sub.ok()) {
    std::fprintf(stderr, "submit: %s\n", sub.status().ToString().c_str());
    return 1;
  }
  const double submit_s = Ms(Clock::now() - t0) / 1000;
  smoe::coordinator::WorkerInfo wi;
  wi.hostname = "search";
  wi.slots = 256;
  const std::string w = sched.Register(wi)->worker_id;
  auto grants = sched.Lease(w, 256, 0);
  if (!grants.ok()) return 1;
  std::vector<double> lat, plan;
  double first_ms = -1;  // the first plan after a start is from every trial
  int64_t i = 0;
  for (const auto& g : *grants) {
    if (static_cast<int>(lat.size()) >= opt.search_reports) break;
    smoe::store::MetricRecord m;
    m.name = "eval/ood_acc";
    m.step = 300;
    m.value = 0.3 + 0.001 * static_cast<double>((i++ * 37) % 100);
    const auto p = sched.GetSearchPlanTiming();
    const auto s = Clock::now();
    absl::Status st = sched.ReportMetrics(w, g.trial_id, g.attempt, {m});
    const double ms = Ms(Clock::now() - s);
    if (first_ms < 0) {
      first_ms = ms;
    } else {
      lat.push_back(ms);
      plan.push_back(PlanMs(sched, p));
    }
    if (!st.ok() && !absl::IsFailedPrecondition(st)) {
      std::fprintf(stderr, "report: %s\n", st.ToString().c_str());
      return 1;
    }
  }
  std::printf(
      "search planning per report (%s%s%s%s%s%s, %lld trials, submit %.1f s "
      "in "
      "memory; the first report after the start %.1f ms): p50 %.3f p95 %.3f "
      "ms over %zu more reports (the plan itself p50 %.4f p95 %.4f ms)\n"
      "row-search: | %d | %.3f ms | %.3f ms |\n",
      opt.search_strategy.c_str(),
      opt.per_group_plans ? ", per-group plans" : "",
      opt.budget_gpu_hours > 0 ? ", budget_gpu_hours" : "",
      opt.full_plans ? ", plans from every trial" : "",
      opt.search_extra.empty() ? "" : ", ", opt.search_extra.c_str(),
      static_cast<long long>(sub->sweep.counts.total()), submit_s, first_ms,
      Percentile(lat, 0.5), Percentile(lat, 0.95), lat.size(),
      Percentile(plan, 0.5), Percentile(plan, 0.95), n, Percentile(lat, 0.5),
      Percentile(lat, 0.95));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--trials") {
      opt.trials = std::atoi(next().c_str());
    } else if (a == "--hold") {
      opt.hold = std::atoi(next().c_str());
    } else if (a == "--live") {
      opt.live = std::atoi(next().c_str());
    } else if (a == "--requests") {
      opt.requests = std::atoi(next().c_str());
    } else if (a == "--seconds") {
      opt.seconds = std::atof(next().c_str());
    } else if (a == "--workers") {
      opt.workers.clear();
      for (absl::string_view p : absl::StrSplit(next(), ',')) {
        int v = 0;
        if (absl::SimpleAtoi(p, &v) && v > 0) opt.workers.push_back(v);
      }
    } else if (a == "--search-trials") {
      opt.search_trials = std::atoi(next().c_str());
    } else if (a == "--asha-trials") {
      opt.asha_trials = std::atoi(next().c_str());
    } else if (a == "--asha-decisions") {
      opt.asha_decisions = std::atoi(next().c_str());
    } else if (a == "--search-reports") {
      opt.search_reports = std::atoi(next().c_str());
    } else if (a == "--skip-search") {
      opt.skip_search = true;
    } else if (a == "--skip-coordinator") {
      opt.skip_coordinator = true;
    } else if (a == "--search-strategy") {
      opt.search_strategy = next();
      if (opt.search_strategy != "asha" && opt.search_strategy != "median" &&
          opt.search_strategy != "refine") {
        std::fprintf(stderr, "--search-strategy: asha, median or refine\n");
        return 64;
      }
    } else if (a == "--per-group-plans") {
      opt.per_group_plans = true;
    } else if (a == "--budget-gpu-hours") {
      opt.budget_gpu_hours = std::atof(next().c_str());
    } else if (a == "--full-plans") {
      opt.full_plans = true;
    } else if (a == "--search-extra") {
      opt.search_extra = next();
    } else if (a == "--refine-hold") {
      opt.refine_hold = std::atoi(next().c_str());
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--trials N] [--hold N] [--live N] [--requests "
          "N] [--seconds S] [--workers 16,64,256] [--search-trials "
          "N] [--search-reports N] [--asha-trials N] "
          "[--asha-decisions N] [--skip-search] "
          "[--skip-coordinator] [--search-strategy asha|median|refine] "
          "[--per-group-plans] [--budget-gpu-hours H] "
          "[--full-plans] [--search-extra KEYS] [--refine-hold N]\n",
          argv[0]);
      return 64;
    }
  }
  std::printf("# scale benchmark: %d trials\n\n", opt.trials);
  if (!opt.skip_coordinator && Coordinator(opt) != 0) return 1;
  if (!opt.skip_search && Search(opt) != 0) return 1;
  return 0;
}
