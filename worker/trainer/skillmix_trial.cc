// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/skillmix_trial.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "trials/events.h"
#include "worker/eval/skillmix/data.h"
#include "worker/eval/skillmix/metrics.h"
#if SMOE_SKILLMIX_HAVE_HTTP
#include "worker/eval/skillmix/openai_grader.h"
#endif

namespace smoe::trainer {
namespace {

using json = nlohmann::json;
using skillmix::ScoreMethod;

// The metrics a trial reports (result and running metric events).
const std::vector<ScoreMethod>& ReportedMethods() {
  static const auto* m = new std::vector<ScoreMethod>{
      ScoreMethod::kAllPointsEarnedBinary, ScoreMethod::kAllSkillsAndGoodRest,
      ScoreMethod::kAverageOverSkillsFiltered, ScoreMethod::kSum,
      ScoreMethod::kSumOverSkills};
  return *m;
}

json MetricsJson(const std::map<ScoreMethod, skillmix::MeanSe>& metrics) {
  json out = json::object();
  for (ScoreMethod m : ReportedMethods()) {
    auto it = metrics.find(m);
    if (it == metrics.end() || !std::isfinite(it->second.mean)) continue;
    const std::string name(skillmix::ScoreMethodMetricName(m));
    out[name] = it->second.mean;
    if (std::isfinite(it->second.se)) out[name + "_se"] = it->second.se;
  }
  return out;
}

absl::StatusOr<skillmix::SkillCatalog> LoadCatalog(
    const SkillMixTrialConfig& c) {
  if (c.skills_path.empty()) {
    return skillmix::ParseSkillsJson(skillmix::ReleasedSkillsJson());
  }
  auto cat = skillmix::LoadSkills(c.skills_path);
  if (!cat.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("skills_path: ", cat.status().message()));
  }
  return cat;
}

absl::StatusOr<std::vector<std::string>> LoadTopicList(
    const SkillMixTrialConfig& c) {
  if (c.topics_path.empty()) {
    return skillmix::ParseTopicsJson(skillmix::ReleasedTopicsJson());
  }
  auto t = skillmix::LoadTopics(c.topics_path);
  if (!t.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("topics_path: ", t.status().message()));
  }
  return t;
}

}  // namespace

std::string SkillMixCheckpointPath(const std::string& workdir) {
  return workdir + "/skillmix_checkpoint.jsonl";
}

std::string SkillMixResultPath(const std::string& workdir) {
  return workdir + "/skillmix_result.json";
}

