// Copyright 2026 SMoE Lab authors.
#include "worker/launch/process_launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <iterator>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

extern char** environ;

namespace smoe::launch {
namespace {

constexpr size_t kMaxStdoutLine = 1 << 20;  // longer lines are split
constexpr size_t kMaxStderrLine = 4096;     // longer lines are truncated
// After the child has exited, how long to wait for its pipes to close (a
// process that escaped the group may still hold them).
constexpr absl::Duration kPipeDrainTimeout = absl::Seconds(2);

int PidfdOpen(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

class PosixProcess final : public Process {
 public:
  PosixProcess(pid_t pid, int out_fd, int err_fd, int tail_lines)
      : pid_(pid), out_fd_(out_fd), err_fd_(err_fd), tail_lines_(tail_lines) {
    thread_ = std::thread([this] { MonitorLoop(); });
  }

  ~PosixProcess() override {
    {
      absl::MutexLock lock(&mu_);
      if (!reaped_) kill(-pid_, SIGKILL);
    }
    thread_.join();
  }

  int pid() const override { return pid_; }

  std::vector<std::string> TakeStdoutLines() override {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> out;
    out.swap(stdout_lines_);
    return out;
  }

  std::vector<std::string> StderrTail() override {
    absl::MutexLock lock(&mu_);
    return std::vector<std::string>(stderr_tail_.begin(), stderr_tail_.end());
  }

  std::vector<std::string> TakeStderrLines() override {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> out;
    if (stderr_dropped_ > 0) {
      out.push_back(
          absl::StrCat("[", stderr_dropped_, " earlier stderr lines dropped]"));
      stderr_dropped_ = 0;
    }
    out.insert(out.end(), std::make_move_iterator(stderr_pending_.begin()),
               std::make_move_iterator(stderr_pending_.end()));
    stderr_pending_.clear();
    return out;
  }

  absl::Status Signal(int sig) override {
    absl::MutexLock lock(&mu_);
    if (reaped_) return absl::OkStatus();
    if (kill(-pid_, sig) != 0 && errno != ESRCH) {
      return absl::InternalError(
          absl::StrCat("kill(-", pid_, ", ", sig, "): ", strerror(errno)));
    }
    return absl::OkStatus();
  }

  std::optional<ExitInfo> Poll() override {
    absl::MutexLock lock(&mu_);
    if (!done_) return std::nullopt;
    return exit_;
  }

  std::optional<ExitInfo> Wait(absl::Duration timeout) override {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&done_), timeout);
    if (!done_) return std::nullopt;
    return exit_;
  }

 private:
  // Appends the bytes of one stream; splits complete lines out of `partial`.
  void Consume(bool is_stdout, const char* data, size_t n)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::string& partial = is_stdout ? out_partial_ : err_partial_;
    for (size_t i = 0; i < n; ++i) {
      const char c = data[i];
      if (c == '\n') {
        EmitLine(is_stdout, std::move(partial));
        partial.clear();
        continue;
      }
      if (is_stdout && partial.size() >= kMaxStdoutLine) {
        EmitLine(true, std::move(partial));
        partial.clear();
      }
      if (is_stdout || partial.size() < kMaxStderrLine) partial.push_back(c);
    }
  }

