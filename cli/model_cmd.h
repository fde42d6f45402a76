// Copyright 2026 SMoE Lab authors.
//
// File: cli/model_cmd.h
//
// `smoe model make-random --out DIR [--shape tiny|mixtral-8x7b|custom] ...`:
// writes a random Mixtral-format checkpoint by running
// `smoe-trainer make-random-model` (the CLI links no LibTorch), forwarding
// every argument after `make-random` unchanged (flags: worker/trainer/
// mixtral_tools.h). `--trainer PATH` (first) picks the trainer binary;
// default: smoe-trainer next to smoe.
#ifndef SMOE_CLI_MODEL_CMD_H_
#define SMOE_CLI_MODEL_CMD_H_

#include <ostream>
#include <string>
#include <vector>

namespace smoe::cli {

// `args` are the words after `smoe model`. Returns the trainer's exit code
// (0 ok, 64 usage), 64 for a bad subcommand, 69 when the trainer is missing.
int RunModelCommand(const std::vector<std::string>& args, std::ostream& err);

}  // namespace smoe::cli

#endif  // SMOE_CLI_MODEL_CMD_H_
