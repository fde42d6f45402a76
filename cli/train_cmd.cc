// Copyright 2026 SMoE Lab authors.
#include "cli/train_cmd.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "absl/strings/str_format.h"
#include "cli/client.h"
#include "cli/up.h"

namespace smoe::cli {
namespace {

std::string Bar(int64_t step, int64_t total, int width) {
  const int filled =
      total > 0 ? static_cast<int>(step * width / std::max<int64_t>(total, 1))
                : 0;
  return std::string(static_cast<size_t>(std::min(filled, width)), '#') +
         std::string(static_cast<size_t>(width - std::min(filled, width)), '-');
}

}  // namespace

int RunTrainCommand(const TrainOptions& options, std::ostream& out) {
  namespace fs = std::filesystem;
  std::string workdir = options.workdir;
  if (workdir.empty()) {
    char tmpl[] = "/tmp/smoe-train-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) {
      std::cerr << "smoe train: cannot create a work dir: "
                << std::strerror(errno) << "\n";
      return kExitSoftware;
    }
    workdir = tmpl;
  }
  std::error_code ec;
  fs::create_directories(workdir, ec);
  const std::string trainer =
      options.trainer.empty() ? SelfDir() + "/smoe-trainer" : options.trainer;
  if (!fs::exists(trainer)) {
    std::cerr << "smoe train: trainer '" << trainer
              << "' not found (build smoe-trainer, or pass --trainer)\n";
    return kExitUnavailable;
  }
  const nlohmann::json trial = {
      {"sweep_id", "local"},  {"trial_id", "local/train"},
      {"attempt", 1},         {"kind", "sraven"},
      {"seed", options.seed}, {"params", options.params}};
  const std::string trial_path = workdir + "/TRIAL.json";
  std::ofstream(trial_path) << trial.dump(2) << "\n";

  int fds[2];
  if (::pipe(fds) != 0) return kExitSoftware;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execl(trainer.c_str(), trainer.c_str(), "run", "--trial",
            trial_path.c_str(), "--workdir", workdir.c_str(),
            static_cast<char*>(nullptr));
    std::fprintf(stderr, "exec %s: %s\n", trainer.c_str(),
                 std::strerror(errno));
    ::_exit(127);
  }
  ::close(fds[1]);
  FILE* in = ::fdopen(fds[0], "r");
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  std::map<std::string, double> last_eval;
  nlohmann::json result;
  int64_t step = 0, total = 0;
  char* line = nullptr;
  size_t cap = 0;
  std::string last_drawn;
  while (::getline(&line, &cap, in) > 0) {
    const auto ev = nlohmann::json::parse(line, nullptr, false);
    if (!ev.is_object()) continue;
    const std::string kind = ev.value("event", "");
    if (kind == "progress") {
      step = ev.value("step", int64_t{0});
      total = ev.value("total", int64_t{0});
    } else if (kind == "metric") {
      const std::string name = ev.value("name", "");
      if (name.rfind("eval/", 0) == 0 && ev.contains("value") &&
          ev["value"].is_number()) {
        last_eval[name] = ev["value"].get<double>();
      }
    } else if (kind == "result") {
      result = ev.value("metrics", nlohmann::json::object());
    }
    auto acc = last_eval.find("eval/ood_acc");
    const std::string drawn =
        absl::StrFormat("[%s] step %d/%d%s", Bar(step, total, 30), step, total,
                        acc == last_eval.end()
                            ? ""
                            : absl::StrFormat("  ood_acc %.3f", acc->second));
    if (drawn != last_drawn) {
      std::cerr << (tty ? "\r\033[K" : "") << drawn << (tty ? "" : "\n")
                << std::flush;
      last_drawn = drawn;
    }
  }
  std::free(line);
  std::fclose(in);
  if (tty) std::cerr << "\n";
  int status = 0;
  ::waitpid(pid, &status, 0);
  const int rc =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (rc == 0 && result.is_object()) {
    out << "SRAVEN run finished (work dir " << workdir << ")\n";
    for (const auto& [k, v] : result.items()) {
      if (v.is_number()) {
        out << absl::StrFormat("  %-22s %.6g\n", k, v.get<double>());
      }
    }
  } else if (rc == 64) {
    std::cerr
        << "smoe train: the trainer rejected the parameters (see above)\n";
  } else if (rc == 75) {
    std::cerr << "smoe train: interrupted; checkpoint in " << workdir
              << " (re-run with --workdir " << workdir << " to resume)\n";
  } else {
    std::cerr << "smoe train: trainer exited with " << rc << "\n";
  }
  return rc;
}

}  // namespace smoe::cli
