// Copyright 2026 SMoE Lab authors.
//
// File: worker/launch/launch_test_util.h
//
// Test-only: a ProcessLauncher whose processes the test drives (stdout lines,
// exit status) and inspects (the spec each was started with, the signals it
// received). Used by the RankGroup and worker daemon tests. Single-threaded
// use.
#ifndef SMOE_WORKER_LAUNCH_LAUNCH_TEST_UTIL_H_
#define SMOE_WORKER_LAUNCH_LAUNCH_TEST_UTIL_H_

#include <signal.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/launch/process_launcher.h"

namespace smoe::launch::testing {

// State of one fake process, shared between the test and the Process object.
struct FakeProcessState {
  ProcessSpec spec;
  int pid = 0;
  std::vector<std::string> stdout_lines;  // not yet taken
  std::vector<std::string> stderr_tail;
  std::vector<std::string> stderr_lines;  // not yet taken
  std::optional<ExitInfo> exit;
  std::vector<int> signals;  // received, in order
  // When set, SIGTERM makes the process exit with this code (checkpointing
  // trainer); SIGKILL kills it (signal 9) unless survives_sigkill.
  std::optional<int> exit_on_sigterm;
  // When set, SIGKILL is recorded but the process does not end (a process in
  // uninterruptible sleep).
  bool survives_sigkill = false;
  bool destroyed = false;

  void Emit(const std::string& line) { stdout_lines.push_back(line); }
  void Exit(int code) {
    ExitInfo e;
    e.exit_code = code;
    exit = e;
  }
  void Kill(int sig) {
    ExitInfo e;
    e.signaled = true;
    e.signal = sig;
    exit = e;
  }
};

class FakeProcess : public Process {
 public:
  explicit FakeProcess(std::shared_ptr<FakeProcessState> s)
      : s_(std::move(s)) {}
  ~FakeProcess() override { s_->destroyed = true; }
  int pid() const override { return s_->pid; }
  std::vector<std::string> TakeStdoutLines() override {
    std::vector<std::string> out;
    out.swap(s_->stdout_lines);
    return out;
  }
  std::vector<std::string> StderrTail() override { return s_->stderr_tail; }
  std::vector<std::string> TakeStderrLines() override {
    std::vector<std::string> out;
    out.swap(s_->stderr_lines);
    return out;
  }
  absl::Status Signal(int sig) override {
    if (s_->exit.has_value()) return absl::OkStatus();
    s_->signals.push_back(sig);
    if (sig == SIGKILL && !s_->survives_sigkill) s_->Kill(SIGKILL);
    if (sig == SIGTERM && s_->exit_on_sigterm.has_value()) {
      s_->Exit(*s_->exit_on_sigterm);
    }
    return absl::OkStatus();
  }
  std::optional<ExitInfo> Poll() override { return s_->exit; }
  std::optional<ExitInfo> Wait(absl::Duration) override { return s_->exit; }

 private:
  std::shared_ptr<FakeProcessState> s_;
};

class FakeProcessLauncher : public ProcessLauncher {
 public:
  std::vector<std::shared_ptr<FakeProcessState>> started;
  std::deque<absl::Status> start_errors;
  // Applied to every new process (e.g. exit 75 on SIGTERM).
  std::optional<int> default_exit_on_sigterm;

  absl::StatusOr<std::unique_ptr<Process>> Start(
      const ProcessSpec& spec) override {
    if (!start_errors.empty()) {
      absl::Status s = start_errors.front();
      start_errors.pop_front();
      if (!s.ok()) return s;
    }
    auto st = std::make_shared<FakeProcessState>();
    st->spec = spec;
    st->pid = 1000 + static_cast<int>(started.size());
    st->exit_on_sigterm = default_exit_on_sigterm;
    started.push_back(st);
    return std::unique_ptr<Process>(new FakeProcess(st));
  }
};

}  // namespace smoe::launch::testing

#endif  // SMOE_WORKER_LAUNCH_LAUNCH_TEST_UTIL_H_
