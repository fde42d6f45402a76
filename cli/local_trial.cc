// Copyright 2026 SMoE Lab authors.
#include "cli/local_trial.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/client.h"

extern char** environ;

namespace smoe::cli {
namespace {

using Clock = std::chrono::steady_clock;

// SIGINT/SIGTERM received by this process while ranks run.
volatile sig_atomic_t g_signals = 0;
void OnSignal(int) { g_signals = g_signals + 1; }

// Installs OnSignal for SIGINT and SIGTERM (without SA_RESTART, so poll()
// wakes up) and restores the previous handlers when destroyed.
class SignalForwarding {
 public:
  SignalForwarding() {
    g_signals = 0;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }
  ~SignalForwarding() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

 private:
  struct sigaction old_int_, old_term_;
};

struct Rank {
  pid_t pid = -1;
  bool exited = false;
  int code = 0;  // exit status, or 128 + signal
};

// A rank's environment: ours, with `set` replacing same-named variables.
std::vector<std::string> RankEnv(
    const std::map<std::string, std::string>& set) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (set.count(key) == 0) env.push_back(kv);
  }
  for (const auto& [k, v] : set) env.push_back(k + "=" + v);
  return env;
}

// Starts one rank: stdin from /dev/null, stdout to `out_fd`, stderr to
// `err_fd` (-1: inherited), its own process group, SIGTERM when we die.
// Returns the pid, or -1 (errno set) when fork fails.
pid_t StartRank(const std::vector<std::string>& argv,
                const std::vector<std::string>& env, int out_fd, int err_fd) {
  std::vector<char*> cargv, cenv;
  for (const std::string& a : argv)
    cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const std::string& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid != 0) {
    if (pid > 0) ::setpgid(pid, pid);  // also in the child: no race
    return pid;
  }
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(75);  // the CLI died before prctl
  const int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
  ::dup2(out_fd, STDOUT_FILENO);
  if (err_fd >= 0) ::dup2(err_fd, STDERR_FILENO);
  // Every descriptor the CLI opened here is close-on-exec.
  ::execve(cargv[0], cargv.data(), cenv.data());
  std::fprintf(stderr, "exec %s: %s\n", cargv[0], std::strerror(errno));
  ::_exit(127);
}

// Sends `sig` to the process group of every rank still running.
void SignalRanks(const std::vector<Rank>& ranks, int sig) {
  for (const Rank& r : ranks) {
    if (!r.exited && r.pid > 0) ::kill(-r.pid, sig);
  }
}

Clock::duration GraceDuration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(seconds));
}

// SIGKILLs and reaps `ranks`, waiting at most kReapDeadlineS.
void KillAndReap(std::vector<Rank>& ranks) {
  SignalRanks(ranks, SIGKILL);
  const Clock::time_point until =
      Clock::now() + std::chrono::seconds(static_cast<int64_t>(kReapDeadlineS));
  for (Rank& r : ranks) {
    while (!r.exited && Clock::now() < until) {
      if (::waitpid(r.pid, nullptr, WNOHANG) == r.pid) {
        r.exited = true;
      } else {
        ::poll(nullptr, 0, 10);
      }
    }
  }
}

}  // namespace

std::string ProgressBar(int64_t step, int64_t total, int width) {
  const int filled =
      total > 0 ? static_cast<int>(step * width / std::max<int64_t>(total, 1))
                : 0;
  const int f = std::max(0, std::min(filled, width));
  return std::string(static_cast<size_t>(f), '#') +
         std::string(static_cast<size_t>(width - f), '-');
}

std::optional<std::string> VisibleDevicesForRank(const std::vector<int>& ids,
                                                 int world, int rank) {
  if (ids.empty()) return std::nullopt;
  if (world <= 1 || static_cast<int>(ids.size()) < world) {
    return absl::StrJoin(ids, ",");
  }
  const size_t per = ids.size() / static_cast<size_t>(world);
  return absl::StrJoin(ids.begin() + static_cast<ptrdiff_t>(rank * per),
                       ids.begin() + static_cast<ptrdiff_t>((rank + 1) * per),
                       ",");
}

