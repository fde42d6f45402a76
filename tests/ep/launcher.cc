// Copyright 2026 SMoE Lab authors.
#include "tests/ep/launcher.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace smoe::ep_test {

std::vector<RankExit> RunRanks(const std::vector<std::string>& argv, int world,
                               const std::string& rendezvous,
                               const std::string& dir, double deadline_s) {
  std::vector<RankExit> exits(world);
  std::vector<pid_t> pids(world, -1);
  for (int r = 0; r < world; ++r) {
    exits[r].stdout_path = dir + "/rank" + std::to_string(r) + ".out";
    exits[r].stderr_path = dir + "/rank" + std::to_string(r) + ".err";
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("SMOE_RANK", std::to_string(r).c_str(), 1);
      setenv("SMOE_WORLD_SIZE", std::to_string(world).c_str(), 1);
      setenv("SMOE_RENDEZVOUS", rendezvous.c_str(), 1);
      setenv("OMP_NUM_THREADS", "1", 1);
      if (chdir(dir.c_str()) != 0) _exit(126);
      const int out = open(exits[r].stdout_path.c_str(),
                           O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = open(exits[r].stderr_path.c_str(),
                           O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(out, 1);
      dup2(err, 2);
      std::vector<char*> args;
      for (const std::string& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    pids[r] = pid;
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(deadline_s);
  int running = world;
  bool kill_all = false;
  while (running > 0) {
    for (int r = 0; r < world; ++r) {
      if (pids[r] < 0) continue;
      int status = 0;
      if (waitpid(pids[r], &status, WNOHANG) == pids[r]) {
        exits[r].code =
            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        pids[r] = -1;
        --running;
        if (exits[r].code != 0) kill_all = true;  // peers cannot finish
      }
    }
    if (running > 0 &&
        (kill_all || std::chrono::steady_clock::now() > deadline)) {
      for (int r = 0; r < world; ++r) {
        if (pids[r] < 0) continue;
        kill(pids[r], SIGKILL);
        int status = 0;
        waitpid(pids[r], &status, 0);
        exits[r].code = 128 + SIGKILL;
        exits[r].killed = true;
        pids[r] = -1;
        --running;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return exits;
}

std::string MakeTempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ =
      std::string(tmp != nullptr ? tmp : "/tmp") + "/" + prefix + "XXXXXX";
  char* made = mkdtemp(templ.data());
  return made != nullptr ? std::string(made) : std::string();
}

int PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    socklen_t len = sizeof(addr);
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace smoe::ep_test
