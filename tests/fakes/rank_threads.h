// Copyright 2026 SMoE Lab authors.
//
// File: tests/fakes/rank_threads.h
//
// RunRanks: the bounded "W ranks as W threads" driver of the fake-NCCL tests.
#ifndef SMOE_TESTS_FAKES_RANK_THREADS_H_
#define SMOE_TESTS_FAKES_RANK_THREADS_H_

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "tests/fakes/fake_nccl_control.h"

namespace smoe::fake_nccl {

// Runs body(rank) on `world` threads and returns each rank's status. Bounded:
// if some rank has not returned after `budget`, the test fails with HANG
// (naming the fake CUDA calls that hold host threads), the hang is broken
// with AbortAll() and the ranks are joined; if even that does not free them
// within 10 s the process aborts (ctest's TIMEOUT is the last resort).
inline std::vector<absl::Status> RunRanks(
    int world, const std::function<absl::Status(int)>& body,
    std::chrono::milliseconds budget) {
  std::vector<absl::Status> out(world, absl::UnknownError("not run"));
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  std::vector<bool> finished(world, false);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      absl::Status s = body(r);
      std::lock_guard<std::mutex> l(mu);
      out[r] = s;
      finished[r] = true;
      ++done;
      cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> l(mu);
    if (!cv.wait_for(l, budget, [&] { return done == world; })) {
      std::vector<int> stuck;
      for (int r = 0; r < world; ++r) {
        if (!finished[r]) stuck.push_back(r);
      }
      const Stats stats = GetStats();
      ADD_FAILURE() << "HANG: rank(s) " << absl::StrJoin(stuck, ",")
                    << " still running after " << budget.count()
                    << " ms; host threads blocked inside fake CUDA calls: ["
                    << absl::StrJoin(stats.blocked_now, "; ")
                    << "]; breaking the hang with fake_nccl::AbortAll()";
      l.unlock();
      AbortAll();
      l.lock();
      if (!cv.wait_for(l, std::chrono::milliseconds(10000),
                       [&] { return done == world; })) {
        std::fprintf(stderr, "ranks still hung after AbortAll; aborting\n");
        std::abort();
      }
    }
  }
  for (std::thread& t : threads) t.join();
  return out;
}

}  // namespace smoe::fake_nccl

#endif  // SMOE_TESTS_FAKES_RANK_THREADS_H_
