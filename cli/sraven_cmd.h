// Copyright 2026 SMoE Lab authors.
//
// File: cli/sraven_cmd.h
//
// `smoe sraven sample ...`: prints SRAVEN problems as grids or JSON lines.
// `smoe sraven latents ...`: lists a split's rule combinations.
//
//   smoe sraven sample --M 4 --n 5 --split train|test|ood --seed 0
//                      [--batch B] [--json] [--shared-stream] [--no-permute]
//                      [--num-rules R]
//
// Problem i of the output is Generator::Sample(split, B, i) for the config
// given by the flags (worker/data/sraven/sraven.h). With --json each line is
// one object with keys, in this order: M, F, split, seed, batch, index,
// stream ("independent" | "shared"), latent_id, rules ([feature]), grid
// ([row][col][feature], before permutation), permutation ([col][slot] =
// feature in that slot), panels ([row][col][slot], what the model sees),
// answer (= panels[2][2]). Flags accept `--flag value` and `--flag=value`.
//
//   smoe sraven latents --M 4 --seed 0 --split ood [--num-rules R]
//
// prints one line per latent of the split: "<enumeration id>\t<r0>,<r1>,...".
#ifndef SMOE_CLI_SRAVEN_CMD_H_
#define SMOE_CLI_SRAVEN_CMD_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "worker/data/sraven/sraven.h"

namespace smoe::cli {

// The parsed flags of `smoe sraven sample|latents`.
struct SravenOptions {
  std::string command;  // "sample" or "latents"
  sraven::SravenConfig config;
  std::string split_name = "train";
  sraven::Split split = sraven::Split::kTrain;  // from split_name
  int64_t n = 5;
  uint64_t batch = 0;
  bool json = false;
};

// Adds `sraven` with its subcommands `sample` and `latents` to `app`; their
// flags write into `*options`, which must outlive the parse. A bad value is a
// usage error naming the flag and the value ("--M: '9' (must be in 1..8)").
CLI::App* AddSravenCommand(CLI::App* app, SravenOptions* options);

// Runs the parsed command: output to `out`, errors to `err`. Returns a
// process exit code (0 ok, 64 when the split has no rule combinations for
// the config).
int RunSraven(const SravenOptions& options, std::ostream& out,
              std::ostream& err);

// Parses `smoe sraven <args...>` (args exclude "smoe sraven") and runs it.
// Returns 0 (also after --help, printed to `out`) or 64 (usage error: unknown
// flag or subcommand, missing or invalid value, printed to `err`).
int RunSravenCommand(const std::vector<std::string>& args, std::ostream& out,
                     std::ostream& err);

}  // namespace smoe::cli

#endif  // SMOE_CLI_SRAVEN_CMD_H_
