// Copyright 2026 SMoE Lab authors.
#include "tests/e2e/cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "proto/rpc_status.h"

extern char** environ;

namespace smoe::e2e {
namespace fs = std::filesystem;

std::unique_ptr<Process> Process::Start(
    const std::vector<std::string>& argv,
    const std::map<std::string, std::string>& env,
    const std::string& log_path) {
  auto p = std::make_unique<Process>();
  p->pid_ = ::fork();
  if (p->pid_ == 0) {
    ::setpgid(0, 0);
    const int fd =
        ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
      ::close(fd);
    }
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return p;
}

Process::~Process() {
  if (pid_ > 0 && !reaped_) {
    KillGroup();
    Wait(absl::Seconds(10));
  }
}

void Process::Signal(int sig) {
  if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
}

void Process::KillGroup() {
  if (pid_ > 0) ::kill(-pid_, SIGKILL);
}

int Process::Wait(absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (!reaped_) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      status_ =
          WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (absl::Now() > end) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status_;
}

bool Process::running() { return Wait(absl::ZeroDuration()) == -1; }

std::pair<int, std::string> RunCommand(
    const std::vector<std::string>& argv,
    const std::map<std::string, std::string>& env, absl::Duration timeout) {
  const std::string log = fs::temp_directory_path() /
                          absl::StrCat("smoe-cmd-", ::getpid(), "-",
                                       absl::ToUnixNanos(absl::Now()), ".log");
  auto p = Process::Start(argv, env, log);
  int rc = p->Wait(timeout);
  if (rc == -1) {
    p->KillGroup();
    rc = p->Wait(absl::Seconds(5));
  }
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  fs::remove(log);
  return {rc, ss.str()};
}

Cluster::Cluster(const std::string& name, const std::string& plan) {
  dir_ = (fs::temp_directory_path() /
          absl::StrCat("smoe-e2e-", name, "-", ::getpid()))
             .string();
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  plan_path_ = WriteFile("plan.json", plan);
}

Cluster::~Cluster() {
  workers_.clear();
  coordinator_.reset();
  if (std::getenv("SMOE_KEEP_E2E") == nullptr) fs::remove_all(dir_);
}

std::string Cluster::smoe() const {
  return std::string(SMOE_BIN_DIR) + "/smoe";
}

std::string Cluster::address() const {
  return absl::StrCat("127.0.0.1:", port_);
}

void Cluster::StartCoordinator(const std::vector<std::string>& extra) {
  const std::string port_file = dir_ + "/port";
  fs::remove(port_file);
  const std::string listen =
      port_ == 0 ? "127.0.0.1:0" : absl::StrCat("127.0.0.1:", port_);
  // clang-format off
  std::vector<std::string> argv = {
      smoe(), "coordinator", "--data-dir", dir_ + "/coord",
      "--listen", listen, "--http-listen", "127.0.0.1:0",
      "--port-file", port_file, "--lease-timeout", "3",
      "--heartbeat-interval", "0.5", "--restart-grace", "20"};
  // clang-format on
  argv.insert(argv.end(), extra.begin(), extra.end());
  coordinator_ = Process::Start(argv, {}, dir_ + "/coordinator.log");
  const absl::Time end = absl::Now() + absl::Seconds(30);
  while (absl::Now() < end && !fs::exists(port_file)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::ifstream in(port_file);
  in >> port_;
  client_.reset();
}

bool Cluster::HasEnvToken(const std::map<std::string, std::string>& env) {
  auto it = env.find("SMOE_TOKEN");
  return it != env.end() && !it->second.empty();
}

Process* Cluster::StartWorker(int i, int slots, const std::string& trainer,
                              const std::vector<std::string>& extra,
                              const std::map<std::string, std::string>& env) {
  const std::string wdir = absl::StrCat(dir_, "/worker-", i);
  fs::create_directories(wdir);
  std::vector<std::string> argv = {smoe(),          "worker",
                                   "--coordinator", address(),
                                   "--work-dir",    wdir,
                                   "--slots",       absl::StrCat(slots),
                                   "--worker-id",   absl::StrCat("e2e-", i),
                                   "--grace",       "10"};
  // A --token-file wins over $SMOE_TOKEN: a test that runs the worker as
  // another identity ($SMOE_TOKEN in `env`) gets no --token-file.
  if (!HasEnvToken(env)) {
    argv.insert(argv.end(), {"--token-file", dir_ + "/coord/token"});
  }
  if (trainer != "-") {
    argv.push_back("--trainer");
    argv.push_back(trainer.empty()
                       ? std::string(SMOE_BIN_DIR) + "/smoe-fake-trainer"
                       : trainer);
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  std::map<std::string, std::string> all_env = env;
  all_env["SMOE_FAKE_TRAINER_PLAN"] = plan_path_;
  workers_[i] = Process::Start(argv, all_env, wdir + "/worker.log");
  return workers_[i].get();
}

std::pair<int, std::string> Cluster::Smoe(
    const std::vector<std::string>& args,
    const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv = {smoe()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--coordinator", address()});
  // The admin token file, unless the test acts as another identity through
  // $SMOE_TOKEN (an explicit --token-file would win over it).
  if (!HasEnvToken(env)) {
    argv.insert(argv.end(), {"--token-file", dir_ + "/coord/token"});
  }
  return RunCommand(argv, env, absl::Seconds(120));
}

std::string Cluster::WriteFile(const std::string& name,
                               const std::string& text) {
  const std::string path = dir_ + "/" + name;
  std::ofstream(path) << text;
  return path;
}

cli::CoordinatorClient* Cluster::client() {
  if (!client_) {
    cli::ClientOptions o;
    o.address = address();
    o.token_file = dir_ + "/coord/token";
    o.timeout = absl::Seconds(10);
    auto c = cli::CoordinatorClient::Create(o);
    if (!c.ok()) return nullptr;
    client_ = std::move(*c);
  }
  return client_.get();
}

absl::StatusOr<smoe::v1::GetSweepResponse> Cluster::GetSweep(
    const std::string& id) {
  if (client() == nullptr) return absl::UnavailableError("no client");
  smoe::v1::GetSweepRequest req;
  req.set_sweep_id(id);
  req.set_include_trials(true);
  req.set_decisions_limit(10000);  // adaptive sweeps: the whole decision log
  smoe::v1::GetSweepResponse resp;
  grpc::ClientContext ctx;
  client()->Prepare(&ctx);
  grpc::Status st = client()->stub()->GetSweep(&ctx, req, &resp);
  if (!st.ok()) return proto::FromGrpcStatus(st);
  return resp;
}

bool Cluster::WaitFor(
    const std::string& sweep_id,
    const std::function<bool(const smoe::v1::GetSweepResponse&)>& pred,
    absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (absl::Now() < end) {
    auto s = GetSweep(sweep_id);
    if (s.ok() && pred(*s)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

absl::StatusOr<smoe::v1::GetTrialMetricsResponse> Cluster::Metrics(
    const std::string& trial_id) {
  smoe::v1::GetTrialMetricsRequest req;
  req.set_trial_id(trial_id);
  smoe::v1::GetTrialMetricsResponse resp;
  grpc::ClientContext ctx;
  client()->Prepare(&ctx);
  grpc::Status st = client()->stub()->GetTrialMetrics(&ctx, req, &resp);
  if (!st.ok()) return proto::FromGrpcStatus(st);
  return resp;
}

int Cluster::TrainerStarts(const std::string& trial_id) {
  const std::string hash = trial_id.substr(trial_id.find('/') + 1);
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir_)) {
    if (e.path().filename() != "attempts.log") continue;
    if (!absl::StrContains(e.path().parent_path().string(), hash)) continue;
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) n += !line.empty();
  }
  return n;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Cluster::HttpPort() {
  const std::regex re("dashboard: http://127\\.0\\.0\\.1:([0-9]+)/");
  for (int i = 0; i < 200; ++i) {
    std::smatch m;
    const std::string log = ReadText(dir_ + "/coordinator.log");
    if (std::regex_search(log, m, re)) return std::stoi(m[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return 0;
}

std::pair<int, std::string> Cluster::Http(int port, const std::string& method,
                                          const std::string& path) {
  std::string token = ReadText(dir_ + "/coord/token");
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) {
    token.pop_back();
  }
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return {0, "connect failed"};
  }
  const std::string req =
      absl::StrCat(method, " ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                   "Authorization: Bearer ", token,
                   "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return {0, "write failed"};
  }
  std::string resp;
  char buf[8192];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) resp.append(buf, n);
  close(fd);
  const size_t sp = resp.find(' ');
  const size_t body = resp.find("\r\n\r\n");
  if (sp == std::string::npos || body == std::string::npos) return {0, resp};
  return {std::stoi(resp.substr(sp + 1, 3)), resp.substr(body + 4)};
}

}  // namespace smoe::e2e
