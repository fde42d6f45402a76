// Copyright 2026 SMoE Lab authors.
#include "cli/sraven_cmd.h"

#include <cstdint>
#include <iomanip>
#include <optional>
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
#include "common/flags.h"
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

using Options = SravenOptions;

// Adds the flags both subcommands take.
void AddCommonFlags(CLI::App* cmd, SravenOptions* o) {
  cmd->add_option("--M", o->config.num_features,
                  "Features per panel (difficulty)")
      ->capture_default_str()
      ->check(IntInRange(1, sraven::kMaxFeatures));
  cmd->add_option("--seed", o->config.seed, "Run seed: OOD split and streams")
      ->capture_default_str()
      ->check(Uint64());
  cmd->add_option("--split", o->split_name, "train | test | ood | val")
      ->capture_default_str()
      ->check(OneOf({"train", "test", "ood", "val"}));
  cmd->add_option("--num-rules", o->config.num_rules,
                  "Rule pool: the first R of the 8 rules")
      ->capture_default_str()
      ->check(IntInRange(1, sraven::kMaxRules));
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

CLI::App* AddSravenCommand(CLI::App* app, SravenOptions* o) {
  CLI::App* sraven = app->add_subcommand("sraven", "SRAVEN data tools");
  sraven->require_subcommand(1);
  CLI::App* sample = sraven->add_subcommand(
      "sample", "Print SRAVEN problems as grids or JSON");
  sample->callback([o] { o->command = "sample"; });
  AddCommonFlags(sample, o);
  sample->add_option("--n", o->n, "Number of problems")
      ->capture_default_str()
      ->check(IntInRange(0, kMaxProblems));
  sample
      ->add_option("--batch", o->batch,
                   "Batch index; problem i = Sample(split, B, i)")
      ->capture_default_str()
      ->check(Uint64());
  sample->add_flag("--json", o->json, "One JSON object per line")
      ->disable_flag_override();
  sample
      ->add_flag("--shared-stream", o->config.shared_stream,
                 "train/test/ood share one stream (original quirk)")
      ->disable_flag_override();
  sample
      ->add_flag("--no-permute{false}", o->config.permute_features,
                 "No per-column feature permutation")
      ->disable_flag_override();
  CLI::App* latents = sraven->add_subcommand(
      "latents", "List a split's rule combinations: id, then the rules");
  latents->callback([o] { o->command = "latents"; });
  AddCommonFlags(latents, o);
  return sraven;
}

int RunSravenCommand(const std::vector<std::string>& args, std::ostream& out,
                     std::ostream& err) {
  CLI::App app{"SMoE Lab", "smoe"};
  app.require_subcommand(1);
  SravenOptions options;
  AddSravenCommand(&app, &options);
  std::vector<std::string> all = {"sraven"};
  all.insert(all.end(), args.begin(), args.end());
  if (std::optional<int> rc = ParseCommandLine(&app, all, out, err)) {
    return *rc;
  }
  return RunSraven(options, out, err);
}

int RunSraven(const SravenOptions& options, std::ostream& out,
              std::ostream& err) {
  Options o = options;
  absl::StatusOr<Split> split = sraven::ParseSplit(o.split_name);
  if (!split.ok()) {
    err << "smoe sraven: --split: '" << o.split_name
        << "' (one of train, test, ood, val)\n";
    return kExitUsage;
  }
  o.split = *split;
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
