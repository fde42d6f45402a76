// Copyright 2026 SMoE Lab authors.
//
// Pins the trial-parameter tables (trials/params.h) against the two parsers
// that use them and against the docs:
//   - every entry's default, and each end of its range, is accepted by the
//     sweep files (ValidateTrialParams) and by the trainer (ParseTrialJson,
//     ParseSkillMixTrialJson); one past an end, a wrong type, an unknown
//     choice and an empty required string are refused by both, naming the
//     field and the value;
//   - the trainer binds every entry to a field (a changed value changes the
//     parsed config) and its struct defaults are the table's defaults;
//   - the model's enum names are exactly the table's choices;
//   - docs/trainer-protocol.md and README.md hold FormatMarkdown's tables.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/router_topk/router_topk.h"
#include "nlohmann/json.hpp"
#include "sweeps/sweep_spec.h"
#include "trials/params.h"
#include "worker/model/model_config.h"
#include "worker/trainer/skillmix_config.h"
#include "worker/trainer/train_config.h"

namespace smoe {
namespace trials {
// Names the kind in gtest's messages.
void PrintTo(const TrialKind* kind, std::ostream* os) { *os << kind->name; }
}  // namespace trials

namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using trials::Param;
using trials::ParamType;
using trials::TrialKind;

// Every field of a parsed config, so two parses compare as JSON.
json Dump(const trainer::TrainConfig& c) {
  json j = json::parse(trainer::TrajectoryFingerprint(c));
  j["eval_every"] = c.eval_every;
  j["eval_rungs_from"] = c.eval_rungs_from;
  j["eval_rungs_eta"] = c.eval_rungs_eta;
  j["num_eval"] = c.num_eval;
  j["checkpoint_every"] = c.checkpoint_every;
  j["log_every"] = c.log_every;
  j["device"] = c.device;
  j["ep_size"] = c.ep_size;
  j["dispatch"] = model::DispatchName(c.model.dispatch);
  return j;
}

json Dump(const trainer::SkillMixTrialConfig& c) {
  const skillmix::SkillMixConfig& e = c.eval;
  auto sampling = [](const skillmix::SamplingParams& s) {
    return json{{"temperature", s.temperature},
                {"top_k", s.top_k},
                {"top_p", s.top_p},
                {"seed", s.seed},
                {"max_new_tokens", s.max_new_tokens}};
  };
  return json{
      {"model", c.model},
      {"ept", c.ept},
      {"device", c.device},
      {"grader", c.grader},
      {"grader_model", c.grader_model},
      {"grader_base_url", c.grader_base_url},
      {"grader_api_key_env", c.grader_api_key_env},
      {"grader_ept", c.grader_ept},
      {"grader_requests_per_second", c.grader_requests_per_second},
      {"grader_cache_dir", c.grader_cache_dir},
      {"skills_path", c.skills_path},
      {"topics_path", c.topics_path},
      {"k_skills", e.k_skills},
      {"num_combinations", e.num_combinations},
      {"num_generations", e.num_generations},
      {"num_gradings", e.num_gradings},
      {"combos_seed", e.combos_seed},
      {"exp_path", e.exp_path},
      {"generation_prompt",
       std::string(skillmix::GenerationPromptName(e.generation_prompt))},
      {"grading_prompt", static_cast<int>(e.grading_prompt)},
      {"student_system_prompt", e.student_system_prompt},
      {"student_sampling", sampling(e.student_sampling)},
      {"grader_sampling", sampling(e.grader_sampling)},
      {"filter_explicit_name", e.filter_explicit_name},
  };
}

// What the trainer makes of `params`: the dumped config, or the error.
absl::StatusOr<json> TrainerParse(const TrialKind& kind, const json& params) {
  const std::string text = json{{"kind", kind.name}, {"params", params}}.dump();
  if (kind.name == "sraven") {
    auto spec = trainer::ParseTrialJson(text);
    if (!spec.ok()) return spec.status();
    return Dump(spec->config);
  }
  auto c = trainer::ParseSkillMixTrialJson(text);
  if (!c.ok()) return c.status();
  return Dump(*c);
}

// Params every point of `kind` needs (skillmix: a model).
json Base(const TrialKind& kind) {
  return kind.name == "skillmix" ? json{{"model", "/m"}} : json::object();
}

// Base plus `name` = v, with the other params the rules between parameters
// need for v (top_k <= num_experts, ep_size divides num_experts, warmup <
// steps, the model-size cap).
json Point(const TrialKind& kind, const std::string& name, const json& v) {
  json p = Base(kind);
  if (kind.name == "sraven") {
    if (name == "top_k") p["num_experts"] = 256;
    if (name == "num_experts") p["top_k"] = 1;
    if (name == "ep_size") p["num_experts"] = 64;
    if (name == "warmup") p["steps"] = 1000000000;  // warmup < steps
    // The largest width makes a model under the size cap (issue 36) only
    // when it is shallow and has one expert.
    if (name == "width") {
      p["depth"] = 1;
      p["num_experts"] = 1;
      p["top_k"] = 1;
    }
  }
  p[name] = v;
  return p;
}

void ExpectAccepted(const TrialKind& kind, const Param& p, const json& v) {
  const json point = Point(kind, p.name, v);
  const absl::Status coord = sweeps::ValidateTrialParams(kind.name, point);
  EXPECT_TRUE(coord.ok()) << kind.name << " coordinator " << point.dump()
                          << ": " << coord;
  auto parsed = TrainerParse(kind, point);
  EXPECT_TRUE(parsed.ok()) << kind.name << " trainer " << point.dump() << ": "
                           << parsed.status();
}

void ExpectRefused(const TrialKind& kind, const Param& p, const json& v) {
  const json point = Point(kind, p.name, v);
  const absl::Status coord = sweeps::ValidateTrialParams(kind.name, point);
  EXPECT_EQ(coord.code(), absl::StatusCode::kInvalidArgument)
      << kind.name << " coordinator " << point.dump() << ": " << coord;
  EXPECT_THAT(std::string(coord.message()), HasSubstr(p.name));
  EXPECT_THAT(std::string(coord.message()), HasSubstr(v.dump()));
  auto parsed = TrainerParse(kind, point);
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument)
      << kind.name << " trainer " << point.dump() << ": " << parsed.status();
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(p.name));
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(v.dump()));
}

