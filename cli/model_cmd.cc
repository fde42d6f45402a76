// Copyright 2026 SMoE Lab authors.
#include "cli/model_cmd.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "cli/child_process.h"
#include "cli/client.h"

namespace smoe::cli {

CLI::App* AddModelCommand(CLI::App* app, ModelOptions* o) {
  CLI::App* model = app->add_subcommand("model", "Model checkpoint tools");
  model->require_subcommand(1);
  CLI::App* make = model->add_subcommand(
      "make-random",
      "Write a random Mixtral-format checkpoint + tokenizer (runs "
      "smoe-trainer make-random-model; other flags go to it)");
  make->allow_extras();
  make->add_option("--trainer", o->trainer,
                   "Trainer binary (default: smoe-trainer next to smoe)")
      ->type_name("PATH");
  make->footer(
      "Trainer flags: --out DIR [--shape tiny|mixtral-8x7b|custom] "
      "[--layers N] [--hidden H] [--intermediate F] [--heads N] "
      "[--kv-heads N] [--experts E] [--ept K] [--vocab V] [--max-position N] "
      "[--sliding-window W] [--dtype f32|bf16|f16] [--layout "
      "classic|packed] [--max-shard-mb MB] [--seed S] [--no-tokenizer]");
  o->make_random = make;
  return model;
}

int RunModel(const ModelOptions& o, std::ostream& err) {
  std::string trainer =
      o.trainer.empty() ? SelfDir() + "/smoe-trainer" : o.trainer;
  std::vector<std::string> rest = o.make_random->remaining();
  if (!std::filesystem::exists(trainer)) {
    err << "smoe model: trainer '" << trainer
        << "' not found (build smoe-trainer, or pass --trainer)\n";
    return kExitUnavailable;
  }
  ChildSpec spec;
  spec.argv = {trainer, "make-random-model"};
  spec.argv.insert(spec.argv.end(), rest.begin(), rest.end());
  const pid_t pid = StartChild(spec);
  if (pid < 0) {
    err << "smoe model: fork: " << std::strerror(errno) << "\n";
    return kExitSoftware;
  }
  return ExitCodeOf(WaitChild(pid));
}

}  // namespace smoe::cli
