// Copyright 2026 SMoE Lab authors.
//
// kind "skillmix": one Skill-Mix evaluation of a Mixtral-format model at one
// (EPT, k) (docs/skillmix.md). One line per parameter; the defaults are the
// reference harness's, and SkillMixTrialConfig / skillmix::SkillMixConfig
// start from the same values (tests/trials/trial_params_test.cc). Note that
// `top_k` here is the student's sampling top-k over the vocabulary; experts
// per token is `ept`.
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/api_token.h"
#include "trials/params.h"

namespace smoe::trials {
namespace {

// "" sends no Authorization header (local servers); otherwise only *_API_KEY
// variables may go to the sweep-chosen grader URL.
absl::Status CheckKeyEnv(absl::string_view name) {
  return name.empty() ? absl::OkStatus() : CheckApiKeyEnvName(name);
}

// The grader waits 1/rate seconds between requests: a positive rate below
// kMinRate would wait for hours (1e-300: forever), so it is refused.
constexpr double kMinRate = 1e-3;
absl::Status CheckRate(double rate) {
  if (rate <= 0 || rate >= kMinRate) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "grader_requests_per_second: ", rate,
      " is a positive rate below 0.001 (more than 1000 s between requests); "
      "use <= 0 for unlimited or a rate >= 0.001"));
}

}  // namespace

const TrialKind& SkillMixKind() {
  static const auto* kind = new TrialKind{
      "skillmix",
      "Skill-Mix evaluation of a Mixtral-format model at one (ept, k_skills)",
      /*integral_floats=*/false,
      /*dotted_ranges=*/false,
      {
          // clang-format off
RequiredString("model", "student model directory (config.json, safetensors, tokenizer.model)"),
Int("ept", 0, 0, 64, "experts per token; 0 = the model's num_experts_per_tok"),
Int("k_skills", 2, 1, 10, "skills per item"),
Int("num_combinations", 100, 1, 100000, "items (skill sets with a topic)"),
Int("num_generations", 3, 1, 16, "student rounds per item (the best counts)"),
Int("num_gradings", 3, 1, 16, "gradings per answer (majority vote per point)"),
Int("combos_seed", 10, 0, 1000000000000, "seed of the reference's item sampler"),
String("exp_path", "test", "second sampler seed: the order of skills inside a prompt"),
Choice("generation_prompt", "default", {"default", "llama_k_greater_2"}, "the student's second-turn prompt"),
String("student_system_prompt", "", "system message for the student; \"\" = none, as the reference"),
Int("max_new_tokens", 512, 1, 32768, "student tokens per turn"),
Number("temperature", 0.7, Closed(0, 10), "student sampling temperature"),
Int("top_k", 50, 0, 1 << 20, "student sampling top-k over the vocabulary; 0 = off"),
Number("top_p", 1.0, OpenClosed(0, 1), "student nucleus sampling"),
Choice("device", "cuda", {"cpu", "cuda"}, "cpu (float32) or cuda (bfloat16)"),
Choice("grader", "openai", {"openai", "local"}, "openai: an OpenAI-compatible HTTP API; local: a model directory"),
String("grader_model", "gpt-4", "API model name (openai) or model directory (local)").NonEmpty(),
String("grader_base_url", "https://api.openai.com/v1", "the API's base URL (openai)").NonEmpty(),
String("grader_api_key_env", "OPENAI_API_KEY", "name of the environment variable holding the key (never the key): upper case, ending in _API_KEY; \"\" = no key").Checked(&CheckKeyEnv),
Choice("grader_prompt_kind", "gpt", {"gpt", "llama"}, "grading prompt and parser: gpt = table, llama = markers"),
Int("grader_max_new_tokens", 512, 1, 32768, "grader tokens per reply"),
Number("grader_temperature", 1.0, Closed(0, 10), "grader sampling temperature (the API default the reference used)"),
Int("grader_ept", 0, 0, 64, "local grader's experts per token; 0 = its default"),
Number("grader_requests_per_second", 2.0, AnyNumber(), "API request rate; <= 0 = unlimited, else >= 0.001").CheckedNumber(&CheckRate),
String("grader_cache_dir", "", "grader reply cache; \"\" = WORKDIR/grader_cache"),
Bool("filter_explicit_name", false, "zero a skill's point when the answer names the skill"),
String("skills_path", "", "skills file (.csv or .json); \"\" = the 10 released skills"),
String("topics_path", "", "topics file (.txt or .json); \"\" = the 10 released topics"),
          // clang-format on
      },
      // The view (KindView): the Skill-Mix table, experts per token down,
      // skills per item across.
      {"ept",
       "k_skills",
       "",
       "",
       {},
       /*layout=*/"tables",
       /*theory_x=*/"",
       /*theory_series=*/"",
       /*select_by=*/"",
       /*reading_note=*/""}};
  return *kind;
}

}  // namespace smoe::trials
