// Copyright 2026 SMoE Lab authors.
//
// smoe-ep-train-rank TRIAL.json WORKDIR: runs worker/trainer's RunTraining
// (the library behind smoe-trainer run) as one rank, with JSON Lines events
// on stdout. Used by ep_train_test to compare an ep_size=2 run against the
// single-process run.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "worker/trainer/train_config.h"
#include "worker/trainer/trainer.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s TRIAL.json WORKDIR\n", argv[0]);
    return 64;
  }
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  auto spec = smoe::trainer::ParseTrialJson(text.str());
  if (!spec.ok()) {
    std::fprintf(stderr, "%s\n", spec.status().ToString().c_str());
    return 64;
  }
  smoe::trainer::ConfigureTorchThreads();
  smoe::trainer::StdoutEventSink sink;
  smoe::trainer::RunOptions options;
  options.workdir = argv[2];
  options.events = &sink;
  auto result = smoe::trainer::RunTraining(spec->config, options);
  if (!result.ok()) {
    std::fprintf(stderr, "%s\n", result.status().ToString().c_str());
    return absl::IsInvalidArgument(result.status()) ? 64 : 1;
  }
  return 0;
}
