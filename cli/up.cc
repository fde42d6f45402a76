// Copyright 2026 SMoE Lab authors.
#include "cli/up.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/child_process.h"
#include "cli/client.h"
#include "cli/sweep_cmds.h"
#include "common/logging.h"
#include "coordinator/grpc/service_impl.h"
#include "coordinator/server.h"
#include "coordinator/tokens.h"
#include "nlohmann/json.hpp"
#include "sweeps/sweep_spec.h"
#include "trials/params.h"

namespace smoe::cli {
namespace {

// Starts `argv` as a child in its own process group, its stdout and stderr
// appended to `log`; returns its pid or -1.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log) {
  ChildSpec spec;
  spec.argv = argv;
  spec.own_process_group = true;
  spec.log_file = log;
  spec.exec_error_after = " failed: ";
  return StartChild(spec);
}

// Prints, per (M, attention), the mean over seeds of `metric` at each top_k and
// the best k.
void PrintSummary(store::ExperimentStore* store, const std::string& sweep_id,
                  const std::string& metric, std::ostream& out) {
  auto rows = store->ListSummaries(sweep_id);
  if (!rows.ok()) return;
  std::map<std::pair<int64_t, std::string>,
           std::map<int64_t, std::pair<double, int>>>
      acc;
  for (const auto& r : *rows) {
    if (r.state != store::TrialState::kSucceeded) continue;
    const auto p = nlohmann::json::parse(r.params_json, nullptr, false);
    auto it = r.results.find(metric);
    if (!p.is_object() || it == r.results.end()) continue;
    auto& cell = acc[{p.value("M", int64_t{4}),
                      p.value("attention", std::string("softmax"))}]
                    [p.value("top_k", int64_t{2})];
    cell.first += it->second;
    cell.second += 1;
  }
  if (acc.empty()) return;
  out << "\n"
      << metric << " (mean over seeds) by difficulty M and active experts k:\n";
  for (const auto& [key, by_k] : acc) {
    out << absl::StrFormat("  M=%d %-8s", key.first, key.second);
    int64_t best_k = 0;
    double best = -1;
    for (const auto& [k, sum] : by_k) {
      const double mean = sum.first / sum.second;
      out << absl::StrFormat("  k=%d: %.3f", k, mean);
      if (mean > best) {
        best = mean;
        best_k = k;
      }
    }
    if (metric == "ood_acc" && key.first == 1) {
      // Whole rules are held out at M = 1: no k can do better than chance.
      out << "   (chance by construction)\n";
    } else {
      out << absl::StrFormat("   -> best k = %d\n", best_k);
    }
  }
}

}  // namespace

