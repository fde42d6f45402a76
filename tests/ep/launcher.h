// Copyright 2026 SMoE Lab authors.
//
// File: tests/ep/launcher.h
//
// Starts W processes of one program as the ranks of an expert-parallel group
// (the same environment the worker daemon sets: SMOE_RANK, SMOE_WORLD_SIZE,
// SMOE_RENDEZVOUS) and waits for all of them under a deadline. When the
// deadline passes, or one rank fails, every rank still running is SIGKILLed,
// so a broken collective can never hang CI.
#ifndef SMOE_TESTS_EP_LAUNCHER_H_
#define SMOE_TESTS_EP_LAUNCHER_H_

#include <string>
#include <vector>

namespace smoe::ep_test {

struct RankExit {
  int code = -1;        // exit status, or 128 + signal
  bool killed = false;  // killed by the launcher (deadline or peer failure)
  std::string stdout_path, stderr_path;  // captured output
};

// Runs `argv` (argv[0] a path) as ranks 0..world-1 with `rendezvous`, in
// working directory `dir` (stdout/stderr to dir/rank<r>.{out,err}). Returns
// one RankExit per rank. `deadline_s` bounds the whole group.
std::vector<RankExit> RunRanks(const std::vector<std::string>& argv, int world,
                               const std::string& rendezvous,
                               const std::string& dir, double deadline_s);

// Returns a fresh empty directory under $TMPDIR (or /tmp).
std::string MakeTempDir(const std::string& prefix);

// Returns a TCP port that was free a moment ago on 127.0.0.1.
int PickFreePort();

// Returns the file's contents ("" if unreadable).
std::string ReadFile(const std::string& path);

}  // namespace smoe::ep_test

#endif  // SMOE_TESTS_EP_LAUNCHER_H_
