// Copyright 2026 SMoE Lab authors.
#include "cli/skillmix_cmd.h"

#include <cmath>
#include <iostream>

#include "absl/strings/str_format.h"
#include "cli/local_trial.h"
#include "common/flags.h"
#include "trials/events.h"

namespace smoe::cli {
CLI::App* AddSkillMixCommand(CLI::App* app, SkillMixRunFlags* f) {
  CLI::App* sm = app->add_subcommand("skillmix", "Skill-Mix evaluation tools");
  sm->require_subcommand(1);
  CLI::App* run = sm->add_subcommand(
      "run", "One local Skill-Mix evaluation of a Mixtral-format model");
  run->add_option("--model", f->model, "Student model directory")->required();
  run->add_option("--k-skills", f->k_skills, "Skills per item (1..10)")
      ->capture_default_str();
  run->add_option("--ept", f->ept,
                  "Experts per token (0 = the model's default)")
      ->capture_default_str();
  run->add_option("--num-combinations", f->num_combinations,
                  "Items (skills, topic) to evaluate")
      ->capture_default_str();
  run->add_option("--num-generations", f->num_generations,
                  "Student generation rounds per item (max is taken)")
      ->capture_default_str();
  run->add_option("--num-gradings", f->num_gradings,
                  "Grading rounds per answer (majority vote)")
      ->capture_default_str();
  run->add_option("--combos-seed", f->combos_seed,
                  "Sampler seed (reference: 10)")
      ->capture_default_str();
  run->add_option("--grader", f->grader, "openai | local")
      ->capture_default_str()
      ->check(CLI::IsMember({"openai", "local"}));
  run->add_option("--grader-model", f->grader_model,
                  "API model name (openai) or model directory (local)")
      ->capture_default_str();
  run->add_option("--grader-base-url", f->grader_base_url,
                  "OpenAI-compatible endpoint prefix")
      ->capture_default_str();
  run->add_option("--grader-api-key-env", f->grader_api_key_env,
                  "Environment variable holding the API key")
      ->capture_default_str();
  run->add_option("--grader-prompt", f->grader_prompt_kind, "gpt | llama")
      ->capture_default_str()
      ->check(CLI::IsMember({"gpt", "llama"}));
  run->add_option("--device", f->device, "cpu | cuda")->capture_default_str();
  run->add_option("--max-new-tokens", f->max_new_tokens,
                  "Student tokens per turn")
      ->capture_default_str();
  run->add_option("--temperature", f->temperature, "Student temperature")
      ->capture_default_str();
  run->add_option("--seed", f->run.seed, "Sampling seed")
      ->capture_default_str();
  run->add_option("--param", f->extra,
                  "Any other trainer param as key=value (repeatable)");
  run->add_option(
      "--workdir", f->run.workdir,
      "Work dir (checkpoint + grader cache; resume by re-using it)");
  run->add_option("--trainer", f->run.trainer,
                  "Trainer binary (default: next to smoe)");
  run->add_option("--ep-size", f->run.ep_size,
                  "Expert-parallel ranks (trainer processes, each holding "
                  "1/N of the experts)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  run->add_option("--gpu-ids", f->run.gpu_ids,
                  "GPUs for CUDA_VISIBLE_DEVICES, e.g. 0,1 (one per rank)")
      ->delimiter(',')
      ->check(IntAtLeast(0));
  run->footer(kLocalEpHelp);
  return run;
}

bool SkillMixParamsFromFlags(SkillMixRunFlags* f, std::ostream& err) {
  nlohmann::json& p = f->run.params;
  p = {{"model", f->model},
       {"ept", f->ept},
       {"k_skills", f->k_skills},
       {"num_combinations", f->num_combinations},
       {"num_generations", f->num_generations},
       {"num_gradings", f->num_gradings},
       {"combos_seed", f->combos_seed},
       {"grader", f->grader},
       {"grader_model", f->grader_model},
       {"grader_base_url", f->grader_base_url},
       {"grader_api_key_env", f->grader_api_key_env},
       {"grader_prompt_kind", f->grader_prompt_kind},
       {"device", f->device},
       {"max_new_tokens", f->max_new_tokens},
       {"temperature", f->temperature}};
  for (const std::string& kv : f->extra) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      err << "smoe skillmix run: --param '" << kv << "' is not key=value\n";
      return false;
    }
    const std::string key = kv.substr(0, eq), val = kv.substr(eq + 1);
    auto parsed = nlohmann::json::parse(val, nullptr, false);
    p[key] = parsed.is_discarded() ? nlohmann::json(val) : parsed;
  }
  return true;
}

int RunSkillMixCommand(const SkillMixRunOptions& options, std::ostream& out) {
  LocalTrial trial;
  trial.command = "smoe skillmix run";
  trial.kind = "skillmix";
  trial.seed = options.seed;
  trial.params = options.params;
  trial.workdir = options.workdir;
  trial.trainer = options.trainer;
  trial.ep_size = options.ep_size;
  trial.gpu_ids = options.gpu_ids;
  nlohmann::json result;
  double full_marks = NAN;
  int64_t step = 0, total = 0;
  const int rc = RunLocalTrial(trial, [&](const nlohmann::json& line) {
    using Type = trials::TrialEvent::Type;
    const absl::StatusOr<trials::TrialEvent> ev = trials::EventFromJson(line);
    if (!ev.ok()) {
      // Not an event, or a malformed one: nothing to show.
    } else if (ev->type == Type::kProgress) {
      step = ev->step.value_or(0);
      total = ev->total.value_or(0);
    } else if (ev->type == Type::kMetric &&
               ev->name == "skillmix/ratio_full_marks" &&
               !std::isnan(ev->value)) {
      full_marks = ev->value;
    } else if (ev->type == Type::kResult) {
      result = ev->metrics;
    }
    return absl::StrFormat(
        "[%s] %d/%d combinations%s", ProgressBar(step, total, 30), step, total,
        std::isnan(full_marks)
            ? ""
            : absl::StrFormat("  full marks %.3f", full_marks));
  });
  const std::string& workdir = trial.workdir;
  if (rc == 0 && result.is_object()) {
    out << "Skill-Mix run finished (work dir " << workdir << ")\n";
    out << absl::StrFormat("  %-20s %s\n", "metric", "mean ± s.e.");
    for (const auto& [k, v] : result.items()) {
      if (!v.is_number() || (k.size() > 3 && k.substr(k.size() - 3) == "_se")) {
        continue;
      }
      auto se = result.find(k + "_se");
      out << absl::StrFormat("  %-20s %.4f%s\n", k, v.get<double>(),
                             se != result.end() && se->is_number()
                                 ? absl::StrFormat(" ± %.4f", se->get<double>())
                                 : "");
    }
  } else if (rc == 64) {
    std::cerr << "smoe skillmix run: the trainer rejected the parameters (see "
                 "above)\n";
  } else if (rc == 75) {
    std::cerr << "smoe skillmix run: interrupted; finished combinations are in "
              << workdir << " (re-run with --workdir " << workdir
              << " to resume)\n";
  } else {
    std::cerr << "smoe skillmix run: trainer exited with " << rc << "\n";
  }
  return rc;
}

}  // namespace smoe::cli
