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

#include <ostream>
#include <string>
#include <vector>

namespace smoe::cli {

// Runs `smoe sraven <args...>` (args exclude "smoe sraven"). Writes output to
// `out`, errors to `err`. Returns a process exit code (0 ok, 64 usage error:
// unknown flag or subcommand, missing or invalid value; the message names the
// flag and the value).
int RunSravenCommand(const std::vector<std::string>& args, std::ostream& out,
                     std::ostream& err);

}  // namespace smoe::cli

#endif  // SMOE_CLI_SRAVEN_CMD_H_