// Values that must be accepted, and values one past each end that must not.
void CheckEnds(const TrialKind& kind, const Param& p) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (p.type) {
    case ParamType::kInt:
      ExpectAccepted(kind, p, p.int_lo);
      ExpectAccepted(kind, p, p.int_hi);
      ExpectRefused(kind, p, p.int_lo - 1);
      ExpectRefused(kind, p, p.int_hi + 1);
      break;
    case ParamType::kNumber: {
      const trials::Range& r = p.range;
      if (std::isfinite(r.lo)) {
        ExpectRefused(kind, p, r.lo_open ? r.lo : std::nextafter(r.lo, -inf));
        if (!r.lo_open) ExpectAccepted(kind, p, r.lo);
      }
      if (std::isfinite(r.hi)) {
        ExpectRefused(kind, p, r.hi_open ? r.hi : std::nextafter(r.hi, inf));
        ExpectAccepted(kind, p, r.hi_open ? std::nextafter(r.hi, -inf) : r.hi);
      }
      if (p.multiple_of > 0) {
        ExpectRefused(kind, p, 1 + p.multiple_of / 2);
      }
      break;
    }
    case ParamType::kString:
      for (const std::string& c : p.choices) ExpectAccepted(kind, p, c);
      if (!p.choices.empty()) ExpectRefused(kind, p, "no_such_choice");
      if (p.non_empty) ExpectRefused(kind, p, "");
      break;
    case ParamType::kBool:
      ExpectAccepted(kind, p, true);
      ExpectAccepted(kind, p, false);
      ExpectRefused(kind, p, "yes");
      break;
  }
  // A wrong type.
  ExpectRefused(kind, p, p.type == ParamType::kString ? json(7) : json("7"));
}

