// Copyright 2026 SMoE Lab authors.
//
// Dashboard benchmark (issue 6, item 5).
//
//   smoe_bench_dashboard [--trials 10000] [--points 50] [--requests 200]
//                        [--live 50] [--render] [--keep]
//
// Builds a sweep of `trials` trials (attention x M x top_k x seeds, every
// trial succeeded with results and `points` metric points) in an in-process
// CoordinatorServer (SQLite, synchronous=NORMAL for the setup), then
// 1. measures the JSON API over loopback HTTP: per endpoint the first
//    (cold: summary snapshot parsed, aggregation + bootstrap run) request and
//    `requests` repeated ones (p50 / p95 / max), plus uncached aggregation
//    (a new query each time, so the response cache misses);
// 2. live: `live` trials are held back; each completes in turn and the
//    dashboard's refresh (analysis, test-accuracy curves, first table page)
//    is timed right after it - what a browser pays per SSE event on a
//    running sweep: the snapshot refresh reads the changed row only and the
//    aggregation recomputes the changed cell only. The full recomputation
//    (the uncached row of step 1) is the baseline.
// 2. with --render, measures the sweep page's first render in headless
//    Chromium (bench/dashboard_render.mjs: navigation start to the headline
//    charts drawn), cold browser and warm.
//
// Targets: API p95 < 100 ms, first render < 1 s.
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "coordinator/server.h"

