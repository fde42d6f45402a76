// Copyright 2026 SMoE Lab authors.
#include "cli/local_trial.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/client.h"
#include "cli/up.h"

namespace smoe::cli {

std::string ProgressBar(int64_t step, int64_t total, int width) {
  const int filled =
      total > 0 ? static_cast<int>(step * width / std::max<int64_t>(total, 1))
                : 0;
  const int f = std::max(0, std::min(filled, width));
  return std::string(static_cast<size_t>(f), '#') +
         std::string(static_cast<size_t>(width - f), '-');
}

int RunLocalTrial(
    LocalTrial& trial,
    const std::function<std::string(const nlohmann::json&)>& on_event) {
  namespace fs = std::filesystem;
  if (trial.workdir.empty()) {
    std::string tmpl = "/tmp/smoe-" + trial.kind + "-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      std::cerr << trial.command
                << ": cannot create a work dir: " << std::strerror(errno)
                << "\n";
      return kExitSoftware;
    }
    trial.workdir = tmpl;
  }
  std::error_code ec;
  fs::create_directories(trial.workdir, ec);
  const std::string trainer =
      trial.trainer.empty() ? SelfDir() + "/smoe-trainer" : trial.trainer;
  if (!fs::exists(trainer)) {
    std::cerr << trial.command << ": trainer '" << trainer
              << "' not found (build smoe-trainer, or pass --trainer)\n";
    return kExitUnavailable;
  }
  const nlohmann::json spec = {
      {"sweep_id", "local"}, {"trial_id", "local/" + trial.kind},
      {"attempt", 1},        {"kind", trial.kind},
      {"seed", trial.seed},  {"params", trial.params}};
  const std::string trial_path = trial.workdir + "/TRIAL.json";
  std::ofstream(trial_path) << spec.dump(2) << "\n";

  int fds[2];
  if (::pipe(fds) != 0) return kExitSoftware;
  const pid_t pid = ::fork();
  if (pid < 0) return kExitSoftware;
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execl(trainer.c_str(), trainer.c_str(), "run", "--trial",
            trial_path.c_str(), "--workdir", trial.workdir.c_str(),
            static_cast<char*>(nullptr));
    std::fprintf(stderr, "exec %s: %s\n", trainer.c_str(),
                 std::strerror(errno));
    ::_exit(127);
  }
  ::close(fds[1]);
  FILE* in = ::fdopen(fds[0], "r");
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  char* line = nullptr;
  size_t cap = 0;
  std::string last_drawn;
  while (::getline(&line, &cap, in) > 0) {
    const auto ev = nlohmann::json::parse(line, nullptr, false);
    if (!ev.is_object()) continue;
    const std::string drawn = on_event(ev);
    if (drawn != last_drawn) {
      std::cerr << (tty ? "\r\033[K" : "") << drawn << (tty ? "" : "\n")
                << std::flush;
      last_drawn = drawn;
    }
  }
  std::free(line);
  std::fclose(in);
  if (tty && !last_drawn.empty()) std::cerr << "\n";
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace smoe::cli
