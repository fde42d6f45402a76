// Copyright 2026 SMoE Lab authors.
//
// File: cli/model_cmd.h
//
// `smoe model make-random --out DIR [--shape tiny|mixtral-8x7b|custom] ...`:
// writes a random Mixtral-format checkpoint by running
// `smoe-trainer make-random-model` (the CLI links no LibTorch), forwarding
// every argument after `make-random` unchanged (flags: worker/trainer/
// mixtral_tools.h). `--trainer PATH` picks the trainer binary;
// default: smoe-trainer next to smoe.
#ifndef SMOE_CLI_MODEL_CMD_H_
#define SMOE_CLI_MODEL_CMD_H_

#include <ostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"

namespace smoe::cli {

struct ModelOptions {
  std::string trainer;              // empty: smoe-trainer next to smoe
  CLI::App* make_random = nullptr;  // its remaining() go to the trainer
};

// Adds `model make-random` to `app`; --trainer writes into `*options`, every
// other argument is forwarded to `smoe-trainer make-random-model`.
CLI::App* AddModelCommand(CLI::App* app, ModelOptions* options);

// Runs `smoe-trainer make-random-model` with the forwarded arguments and
// returns its exit code (69 when the trainer is missing).
int RunModel(const ModelOptions& options, std::ostream& err);

}  // namespace smoe::cli

#endif  // SMOE_CLI_MODEL_CMD_H_
