// Copyright 2026 SMoE Lab authors.
#include "cli/model_cmd.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "cli/client.h"

namespace smoe::cli {

int RunModelCommand(const std::vector<std::string>& args, std::ostream& err) {
  constexpr char kUsage[] =
      "usage: smoe model make-random [--trainer PATH] --out DIR\n"
      "         [--shape tiny|mixtral-8x7b|custom] [--layers N] [--hidden H]\n"
      "         [--intermediate F] [--heads N] [--kv-heads N] [--experts E]\n"
      "         [--ept K] [--vocab V] [--max-position N] [--sliding-window W]\n"
      "         [--dtype f32|bf16|f16] [--layout classic|packed]\n"
      "         [--max-shard-mb MB] [--seed S] [--no-tokenizer]\n";
  if (args.empty() || args[0] != "make-random") {
    err << "smoe model: expected the `make-random` subcommand\n" << kUsage;
    return kExitUsage;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (!rest.empty() && (rest[0] == "--help" || rest[0] == "-h")) {
    err << kUsage;
    return kExitOk;
  }
  std::string trainer = SelfDir() + "/smoe-trainer";
  if (rest.size() >= 2 && rest[0] == "--trainer") {
    trainer = rest[1];
    rest.erase(rest.begin(), rest.begin() + 2);
  }
  if (!std::filesystem::exists(trainer)) {
    err << "smoe model: trainer '" << trainer
        << "' not found (build smoe-trainer, or pass --trainer)\n";
    return kExitUnavailable;
  }
  std::vector<char*> argv;
  std::string sub = "make-random-model";
  argv.push_back(trainer.data());
  argv.push_back(sub.data());
  for (std::string& a : rest) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execv(trainer.c_str(), argv.data());
    std::fprintf(stderr, "exec %s: %s\n", trainer.c_str(),
                 std::strerror(errno));
    ::_exit(127);
  }
  if (pid < 0) {
    err << "smoe model: fork: " << std::strerror(errno) << "\n";
    return kExitSoftware;
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace smoe::cli
