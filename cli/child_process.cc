// Copyright 2026 SMoE Lab authors.
#include "cli/child_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace smoe::cli {

pid_t StartChild(const ChildSpec& spec) {
  std::vector<char*> args;
  for (const std::string& a : spec.argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  // The child.
  if (spec.own_process_group) ::setpgid(0, 0);
  if (!spec.log_file.empty()) {
    const int fd =
        ::open(spec.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
      ::close(fd);
    }
  }
  if (spec.stdout_fd >= 0) ::dup2(spec.stdout_fd, STDOUT_FILENO);
  if (args[0] != nullptr) {
    if (spec.search_path) {
      ::execvp(args[0], args.data());
    } else {
      ::execv(args[0], args.data());
    }
  }
  if (spec.report_exec_error) {
    std::fprintf(stderr, "%s%s%s%s\n", spec.exec_error_before.c_str(),
                 args[0] == nullptr ? "" : args[0],
                 spec.exec_error_after.c_str(), std::strerror(errno));
  }
  ::_exit(spec.exec_failure_code);
}

int WaitChild(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

int ExitCodeOf(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status)
                                : 128 + WTERMSIG(wait_status);
}

int RunAndCapture(ChildSpec spec, std::string* out) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return 127;
  spec.stdout_fd = fds[1];
  const pid_t pid = StartChild(spec);
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return 127;
  }
  ::close(fds[1]);
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out->append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  const int status = WaitChild(pid);
  return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

}  // namespace smoe::cli
