// Copyright 2026 SMoE Lab authors.
//
// File: cli/child_process.h
//
// The one way `smoe` starts a helper program and waits for it (`smoe up`'s
// workers, `smoe doctor` and `smoe model` running smoe-trainer, `smoe deploy
// render` running kubectl/kustomize): fork + exec, with the child's output
// redirected as the caller asks.
//
// The argument vector is built before the fork; the child only redirects,
// execs and, when exec fails, prints `exec_error_before` + argv[0] +
// `exec_error_after` + strerror(errno) to stderr (unless report_exec_error is
// false) and exits with `exec_failure_code`.
#ifndef SMOE_CLI_CHILD_PROCESS_H_
#define SMOE_CLI_CHILD_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace smoe::cli {

struct ChildSpec {
  std::vector<std::string> argv;   // argv[0] is the program
  bool search_path = false;        // execvp (PATH lookup) instead of execv
  bool own_process_group = false;  // setpgid(0, 0) in the child
  std::string log_file;  // stdout and stderr appended here ("" = inherited)
  int stdout_fd = -1;    // dup2'd onto the child's stdout (-1 = inherited)
  bool report_exec_error = true;
  std::string exec_error_before = "exec ";
  std::string exec_error_after = ": ";
  int exec_failure_code = 127;
};

// Forks and execs `spec`; returns the child's pid, or -1 when fork failed
// (errno set).
pid_t StartChild(const ChildSpec& spec);

// Waits for `pid` (retrying when a signal interrupts the wait); returns its
// wait status, or -1 when waitpid failed.
int WaitChild(pid_t pid);

// The exit code a wait status stands for: the child's exit status, or 128 +
// the signal that killed it.
int ExitCodeOf(int wait_status);

// Runs `spec` with its stdout captured into *out (stderr passes through) and
// waits for it. Returns its exit status, 127 when the pipe or the fork
// failed, 128 when it did not exit normally.
int RunAndCapture(ChildSpec spec, std::string* out);

}  // namespace smoe::cli

#endif  // SMOE_CLI_CHILD_PROCESS_H_
