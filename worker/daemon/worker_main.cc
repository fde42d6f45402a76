// Copyright 2026 SMoE Lab authors.
#include "worker/daemon/worker_main.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
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

absl::Status BadFlag(absl::string_view flag, absl::string_view value,
                     absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("bad value for ", flag, ": '", value, "' (", why, ")"));
}

absl::StatusOr<absl::Duration> ParseSeconds(absl::string_view flag,
                                            absl::string_view value) {
  double secs = 0;
  absl::Duration d;
  if (absl::SimpleAtod(value, &secs)) {
    d = absl::Seconds(secs);
  } else if (!absl::ParseDuration(value, &d)) {
    return BadFlag(flag, value, "expected seconds, e.g. 30 or 2.5 or 30s");
  }
  if (d < absl::ZeroDuration()) return BadFlag(flag, value, "must be >= 0");
  return d;
}

absl::StatusOr<int> ParseInt(absl::string_view flag, absl::string_view value,
                             int min) {
  int n = 0;
  if (!absl::SimpleAtoi(value, &n)) {
    return BadFlag(flag, value, "expected an integer");
  }
  if (n < min) return BadFlag(flag, value, absl::StrCat("must be >= ", min));
  return n;
}

std::atomic<WorkerDaemon*> g_daemon{nullptr};

}  // namespace

std::string WorkerUsage() {
  return R"(usage: smoe worker [flags]

Runs trials leased from a coordinator, one smoe-trainer process each.
SIGTERM/SIGINT drain it: trainers get SIGTERM, checkpoint and are reported
preempted (re-queued without using the error budget), then it exits 0.

  --coordinator HOST:PORT  coordinator address (default 127.0.0.1:50051)
  --token-file PATH        API token file (default ./smoe-data/token if it
                           exists, else ~/.smoe/token); $SMOE_TOKEN wins
  --tls-ca PATH            PEM root certificates: use TLS (default plaintext)
  --slots N                concurrent trials (default: one per GPU, 1 on CPU)
  --gpus N                 GPUs to use, 0..N-1 (default: from nvidia-smi)
  --gpu-ids I,J            exactly these GPU indices (e.g. 4,5,6,7)
  --labels k=v,k=v         labels matched against sweeps' requirements
  --kinds K,K              trial kinds to run: sraven, skillmix (default sraven)
  --trainer PATH           trainer binary (default: smoe-trainer next to this
                           binary, else on $PATH)
  --work-dir DIR           trial directories + report journal
                           (default ./smoe-data/worker-<hostname>)
  --grace SECONDS          SIGTERM -> SIGKILL grace on drain (default 30)
  --worker-id ID           worker id (default: saved in the work dir, else
                           assigned by the coordinator)
  --rpc-timeout SECONDS    deadline of each coordinator call (default 10)
)";
}

