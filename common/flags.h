// Copyright 2026 SMoE Lab authors.
//
// File: common/flags.h
//
// The one way our binaries (`smoe`, `smoe-trainer`) read their command lines:
// CLI11 apps and subcommands, the value checks they share, and the one place
// CLI11's parse errors are caught. Its own library, smoe_flags (absl +
// CLI11, header-only), so smoe_common stays absl + std.
//
//   CLI::App app{"...", "smoe"};
//   ... add subcommands and options ...
//   if (std::optional<int> rc = ParseCommandLine(&app, argc, argv, out, err))
//     return *rc;  // --help (0) or a usage error (64), already printed
//
// A value a check refuses is reported as CLI11 does, "<flag>: <reason>", with
// the reason quoting the value: "--slots: '0' (must be >= 1)".
#ifndef SMOE_COMMON_FLAGS_H_
#define SMOE_COMMON_FLAGS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"

namespace smoe {

// Parses `argv` (argv[0] is the program) with `app`. Returns nullopt when a
// command is to run; otherwise the exit code, after printing the help to `out`
// (0) or the error and a hint to `err` (64, EX_USAGE).
std::optional<int> ParseCommandLine(CLI::App* app, int argc,
                                    const char* const* argv, std::ostream& out,
                                    std::ostream& err);
// The same for the arguments after the program name.
std::optional<int> ParseCommandLine(CLI::App* app,
                                    const std::vector<std::string>& args,
                                    std::ostream& out, std::ostream& err);

// A subcommand and what runs it once parsed (its flags live in the closure).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// ParseCommandLine, then runs the one of `commands` that was parsed and
// returns its exit code (64 when none was: `app` must require one).
int ParseAndRun(CLI::App* app, const std::vector<Command>& commands, int argc,
                const char* const* argv, std::ostream& out, std::ostream& err);

// Parses and runs one subcommand on its own, in an app named `program` that
// holds only what `add` adds: argv[0] is the subcommand's name (for callers
// and tests that hold one subcommand's arguments).
int RunOneCommand(const std::string& program, Command (*add)(CLI::App*),
                  int argc, const char* const* argv, std::ostream& out,
                  std::ostream& err);

// Checks: a base-10 integer at least `min` ("'x' (expected an integer)",
// "'0' (must be >= 1)").
CLI::Validator IntAtLeast(int64_t min);
// A finite number > 0 ("'0' (must be > 0)", "'x' (expected a number)");
// CLI11's PositiveNumber names no bound a reader can use.
CLI::Validator PositiveNumber();
// A finite number >= 0 ("'-1' (must be >= 0)").
CLI::Validator NonNegativeNumber();
// A base-10 integer in [lo, hi] ("'9' (must be in 1..8)").
CLI::Validator IntInRange(int64_t lo, int64_t hi);
// A non-negative 64-bit integer (seeds, batch indices).
CLI::Validator Uint64();
// A non-empty string ("'' (empty <what>)").
CLI::Validator NonEmpty(const std::string& what);
// One of `choices` ("'x' (one of a, b)").
CLI::Validator OneOf(const std::vector<std::string>& choices);

}  // namespace smoe

#endif  // SMOE_COMMON_FLAGS_H_
