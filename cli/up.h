// Copyright 2026 SMoE Lab authors.
//
// File: cli/up.h
//
// `smoe up`: the one-command local lab. Starts an embedded coordinator (data
// in ./smoe-data), N local `smoe worker` processes, submits a sweep
// (examples/sraven-demo.yaml by default), shows progress, prints the results
// and the best k per difficulty, and keeps serving until Ctrl-C.
#ifndef SMOE_CLI_UP_H_
#define SMOE_CLI_UP_H_

#include <string>
#include <vector>

namespace smoe::cli {

struct UpOptions {
  std::string data_dir = "smoe-data";
  std::string listen = "127.0.0.1:50051";
  std::string sweep_file = "examples/sraven-demo.yaml";
  int workers = 2;           // local worker processes
  int slots_per_worker = 1;  // trials per worker
  std::string trainer;       // default: smoe-trainer next to this binary
  // The workers' --kinds; empty: the sweep file's kind (a Skill-Mix sweep
  // gets skillmix workers, which need smoe-trainer-full next to smoe-trainer).
  std::vector<std::string> kinds;
  std::string allow_command;  // the workers' --allow-command (kind command)
  int http_port = 8080;       // dashboard on 127.0.0.1; 0 = any, -1 = off
  bool exit_when_done = false;
};

// Returns a process exit code.
int RunUp(const UpOptions& options);

}  // namespace smoe::cli

#endif  // SMOE_CLI_UP_H_