  void EmitLine(bool is_stdout, std::string line)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (is_stdout) {
      stdout_lines_.push_back(std::move(line));
      return;
    }
    stderr_pending_.push_back(line);
    if (stderr_pending_.size() > kMaxPendingStderrLines) {
      stderr_pending_.pop_front();
      ++stderr_dropped_;
    }
    stderr_tail_.push_back(std::move(line));
    while (static_cast<int>(stderr_tail_.size()) > tail_lines_) {
      stderr_tail_.pop_front();
    }
  }

  // Reads `fd` until it would block; closes it at EOF/error and sets it -1.
  void Drain(int* fd, bool is_stdout) {
    char buf[65536];
    while (*fd >= 0) {
      const ssize_t n = read(*fd, buf, sizeof(buf));
      if (n > 0) {
        absl::MutexLock lock(&mu_);
        Consume(is_stdout, buf, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      close(*fd);
      *fd = -1;
    }
  }

  // True once the child has exited (not reaped: WNOWAIT keeps the zombie so
  // its pid, and thus the group id, cannot be reused before we kill
  // stragglers).
  bool ChildExited() {
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    if (waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
      return errno == ECHILD;  // already gone; should not happen
    }
    return info.si_pid == pid_;
  }

  void ReapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    kill(-pid_, SIGKILL);  // anything left in the group
    int status = 0;
    pid_t r;
    do {
      r = waitpid(pid_, &status, 0);
    } while (r < 0 && errno == EINTR);
    if (r == pid_) {
      if (WIFSIGNALED(status)) {
        exit_.signaled = true;
        exit_.signal = WTERMSIG(status);
      } else {
        exit_.exit_code = WEXITSTATUS(status);
      }
    } else {
      exit_.exit_code = 255;
    }
    reaped_ = true;
  }

  void MonitorLoop() {
    const int pidfd = PidfdOpen(pid_);
    bool exited = false;
    absl::Time drain_deadline = absl::InfiniteFuture();
    while (true) {
      pollfd fds[3];
      int n = 0;
      if (out_fd_ >= 0) fds[n++] = {out_fd_, POLLIN, 0};
      if (err_fd_ >= 0) fds[n++] = {err_fd_, POLLIN, 0};
      if (!exited && pidfd >= 0) fds[n++] = {pidfd, POLLIN, 0};
      // With a pidfd the exit wakes poll(); without one, check every 50 ms.
      const int timeout_ms = (!exited && pidfd >= 0) ? 1000 : 50;
      if (n > 0) {
        poll(fds, n, timeout_ms);
      } else {
        usleep(timeout_ms * 1000);
      }
      Drain(&out_fd_, true);
      Drain(&err_fd_, false);
      if (!exited && ChildExited()) {
        exited = true;
        drain_deadline = absl::Now() + kPipeDrainTimeout;
        absl::MutexLock lock(&mu_);
        ReapLocked();
      }
      if (exited &&
          ((out_fd_ < 0 && err_fd_ < 0) || absl::Now() >= drain_deadline)) {
        break;
      }
    }
    if (pidfd >= 0) close(pidfd);
    if (out_fd_ >= 0) close(out_fd_);
    if (err_fd_ >= 0) close(err_fd_);
    out_fd_ = err_fd_ = -1;
    absl::MutexLock lock(&mu_);
    if (!out_partial_.empty()) EmitLine(true, std::move(out_partial_));
    if (!err_partial_.empty()) EmitLine(false, std::move(err_partial_));
    out_partial_.clear();
    err_partial_.clear();
    done_ = true;
  }

  const pid_t pid_;
  int out_fd_;  // owned by the monitor thread
  int err_fd_;  // owned by the monitor thread
  const int tail_lines_;
  std::thread thread_;

  absl::Mutex mu_;
  std::string out_partial_ ABSL_GUARDED_BY(mu_);
  std::string err_partial_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> stdout_lines_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> stderr_tail_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> stderr_pending_ ABSL_GUARDED_BY(mu_);
  size_t stderr_dropped_ ABSL_GUARDED_BY(mu_) = 0;
  bool reaped_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  ExitInfo exit_ ABSL_GUARDED_BY(mu_);
};

// Closes every descriptor >= `from` except `keep` (async-signal-safe).
void CloseFrom(int from, int keep) {
#ifdef SYS_close_range
  bool ok = true;
  if (keep > from) {
    ok = syscall(SYS_close_range, from, keep - 1, 0) == 0;
  }
  if (ok && syscall(SYS_close_range, keep + 1, ~0U, 0) == 0) return;
#endif
  const long max_fd = sysconf(_SC_OPEN_MAX);
  for (long fd = from; fd < (max_fd > 0 ? max_fd : 4096); ++fd) {
    if (fd != keep) close(static_cast<int>(fd));
  }
}

