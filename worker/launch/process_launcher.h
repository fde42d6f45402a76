// Copyright 2026 SMoE Lab authors.
//
// File: worker/launch/process_launcher.h
//
// Starting and supervising child processes (the trainer and its ranks),
// behind an interface so the daemon's logic is tested with a fake and never
// forks in unit tests. Groups of ranks: rank_group.h.
//
//   ProcessLauncher::Start(spec) -> Process
//   Process: stdout lines (drained by the caller), the last stderr lines,
//            Signal() to its whole process group, Poll()/Wait() for its exit.
//
// PosixProcessLauncher puts every child in its own process group (setpgid), so
// signalling the group also reaches the trainer's own children; it reaps every
// child it starts (no zombies), and kills stragglers left in the group once the
// group leader has exited. A child gets SIGKILL when the thread that started it
// exits (PR_SET_PDEATHSIG; the signal is ProcessSpec::parent_death_signal),
// so a daemon or CLI that dies without draining (kill -9, OOM) leaves no
// trainer running unsupervised; REQUIRES: call Start() from a thread that
// outlives the processes it starts (the daemon's loop thread, the CLI's main
// thread).
#ifndef SMOE_WORKER_LAUNCH_PROCESS_LAUNCHER_H_
#define SMOE_WORKER_LAUNCH_PROCESS_LAUNCHER_H_

#include <signal.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace smoe::launch {

// Where a child's stdout or stderr goes.
struct OutputSpec {
  enum class Kind {
    kPipe,     // to the launcher: Process::TakeStdoutLines / StderrTail
    kInherit,  // the launcher's own descriptor (e.g. the terminal)
    kFile,     // `path`, created (0644) or truncated
  };
  Kind kind = Kind::kPipe;
  std::string path;  // kFile only

  static OutputSpec Pipe() { return {}; }
  static OutputSpec Inherit() { return {Kind::kInherit, ""}; }
  static OutputSpec File(std::string path) {
    return {Kind::kFile, std::move(path)};
  }
};

// What to run.
struct ProcessSpec {
  // argv[0] is the program path (absolute or relative to the daemon's cwd; no
  // PATH search). REQUIRES: non-empty.
  std::vector<std::string> argv;
  // Variables set in the child on top of the daemon's own environment (a key
  // given here replaces the inherited value; an empty value is kept as empty).
  std::map<std::string, std::string> env;
  // Inherited variables the child must not see (e.g. the daemon's
  // SMOE_TOKEN); a name also in `env` is set, not removed.
  std::vector<std::string> unset_env;
  // The child's working directory; empty = the daemon's.
  std::string working_dir;
  // Where stdout and stderr go. A stream that is not piped reads as empty
  // through TakeStdoutLines / StderrTail. stdout and stderr naming the same
  // file share one descriptor (one log, in order).
  OutputSpec stdout_to;
  OutputSpec stderr_to;
  // Sent to the child when the thread that started it exits: SIGKILL for the
  // daemon (nothing may outlive it), SIGTERM for the CLI (the trainer
  // checkpoints).
  int parent_death_signal = SIGKILL;
};

// How a process ended.
struct ExitInfo {
  bool signaled = false;  // killed by a signal
  int exit_code = 0;      // exit status when !signaled
  int signal = 0;         // the signal when signaled

  // The code reported to the coordinator: exit status, or 128 + signal.
  int ReportedCode() const { return signaled ? 128 + signal : exit_code; }
};

// A running (or finished) child. Not copyable. Thread-compatible: one owner
// thread calls the methods (the implementation's own reader threads are
// internal). Destroying a Process that is still running kills its process
// group with SIGKILL and reaps it.
class Process {
 public:
  virtual ~Process() = default;

  // The child's pid (also its process-group id).
  virtual int pid() const = 0;

  // Returns the complete stdout lines (without '\n') read since the last call,
  // oldest first. After the process has ended (Poll() returned a value) the
  // final unterminated line, if any, is returned as well.
  virtual std::vector<std::string> TakeStdoutLines() = 0;

  // Returns the last stderr lines (at most the implementation's limit, ~50),
  // oldest first.
  virtual std::vector<std::string> StderrTail() = 0;

  // Returns the complete stderr lines read since the last call, oldest first
  // (a piped stderr only; the final unterminated line once the process has
  // ended). Bounded: when more than kMaxPendingStderrLines wait, the oldest
  // are dropped and the first line returned says how many. Independent of
  // StderrTail (a caller may use either or both). Lines longer than 4 KiB
  // are cut, so at most ~4 MiB wait for a caller that never takes them.
  virtual std::vector<std::string> TakeStderrLines() = 0;
  static constexpr size_t kMaxPendingStderrLines = 1000;

  // Sends `sig` to the child's process group. A no-op (OK) once the child has
  // been reaped.
  virtual absl::Status Signal(int sig) = 0;

  // Returns how the child ended once it has exited, been reaped and its output
  // has been fully read; nullopt while it runs. Never blocks.
  virtual std::optional<ExitInfo> Poll() = 0;

  // Like Poll(), but waits up to `timeout` (real time) for the end.
  virtual std::optional<ExitInfo> Wait(absl::Duration timeout) = 0;
};

// Starts processes.
class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;

  // Starts `spec`. Errors: InvalidArgument for an empty argv, NotFound /
  // PermissionDenied / Internal when the program cannot be executed (the
  // child is reaped before returning), Internal for fork/pipe failures or an
  // output file that cannot be opened (the message names it).
  virtual absl::StatusOr<std::unique_ptr<Process>> Start(
      const ProcessSpec& spec) = 0;
};

// fork/execve implementation for Linux/POSIX.
//
// The child: its own process group, stdin from /dev/null, stdout/stderr as
// ProcessSpec says (piped to the caller by default), default signal
// dispositions and an empty signal mask, no inherited descriptors besides 0-2
// (all daemon descriptors that matter are close-on-exec). One reader thread per
// child drains both pipes, so a chatty child never blocks on a full pipe.
class PosixProcessLauncher final : public ProcessLauncher {
 public:
  // `stderr_tail_lines`: how many trailing stderr lines each Process keeps.
  explicit PosixProcessLauncher(int stderr_tail_lines = 50)
      : stderr_tail_lines_(stderr_tail_lines) {}

  absl::StatusOr<std::unique_ptr<Process>> Start(
      const ProcessSpec& spec) override;

 private:
  int stderr_tail_lines_;
};

}  // namespace smoe::launch

#endif  // SMOE_WORKER_LAUNCH_PROCESS_LAUNCHER_H_
