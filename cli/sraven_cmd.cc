// Copyright 2026 SMoE Lab authors.
#include "cli/sraven_cmd.h"

#include <cstdint>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "worker/data/sraven/sraven.h"

namespace smoe::cli {
namespace {

using ::smoe::sraven::Generator;
using ::smoe::sraven::Problem;
using ::smoe::sraven::Split;
using ::smoe::sraven::SravenConfig;

constexpr int kExitOk = 0;
constexpr int kExitUsage = 64;  // EX_USAGE
constexpr int64_t kMaxProblems = 1000000;

constexpr char kUsage[] =
    "usage: smoe sraven sample [flags]   print SRAVEN problems\n"
    "       smoe sraven latents [flags]  list a split's rule combinations\n"
    "flags (both commands):\n"
    "  --M N            features per panel (difficulty), 1..8 (default 4)\n"
    "  --seed S         run seed: OOD split and streams (default 0)\n"
    "  --split NAME     train | test | ood (default train)\n"
    "  --num-rules R    rule pool: the first R of the 8 rules (default 8)\n"
    "flags (sample):\n"
    "  --n N            number of problems (default 5)\n"
    "  --batch B        batch index; problem i = Sample(split, B, i) "
    "(default 0)\n"
    "  --json           one JSON object per line instead of grids\n"
    "  --shared-stream  train/test/ood share one stream (original quirk)\n"
    "  --no-permute     no per-column feature permutation\n";

struct Options {
  std::string command;  // "sample" or "latents"
  SravenConfig config;
  Split split = Split::kTrain;
  int64_t n = 5;
  uint64_t batch = 0;
  bool json = false;
};

absl::Status FlagError(absl::string_view flag, absl::string_view value,
                       absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", value, ": ", why));
}

absl::StatusOr<int64_t> ParseIntFlag(absl::string_view flag,
                                     absl::string_view value, int64_t lo,
                                     int64_t hi) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(value, &v)) {
    return FlagError(flag, value, "not an integer");
  }
  if (v < lo || v > hi) {
    return FlagError(flag, value, absl::StrCat("must be in ", lo, "..", hi));
  }
  return v;
}

// Parses `args` (after "sraven"). Returns kUsage-style errors naming the flag
// and the value.
absl::StatusOr<Options> ParseArgs(const std::vector<std::string>& args) {
  Options o;
  if (args.empty()) return absl::InvalidArgumentError("missing subcommand");
  o.command = args[0];
  if (o.command != "sample" && o.command != "latents") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown subcommand '", o.command, "'"));
  }
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!absl::StartsWith(arg, "--") || arg.size() == 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", arg, "'"));
    }
    std::string flag = arg.substr(2);
    std::string value;
    bool has_value = false;
    if (const size_t eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_value = true;
    }
    const bool boolean =
        flag == "json" || flag == "shared-stream" || flag == "no-permute";
    const bool sample_only = boolean || flag == "n" || flag == "batch";
    if (sample_only && o.command != "sample") {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, " is only valid for 'sample'"));
    }
    if (boolean) {
      if (has_value) {
        return FlagError(flag, value, "takes no value");
      }
      if (flag == "json") o.json = true;
      if (flag == "shared-stream") o.config.shared_stream = true;
      if (flag == "no-permute") o.config.permute_features = false;
      continue;
    }
    if (flag != "M" && flag != "n" && flag != "split" && flag != "seed" &&
        flag != "batch" && flag != "num-rules") {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '--", flag, "'"));
    }
    if (!has_value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag, ": missing value"));
      }
      value = args[++i];
    }
    if (flag == "M") {
      absl::StatusOr<int64_t> v =
          ParseIntFlag(flag, value, 1, sraven::kMaxFeatures);
      if (!v.ok()) return v.status();
      o.config.num_features = static_cast<int>(*v);
    } else if (flag == "num-rules") {
      absl::StatusOr<int64_t> v =
          ParseIntFlag(flag, value, 1, sraven::kMaxRules);
      if (!v.ok()) return v.status();
      o.config.num_rules = static_cast<int>(*v);
    } else if (flag == "n") {
      absl::StatusOr<int64_t> v = ParseIntFlag(flag, value, 0, kMaxProblems);
      if (!v.ok()) return v.status();
      o.n = *v;
    } else if (flag == "split") {
      absl::StatusOr<Split> s = sraven::ParseSplit(value);
      if (!s.ok()) return FlagError(flag, value, "want train, test or ood");
      o.split = *s;
    } else if (flag == "seed" || flag == "batch") {
      uint64_t v = 0;
      if (!absl::SimpleAtoi(value, &v)) {
        return FlagError(flag, value, "not a non-negative 64-bit integer");
      }
      (flag == "seed" ? o.config.seed : o.batch) = v;
    }
  }
  return o;
}

// [row][col][k] nested arrays from a flat [3][3][M] vector.
nlohmann::ordered_json Nested33(const std::vector<int>& flat, int M) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (int r = 0; r < 3; ++r) {
    nlohmann::ordered_json cols = nlohmann::ordered_json::array();
    for (int c = 0; c < 3; ++c) {
      const auto begin = flat.begin() + (r * 3 + c) * M;
      cols.push_back(std::vector<int>(begin, begin + M));
    }
    rows.push_back(std::move(cols));
  }
  return rows;
}

