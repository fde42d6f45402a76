// Copyright 2026 SMoE Lab authors.
//
// File: sweeps/command_spec.h
//
// `kind: command` sweeps: the user's own trainer program and the parameter
// schema the sweep file declares for it (docs/trainer-protocol.md, "Your own
// program"). The sweep file's two extra blocks:
//
// clang-format off
//   kind: command
//   command:
//     program: /opt/my-trainer/train.py      # absolute path on the workers
//     args: [--out, "{workdir}/out"]          # {trial} {workdir} {params}
//   params:                                   # name -> declaration
//     steps: {type: int, default: 100, min: 1, doc: "training steps"}
//     lr: {type: number, default: 0.01, min: 0, max: 1}
//     opt: {type: string, default: adam, choices: [adam, sgd]}
//     bias: {type: bool, default: true}
//     data: {type: string}                    # no default: required
// clang-format on
//
// Each declaration becomes a trials::Param of a trials::TrialKind named
// "command" (the built-in kinds' tables are the same structure), so grid,
// fixed and search values are checked by the same code and with the same
// messages as for sraven and skillmix. Parameter names are
// [A-Za-z_][A-Za-z0-9_]{0,63} and distinct ignoring case: the worker passes
// each as the environment variable SMOE_PARAM_<NAME upper-cased>.
#ifndef SMOE_SWEEPS_COMMAND_SPEC_H_
#define SMOE_SWEEPS_COMMAND_SPEC_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "trials/command_kind.h"
#include "trials/params.h"

namespace YAML {
class Node;
class Emitter;
}  // namespace YAML

namespace smoe::sweeps {

// The kind's name and the placeholders `command.args` may use
// (trials/command_kind.h, shared with the worker).
using trials::kCommandKind;
using trials::kCommandPlaceholders;

struct CommandSpec {
  std::string program;            // absolute path, checked on the worker
  std::vector<std::string> args;  // may contain kCommandPlaceholders
  bool operator==(const CommandSpec& o) const {
    return program == o.program && args == o.args;
  }
  bool operator!=(const CommandSpec& o) const { return !(*this == o); }
};

// Converts a YAML scalar to JSON the way the rest of the sweep file is read
// (sweep_spec.cc); its errors name `field`.
using ScalarReader = std::function<absl::StatusOr<nlohmann::json>(
    const YAML::Node& node, absl::string_view field)>;

// Parses `command:`. Each problem (unknown key, missing or relative program,
// an unknown {placeholder}) is appended to `problems`, naming the field.
void ParseCommandBlock(const YAML::Node& node, CommandSpec* out,
                       std::vector<std::string>* problems);

// Parses `params:` into `out` (name "command", one Param per declaration, in
// file order). Each problem is appended to `problems`, naming the field
// ("params.lr.max: ...").
void ParseParamsBlock(const YAML::Node& node, const ScalarReader& scalar,
                      trials::TrialKind* out,
                      std::vector<std::string>* problems);

// Writes the two blocks (keys "command" and "params") so that the parsers
// above read back an equal spec and schema.
void EmitCommandBlocks(const CommandSpec& command,
                       const trials::TrialKind& schema, YAML::Emitter* out);

// Whether two declared schemas are the same (name, type, default, bounds,
// choices, doc of every parameter, in order).
bool SameSchema(const trials::TrialKind& a, const trials::TrialKind& b);

}  // namespace smoe::sweeps

#endif  // SMOE_SWEEPS_COMMAND_SPEC_H_