absl::StatusOr<WorkerFlags> ParseWorkerFlags(
    const std::vector<std::string>& args) {
  WorkerFlags f;
  bool token_set = false, work_dir_set = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "--help" || arg == "-h") {
      f.help = true;
      continue;
    }
    if (!absl::StartsWith(arg, "--")) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", arg, "'"));
    }
    std::string name = arg, value;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else {
      static const char* const kKnown[] = {
          "--coordinator", "--token-file", "--tls-ca",    "--slots",
          "--gpus",        "--labels",     "--kinds",     "--trainer",
          "--work-dir",    "--grace",      "--worker-id", "--rpc-timeout",
          "--gpu-ids"};
      bool known = false;
      for (const char* k : kKnown) known = known || name == k;
      if (!known) {
        return absl::InvalidArgumentError(
            absl::StrCat("unknown flag '", name, "'"));
      }
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("flag ", name, " needs a value"));
      }
      value = args[++i];
    }
    if (name == "--coordinator") {
      if (value.empty() || value.find(':') == std::string::npos) {
        return BadFlag(name, value, "expected HOST:PORT");
      }
      f.coordinator = value;
    } else if (name == "--token-file") {
      if (value.empty()) return BadFlag(name, value, "empty path");
      f.token_file = value;
      token_set = true;
    } else if (name == "--tls-ca") {
      if (value.empty()) return BadFlag(name, value, "empty path");
      f.tls_ca = value;
    } else if (name == "--slots") {
      auto n = ParseInt(name, value, 1);
      if (!n.ok()) return n.status();
      f.slots = *n;
    } else if (name == "--gpus") {
      auto n = ParseInt(name, value, 0);
      if (!n.ok()) return n.status();
      f.gpus = *n;
    } else if (name == "--gpu-ids") {
      f.gpu_ids.clear();
      for (absl::string_view id : absl::StrSplit(value, ',')) {
        auto n = ParseInt(name, id, 0);
        if (!n.ok()) return BadFlag(name, value, "expected indices like 0,2,3");
        if (std::find(f.gpu_ids.begin(), f.gpu_ids.end(), *n) !=
            f.gpu_ids.end()) {
          return BadFlag(name, value, absl::StrCat("index ", *n, " repeated"));
        }
        f.gpu_ids.push_back(*n);
      }
    } else if (name == "--labels") {
      f.labels.clear();
      for (absl::string_view kv :
           absl::StrSplit(value, ',', absl::SkipEmpty())) {
        std::pair<std::string, std::string> p =
            absl::StrSplit(kv, absl::MaxSplits('=', 1));
        if (p.first.empty() || kv.find('=') == absl::string_view::npos) {
          return BadFlag(name, value, absl::StrCat("'", kv, "' is not k=v"));
        }
        f.labels[p.first] = p.second;
      }
    } else if (name == "--kinds") {
      f.kinds.clear();
      for (absl::string_view k :
           absl::StrSplit(value, ',', absl::SkipEmpty())) {
        if (k != "sraven" && k != "skillmix") {
          return BadFlag(
              name, value,
              absl::StrCat("unknown kind '", k, "'; known: sraven, skillmix"));
        }
        f.kinds.emplace_back(k);
      }
      if (f.kinds.empty()) return BadFlag(name, value, "no kind given");
    } else if (name == "--trainer") {
      if (value.empty()) return BadFlag(name, value, "empty path");
      f.trainer = value;
    } else if (name == "--work-dir") {
      if (value.empty()) return BadFlag(name, value, "empty path");
      f.work_dir = value;
      work_dir_set = true;
    } else if (name == "--grace") {
      auto d = ParseSeconds(name, value);
      if (!d.ok()) return d.status();
      f.grace = *d;
    } else if (name == "--rpc-timeout") {
      auto d = ParseSeconds(name, value);
      if (!d.ok()) return d.status();
      if (*d <= absl::ZeroDuration())
        return BadFlag(name, value, "must be > 0");
      f.rpc_timeout = *d;
    } else if (name == "--worker-id") {
      if (value.empty()) return BadFlag(name, value, "empty id");
      f.worker_id = value;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '", name, "'"));
    }
  }
  if (!token_set) {
    if (FileExists("smoe-data/token")) {
      f.token_file = "smoe-data/token";
    } else {
      const char* home = getenv("HOME");
      f.token_file = absl::StrCat(home ? home : ".", "/.smoe/token");
    }
  }
  if (!f.gpu_ids.empty() && f.gpus >= 0) {
    return absl::InvalidArgumentError(
        "--gpus and --gpu-ids exclude each other: give a count or the indices");
  }
  if (!work_dir_set) f.work_dir = absl::StrCat("smoe-data/worker-", Hostname());
  return f;
}

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
  if (flags.help) {
    std::cout << WorkerUsage();
    return 0;
  }
  // Token.
  absl::StatusOr<std::string> token = ResolveClientToken(flags.token_file);
  if (!token.ok()) {
    std::cerr << "smoe worker: no API token: " << token.status().message()
              << " (set SMOE_TOKEN or --token-file)\n";
    return 2;
  }
  GrpcGatewayOptions gw;
  gw.address = flags.coordinator;
  gw.token = *token;
  gw.call_timeout = flags.rpc_timeout;
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

  // Trainer.
  std::string trainer = flags.trainer;
  if (trainer.empty()) {
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
  if (trainer[0] != '/') {
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
  opt.trainer_path = trainer;
  opt.work_dir = flags.work_dir;
  if (!opt.work_dir.empty() && opt.work_dir[0] != '/') {
    char cwd[4096];
    if (getcwd(cwd, sizeof(cwd)) != nullptr) {
      opt.work_dir = absl::StrCat(cwd, "/", opt.work_dir);
    }
  }
  opt.grace = flags.grace;

  // One daemon per work directory.
  {
    std::string cur;
    for (absl::string_view part : absl::StrSplit(opt.work_dir, '/')) {
      absl::StrAppend(&cur, part, "/");
      mkdir(cur.c_str(), 0755);
    }
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
                 << ", trainer " << trainer << ", work dir " << opt.work_dir
                 << ", slots " << opt.slots << ", gpus "
                 << opt.gpu_indices.size() << ", token "
                 << RedactSecret(*token);
  absl::Status s = (*daemon)->Run();
  stop.store(true);
  signal_thread.join();
  g_daemon.store(nullptr);
  daemon->reset();
  close(lock_fd);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!s.ok()) {
    std::cerr << "smoe worker: " << s.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace smoe::worker
