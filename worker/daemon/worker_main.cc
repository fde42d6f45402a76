// Copyright 2026 SMoE Lab authors.
#include "worker/daemon/worker_main.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/address.h"
#include "common/api_token.h"
#include "common/clock.h"
#include "common/logging.h"
#include "worker/daemon/gateway_client.h"
#include "worker/daemon/worker_daemon.h"
#include "worker/launch/process_launcher.h"

namespace smoe::worker {
namespace {

std::string Hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') {
    return "localhost";
  }
  return buf;
}

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool IsExecutable(const std::string& path) {
  return FileExists(path) && access(path.c_str(), X_OK) == 0;
}

std::string FindOnPath(const std::string& name) {
  const char* path = getenv("PATH");
  if (path == nullptr) return "";
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/", name);
    if (IsExecutable(candidate)) return candidate;
  }
  return "";
}

std::string SelfDir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  std::string exe(buf, static_cast<size_t>(n));
  const size_t slash = exe.rfind('/');
  return slash == std::string::npos ? "" : exe.substr(0, slash);
}

std::atomic<WorkerDaemon*> g_daemon{nullptr};

}  // namespace

std::vector<int> DetectGpus() {
  std::vector<int> out;
  const std::string smi = FindOnPath("nvidia-smi");
  if (smi.empty()) return out;
  launch::PosixProcessLauncher launcher;
  launch::ProcessSpec spec;
  spec.argv = {smi, "--query-gpu=index", "--format=csv,noheader"};
  absl::StatusOr<std::unique_ptr<launch::Process>> p = launcher.Start(spec);
  if (!p.ok()) return out;
  std::optional<launch::ExitInfo> e = (*p)->Wait(absl::Seconds(10));
  if (!e.has_value()) {
    (*p)->Signal(SIGKILL).IgnoreError();
    (*p)->Wait(absl::Seconds(5));
    return out;
  }
  if (e->ReportedCode() != 0) return out;
  for (const std::string& line : (*p)->TakeStdoutLines()) {
    int idx;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &idx)) {
      out.push_back(idx);
    }
  }
  return out;
}

