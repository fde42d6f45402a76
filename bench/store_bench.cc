// Copyright 2026 SMoE Lab authors.
//
// File: bench/store_bench.cc
//
// SqliteStore throughput, printed as a table:
//   * lease commits: one lease-sized batch per Commit (1 trial update + 1
//     attempt insert), synchronous FULL vs NORMAL;
//   * submit: one Commit creating a sweep of 100,000 trials, then reading them
//     back (ListTrials, ListSummaries: what a restarted coordinator and the
//     dashboard do).
//
// Usage: smoe_bench_store [--seconds 3] [--trials 100000] [DIR]
// (DIR defaults to a fresh directory in /tmp; put it on the disk the
// coordinator will use: fsync cost dominates FULL). --seconds: each lease
// configuration's window; --trials: the submitted sweep's size.

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "store/sqlite_store.h"

namespace smoe::store {
namespace {

constexpr int kLeaseTrials = 1000;
constexpr int kSubmitTrials = 100000;

TrialRecord Trial(int n) {
  TrialRecord t;
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016x", n * 2654435761u);
  t.trial_id = absl::StrCat("bench/", hex);
  t.sweep_id = "bench";
  t.ordinal = n;
  t.params_json = absl::StrCat(R"({"M":)", n % 5 + 1, R"(,"k":)", 1 << (n % 4),
                               R"(,"attention":"hyla"})");
  t.seed = n % 3;
  t.gpus = 1;
  t.created_at = absl::Now();
  t.updated_at = t.created_at;
  return t;
}

WriteBatch SweepBatch(int trials) {
  WriteBatch b;
  SweepRecord s;
  s.sweep_id = "bench";
  s.kind = "sraven";
  s.spec_yaml = "name: bench\n";
  s.created_at = absl::Now();
  b.sweeps.push_back(s);
  b.trials.reserve(trials);
  for (int i = 0; i < trials; ++i) b.trials.push_back(Trial(i));
  return b;
}

struct LeaseResult {
  int commits = 0;
  double per_second = 0;
  double p50_us = 0;
  double p99_us = 0;
};

// Commits lease batches for about `budget` of wall time (at least 50).
LeaseResult BenchLeases(const std::string& path,
                        SqliteOptions::Synchronous sync,
                        absl::Duration budget) {
  SqliteOptions options;
  options.synchronous = sync;
  auto store = SqliteStore::Open(path, options);
  if (!store.ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().ToString().c_str());
    exit(1);
  }
  if (absl::Status s = (*store)->Commit(SweepBatch(kLeaseTrials)); !s.ok()) {
    std::fprintf(stderr, "seed: %s\n", s.ToString().c_str());
    exit(1);
  }
  std::vector<double> latencies_us;
  const absl::Time start = absl::Now();
  for (int i = 0; absl::Now() - start < budget || i < 50; ++i) {
    WriteBatch b;
    TrialRecord t = Trial(i % kLeaseTrials);
    t.state = TrialState::kRunning;
    t.attempt = i / kLeaseTrials + 1;
    t.worker_id = absl::StrCat("w", i % 50);
    t.lease_expires_at = absl::Now() + absl::Seconds(30);
    b.trials.push_back(t);
    AttemptRecord a;
    a.trial_id = t.trial_id;
    a.attempt = t.attempt;
    a.worker_id = t.worker_id;
    a.started_at = absl::Now();
    b.attempts.push_back(a);
    const absl::Time t0 = absl::Now();
    if (absl::Status s = (*store)->Commit(b); !s.ok()) {
      std::fprintf(stderr, "commit: %s\n", s.ToString().c_str());
      exit(1);
    }
    latencies_us.push_back(absl::ToDoubleMicroseconds(absl::Now() - t0));
  }
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
  std::sort(latencies_us.begin(), latencies_us.end());
  LeaseResult r;
  r.commits = static_cast<int>(latencies_us.size());
  r.per_second = r.commits / elapsed;
  r.p50_us = latencies_us[latencies_us.size() / 2];
  r.p99_us = latencies_us[latencies_us.size() * 99 / 100];
  return r;
}

int Main(int argc, char** argv) {
  std::string dir;
  double seconds = 3;
  int submit_trials = kSubmitTrials;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (a == "--trials" && i + 1 < argc) {
      submit_trials = std::max(1, std::atoi(argv[++i]));
    } else {
      dir = a;
    }
  }
  const bool own_dir = dir.empty();
  if (!own_dir) {
    std::filesystem::create_directories(dir);
  } else {
    std::string tmpl = "/tmp/smoe_store_bench_XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) return 1;
    dir = tmpl;
  }
  std::printf("SqliteStore benchmark (dir %s)\n\n", dir.c_str());
  std::printf("%-34s %10s %12s %10s %10s\n", "lease commit (1 trial+1 attempt)",
              "commits", "commits/s", "p50 us", "p99 us");
  for (auto [name, sync] :
       {std::pair{"synchronous=FULL", SqliteOptions::Synchronous::kFull},
        std::pair{"synchronous=NORMAL", SqliteOptions::Synchronous::kNormal}}) {
    const std::string path = absl::StrCat(dir, "/lease_", name + 12, ".db");
    LeaseResult r = BenchLeases(path, sync, absl::Seconds(seconds));
    std::printf("%-34s %10d %12.0f %10.1f %10.1f\n", name, r.commits,
                r.per_second, r.p50_us, r.p99_us);
  }

  std::printf("\n%-34s %10s\n",
              absl::StrCat(submit_trials, "-trial sweep (FULL)").c_str(),
              "seconds");
  auto store = SqliteStore::Open(absl::StrCat(dir, "/submit.db"), {});
  if (!store.ok()) return 1;
  WriteBatch batch = SweepBatch(submit_trials);
  absl::Time t0 = absl::Now();
  if (!(*store)->Commit(batch).ok()) return 1;
  std::printf("%-34s %10.3f\n", "Commit (create sweep + trials)",
              absl::ToDoubleSeconds(absl::Now() - t0));
  t0 = absl::Now();
  auto trials = (*store)->ListTrials("bench");
  if (!trials.ok() || trials->size() != static_cast<size_t>(submit_trials))
    return 1;
  std::printf("%-34s %10.3f\n", "ListTrials",
              absl::ToDoubleSeconds(absl::Now() - t0));
  t0 = absl::Now();
  auto summaries = (*store)->ListSummaries("bench");
  if (!summaries.ok() ||
      summaries->size() != static_cast<size_t>(submit_trials))
    return 1;
  std::printf("%-34s %10.3f\n", "ListSummaries",
              absl::ToDoubleSeconds(absl::Now() - t0));
  const auto bytes =
      std::filesystem::file_size(absl::StrCat(dir, "/submit.db")) +
      std::filesystem::file_size(absl::StrCat(dir, "/submit.db-wal"));
  std::printf("%-34s %10.1f\n", "database + WAL size (MB)", bytes / 1e6);
  store->reset();
  if (own_dir) std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace smoe::store

int main(int argc, char** argv) { return smoe::store::Main(argc, argv); }