// A valid value other than the default (for a string: another choice, or a
// path-like text the extra check allows).
json OtherValue(const Param& p) {
  switch (p.type) {
    case ParamType::kInt:
      return p.default_value == json(p.int_hi) ? json(p.int_lo)
                                               : json(p.int_hi);
    case ParamType::kNumber:
      if (std::isfinite(p.range.hi) && !p.range.hi_open &&
          p.default_value != json(p.range.hi)) {
        return p.range.hi;
      }
      return p.default_value.get<double>() == 0.5 ? 0.25 : 0.5;
    case ParamType::kString:
      for (const std::string& c : p.choices) {
        if (c != p.default_value) return c;
      }
      return p.name == "grader_api_key_env" ? "OTHER_API_KEY" : "/other";
    case ParamType::kBool:
      return !p.default_value.get<bool>();
  }
  return nullptr;
}

class TrialParamsTest : public ::testing::TestWithParam<const TrialKind*> {};

TEST_P(TrialParamsTest, EveryEndAcceptedOnePastRefusedByBoth) {
  const TrialKind& kind = *GetParam();
  for (const Param& p : kind.params) {
    SCOPED_TRACE(kind.name + "." + p.name);
    if (!p.default_value.is_null()) ExpectAccepted(kind, p, p.default_value);
    CheckEnds(kind, p);
  }
  // Unknown names too.
  const json unknown = Point(kind, "no_such_param", 1);
  EXPECT_THAT(
      std::string(sweeps::ValidateTrialParams(kind.name, unknown).message()),
      HasSubstr("unknown parameter 'no_such_param'"));
  EXPECT_THAT(std::string(TrainerParse(kind, unknown).status().message()),
              HasSubstr("unknown parameter \"no_such_param\""));
}

// A rule beyond the range (Param::number_check): the grader would wait
// 1/rate seconds between requests, so a tiny positive rate is refused by
// both, while "unlimited" (<= 0) and real rates pass.
TEST(TrialParamsExtraRuleTest, GraderRateHasALowerBoundForPositiveRates) {
  const TrialKind& kind = *trials::FindKind("skillmix");
  const Param& p = *kind.Find("grader_requests_per_second");
  SCOPED_TRACE("skillmix.grader_requests_per_second");
  for (double ok : {-1.0, 0.0, 0.001, 2.0, 1e9}) ExpectAccepted(kind, p, ok);
  for (double bad : {1e-300, 1e-9, 0.000999}) ExpectRefused(kind, p, bad);
}