namespace {

namespace fs = std::filesystem;
using smoe::coordinator::CoordinatorServer;
using smoe::coordinator::ServerOptions;

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  const size_t i = static_cast<size_t>(q * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 10000, points = 50, requests = 200, live = 50;
  bool render = false, keep = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--trials" && i + 1 < argc) {
      trials = std::atoi(argv[++i]);
    } else if (a == "--points" && i + 1 < argc) {
      points = std::atoi(argv[++i]);
    } else if (a == "--requests" && i + 1 < argc) {
      requests = std::atoi(argv[++i]);
    } else if (a == "--live" && i + 1 < argc) {
      live = std::atoi(argv[++i]);
    } else if (a == "--render") {
      render = true;
    } else if (a == "--keep") {
      keep = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--trials N] [--points N] [--requests N] "
                   "[--live N] [--render] [--keep]\n",
                   argv[0]);
      return 64;
    }
  }
  const int cells = 2 * 5 * 4;  // attention x M x top_k
  const int seeds = std::max(1, trials / cells);
  std::string seed_list;
  for (int s = 0; s < seeds; ++s) absl::StrAppend(&seed_list, s ? ", " : "", s);
  const std::string yaml = absl::StrCat(
      "name: bench\nkind: sraven\ngrid:\n  attention: [softmax, hyla]\n"
      "  M: [1, 2, 3, 4, 5]\n  top_k: [1, 2, 4, 8]\n"
      "fixed: {num_experts: 8, steps: 1000, batch_size: 64}\nseeds: [",
      seed_list, "]\n");

  const std::string dir =
      (fs::temp_directory_path() / absl::StrCat("smoe-dash-bench-", getpid()))
          .string();
  fs::remove_all(dir);
  ServerOptions o;
  o.data_dir = dir;
  o.listen = "127.0.0.1:0";
  o.http_listen = "127.0.0.1:0";
  o.http_required = true;
  o.synchronous = smoe::store::SqliteOptions::Synchronous::kNormal;
  auto server = CoordinatorServer::Start(o);
  if (!server.ok()) {
    std::fprintf(stderr, "start: %s\n", server.status().ToString().c_str());
    return 1;
  }
  auto* sched = (*server)->scheduler();
  const auto t0 = std::chrono::steady_clock::now();
  auto sub = sched->SubmitSweep(yaml, false);
  if (!sub.ok()) {
    std::fprintf(stderr, "submit: %s\n", sub.status().ToString().c_str());
    return 1;
  }
  smoe::coordinator::WorkerInfo w;
  w.hostname = "bench";
  w.slots = 1024;  // the most a worker may register; leases come in batches
  const std::string worker = sched->Register(w)->worker_id;
  const int total = static_cast<int>(sub->sweep.counts.total());
  live = std::max(0, std::min(live, total / 2));
  int done = 0;
  auto complete = [&](const smoe::coordinator::LeaseGrant& g) {
    std::vector<smoe::store::MetricRecord> m;
    for (int p = 0; p < points; ++p) {
      m.push_back({g.trial_id, (p + 1) * 20, "train/loss",
                   2.0 / (1 + p) + 0.001 * (done % 7)});
    }
    (void)sched->ReportMetrics(worker, g.trial_id, g.attempt, m);
    const double ood = 0.5 + 0.05 * (done % 9) / 9.0 + 0.001 * (done % 13);
    (void)sched->Complete(worker, g.trial_id, g.attempt,
                          {{"ood_acc", ood},
                           {"test_acc", ood + 0.05},
                           {"train_loss", 1 - ood},
                           {"steps_per_s", 40},
                           {"tokens_per_s", 40 * 64 * 9}},
                          12.5);
    ++done;
  };
  while (done < total - live) {
    auto leases = sched->Lease(worker, std::min(1024, total - live - done), 0);
    if (!leases.ok() || leases->empty()) break;
    for (const auto& g : *leases) complete(g);
  }
  const double setup_s = Ms(std::chrono::steady_clock::now() - t0) / 1000;
  const std::string token = (*server)->token();
  const int port = (*server)->http_port();
  std::printf(
      "# dashboard benchmark: %d trials x %d metric points (setup %.1f s)\n\n",
      done, points, setup_s);

  httplib::Client client("127.0.0.1", port);
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);  // as browsers and curl do
  client.set_read_timeout(60, 0);
  const httplib::Headers auth = {{"Authorization", "Bearer " + token}};
  const std::string some_trial = sub->sweep.record.sweep_id + "/" + [&] {
    auto rows = (*server)->store()->ListSummaries("bench");
    return (*rows)[done / 2].trial_id.substr(6);
  }();
  struct Endpoint {
    std::string name, path;
  };
  const std::vector<Endpoint> endpoints = {
      {"GET /api/sweeps", "/api/sweeps"},
      {"GET /api/sweeps/bench (first page of 50)",
       "/api/sweeps/bench?limit=50"},
      {"GET /api/sweeps/bench sorted by -ood_acc, filtered M=3",
       "/api/sweeps/bench?limit=50&sort=-r.ood_acc&q=M%3D3"},
      {"GET curves (ood_acc, x=top_k, series=M, facet=attention)",
       "/api/sweeps/bench/curves?metric=ood_acc"},
      {"GET analysis (curves + optimal k + E(k,N) fit)",
       "/api/sweeps/bench/analysis?metric=ood_acc"},
      {"GET trial metrics (50 points)",
       absl::StrCat("/api/trials/", some_trial, "/metrics")},
  };
  std::printf(
      "| endpoint | first (ms) | p50 (ms) | p95 (ms) | max (ms) | bytes |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: |\n");
  std::vector<double> all;
  for (const Endpoint& e : endpoints) {
    std::vector<double> lat;
    double first = 0;
    size_t bytes = 0;
    for (int i = 0; i <= requests; ++i) {
      const auto s = std::chrono::steady_clock::now();
      auto r = client.Get(e.path.c_str(), auth);
      const double ms = Ms(std::chrono::steady_clock::now() - s);
      if (!r || r->status != 200) {
        std::fprintf(stderr, "%s: %d\n", e.path.c_str(), r ? r->status : -1);
        return 1;
      }
      bytes = r->body.size();
      if (i == 0) {
        first = ms;
      } else {
        lat.push_back(ms);
        all.push_back(ms);
      }
    }
    std::printf("| %s | %.1f | %.2f | %.2f | %.2f | %zu |\n", e.name.c_str(),
                first, Percentile(lat, 0.5), Percentile(lat, 0.95),
                Percentile(lat, 1.0), bytes);
  }
  // Uncached aggregation: a different bootstrap count each time misses the
  // response cache (the parsed snapshot is reused).
  {
    std::vector<double> lat;
    for (int i = 0; i < std::min(requests, 50); ++i) {
      const std::string p = absl::StrCat(
          "/api/sweeps/bench/curves?metric=test_acc&bootstrap=", 1000 + i);
      const auto s = std::chrono::steady_clock::now();
      auto r = client.Get(p.c_str(), auth);
      lat.push_back(Ms(std::chrono::steady_clock::now() - s));
      if (!r || r->status != 200) return 1;
    }
    std::printf(
        "| curves, uncached (new query each time, 1000 resamples) | - | %.2f | "
        "%.2f | %.2f | - |\n",
        Percentile(lat, 0.5), Percentile(lat, 0.95), Percentile(lat, 1.0));
  }
  std::printf("\nall cached endpoints: p95 %.2f ms over %zu requests\n",
              Percentile(all, 0.95), all.size());

  // Live: one completion, then the page's refresh requests.
  if (live > 0) {
    auto held = sched->Lease(worker, live, 0);
    if (!held.ok()) return 1;
    std::vector<double> per_request, per_event;
    for (const auto& g : *held) {
      complete(g);
      const auto e0 = std::chrono::steady_clock::now();
      for (const char* path : {"/api/sweeps/bench/analysis?metric=ood_acc",
                               "/api/sweeps/bench/curves?metric=test_acc",
                               "/api/sweeps/bench?limit=50"}) {
        const auto s = std::chrono::steady_clock::now();
        auto r = client.Get(path, auth);
        per_request.push_back(Ms(std::chrono::steady_clock::now() - s));
        if (!r || r->status != 200) return 1;
      }
      per_event.push_back(Ms(std::chrono::steady_clock::now() - e0));
    }
    std::printf(
        "\nlive: %zu completions, each followed by analysis + curves + first "
        "page\n\n| what | p50 (ms) | p95 (ms) | max (ms) |\n| --- | ---: | "
        "---: | ---: |\n| one request after a change | %.2f | %.2f | %.2f "
        "|\n| the three requests of one refresh | %.2f | %.2f | %.2f |\n",
        held->size(), Percentile(per_request, 0.5),
        Percentile(per_request, 0.95), Percentile(per_request, 1.0),
        Percentile(per_event, 0.5), Percentile(per_event, 0.95),
        Percentile(per_event, 1.0));
  }

  int rc = 0;
  if (render) {
    const std::string tokfile = dir + "/token";
    const char* src = std::getenv("SMOE_SOURCE_DIR");
    const std::string script =
        absl::StrCat(src ? src : ".", "/bench/dashboard_render.mjs");
    const std::string cmd = absl::StrCat(
        "node ", script, " http://127.0.0.1:", port, "/ ", tokfile, " bench");
    std::printf("\n");
    std::fflush(stdout);
    rc = std::system(cmd.c_str());
  }
  if (keep) {
    std::printf("\nserving http://127.0.0.1:%d/ (token in %s/token); Ctrl-C\n",
                port, dir.c_str());
    std::fflush(stdout);
    while (true) absl::SleepFor(absl::Seconds(60));
  }
  (*server)->Shutdown();
  fs::remove_all(dir);
  return rc == 0 ? 0 : 1;
}