int RunLocalTrial(
    LocalTrial& trial,
    const std::function<std::string(const nlohmann::json&)>& on_event) {
  namespace fs = std::filesystem;
  const std::string& cmd = trial.command;
  if (trial.ep_size < 1) {
    std::cerr << cmd << ": --ep-size " << trial.ep_size << ": must be >= 1\n";
    return kExitUsage;
  }
  const int world = trial.ep_size;
  if (trial.workdir.empty()) {
    std::string tmpl = "/tmp/smoe-" + trial.kind + "-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      std::cerr << cmd << ": cannot create a work dir: " << std::strerror(errno)
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
    std::cerr << cmd << ": trainer '" << trainer
              << "' not found (build smoe-trainer, or pass --trainer)\n";
    return kExitUnavailable;
  }
  const nlohmann::json spec = {
      {"sweep_id", "local"}, {"trial_id", "local/" + trial.kind},
      {"attempt", 1},        {"kind", trial.kind},
      {"seed", trial.seed},  {"params", trial.params}};
  const std::string trial_path = trial.workdir + "/TRIAL.json";
  if (!(std::ofstream(trial_path) << spec.dump(2) << "\n")) {
    std::cerr << cmd << ": cannot write " << trial_path << "\n";
    return kExitSoftware;
  }
  const std::string rendezvous = trial.workdir + "/" + kRendezvousFile;
  if (world > 1) {
    fs::remove(rendezvous, ec);  // a stale store from an earlier run
    if (ec) {
      std::cerr << cmd << ": cannot remove the stale rendezvous " << rendezvous
                << ": " << ec.message() << "\n";
      return kExitSoftware;
    }
    if (trial.params.value("device", "") == "cuda" &&
        static_cast<int>(trial.gpu_ids.size()) < world) {
      std::cerr << cmd << ": note: --ep-size " << world << " with "
                << trial.gpu_ids.size()
                << " --gpu-ids: every rank sees the same GPUs, rank r uses "
                   "GPU r of them (pass one id per rank, e.g. --gpu-ids 0,1, "
                   "to choose)\n";
    }
  }

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return kExitSoftware;
  std::vector<Rank> ranks(static_cast<size_t>(world));
  const std::vector<std::string> argv = {
      trainer, "run", "--trial", trial_path, "--workdir", trial.workdir};
  SignalForwarding forwarding;
  for (int r = 0; r < world; ++r) {
    std::map<std::string, std::string> env;
    if (auto v = VisibleDevicesForRank(trial.gpu_ids, world, r)) {
      env["CUDA_VISIBLE_DEVICES"] = *v;
    }
    if (world > 1) {
      env["SMOE_RANK"] = absl::StrCat(r);
      env["SMOE_WORLD_SIZE"] = absl::StrCat(world);
      env["SMOE_RENDEZVOUS"] = rendezvous;
    }
    int out_fd = fds[1], err_fd = -1;
    if (r > 0) {
      const std::string log = absl::StrCat(trial.workdir, "/rank", r, ".log");
      out_fd = err_fd =
          ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (out_fd < 0) {
        std::cerr << cmd << ": cannot open " << log << ": "
                  << std::strerror(errno) << "\n";
      }
    }
    const pid_t pid =
        out_fd < 0 ? -1 : StartRank(argv, RankEnv(env), out_fd, err_fd);
    if (r > 0 && out_fd >= 0) ::close(out_fd);
    if (pid < 0) {
      if (out_fd >= 0) {
        std::cerr << cmd << ": cannot start rank " << r << ": "
                  << std::strerror(errno) << "\n";
      }
      // Stop the ranks already started.
      ranks.resize(static_cast<size_t>(r));
      KillAndReap(ranks);
      ::close(fds[0]);
      ::close(fds[1]);
      return kExitSoftware;
    }
    ranks[static_cast<size_t>(r)].pid = pid;
  }
  ::close(fds[1]);
  const int in_fd = fds[0];
  ::fcntl(in_fd, F_SETFL, ::fcntl(in_fd, F_GETFL) | O_NONBLOCK);

  const bool tty = ::isatty(STDERR_FILENO) != 0;
  std::string last_drawn, pending;
  auto handle_line = [&](const std::string& line) {
    const auto ev = nlohmann::json::parse(line, nullptr, false);
    if (!ev.is_object()) return;
    const std::string drawn = on_event(ev);
    if (drawn != last_drawn) {
      std::cerr << (tty ? "\r\033[K" : "") << drawn << (tty ? "" : "\n")
                << std::flush;
      last_drawn = drawn;
    }
  };
  bool stdout_open = true;
  // Reads what rank 0 wrote so far; returns at EAGAIN or EOF.
  auto drain = [&]() {
    char chunk[65536];
    while (stdout_open) {
      const ssize_t n = ::read(in_fd, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n <= 0) {
        stdout_open = false;
        break;
      }
      pending.append(chunk, static_cast<size_t>(n));
      size_t nl;
      while ((nl = pending.find('\n')) != std::string::npos) {
        handle_line(pending.substr(0, nl));
        pending.erase(0, nl + 1);
      }
    }
  };

  int handled_signals = 0;
  bool term_sent = false, kill_sent = false, stuck = false;
  Clock::time_point kill_at = Clock::time_point::max(),
                    reap_by = Clock::time_point::max();
  auto terminate = [&](double grace_s) {
    if (!term_sent) {
      SignalRanks(ranks, SIGTERM);
      term_sent = true;
    }
    kill_at = std::min(kill_at, Clock::now() + GraceDuration(grace_s));
  };
  auto kill_all = [&]() {
    SignalRanks(ranks, SIGKILL);
    if (!kill_sent) {
      kill_sent = true;
      reap_by = Clock::now() +
                std::chrono::seconds(static_cast<int64_t>(kReapDeadlineS));
    }
  };
  int first_failed = -1;  // the first rank seen ending with a non-zero code
  // A rank that succeeded: the others should end on their own by then.
  Clock::time_point finish_by = Clock::time_point::max();
  int finished_rank = -1;
  for (;;) {
    const int signals = g_signals;
    if (signals > handled_signals) {
      if (handled_signals == 0) {
        std::cerr << (tty && !last_drawn.empty() ? "\n" : "") << cmd
                  << ": stopping (SIGTERM to " << world
                  << (world > 1 ? " ranks" : " trainer")
                  << "; again to kill)\n";
        last_drawn.clear();
        terminate(trial.term_grace_s);
      } else {
        kill_all();
      }
      handled_signals = signals;
    }
    if (stdout_open) {
      struct pollfd p = {in_fd, POLLIN, 0};
      if (::poll(&p, 1, 100) > 0) drain();
    } else {
      ::poll(nullptr, 0, 100);
    }
    bool all = true;
    for (size_t r = 0; r < ranks.size(); ++r) {
      Rank& k = ranks[r];
      if (k.exited) continue;
      int status = 0;
      if (::waitpid(k.pid, &status, WNOHANG) == k.pid) {
        k.exited = true;
        k.code =
            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        ::kill(-k.pid, SIGKILL);  // stragglers left in its group
        if (k.code != 0 && first_failed < 0) first_failed = static_cast<int>(r);
        // One rank failed: the others cannot go on without it. One that
        // succeeded: the others are finishing too; SIGTERM only those still
        // running after the grace (no race with their last steps).
        if (world > 1 && k.code != 0) {
          terminate(trial.term_grace_s);
        } else if (world > 1 && finished_rank < 0) {
          finished_rank = static_cast<int>(r);
          finish_by = Clock::now() + GraceDuration(trial.term_grace_s);
        }
      } else {
        all = false;
      }
    }
    if (all) break;
    const Clock::time_point now = Clock::now();
    if (!term_sent && now >= finish_by) {
      std::cerr << cmd << ": ranks still running " << trial.term_grace_s
                << " s after rank " << finished_rank
                << " finished; sending SIGTERM\n";
      terminate(trial.term_grace_s);
    }
    if (term_sent && !kill_sent && now >= kill_at) {
      std::cerr << cmd << ": ranks still running " << trial.term_grace_s
                << " s after SIGTERM; sending SIGKILL\n";
      kill_all();
    }
    if (kill_sent && now >= reap_by) {
      stuck = true;
      break;
    }
  }
  drain();  // what rank 0 wrote just before it exited
  if (!pending.empty()) handle_line(pending);
  ::close(in_fd);
  if (tty && !last_drawn.empty()) std::cerr << "\n";
  if (world > 1) fs::remove(rendezvous, ec);
  if (stuck) {
    for (size_t r = 0; r < ranks.size(); ++r) {
      if (!ranks[r].exited) {
        std::cerr << cmd << ": rank " << r << " (pid " << ranks[r].pid
                  << ") did not exit " << kReapDeadlineS
                  << " s after SIGKILL; giving up on it\n";
      }
    }
    return kExitSoftware;
  }
  // The exit that decides: rank 0's, unless it succeeded and another did not.
  size_t decisive = 0;
  for (size_t r = 1; r < ranks.size(); ++r) {
    if (ranks[decisive].code == 0 && ranks[r].code != 0) decisive = r;
  }
  const int rc = ranks[decisive].code;
  if (rc != 0 && world > 1 && first_failed >= 0 && handled_signals == 0) {
    std::cerr << cmd << ": the first rank to fail was rank " << first_failed
              << " (code " << ranks[static_cast<size_t>(first_failed)].code
              << ")"
              << (first_failed == 0
                      ? "; its log is above"
                      : absl::StrCat("; its log: ", trial.workdir, "/rank",
                                     first_failed, ".log"))
              << "\n";
  }
  return rc;
}

}  // namespace smoe::cli