int RunWorker(const WorkerFlags& flags) {
  // Token.
  absl::StatusOr<ClientToken> token = ResolveClientToken(flags.token_file);
  if (!token.ok()) {
    std::cerr << "smoe worker: " << token.status().message() << "\n";
    return 2;
  }
  GrpcGatewayOptions gw;
  gw.address = WithDefaultPort(flags.coordinator, kDefaultGrpcPort);
  gw.token = token->token;
  gw.call_timeout = flags.rpc_timeout;
  gw.upload_bytes_per_s = flags.checkpoint_upload_mbps * 1e6 / 8;
  if (!flags.tls_ca.empty()) {
    std::ifstream in(flags.tls_ca);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in || ss.str().empty()) {
      std::cerr << "smoe worker: cannot read --tls-ca '" << flags.tls_ca
                << "'\n";
      return 2;
    }
    gw.tls_root_certs_pem = ss.str();
  }

  // Trainer: not needed by a worker that runs only kind command (the
  // sweeps' own programs), e.g. on a host with the user's Python stack but
  // no LibTorch build of ours.
  const bool command_only =
      !flags.kinds.empty() &&
      std::all_of(flags.kinds.begin(), flags.kinds.end(),
                  [](const std::string& k) { return k == "command"; });
  std::string trainer = flags.trainer;
  if (command_only && trainer.empty()) {
    // Launch never uses it for kind command.
  } else if (trainer.empty()) {
    const std::string self = SelfDir();
    for (const std::string& c :
         {self + "/smoe-trainer", self + "/../worker/trainer/smoe-trainer"}) {
      if (!self.empty() && IsExecutable(c)) {
        trainer = c;
        break;
      }
    }
    if (trainer.empty()) trainer = FindOnPath("smoe-trainer");
    if (trainer.empty()) {
      std::cerr << "smoe worker: smoe-trainer not found next to this binary "
                   "or on $PATH; pass --trainer PATH\n";
      return 2;
    }
  } else if (!IsExecutable(trainer)) {
    std::cerr << "smoe worker: bad value for --trainer: '" << trainer
              << "' is not an executable file\n";
    return 2;
  }
  if (!trainer.empty() && trainer[0] != '/') {
    char cwd[4096];
    if (getcwd(cwd, sizeof(cwd)) != nullptr)
      trainer = absl::StrCat(cwd, "/", trainer);
  }

  WorkerDaemonOptions opt;
  opt.worker_id = flags.worker_id;
  opt.hostname = Hostname();
  opt.cpus = std::max(1u, std::thread::hardware_concurrency());
  if (!flags.gpu_ids.empty()) {
    opt.gpu_indices = flags.gpu_ids;
  } else if (flags.gpus >= 0) {
    for (int i = 0; i < flags.gpus; ++i) opt.gpu_indices.push_back(i);
  } else {
    opt.gpu_indices = DetectGpus();
  }
  opt.slots = flags.slots > 0
                  ? flags.slots
                  : std::max(1, static_cast<int>(opt.gpu_indices.size()));
  opt.labels = flags.labels;
  opt.kinds = flags.kinds;
  // User programs: only under directories named with --allow-command.
  for (const std::string& d : flags.allow_command) {
    char real[PATH_MAX];
    struct stat st;
    if (realpath(d.c_str(), real) == nullptr || stat(real, &st) != 0 ||
        !S_ISDIR(st.st_mode)) {
      std::cerr << "smoe worker: bad value for --allow-command: '" << d
                << "' is not a directory\n";
      return 2;
    }
    opt.allowed_command_dirs.push_back(real);
  }
  if (!opt.allowed_command_dirs.empty() &&
      std::find(opt.kinds.begin(), opt.kinds.end(), "command") ==
          opt.kinds.end()) {
    opt.kinds.push_back("command");
  }
  opt.trainer_path = trainer;
  opt.work_dir = flags.work_dir.empty()
                     ? absl::StrCat("smoe-data/worker-", Hostname())
                     : flags.work_dir;
  if (!opt.work_dir.empty() && opt.work_dir[0] != '/') {
    char cwd[4096];
    if (getcwd(cwd, sizeof(cwd)) != nullptr) {
      opt.work_dir = absl::StrCat(cwd, "/", opt.work_dir);
    }
  }
  opt.grace = flags.grace;
  opt.checkpoint_sync = !flags.no_checkpoint_sync;
  opt.checkpoint_dir = flags.checkpoint_dir;
  if (!opt.checkpoint_dir.empty() && opt.checkpoint_dir[0] != '/') {
    std::cerr << "smoe worker: bad value for --checkpoint-dir: '"
              << opt.checkpoint_dir
              << "' (an absolute path every worker mounts)\n";
    return 64;
  }

  // One daemon per work directory.
  {
    std::string cur;
    for (absl::string_view part : absl::StrSplit(opt.work_dir, '/')) {
      absl::StrAppend(&cur, part, "/");
      mkdir(cur.c_str(), 0700);
    }
    // Owner only, also for one made before (0755): trial dirs hold attempt
    // logs, parameters and checkpoints (issue 36). Only our own folder: the
    // work dir itself may be a shared one the user chose.
    const std::string trials_dir = opt.work_dir + "/trials";
    mkdir(trials_dir.c_str(), 0700);
    chmod(trials_dir.c_str(), 0700);
  }
  const std::string lock_path = opt.work_dir + "/daemon.lock";
  const int lock_fd =
      open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    std::cerr << "smoe worker: bad value for --work-dir: '" << opt.work_dir
              << "' is in use by another worker daemon (or unwritable: "
              << strerror(errno) << ")\n";
    if (lock_fd >= 0) close(lock_fd);
    return 2;
  }

  // Signals: blocked here (and thus in every thread started from now on, gRPC
  // included) and taken by one thread with sigtimedwait. Children reset the
  // mask (process_launcher.h).
  sigset_t sigs, old;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, &old);
  signal(SIGPIPE, SIG_IGN);

  absl::StatusOr<std::unique_ptr<GatewayClient>> client =
      NewGrpcGatewayClient(gw);
  if (!client.ok()) {
    std::cerr << "smoe worker: " << client.status().message() << "\n";
    close(lock_fd);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return 2;
  }
  launch::PosixProcessLauncher launcher;
  absl::StatusOr<std::unique_ptr<WorkerDaemon>> daemon =
      WorkerDaemon::Create(client->get(), &launcher, Clock::Real(), opt);
  if (!daemon.ok()) {
    std::cerr << "smoe worker: " << daemon.status().message() << "\n";
    close(lock_fd);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return 1;
  }
  g_daemon.store(daemon->get());
  std::atomic<bool> stop{false};
  std::thread signal_thread([&] {
    const timespec timeout = {0, 200 * 1000 * 1000};
    while (!stop.load()) {
      const int sig = sigtimedwait(&sigs, nullptr, &timeout);
      if (sig == SIGTERM || sig == SIGINT) {
        SMOE_LOG(INFO) << "got signal " << sig << "; draining";
        WorkerDaemon* d = g_daemon.load();
        if (d != nullptr) d->RequestDrain();
      }
    }
  });
  SMOE_LOG(INFO) << "smoe worker: coordinator " << flags.coordinator
                 << ", trainer "
                 << (trainer.empty() ? std::string("none (kind command only)")
                                     : trainer)
                 << ", work dir " << opt.work_dir << ", slots " << opt.slots
                 << ", gpus " << opt.gpu_indices.size() << ", token "
                 << RedactSecret(token->token) << " (from " << token->source
                 << ")";
  absl::Status s = (*daemon)->Run();
  stop.store(true);
  signal_thread.join();
  g_daemon.store(nullptr);
  daemon->reset();
  close(lock_fd);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!s.ok()) {
    std::cerr << "smoe worker: " << s.message() << "\n";
    // 77 (EX_NOPERM) for a refused token, as the other smoe commands.
    return absl::IsUnauthenticated(s) || absl::IsPermissionDenied(s) ? 77 : 1;
  }
  return 0;
}

}  // namespace smoe::worker