absl::StatusOr<skillmix::SkillMixResult> RunSkillMixTrial(
    const SkillMixTrialConfig& config, const SkillMixRunOptions& options) {
  if (!options.model_factory) {
    return absl::InternalError("skillmix: no model factory");
  }
  std::error_code ec;
  std::filesystem::create_directories(options.workdir, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat(
        "cannot create work dir '", options.workdir, "': ", ec.message()));
  }
  auto emit = [&](const std::string& line) {  // one trials/events.h line
    if (options.emit) options.emit(line);
  };

  SMOE_ASSIGN_OR_RETURN(skillmix::SkillCatalog catalog, LoadCatalog(config));
  SMOE_ASSIGN_OR_RETURN(std::vector<std::string> topics, LoadTopicList(config));
  skillmix::SkillMixConfig eval = config.eval;
  eval.checkpoint_path = SkillMixCheckpointPath(options.workdir);
  eval.student_sampling.cancel = options.stop;
  eval.grader_sampling.cancel = options.stop;
  auto combos = skillmix::DrawCombinations(catalog.Names(), topics,
                                           eval.k_skills, eval.num_combinations,
                                           eval.combos_seed, eval.exp_path);
  if (!combos.ok())
    return absl::InvalidArgumentError(combos.status().message());

  // Grader first: a missing API key should fail before loading a big model.
  std::unique_ptr<skillmix::ChatModel> owned_grader;
  skillmix::ChatModel* grader = options.grader_override;
  if (grader == nullptr && config.grader == "openai") {
#if SMOE_SKILLMIX_HAVE_HTTP
    skillmix::OpenAiOptions o;
    o.base_url = config.grader_base_url;
    o.model = config.grader_model;
    o.api_key_env = config.grader_api_key_env;
    o.cache_dir = config.grader_cache_dir.empty()
                      ? options.workdir + "/grader_cache"
                      : config.grader_cache_dir;
    o.max_requests_per_second = config.grader_requests_per_second;
    SMOE_ASSIGN_OR_RETURN(owned_grader, skillmix::OpenAiChatModel::Create(o));
    grader = owned_grader.get();
#else
    return absl::FailedPreconditionError(
        "grader=openai: this smoe-trainer was built without libcurl "
        "(smoe_skillmix_http); use grader=local or rebuild with CURL");
#endif
  }
  ChatModelSpec student_spec{config.model, config.ept, config.device};
  SMOE_ASSIGN_OR_RETURN(std::unique_ptr<skillmix::ChatModel> student,
                        options.model_factory(student_spec));
  if (config.grader == "local") {
    // Mixtral-Instruct's chat template has no system role; the reference
    // also sends none to Mistral-family models.
    eval.grader_system_prompt.clear();
  }
  if (grader == nullptr) {  // local grader
    if (config.grader_model == config.model &&
        config.grader_ept == config.ept) {
      grader = student.get();
    } else {
      SMOE_ASSIGN_OR_RETURN(
          owned_grader,
          options.model_factory(
              {config.grader_model, config.grader_ept, config.device}));
      grader = owned_grader.get();
    }
  }

  int last_done = -1;
  auto progress = [&](const skillmix::SkillMixProgress& p) {
    if (last_done < 0 && !p.checkpoint_set_aside.empty()) {
      // Corrupt lines were set aside; the valid ones resumed (the daemon
      // records checkpoint/restored_previous).
      emit(trials::CheckpointRestoredEvent(p.done, "previous",
                                           p.checkpoint_set_aside));
    }
    emit(trials::ProgressEvent(p.done, p.total));
    if (p.done == last_done) return;
    const bool new_work = last_done >= 0;  // not the initial (resume) call
    last_done = p.done;
    const json m = p.done > 0 ? MetricsJson(p.running) : json::object();
    for (auto it = m.begin(); it != m.end(); ++it) {
      for (const std::string& name :
           {absl::StrCat("skillmix/", it.key()),
            absl::StrCat("skillmix/k", eval.k_skills, "/", it.key())}) {
        emit(trials::MetricEvent(
            p.done, name,
            it.value().is_number() ? it.value().get<double>()
                                   : std::numeric_limits<double>::quiet_NaN()));
      }
    }
    // Named, so the worker daemon uploads it (checkpoint_sync.h).
    if (new_work) {
      emit(trials::CheckpointEvent(p.done, "skillmix_checkpoint.jsonl"));
    }
  };
  auto should_stop = [&] {
    return options.stop != nullptr && options.stop->load();
  };
  SMOE_LOG(INFO) << "skillmix: k=" << eval.k_skills << " ept=" << config.ept
                 << " n=" << eval.num_combinations
                 << " grader=" << config.grader << "/" << config.grader_model;
  SMOE_ASSIGN_OR_RETURN(skillmix::SkillMixResult result,
                        skillmix::RunSkillMix(eval, catalog, *combos, *student,
                                              *grader, progress, should_stop));
  const json metrics = MetricsJson(result.metrics);
  json summary = {{"metrics", metrics},
                  {"k_skills", eval.k_skills},
                  {"ept", config.ept},
                  {"num_combinations", result.num_combinations},
                  {"resumed", result.resumed}};
  std::ofstream(SkillMixResultPath(options.workdir))
      << summary.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  emit(trials::ResultEvent(metrics));
  return result;
}

}  // namespace smoe::trainer