int RunUp(const UpOptions& options) {
  // Block the shutdown signals before any thread starts; sigwait below.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  std::ifstream in(options.sweep_file);
  if (!in) {
    std::cerr << "smoe up: cannot read sweep file '" << options.sweep_file
              << "' (run from the repository root or pass --sweep)\n";
    return kExitNoInput;
  }
  std::stringstream yaml;
  yaml << in.rdbuf();
  // The sweep's kind picks the workers' kinds (a Skill-Mix sweep on sraven
  // workers would pend forever) and the closing text.
  absl::StatusOr<sweeps::SweepSpec> spec = sweeps::ParseSweepYaml(yaml.str());
  if (!spec.ok()) return ReportError(spec.status(), options.sweep_file);
  const std::vector<std::string> kinds =
      options.kinds.empty() ? std::vector<std::string>{spec->kind}
                            : options.kinds;
  if (std::find(kinds.begin(), kinds.end(), spec->kind) == kinds.end()) {
    std::cerr << "smoe up: --kinds " << absl::StrJoin(kinds, ",")
              << " does not include the sweep's kind " << spec->kind
              << ": its trials would wait forever\n";
    return kExitUsage;
  }
  if (std::find(kinds.begin(), kinds.end(), "command") != kinds.end() &&
      options.allow_command.empty()) {
    std::cerr << "smoe up: kind command needs --allow-command DIR (the "
                 "directory of programs the workers may run)\n";
    return kExitUsage;
  }
  const std::string self = SelfDir() + "/smoe";
  const std::string trainer =
      options.trainer.empty() ? SelfDir() + "/smoe-trainer" : options.trainer;
  if (!std::filesystem::exists(trainer)) {
    std::cerr << "smoe up: trainer '" << trainer
              << "' not found: build it (LibTorch) or pass --trainer\n";
    return kExitUnavailable;
  }

  coordinator::ServerOptions so;
  so.data_dir = options.data_dir;
  so.listen = options.listen;
  so.http_listen = options.http_port < 0
                       ? ""
                       : absl::StrCat("127.0.0.1:", options.http_port);
  so.http_required = false;  // a busy port: keep going, say so below
  auto server = coordinator::CoordinatorServer::Start(so);
  if (!server.ok()) return ReportError(server.status());
  const std::string addr = (*server)->address();
  std::cout << "coordinator: " << addr << " (data in " << options.data_dir
            << "/)\n";
  if ((*server)->token_created() && ::isatty(STDOUT_FILENO)) {
    std::cout << "API token (shown once; also in " << options.data_dir
              << "/token, mode 0600): " << (*server)->token() << "\n";
  } else {
    std::cout << "API token: in " << options.data_dir << "/token\n";
  }
  if (!(*server)->http_url().empty()) {
    std::cout << "dashboard: " << (*server)->http_url()
              << " (sign in with the API token)\n";
  } else {
    std::cout << "dashboard: off (--http-port -1, or port " << options.http_port
              << " is taken: pass --http-port 0 for any free port)\n";
  }

  // The local workers get a worker-role token of their own (docs/roles.md):
  // they can lease and report, never submit, cancel or read sweeps.
  const std::string worker_token_file = options.data_dir + "/worker-token";
  auto worker_token =
      coordinator::EnsureTokenFile((*server)->tokens_file(), worker_token_file,
                                   "local-workers", coordinator::Role::kWorker);
  if (!worker_token.ok()) return ReportError(worker_token.status());

  std::vector<pid_t> workers;
  for (int i = 0; i < options.workers; ++i) {
    const std::string dir = absl::StrCat(options.data_dir, "/worker-", i);
    std::filesystem::create_directories(dir);
    std::vector<std::string> argv = {self,
                                     "worker",
                                     "--coordinator",
                                     addr,
                                     "--token-file",
                                     worker_token_file,
                                     "--work-dir",
                                     dir,
                                     "--slots",
                                     absl::StrCat(options.slots_per_worker),
                                     "--trainer",
                                     trainer,
                                     "--worker-id",
                                     absl::StrCat("local-", i),
                                     "--kinds",
                                     absl::StrJoin(kinds, ",")};
    if (!options.allow_command.empty()) {
      argv.insert(argv.end(), {"--allow-command", options.allow_command});
    }
    workers.push_back(Spawn(argv, dir + "/worker.log"));
  }
  std::cout << "workers: " << options.workers << " local (logs in "
            << options.data_dir << "/worker-*/worker.log; worker-role token in "
            << worker_token_file << ")\n";

  auto sub = (*server)->scheduler()->SubmitSweep(yaml.str(), false);
  int rc = kExitOk;
  if (!sub.ok()) {
    rc = ReportError(sub.status(), "up: " + options.sweep_file);
  } else {
    const std::string id = sub->sweep.record.sweep_id;
    std::cout << "sweep " << id << ": " << sub->new_trials << " new trials, "
              << sub->existing_trials << " already present\n";
    int64_t since = 0;
    SweepProgress progress;
    while (true) {
      auto w = (*server)->scheduler()->WatchSweep(id, since, absl::Seconds(1));
      if (!w.ok()) break;
      since = w->sweep.version;
      smoe::v1::Sweep pb;
      coordinator::ToProto(w->sweep, &pb);
      SetStatusLine(
          progress.Line(pb.counts(), absl::Now(), w->sweep.unschedulable));
      if (w->sweep.record.state != store::SweepState::kActive) break;
      struct timespec zero = {0, 0};
      if (sigtimedwait(&set, nullptr, &zero) > 0) {
        rc = kExitFailure;
        break;
      }
    }
    EndStatusLine();
    // The commands below reach this coordinator from anywhere: its address
    // and the admin token file are spelled out.
    const std::string client_flags = absl::StrCat(
        " --coordinator ", addr, " --token-file ", options.data_dir, "/token");
    const trials::TrialKind* kind = trials::FindKind(spec->kind);
    const trials::KindView view =
        kind != nullptr ? kind->view : trials::KindView{};
    if (!view.headline_metrics.empty()) {
      // The kind's headline metrics, last first (SRAVEN: test, then OOD).
      for (auto m = view.headline_metrics.rbegin();
           m != view.headline_metrics.rend(); ++m) {
        PrintSummary((*server)->store(), id, *m, std::cout);
      }
      if (!view.reading_note.empty()) std::cout << view.reading_note << "\n";
      std::cout << "\nbest " << view.x
                << " with bootstrap CIs over seeds: smoe analyze " << id
                << client_flags;
    } else if (view.layout == "tables") {
      std::cout << "\nEPT x k_skills tables and the best EPT per k_skills: "
                   "smoe analyze "
                << id << client_flags;
    } else {
      std::cout << "\nper-axis optimum with bootstrap CIs over seeds: smoe "
                   "analyze "
                << id << client_flags;
    }
    std::cout << "\nfull results: smoe results " << id << client_flags
              << " --format table|csv|json\n";
  }
  if (!options.exit_when_done && rc == kExitOk) {
    std::cout << "serving on " << addr << "; Ctrl-C to stop\n";
    int sig = 0;
    sigwait(&set, &sig);
  }
  std::cout << "stopping workers...\n";
  for (pid_t p : workers) ::kill(p, SIGTERM);
  for (pid_t p : workers) WaitChild(p);
  (*server)->Shutdown();
  return rc;
}

}  // namespace smoe::cli