// The trainer reads every entry (a changed value changes the config), and
// the table's default is the config's default (stating it changes nothing).
TEST_P(TrialParamsTest, TrainerBindsEveryEntryWithTheTablesDefault) {
  const TrialKind& kind = *GetParam();
  for (const Param& p : kind.params) {
    SCOPED_TRACE(kind.name + "." + p.name);
    const json other = OtherValue(p);
    const json base = Point(kind, p.name, other);
    json without = base;
    without.erase(p.name);
    if (p.default_value.is_null()) without = Base(kind);  // required
    auto parsed_other = TrainerParse(kind, base);
    auto parsed_without = TrainerParse(kind, without);
    ASSERT_TRUE(parsed_other.ok()) << parsed_other.status();
    ASSERT_TRUE(parsed_without.ok()) << parsed_without.status();
    EXPECT_NE(*parsed_other, *parsed_without) << "not read: " << other;
    if (p.default_value.is_null()) continue;
    json with_default = without;
    with_default[p.name] = p.default_value;
    auto parsed_default = TrainerParse(kind, with_default);
    ASSERT_TRUE(parsed_default.ok()) << parsed_default.status();
    EXPECT_EQ(*parsed_default, *parsed_without);
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, TrialParamsTest,
                         ::testing::ValuesIn(trials::AllKinds()),
                         [](const auto& info) { return info.param->name; });

// The structs start from the tables' defaults (code that builds a config
// without parsing, like the benches and tests, gets the same trial).
TEST(TrialParamsDefaultsTest, StructDefaultsAreTheTables) {
  auto sraven = TrainerParse(trials::SravenKind(), json::object());
  ASSERT_TRUE(sraven.ok()) << sraven.status();
  EXPECT_EQ(*sraven, Dump(trainer::TrainConfig{}));
  auto skillmix = TrainerParse(trials::SkillMixKind(), {{"model", "/m"}});
  ASSERT_TRUE(skillmix.ok()) << skillmix.status();
  trainer::SkillMixTrialConfig c;
  c.model = "/m";
  EXPECT_EQ(*skillmix, Dump(c));
}

// The model's enum names are exactly the table's choices.
TEST(TrialParamsDefaultsTest, ChoicesAreTheModelsNames) {
  const TrialKind& k = trials::SravenKind();
  auto names = [](int n, const char* (*name)(int)) {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) out.push_back(name(i));
    return out;
  };
  using ::testing::UnorderedElementsAreArray;
  EXPECT_THAT(
      k.Find("attention")->choices,
      UnorderedElementsAreArray(names(8, [](int i) {
        return model::AttentionKindName(static_cast<model::AttentionKind>(i));
      })));
  EXPECT_THAT(k.Find("router")->choices,
              UnorderedElementsAreArray(names(2, [](int i) {
                return model::RouterKindName(static_cast<model::RouterKind>(i));
              })));
  EXPECT_THAT(
      k.Find("gating")->choices, UnorderedElementsAreArray(names(2, [](int i) {
        return model::RouterGatingName(static_cast<model::RouterGating>(i));
      })));
  EXPECT_THAT(k.Find("dispatch")->choices,
              UnorderedElementsAreArray(names(3, [](int i) {
                return model::DispatchName(static_cast<model::Dispatch>(i));
              })));
  EXPECT_EQ(model::AttentionKindName(static_cast<model::AttentionKind>(8)),
            std::string("unknown"));  // 8 is every attention kind
  // num_experts and top_k stop at the CUDA router kernel's limit: the
  // default dispatch (ops) runs it on GPUs.
  EXPECT_EQ(k.Find("num_experts")->int_hi, kernels::kMaxRouterExperts);
  EXPECT_EQ(k.Find("top_k")->int_hi, kernels::kMaxRouterExperts);
}

// docs/trainer-protocol.md and README.md hold `smoe params KIND --markdown`
// between <!-- BEGIN smoe params KIND --> and <!-- END smoe params KIND -->.
TEST(TrialParamsDocsTest, TrainerProtocolAndReadmeHoldTheTables) {
  const char* root = std::getenv("SMOE_SOURCE_DIR");
  ASSERT_NE(root, nullptr) << "SMOE_SOURCE_DIR is set by CTest";
  for (const char* file : {"docs/trainer-protocol.md", "README.md"}) {
    SCOPED_TRACE(file);
    std::ifstream in(absl::StrCat(root, "/", file));
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string doc = ss.str();
    ASSERT_FALSE(doc.empty());
    for (const TrialKind* kind : trials::AllKinds()) {
      const std::string begin =
          absl::StrCat("<!-- BEGIN smoe params ", kind->name, " -->\n");
      const std::string end =
          absl::StrCat("<!-- END smoe params ", kind->name, " -->");
      const size_t b = doc.find(begin);
      const size_t e = doc.find(end);
      ASSERT_NE(b, std::string::npos) << begin;
      ASSERT_NE(e, std::string::npos) << end;
      ASSERT_LT(b, e);
      const std::string block =
          doc.substr(b + begin.size(), e - b - begin.size());
      EXPECT_EQ(block, trials::FormatMarkdown(*kind))
          << file << " is stale; replace the " << kind->name
          << " block with the output of `smoe params " << kind->name
          << " --markdown`";
    }
  }
}

}  // namespace
}  // namespace smoe
