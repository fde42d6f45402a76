// Copyright 2026 SMoE Lab authors.
//
// File: tests/e2e/cluster.h
//
// Test harness: a coordinator and worker daemons as real processes on
// 127.0.0.1 (the built `smoe` binary), the fake trainer as their trial program,
// and a gRPC client for assertions. Every wait is bounded.
#ifndef SMOE_TESTS_E2E_CLUSTER_H_
#define SMOE_TESTS_E2E_CLUSTER_H_

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/client.h"
#include "proto/smoe.pb.h"

namespace smoe::e2e {

// A child process in its own process group.
class Process {
 public:
  // Starts `argv` with `env` added to this process's environment; stdout and
  // stderr go to `log_path`.
  static std::unique_ptr<Process> Start(
      const std::vector<std::string>& argv,
      const std::map<std::string, std::string>& env,
      const std::string& log_path);
  ~Process();

  pid_t pid() const { return pid_; }
  // Sends `sig` to the process (not its group).
  void Signal(int sig);
  // Sends SIGKILL to the whole process group (the trainers too).
  void KillGroup();
  // Waits up to `timeout`; returns the exit code, 128+signal, or -1 on timeout.
  int Wait(absl::Duration timeout);
  bool running();

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  bool reaped_ = false;
};

// Runs a command to completion; returns (exit code, stdout+stderr).
std::pair<int, std::string> RunCommand(
    const std::vector<std::string>& argv,
    const std::map<std::string, std::string>& env, absl::Duration timeout);

// The whole file at `path` ("" when it cannot be read).
std::string ReadText(const std::string& path);

class Cluster {
 public:
  // `plan` is the fake trainer's plan (JSON text; see tests/fake_trainer).
  explicit Cluster(const std::string& name, const std::string& plan);
  ~Cluster();

  const std::string& dir() const { return dir_; }
  std::string address() const;
  std::string smoe() const;

  // Starts (or restarts, on the same port) the coordinator; waits until it
  // answers. Lease timeout is short (3 s) so expiry tests are quick. `extra`
  // flags are appended (e.g. --checkpoint-max-bytes 4096).
  void StartCoordinator(const std::vector<std::string>& extra = {});
  Process* coordinator() { return coordinator_.get(); }
  // Starts worker `i` with `slots` slots running `trainer` (empty: the fake
  // trainer; "-": no --trainer flag), with `extra` flags (e.g. --kinds
  // skillmix) and `env` added.
  Process* StartWorker(int i, int slots = 1, const std::string& trainer = "",
                       const std::vector<std::string>& extra = {},
                       const std::map<std::string, std::string>& env = {});
  Process* worker(int i) { return workers_.at(i).get(); }

  // Runs `smoe <args>` against this cluster; returns (exit code, output).
  // Whether `env` sets a non-empty $SMOE_TOKEN: Smoe and StartWorker then
  // pass no --token-file (an explicit --token-file wins over $SMOE_TOKEN).
  static bool HasEnvToken(const std::map<std::string, std::string>& env);
  std::pair<int, std::string> Smoe(
      const std::vector<std::string>& args,
      const std::map<std::string, std::string>& env = {});
  // Writes a sweep file under dir() and submits it; returns its path.
  std::string WriteFile(const std::string& name, const std::string& text);
  cli::CoordinatorClient* client();

  absl::StatusOr<smoe::v1::GetSweepResponse> GetSweep(const std::string& id);
  // Polls until `pred` holds for the sweep or `timeout` passes.
  bool WaitFor(
      const std::string& sweep_id,
      const std::function<bool(const smoe::v1::GetSweepResponse&)>& pred,
      absl::Duration timeout);
  absl::StatusOr<smoe::v1::GetTrialMetricsResponse> Metrics(
      const std::string& trial_id);
  // Number of attempts the fake trainer started for `trial_id` (all workers).
  int TrainerStarts(const std::string& trial_id);
  // The dashboard's port, from the coordinator's "dashboard: http://..."
  // log line (0 when it does not appear within 10 s).
  int HttpPort();
  // `method` `path` on the dashboard at `port` with the admin token (a
  // bearer caller needs no CSRF token), one connection per request; returns
  // (status, body), status 0 when the request could not be made.
  std::pair<int, std::string> Http(int port, const std::string& method,
                                   const std::string& path);

 private:
  std::string dir_;
  std::string plan_path_;
  int port_ = 0;
  std::unique_ptr<Process> coordinator_;
  std::map<int, std::unique_ptr<Process>> workers_;
  std::unique_ptr<cli::CoordinatorClient> client_;
};

}  // namespace smoe::e2e

#endif  // SMOE_TESTS_E2E_CLUSTER_H_