std::string ProblemJson(const Options& o, const Problem& p, int index) {
  nlohmann::ordered_json j;
  j["M"] = p.M;
  j["F"] = p.F;
  j["split"] = sraven::SplitName(o.split);
  j["seed"] = o.config.seed;
  j["batch"] = o.batch;
  j["index"] = index;
  j["stream"] = o.config.shared_stream ? "shared" : "independent";
  j["latent_id"] = p.latent_id;
  j["rules"] = p.rules;
  j["grid"] = Nested33(p.grid, p.M);
  nlohmann::ordered_json perm = nlohmann::ordered_json::array();
  for (int c = 0; c < 3; ++c) {
    const auto begin = p.permutation.begin() + c * p.M;
    perm.push_back(std::vector<int>(begin, begin + p.M));
  }
  j["permutation"] = std::move(perm);
  j["panels"] = Nested33(p.panels, p.M);
  j["answer"] = p.answer;
  return j.dump();
}

// One panel as "[a b c d]" with values right-aligned to `width`; `flat` is a
// [3][3][M] array (panels or grid).
std::string PanelText(const std::vector<int>& flat, int M, int r, int c,
                      int width) {
  std::ostringstream s;
  s << '[';
  for (int k = 0; k < M; ++k) {
    if (k > 0) s << ' ';
    s << std::setw(width) << flat[(r * 3 + c) * M + k];
  }
  s << ']';
  return s.str();
}

// Prints a 3x3 block of panels under `title`; marks panel (2, 2) with `*`
// when `mark_answer`.
void PrintBlock(const std::string& title, const std::vector<int>& flat, int M,
                int width, bool mark_answer, std::ostream& out) {
  const int cell = M * (width + 1) + 1;  // "[" + values + "]"
  out << "  " << title << "\n         ";
  for (int c = 0; c < 3; ++c) {
    const std::string head = "col " + std::to_string(c);
    out << head;
    if (c < 2) out << std::string(cell + 3 - head.size(), ' ');
  }
  out << "\n";
  for (int r = 0; r < 3; ++r) {
    out << "  row " << r << "  ";
    for (int c = 0; c < 3; ++c) {
      out << PanelText(flat, M, r, c, width);
      if (mark_answer && r == 2 && c == 2) out << '*';
      if (c < 2) out << "   ";
    }
    out << "\n";
  }
}

void PrintGrid(const Options& o, const Problem& p, int index,
               std::ostream& out) {
  const int width = p.F <= 10 ? 1 : (p.F <= 100 ? 2 : 3);
  out << "problem " << index << "  split=" << sraven::SplitName(o.split)
      << " seed=" << o.config.seed << " batch=" << o.batch << " M=" << p.M
      << " F=" << p.F << " latent=" << p.latent_id << "\n";
  out << "  rules (feature: rule):";
  for (int j = 0; j < p.M; ++j) {
    out << "  f" << j << "=" << sraven::RuleName(p.rules[j]);
  }
  out << "\n  permutation (column: slot -> feature):";
  for (int c = 0; c < 3; ++c) {
    out << "  col" << c << "=[";
    for (int s = 0; s < p.M; ++s) out << (s ? " " : "") << p.PermAt(c, s);
    out << "]";
  }
  out << "\n";
  PrintBlock("panels, what the model sees (values per slot; * = answer):",
             p.panels, p.M, width, /*mark_answer=*/true, out);
  PrintBlock("grid before permutation (values per feature f0..):", p.grid, p.M,
             width, /*mark_answer=*/false, out);
  out << "  answer: " << absl::StrJoin(p.answer, " ") << "\n\n";
}

}  // namespace

int RunSravenCommand(const std::vector<std::string>& args, std::ostream& out,
                     std::ostream& err) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h" || a == "help") {
      out << kUsage;
      return kExitOk;
    }
  }
  absl::StatusOr<Options> parsed = ParseArgs(args);
  if (!parsed.ok()) {
    err << "smoe sraven: " << parsed.status().message() << "\n" << kUsage;
    return kExitUsage;
  }
  const Options& o = *parsed;
  absl::StatusOr<Generator> gen = Generator::Create(o.config);
  if (!gen.ok()) {
    err << "smoe sraven: " << gen.status().message() << "\n";
    return kExitUsage;
  }
  if (o.command == "latents") {
    const auto& ids = gen->latent_ids(o.split);
    for (int id : ids) {
      out << id << '\t' << absl::StrJoin(gen->all_latents()[id], ",") << '\n';
    }
    return kExitOk;
  }
  if (gen->latents(o.split).empty() && o.n > 0) {
    err << "smoe sraven: --split=" << sraven::SplitName(o.split)
        << ": the split has no rule combinations for this config\n";
    return kExitUsage;
  }
  for (int64_t i = 0; i < o.n; ++i) {
    const Problem p = gen->Sample(o.split, o.batch, static_cast<int>(i));
    if (o.json) {
      out << ProblemJson(o, p, static_cast<int>(i)) << "\n";
    } else {
      PrintGrid(o, p, static_cast<int>(i), out);
    }
  }
  return kExitOk;
}

}  // namespace smoe::cli
