// Copyright 2026 SMoE Lab authors.
#include "cli/local_trial.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/client.h"
#include "cli/up.h"
#include "common/clock.h"
#include "worker/launch/process_launcher.h"
#include "worker/launch/rank_group.h"

namespace smoe::cli {
namespace {

// SIGINT/SIGTERM received by this process while ranks run.
volatile sig_atomic_t g_signals = 0;
void OnSignal(int) { g_signals = g_signals + 1; }

// Installs OnSignal for SIGINT and SIGTERM and restores the previous handlers
// when destroyed. RunLocalTrial's loop looks at g_signals every 20 ms.
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

}  // namespace

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
  if (world > 1 && trial.params.value("device", "") == "cuda" &&
      static_cast<int>(trial.gpu_ids.size()) < world) {
    std::cerr << cmd << ": note: --ep-size " << world << " with "
              << trial.gpu_ids.size()
              << " --gpu-ids: every rank sees the same GPUs, rank r uses "
                 "GPU r of them (pass one id per rank, e.g. --gpu-ids 0,1, "
                 "to choose)\n";
  }

  launch::RankGroupSpec rs;
  rs.argv = {trainer, "run", "--trial", trial_path, "--workdir", trial.workdir};
  rs.world_size = world;
  rs.rendezvous_dir = trial.workdir;
  rs.gpu_ids = trial.gpu_ids;
  rs.parent_death_signal = SIGTERM;
  rs.grace = absl::Seconds(trial.term_grace_s);
  rs.reap_deadline = absl::Seconds(kReapDeadlineS);
  rs.output = [&](int r) {
    if (r == 0) {
      // Both piped: rank 0's stderr lines are printed above the progress
      // line, so the trainer's warnings never overwrite it.
      return launch::RankOutput{launch::OutputSpec::Pipe(),
                                launch::OutputSpec::Pipe()};
    }
    const std::string log = absl::StrCat(trial.workdir, "/rank", r, ".log");
    return launch::RankOutput{launch::OutputSpec::File(log),
                              launch::OutputSpec::File(log)};
  };
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  std::string last_drawn;
  // Prints a whole line above the progress line (on a terminal the progress
  // line is erased, the line printed, and the progress line drawn again).
  auto print_above = [&](absl::string_view line) {
    const bool redraw = tty && !last_drawn.empty();
    std::cerr << (redraw ? "\r\033[K" : "") << line << "\n"
              << (redraw ? last_drawn : "") << std::flush;
  };
  rs.note = [&](absl::string_view line) {
    print_above(absl::StrCat(cmd, ": ", line));
  };
  launch::PosixProcessLauncher launcher;
  SignalForwarding forwarding;
  absl::StatusOr<std::unique_ptr<launch::RankGroup>> started =
      launch::RankGroup::Start(&launcher, Clock::Real(), std::move(rs));
  if (!started.ok()) {
    std::cerr << cmd
              << ": cannot start the ranks: " << started.status().message()
              << "\n";
    return kExitSoftware;
  }
  launch::RankGroup& group = **started;

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
  auto drain = [&]() {
    for (const std::string& line : group.rank(0).TakeStderrLines()) {
      print_above(line);
    }
    for (const std::string& line : group.rank(0).TakeStdoutLines()) {
      handle_line(line);
    }
  };

  int handled_signals = 0;
  for (;;) {
    const int signals = g_signals;
    if (signals > handled_signals) {
      if (handled_signals == 0) {
        print_above(absl::StrCat(cmd, ": stopping (SIGTERM to ", world,
                                 world > 1 ? " ranks" : " trainer",
                                 "; again to kill)"));
        group.Stop(absl::Seconds(trial.term_grace_s));
      } else {
        group.Kill();
      }
      handled_signals = signals;
    }
    drain();
    if (group.Poll() || group.stuck()) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  drain();  // what rank 0 wrote just before it exited
  if (tty && !last_drawn.empty()) std::cerr << "\n";
  if (!group.done()) {
    for (int r = 0; r < world; ++r) {
      if (!group.exit(r).has_value()) {
        std::cerr << cmd << ": rank " << r << " (pid " << group.rank(r).pid()
                  << ") did not exit " << kReapDeadlineS
                  << " s after SIGKILL; giving up on it\n";
      }
    }
    // Destroying the group would wait for the rank to be reaped: leave it.
    (void)started->release();
    return kExitSoftware;
  }
  const int rc = group.DecisiveExit().ReportedCode();
  const std::optional<int> first_failed = group.first_failed();
  if (rc != 0 && world > 1 && first_failed.has_value() &&
      handled_signals == 0) {
    std::cerr << cmd << ": the first rank to fail was rank " << *first_failed
              << " (code " << group.exit(*first_failed)->ReportedCode() << ")"
              << (*first_failed == 0
                      ? "; its log is above"
                      : absl::StrCat("; its log: ", trial.workdir, "/rank",
                                     *first_failed, ".log"))
              << "\n";
  }
  return rc;
}

}  // namespace smoe::cli
