// Copyright 2026 SMoE Lab authors.
#include "common/flags.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace smoe {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 64;  // EX_USAGE

std::string Quoted(const std::string& value) {
  return absl::StrCat("'", value, "'");
}

}  // namespace

std::optional<int> ParseCommandLine(CLI::App* app, int argc,
                                    const char* const* argv, std::ostream& out,
                                    std::ostream& err) {
  // CLI11 reads `--flag=` (an empty value, e.g. `--labels=$(EMPTY)` in a
  // manifest) as `--flag` and takes the next argument, even another flag, as
  // the value; split it so the empty string is the value.
  std::vector<std::string> args;  // in order, without the program name
  bool options_done = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") options_done = true;
    if (!options_done && a.size() > 3 && a.compare(0, 2, "--") == 0 &&
        a.find('=') == a.size() - 1) {
      args.push_back(a.substr(0, a.size() - 1));
      args.push_back("");
    } else {
      args.push_back(a);
    }
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the last one first
  try {
    app->parse(args);
  } catch (const CLI::RequiredError& e) {
    // CLI11 reports through exceptions, caught only in this function.
    // "A subcommand is required" names neither the command nor the word
    // that was not one: say both.
    CLI::App* cmd = app;
    std::string path = app->get_name();
    while (!cmd->get_subcommands().empty()) {
      cmd = cmd->get_subcommands().front();
      absl::StrAppend(&path, " ", cmd->get_name());
    }
    std::vector<std::string> names;
    for (const CLI::App* sub :
         cmd->get_subcommands([](CLI::App*) { return true; })) {
      names.push_back(sub->get_name());
    }
    const std::vector<std::string> rest = cmd->remaining();
    if (cmd->get_require_subcommand_min() == 0 || names.empty()) {
      return app->exit(e, out, err) == 0 ? kExitOk : kExitUsage;
    }
    if (rest.empty()) {
      err << path << ": a subcommand is required: one of "
          << absl::StrJoin(names, ", ") << "\n";
    } else {
      err << path << ": '" << rest.front() << "' is not a subcommand: one of "
          << absl::StrJoin(names, ", ") << "\n";
    }
    err << "Run with --help for more information.\n";
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    return app->exit(e, out, err) == 0 ? kExitOk : kExitUsage;
  }
  return std::nullopt;
}

std::optional<int> ParseCommandLine(CLI::App* app,
                                    const std::vector<std::string>& args,
                                    std::ostream& out, std::ostream& err) {
  std::vector<const char*> argv = {app->get_name().c_str()};
  for (const std::string& a : args) argv.push_back(a.c_str());
  return ParseCommandLine(app, static_cast<int>(argv.size()), argv.data(), out,
                          err);
}

int ParseAndRun(CLI::App* app, const std::vector<Command>& commands, int argc,
                const char* const* argv, std::ostream& out, std::ostream& err) {
  if (std::optional<int> rc = ParseCommandLine(app, argc, argv, out, err)) {
    return *rc;
  }
  for (const Command& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  err << app->get_name() << ": a subcommand is required\n";
  return kExitUsage;
}

int RunOneCommand(const std::string& program, Command (*add)(CLI::App*),
                  int argc, const char* const* argv, std::ostream& out,
                  std::ostream& err) {
  CLI::App app{"", program};
  app.require_subcommand(1);
  const Command command = add(&app);
  std::vector<const char*> args = {program.c_str()};
  args.insert(args.end(), argv, argv + argc);
  return ParseAndRun(&app, {command}, static_cast<int>(args.size()),
                     args.data(), out, err);
}

namespace {

CLI::Validator NumberCheck(bool zero_ok) {
  return CLI::Validator(
      [zero_ok](std::string& v) -> std::string {
        double x = 0;
        if (!absl::SimpleAtod(v, &x) || !std::isfinite(x)) {
          return Quoted(v) + " (expected a number)";
        }
        if (zero_ok ? x < 0 : x <= 0) {
          return Quoted(v) + (zero_ok ? " (must be >= 0)" : " (must be > 0)");
        }
        return "";
      },
      "");
}

}  // namespace

CLI::Validator PositiveNumber() { return NumberCheck(false); }
CLI::Validator NonNegativeNumber() { return NumberCheck(true); }

CLI::Validator IntAtLeast(int64_t min) {
  return CLI::Validator(
      [min](std::string& v) -> std::string {
        int64_t n = 0;
        if (!absl::SimpleAtoi(v, &n)) {
          return Quoted(v) + " (expected an integer)";
        }
        if (n < min) return absl::StrCat(Quoted(v), " (must be >= ", min, ")");
        return "";
      },
      "");
}

CLI::Validator IntInRange(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& v) -> std::string {
        int64_t n = 0;
        if (!absl::SimpleAtoi(v, &n)) {
          return Quoted(v) + " (expected an integer)";
        }
        if (n < lo || n > hi) {
          return absl::StrCat(Quoted(v), " (must be in ", lo, "..", hi, ")");
        }
        return "";
      },
      "");
}

CLI::Validator Uint64() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        uint64_t n = 0;
        if (!absl::SimpleAtoi(v, &n)) {
          return Quoted(v) + " (expected a non-negative 64-bit integer)";
        }
        return "";
      },
      "");
}

CLI::Validator NonEmpty(const std::string& what) {
  return CLI::Validator(
      [what](std::string& v) -> std::string {
        return v.empty() ? absl::StrCat("'' (empty ", what, ")") : "";
      },
      "");
}

CLI::Validator OneOf(const std::vector<std::string>& choices) {
  return CLI::Validator(
      [choices](std::string& v) -> std::string {
        if (std::find(choices.begin(), choices.end(), v) != choices.end()) {
          return "";
        }
        return absl::StrCat(Quoted(v), " (one of ",
                            absl::StrJoin(choices, ", "), ")");
      },
      "");
}

}  // namespace smoe