void CloseAll(std::initializer_list<int> fds) {
  for (int fd : fds) {
    if (fd >= 0) close(fd);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Process>> PosixProcessLauncher::Start(
    const ProcessSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return absl::InvalidArgumentError("process argv is empty");
  }
  // Everything the child needs is built before fork(): after it, the child
  // calls only async-signal-safe functions.
  std::vector<char*> argv;
  for (const std::string& a : spec.argv)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_storage;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = strchr(*e, '=');
    const std::string key = eq ? std::string(*e, eq - *e) : std::string(*e);
    if (spec.env.count(key) > 0) continue;
    if (std::find(spec.unset_env.begin(), spec.unset_env.end(), key) !=
        spec.unset_env.end()) {
      continue;
    }
    env_storage.emplace_back(*e);
  }
  for (const auto& [k, v] : spec.env) env_storage.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& s : env_storage) envp.push_back(s.data());
  envp.push_back(nullptr);
  const char* cwd =
      spec.working_dir.empty() ? nullptr : spec.working_dir.c_str();

  // Each stream: a pipe to us, our own descriptor, or a file. Descriptors
  // opened here are close-on-exec; the child dup2()s what it needs.
  int out[2] = {-1, -1}, err[2] = {-1, -1}, exec_err[2] = {-1, -1};
  int out_file = -1, err_file = -1;
  auto close_all = [&] {
    CloseAll({out[0], out[1], err[0], err[1], exec_err[0], exec_err[1],
              out_file, err_file});
  };
  auto open_output = [&](const OutputSpec& o, int* file, int pipe_fds[2],
                         const char* what) -> absl::Status {
    if (o.kind == OutputSpec::Kind::kPipe) {
      if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
        return absl::InternalError(absl::StrCat("pipe2: ", strerror(errno)));
      }
    } else if (o.kind == OutputSpec::Kind::kFile) {
      *file =
          open(o.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (*file < 0) {
        return absl::InternalError(absl::StrCat(
            "cannot open ", what, " file '", o.path, "': ", strerror(errno)));
      }
    }
    return absl::OkStatus();
  };
  absl::Status opened = open_output(spec.stdout_to, &out_file, out, "stdout");
  const bool shared_file = spec.stdout_to.kind == OutputSpec::Kind::kFile &&
                           spec.stderr_to.kind == OutputSpec::Kind::kFile &&
                           spec.stdout_to.path == spec.stderr_to.path;
  if (opened.ok() && !shared_file) {
    opened = open_output(spec.stderr_to, &err_file, err, "stderr");
  }
  if (opened.ok() && pipe2(exec_err, O_CLOEXEC) != 0) {
    opened = absl::InternalError(absl::StrCat("pipe2: ", strerror(errno)));
  }
  if (!opened.ok()) {
    close_all();
    return opened;
  }
  // The descriptors the child makes its stdout / stderr; -1: keep ours.
  const int child_out = out[1] >= 0 ? out[1] : out_file;
  const int child_err =
      err[1] >= 0 ? err[1] : (shared_file ? out_file : err_file);
  const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0) {
    const int e = errno;
    close_all();
    return absl::InternalError(absl::StrCat("open /dev/null: ", strerror(e)));
  }
  const int death_signal = spec.parent_death_signal;

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    close_all();
    close(devnull);
    return absl::InternalError(absl::StrCat("fork: ", strerror(e)));
  }
  if (pid == 0) {
    // Child.
    setpgid(0, 0);
    // A daemon killed without draining (kill -9, OOM) must not leave its
    // trainers running unsupervised on the GPUs and in the trial directory:
    // the kernel sends SIGKILL when the starting thread exits.
    prctl(PR_SET_PDEATHSIG, death_signal);
    if (getppid() != parent) _exit(127);  // it died before prctl
    sigset_t empty;
    sigemptyset(&empty);
    sigprocmask(SIG_SETMASK, &empty, nullptr);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; ++s) sigaction(s, &dfl, nullptr);
    int child_errno = 0;
    if (dup2(devnull, 0) < 0 || (child_out >= 0 && dup2(child_out, 1) < 0) ||
        (child_err >= 0 && dup2(child_err, 2) < 0)) {
      child_errno = errno;
    } else {
      // Descriptors the daemon inherited without O_CLOEXEC must not reach the
      // trainer either: everything above 2 but the error pipe is closed.
      CloseFrom(3, exec_err[1]);
      if (cwd != nullptr && chdir(cwd) != 0) {
        child_errno = errno;
      } else {
        execve(argv[0], argv.data(), envp.data());
        child_errno = errno;
      }
    }
    ssize_t ignored = write(exec_err[1], &child_errno, sizeof(child_errno));
    (void)ignored;
    _exit(127);
  }

  // Parent.
  setpgid(pid, pid);  // also done in the child; whichever runs first wins
  CloseAll({out[1], err[1], exec_err[1], devnull, out_file, err_file});
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(exec_err[0], &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  close(exec_err[0]);
  if (n == static_cast<ssize_t>(sizeof(child_errno))) {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    CloseAll({out[0], err[0]});
    const std::string msg =
        absl::StrCat("cannot execute '", spec.argv[0], "'",
                     cwd ? absl::StrCat(" in '", cwd, "'") : std::string(),
                     ": ", strerror(child_errno));
    if (child_errno == ENOENT) return absl::NotFoundError(msg);
    if (child_errno == EACCES) return absl::PermissionDeniedError(msg);
    return absl::InternalError(msg);
  }
  for (int fd : {out[0], err[0]}) {
    if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return std::unique_ptr<Process>(
      new PosixProcess(pid, out[0], err[0], stderr_tail_lines_));
}

}  // namespace smoe::launch
