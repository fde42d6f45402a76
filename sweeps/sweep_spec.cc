// Copyright 2026 SMoE Lab authors.
#include "sweeps/sweep_spec.h"

#include <openssl/evp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/utf8.h"
#include "sweeps/search_spec.h"
#include "sweeps/sweep_yaml.h"
#include "trials/params.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/yaml.h"

namespace smoe::sweeps {
namespace {

using internal::Cut;
using internal::IntField;
using internal::Problems;
using internal::ScalarToJson;
using internal::Show;
using nlohmann::json;

bool ValidName(absl::string_view n) {
  if (n.empty() || n.size() > 64) return false;
  if (!absl::ascii_islower(n[0]) && !absl::ascii_isdigit(n[0])) return false;
  for (char c : n) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '.' ||
          c == '_' || c == '-')) {
      return false;
    }
  }
  return true;
}

// sample_seed's range: integers a JavaScript number holds exactly (the
// dashboard reads the sweep's JSON).
constexpr int64_t kMaxSampleSeed = (int64_t{1} << 53) - 1;

// At most this many grid points are named when the rules between parameters
// fail; the rest are counted.
constexpr int kMaxPointProblems = 5;

// "seeds: 3": the count the user probably meant, as a list.
std::string SeedsHint(const YAML::Node& seeds) {
  int64_t n = 0;
  std::string hint = "seeds is a list";
  if (YAML::convert<int64_t>::decode(seeds, n) && n >= 1 && n <= 10) {
    std::vector<int64_t> list;
    for (int64_t i = 0; i < n; ++i) list.push_back(i);
    absl::StrAppend(&hint, "; did you mean seeds: [", absl::StrJoin(list, ", "),
                    "] (", n, n == 1 ? " seed" : " seeds", ") or seeds: [", n,
                    "] (only seed ", n, ")?");
  } else {
    absl::StrAppend(&hint, "; did you mean seeds: [", seeds.Scalar(), "]?");
  }
  return absl::StrCat("seeds: ", seeds.Scalar(), " is not a list: ", hint);
}

// A list longer than `max_points` cannot be part of a valid grid (every value
// is at least one point): refused by its length, before its values are read.
bool ListTooLong(const YAML::Node& list, absl::string_view field,
                 const ParseOptions& options, Problems* problems) {
  if (!list.IsSequence()) return false;
  const int64_t n = static_cast<int64_t>(list.size());
  if (n <= options.max_points) return false;
  problems->Add(absl::StrCat(field, ": ", n, " values, more than max ",
                             options.max_points,
                             " points (--max-points); not read"));
  return true;
}

void ParseGrid(const YAML::Node& grid, const ParseOptions& options,
               SweepSpec* spec, Problems* problems) {
  if (!grid.IsMap()) {
    problems->Add("grid: expected a map of axis name -> list of values");
    return;
  }
  std::set<std::string> names;
  for (const auto& kv : grid) {
    Axis axis;
    axis.name = Cut(kv.first.as<std::string>());
    const std::string field = absl::StrCat("grid.", axis.name);
    const YAML::Node& vals = kv.second;
    bool ok = true;
    if (ListTooLong(vals, field, options, problems)) {
      continue;
    } else if (vals.IsScalar()) {
      auto v = ScalarToJson(vals, field);
      ok = problems->Ok(v.status());
      if (ok) axis.values.push_back(*v);
    } else if (vals.IsSequence()) {
      size_t i = 0;
      for (const YAML::Node& val : vals) {
        auto v = ScalarToJson(val, absl::StrCat(field, "[", i++, "]"));
        if (!problems->Ok(v.status())) {
          ok = false;
          continue;
        }
        axis.values.push_back(*v);
      }
    } else {
      problems->Add(absl::StrCat(field, ": expected a list of values"));
      ok = false;
    }
    if (!ok) continue;
    if (axis.values.empty()) {
      problems->Add(
          absl::StrCat(field, ": empty axis (give at least one value)"));
      continue;
    }
    std::set<std::string> seen;
    for (const json& v : axis.values) {
      if (!seen.insert(v.dump()).second) {
        problems->Add(absl::StrCat(field, ": duplicate value ", Show(v)));
        ok = false;
      }
    }
    if (!names.insert(axis.name).second) {
      problems->Add(absl::StrCat(field, ": axis given twice"));
      ok = false;
    }
    if (ok) spec->grid.push_back(std::move(axis));
  }
}

void ParseFixed(const YAML::Node& fixed, SweepSpec* spec, Problems* problems) {
  if (!fixed.IsMap()) {
    problems->Add("fixed: expected a map of params");
    return;
  }
  std::set<std::string> axes;
  for (const Axis& a : spec->grid) axes.insert(a.name);
  for (const auto& kv : fixed) {
    const std::string key = Cut(kv.first.as<std::string>());
    auto v = ScalarToJson(kv.second, absl::StrCat("fixed.", key));
    if (!problems->Ok(v.status())) continue;
    if (axes.count(key)) {
      problems->Add(absl::StrCat("fixed.", key,
                                 ": also a grid axis; give it in one place"));
      continue;
    }
    spec->fixed[key] = *v;
  }
}

// `sample:` (after grid and fixed: an axis is given in one place only).
void ParseSample(const YAML::Node& node, const ParseOptions& options,
                 SweepSpec* spec, Problems* problems) {
  if (!node.IsMap()) {
    problems->Add(
        "sample: expected a map of axis name -> {loguniform|uniform|int: "
        "[lo, hi]} or {choice: [values]}");
    return;
  }
  std::set<std::string> grid_axes;
  for (const Axis& a : spec->grid) grid_axes.insert(a.name);
  std::set<std::string> names;
  for (const auto& kv : node) {
    SampledAxis axis;
    axis.name = Cut(kv.first.as<std::string>());
    const std::string field = absl::StrCat("sample.", axis.name);
    if (!names.insert(axis.name).second) {
      problems->Add(absl::StrCat(field, ": axis given twice"));
      continue;
    }
    if (grid_axes.count(axis.name)) {
      problems->Add(
          absl::StrCat(field, ": also a grid axis; give it in one place"));
      continue;
    }
    if (spec->fixed.contains(axis.name)) {
      problems->Add(
          absl::StrCat(field, ": also a fixed param; give it in one place"));
      continue;
    }
    const YAML::Node& d = kv.second;
    if (!d.IsMap() || d.size() != 1) {
      problems->Add(absl::StrCat(
          field,
          ": expected one distribution: {loguniform: [lo, hi]}, {uniform: "
          "[lo, hi]}, {int: [lo, hi]} or {choice: [values]}"));
      continue;
    }
    axis.distribution = d.begin()->first.as<std::string>();
    const YAML::Node& args = d.begin()->second;
    const std::string dfield = absl::StrCat(field, ".", Cut(axis.distribution));
    if (axis.distribution == "choice") {
      if (!args.IsSequence() || args.size() == 0) {
        problems->Add(absl::StrCat(dfield, ": expected a non-empty list"));
        continue;
      }
      if (ListTooLong(args, dfield, options, problems)) continue;
      bool ok = true;
      std::set<std::string> seen;
      for (size_t i = 0; i < args.size(); ++i) {
        auto v = ScalarToJson(args[i], absl::StrCat(dfield, "[", i, "]"));
        if (!problems->Ok(v.status())) {
          ok = false;
          continue;
        }
        if (!seen.insert(v->dump()).second) {
          problems->Add(absl::StrCat(dfield, ": duplicate value ", Show(*v)));
          ok = false;
          continue;
        }
        axis.choices.push_back(*v);
      }
      if (ok) spec->sample.push_back(std::move(axis));
      continue;
    }
    if (axis.distribution != "loguniform" && axis.distribution != "uniform" &&
        axis.distribution != "int") {
      problems->Add(absl::StrCat(field, ": distribution '",
                                 Cut(axis.distribution),
                                 "' is not one of {loguniform, uniform, int, "
                                 "choice}"));
      continue;
    }
    if (!args.IsSequence() || args.size() != 2) {
      problems->Add(absl::StrCat(dfield, ": expected [lo, hi]"));
      continue;
    }
    auto lo = ScalarToJson(args[0], absl::StrCat(dfield, "[0]"));
    auto hi = ScalarToJson(args[1], absl::StrCat(dfield, "[1]"));
    if (!problems->Ok(lo.status()) || !problems->Ok(hi.status())) continue;
    const bool want_int = axis.distribution == "int";
    auto bad_end = [&](const json& v) {
      return want_int ? !v.is_number_integer() : !v.is_number();
    };
    if (bad_end(*lo) || bad_end(*hi)) {
      problems->Add(absl::StrCat(dfield, ": expected [lo, hi] of ",
                                 want_int ? "integers" : "numbers", ", got [",
                                 Show(*lo), ", ", Show(*hi), "]"));
      continue;
    }
    const double l = lo->get<double>(), h = hi->get<double>();
    if (!std::isfinite(l) || !std::isfinite(h) || !(l < h)) {
      problems->Add(absl::StrCat(dfield, ": expected lo < hi, got [", Show(*lo),
                                 ", ", Show(*hi), "]"));
      continue;
    }
    if (axis.distribution == "loguniform" && !(l > 0)) {
      problems->Add(absl::StrCat(dfield, ": lo must be > 0 (a log range), got ",
                                 Show(*lo)));
      continue;
    }
    axis.lo = *lo;
    axis.hi = *hi;
    spec->sample.push_back(std::move(axis));
  }
}

void ParseSeeds(const YAML::Node& seeds, const ParseOptions& options,
                SweepSpec* spec, Problems* problems) {
  spec->seeds.clear();
  if (seeds.IsScalar() && !options.allow_scalar_seeds) {
    problems->Add(SeedsHint(seeds));
  } else if (seeds.IsScalar()) {
    auto s = IntField(seeds, "seeds", 0, std::numeric_limits<int32_t>::max());
    if (problems->Ok(s.status())) spec->seeds.push_back(*s);
  } else if (ListTooLong(seeds, "seeds", options, problems)) {
    // refused by its length
  } else if (seeds.IsSequence()) {
    std::set<int64_t> seen;
    size_t i = 0;
    for (const YAML::Node& seed : seeds) {
      auto s = IntField(seed, absl::StrCat("seeds[", i, "]"), 0,
                        std::numeric_limits<int32_t>::max());
      ++i;
      if (!problems->Ok(s.status())) continue;
      if (!seen.insert(*s).second) {
        problems->Add(absl::StrCat("seeds[", i - 1, "]: duplicate seed ", *s));
        continue;
      }
      spec->seeds.push_back(*s);
    }
    if (seeds.size() == 0) problems->Add("seeds: empty list");
  } else {
    problems->Add("seeds: expected a list of integers, e.g. [0, 1, 2]");
  }
  if (spec->seeds.empty()) spec->seeds = {0};  // checked above; keeps counts
}

void ParseResources(const YAML::Node& res, SweepSpec* spec,
                    Problems* problems) {
  if (!res.IsMap()) {
    problems->Add("resources: expected a map");
    return;
  }
  for (const auto& kv : res) {
    const std::string key = kv.first.as<std::string>();
    const std::string field = absl::StrCat("resources.", key);
    if (key == "gpus_per_trial" || key == "ep_size" || key == "slots") {
      auto r = IntField(kv.second, field, key == "gpus_per_trial" ? 0 : 1, 64);
      if (!problems->Ok(r.status())) continue;
      (key == "gpus_per_trial" ? spec->resources.gpus_per_trial
       : key == "ep_size"      ? spec->resources.ep_size
                               : spec->resources.slots) = static_cast<int>(*r);
    } else if (key == "progress_timeout_s") {
      auto r = IntField(kv.second, field, 1, 604800);
      if (!problems->Ok(r.status())) continue;
      spec->resources.progress_timeout_s = static_cast<int>(*r);
    } else if (key == "labels") {
      if (!kv.second.IsMap()) {
        problems->Add("resources.labels: expected a map of label -> value");
        continue;
      }
      for (const auto& l : kv.second) {
        const std::string name = l.first.as<std::string>();
        auto v = ScalarToJson(l.second, absl::StrCat(field, ".", name));
        if (!problems->Ok(v.status())) continue;
        if (name.empty() || InvalidUtf8Offset(name) >= 0) {
          problems->Add(absl::StrCat(field, ": invalid label name"));
          continue;
        }
        spec->resources.labels[name] =
            v->is_string() ? v->get<std::string>() : v->dump();
      }
    } else {
      problems->Add(
          absl::StrCat("unknown key '", field,
                       "' (allowed: gpus_per_trial, ep_size, slots, labels, "
                       "progress_timeout_s)"));
    }
  }
  if (spec->resources.ep_size > 1 && spec->resources.gpus_per_trial > 0 &&
      spec->resources.gpus_per_trial != spec->resources.ep_size) {
    problems->Add(absl::StrCat(
        "resources.gpus_per_trial: ", spec->resources.gpus_per_trial,
        " must equal resources.ep_size (", spec->resources.ep_size,
        ") for expert-parallel GPU trials"));
  }
  // kind skillmix with ep_size > 1: the student's (and a local grader's)
  // experts are split over the ranks (worker/trainer/skillmix_models.h);
  // whether ep_size <= num_local_experts is known only where the model
  // lives, so smoe-trainer checks it (exit 64 naming both).
}

std::atomic<int64_t> configurations_checked{0};

// Checks the grid and fixed params against the kind's table, then (when all
// values are valid and `check_points`) every configuration against the rules
// between parameters. The params of a point do not depend on its seed: each
// configuration is checked once and its problem, if any, counts (and is
// listed) once per seed, as when every point was checked (the messages are
// the same; at 10^6 points of 40 configurations the check was most of a
// submit: a trial id, i.e. a SHA-256, per point).
void CheckParams(const SweepSpec& spec, int64_t points, bool check_points,
                 Problems* problems) {
  const trials::TrialKind& schema = *SweepKind(spec);
  std::vector<std::string> names;
  for (const auto& p : schema.params) names.push_back(p.name);
  bool values_ok = true;
  auto check = [&](const std::string& name, const json& v,
                   absl::string_view where) {
    const trials::Param* p = schema.Find(name);
    if (p == nullptr) return;  // reported once per key below
    values_ok &= problems->Ok(trials::CheckSweepValue(*p, v, where));
  };
  auto known = [&](const std::string& name, const std::string& field) {
    if (schema.Find(name) != nullptr) return;
    problems->Add(absl::StrCat(field, ": unknown parameter '", name,
                               "' for kind ", spec.kind, schema.Suggest(name),
                               " (known: ", absl::StrJoin(names, ", "), ")"));
    values_ok = false;
  };
  for (const Axis& a : spec.grid) {
    known(a.name, absl::StrCat("grid.", a.name));
    for (const json& v : a.values) check(a.name, v, "grid");
  }
  for (const auto& [k, v] : spec.fixed.items()) {
    known(k, absl::StrCat("fixed.", k));
    check(k, v, "fixed");
  }
  // Sampled axes: the range's ends (or every choice) against the table;
  // every drawn point is checked with the rules below.
  for (const SampledAxis& a : spec.sample) {
    const std::string field = absl::StrCat("sample.", a.name);
    known(a.name, field);
    const trials::Param* p = schema.Find(a.name);
    if (p == nullptr) continue;
    const std::string dfield = absl::StrCat(field, ".", a.distribution);
    const bool number = p->type == trials::ParamType::kInt ||
                        p->type == trials::ParamType::kNumber;
    if (a.distribution != "choice" && !number) {
      problems->Add(absl::StrCat(dfield, ": ", a.name,
                                 " is not a number; sample it with choice: "
                                 "[values]"));
      values_ok = false;
      continue;
    }
    if (a.distribution != "choice" && a.distribution != "int" &&
        p->type == trials::ParamType::kInt) {
      problems->Add(absl::StrCat(dfield, ": ", a.name,
                                 " is an integer parameter; sample it with "
                                 "int: [lo, hi] or choice: [values]"));
      values_ok = false;
      continue;
    }
    // CheckSweepValue says "x.<name>: expected ..."; the field here is the
    // range's end or the choice.
    auto end = [&](const json& v, const std::string& where) {
      absl::Status st = trials::CheckSweepValue(*p, v, "x");
      if (st.ok()) return;
      std::string m(st.message());
      const std::string prefix = absl::StrCat("x.", a.name, ": ");
      if (m.rfind(prefix, 0) == 0) m = m.substr(prefix.size());
      problems->Add(absl::StrCat(where, ": ", m));
      values_ok = false;
    };
    if (a.distribution == "choice") {
      for (size_t i = 0; i < a.choices.size(); ++i) {
        end(a.choices[i], absl::StrCat(dfield, "[", i, "]"));
      }
    } else {
      end(a.lo, absl::StrCat(dfield, "[0]"));
      end(a.hi, absl::StrCat(dfield, "[1]"));
    }
  }
  if (!values_ok || points <= 0 || !problems->empty() || !check_points) {
    return;
  }
  const bool builtin = spec.kind != kCommandKind;
  const trials::Param* device = schema.Find("device");
  const bool has_ep_size = schema.Find("ep_size") != nullptr;
  const int64_t seeds = static_cast<int64_t>(spec.seeds.size());
  int64_t bad_points = 0;
  ForEachConfiguration(spec, [&](const json& params) {
    configurations_checked.fetch_add(1, std::memory_order_relaxed);
    absl::Status s = ValidateTrialParams(spec, params);
    // The daemon starts resources.ep_size rank processes; a trial asking
    // for another world size would fail at run time (exit 64).
    if (auto ep = params.find("ep_size");
        builtin && s.ok() && ep != params.end() && ep->is_number_integer() &&
        ep->get<int64_t>() != spec.resources.ep_size) {
      s = absl::InvalidArgumentError(
          absl::StrCat("params: ep_size=", ep->get<int64_t>(),
                       " must equal resources.ep_size=", spec.resources.ep_size,
                       " (the worker starts one process per rank; point ",
                       params.dump(), ")"));
    }
    // Without a params.ep_size the trainer takes its world size from the
    // ranks the daemon starts (resources.ep_size): check that one.
    if (s.ok() && builtin && spec.resources.ep_size > 1 && has_ep_size &&
        !params.contains("ep_size")) {
      json with_ep = params;
      with_ep["ep_size"] = spec.resources.ep_size;
      if (absl::Status e = ValidateTrialParams(spec.kind, with_ep); !e.ok()) {
        s = absl::InvalidArgumentError(
            absl::StrCat(e.message(), " (ep_size from resources.ep_size)"));
      }
    }
    // A trial on `device: cuda` gets its GPUs from resources.gpus_per_trial;
    // with 0 it would be leased to any worker and fail there at run time.
    if (s.ok() && builtin && device != nullptr &&
        spec.resources.gpus_per_trial < 1 &&
        params.value("device", device->default_value) == "cuda") {
      s = absl::InvalidArgumentError(absl::StrCat(
          "resources.gpus_per_trial: 0, but the point ", params.dump(),
          " trains on device: cuda",
          params.contains("device") ? "" : " (the default for this kind)",
          "; set resources.gpus_per_trial >= 1, or device: cpu"));
    }
    if (s.ok()) return true;
    // One failing point per seed, each listed while fewer than
    // kMaxPointProblems are.
    const int64_t listed =
        std::clamp<int64_t>(kMaxPointProblems - bad_points, 0, seeds);
    for (int64_t i = 0; i < listed; ++i) problems->Ok(s);
    bad_points += seeds;
    return true;
  });
  if (bad_points > kMaxPointProblems) {
    problems->Add(absl::StrCat("params: ", bad_points - kMaxPointProblems,
                               " more grid points break the same rules"));
  }
}

// `command:` and `params:`: required / allowed with kind command only.
// Returns whether the parameter table is usable for the checks that follow.
bool ParseCommandKind(const YAML::Node& root, SweepSpec* spec,
                      Problems* problems) {
  if (spec->kind != kCommandKind) {
    for (const char* key : {"command", "params"}) {
      if (root[key]) {
        problems->Add(absl::StrCat(key,
                                   ": only for kind: command (this sweep "
                                   "is kind ",
                                   spec->kind, ")"));
      }
    }
    return true;
  }
  std::vector<std::string> found;
  if (const YAML::Node c = root["command"]) {
    ParseCommandBlock(c, &spec->command, &found);
  } else {
    found.push_back(
        "command: required for kind: command ({program: /absolute/path, "
        "args: [...]})");
  }
  const size_t before = found.size();
  const ScalarReader scalar = [](const YAML::Node& n, absl::string_view f) {
    return ScalarToJson(n, f);
  };
  if (const YAML::Node p = root["params"]) {
    ParseParamsBlock(p, scalar, &spec->command_kind, &found);
  } else {
    ParseParamsBlock(YAML::Node(YAML::NodeType::Null), scalar,
                     &spec->command_kind, &found);
  }
  const bool schema_ok = found.size() == before;
  for (std::string& m : found) problems->Add(std::move(m));
  return schema_ok;
}

// A key given twice in one map (YAML forbids it; yaml-cpp keeps both and
// lookups see the first, so the second was silently ignored): refused,
// naming the key and both lines. Walks every map of the document.
void CheckDuplicateKeys(const YAML::Node& node, absl::string_view path,
                        Problems* problems) {
  if (node.IsSequence()) {
    size_t i = 0;
    for (const YAML::Node& item : node) {
      CheckDuplicateKeys(item, absl::StrCat(path, "[", i++, "]"), problems);
    }
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, int> first_line;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) continue;
    const std::string key = kv.first.Scalar();
    const std::string field =
        path.empty() ? Cut(key) : absl::StrCat(path, ".", Cut(key));
    const int line = kv.first.Mark().line + 1;
    auto [it, inserted] = first_line.emplace(key, line);
    if (!inserted) {
      problems->Add(absl::StrCat(field, ": key given twice (line ", it->second,
                                 " and line ", line, ")"));
      continue;
    }
    CheckDuplicateKeys(kv.second, field, problems);
  }
}

void ParseDocument(const YAML::Node& root, const ParseOptions& options,
                   SweepSpec* spec, Problems* problems) {
  if (!root.IsMap()) {
    problems->Add("sweep file: expected a YAML map at the top level");
    return;
  }
  static const std::set<std::string> kKeys = {
      "name",   "kind",      "grid",       "fixed",
      "seeds",  "resources", "retries",    "priority",
      "search", "command",   "params",     "keep_final_checkpoint",
      "sample", "samples",   "sample_seed"};
  if (!options.allow_lax_yaml) CheckDuplicateKeys(root, "", problems);
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (!kKeys.count(key)) {
      problems->Add(absl::StrCat("unknown key '", key, "' (allowed: ",
                                 absl::StrJoin(kKeys, ", "), ")"));
    }
  }
  if (!root["name"] || !root["name"].IsScalar()) {
    problems->Add("name: required (a string)");
  } else {
    spec->name = root["name"].Scalar();
    if (!ValidName(spec->name)) {
      problems->Add(absl::StrCat("name: '", spec->name,
                                 "' must match [a-z0-9][a-z0-9._-]{0,63}"));
    }
  }
  bool kind_ok = false;
  if (!root["kind"] || !root["kind"].IsScalar()) {
    problems->Add("kind: required (sraven | skillmix | command)");
  } else {
    spec->kind = root["kind"].Scalar();
    kind_ok =
        spec->kind == kCommandKind || trials::FindKind(spec->kind) != nullptr;
    if (!kind_ok) {
      problems->Add(
          absl::StrCat("kind: '", spec->kind,
                       "' is not one of {sraven, skillmix, command}"));
    }
  }
  if (kind_ok) kind_ok = ParseCommandKind(root, spec, problems);
  if (const YAML::Node grid = root["grid"]) {
    ParseGrid(grid, options, spec, problems);
  }
  if (const YAML::Node fixed = root["fixed"]) {
    ParseFixed(fixed, spec, problems);
  }
  if (const YAML::Node seeds = root["seeds"]) {
    ParseSeeds(seeds, options, spec, problems);
  }
  if (const YAML::Node sample = root["sample"]) {
    ParseSample(sample, options, spec, problems);
  }
  if (const YAML::Node n = root["samples"]) {
    auto v =
        IntField(n, "samples", 1, std::max<int64_t>(1, options.max_points));
    if (problems->Ok(v.status())) spec->samples = *v;
  }
  if (root["sample"] && !root["samples"]) {
    problems->Add(
        "samples: required with sample (the number of configurations drawn, "
        "e.g. samples: 8)");
  } else if (!root["sample"] && root["samples"]) {
    problems->Add("samples: given without sample (the sampled axes)");
  }
  if (const YAML::Node n = root["sample_seed"]) {
    if (!root["sample"]) {
      problems->Add("sample_seed: given without sample (the sampled axes)");
    }
    auto v = IntField(n, "sample_seed", 0, kMaxSampleSeed);
    if (problems->Ok(v.status())) spec->sample_seed = *v;
  } else if (root["sample"]) {
    spec->sample_seed = DefaultSampleSeed(spec->name);
  }
  if (const YAML::Node res = root["resources"]) {
    ParseResources(res, spec, problems);
  }
  if (const YAML::Node r = root["retries"]) {
    auto v = IntField(r, "retries", 0, 1000);
    if (problems->Ok(v.status())) spec->retries = static_cast<int>(*v);
  }
  if (const YAML::Node p = root["priority"]) {
    auto v = IntField(p, "priority", -1000000, 1000000);
    if (problems->Ok(v.status())) spec->priority = static_cast<int>(*v);
  }
  if (const YAML::Node k = root["keep_final_checkpoint"]) {
    if (!k.IsScalar() || (k.Scalar() != "true" && k.Scalar() != "false")) {
      problems->Add(absl::StrCat(
          "keep_final_checkpoint: '",
          k.IsScalar() ? k.Scalar() : "(not a scalar)",
          "' is not a boolean (true: a succeeded trial keeps its final "
          "checkpoint as an artifact)"));
    } else {
      spec->keep_final_checkpoint = k.Scalar() == "true";
    }
  }
  if (const YAML::Node search = root["search"]) {
    internal::ParseSearch(search, spec, problems);
  }
  const int64_t points = CountPoints(*spec);
  if (points > options.max_points) {
    problems->Add(absl::StrCat("grid: expands to ", points,
                               " points, more than max ", options.max_points,
                               " (axes x seeds)"));
  }
  if (kind_ok && points <= options.max_points) {
    CheckParams(*spec, points, options.check_points, problems);
    if (problems->empty() && options.check_points) {
      internal::CheckSearchPoints(*spec, problems);
    }
  }
}

}  // namespace

bool SearchSpec::operator==(const SearchSpec& o) const {
  return strategy == o.strategy && metric == o.metric && mode == o.mode &&
         min_steps == o.min_steps && reduction == o.reduction &&
         max_steps == o.max_steps && group_by == o.group_by && axis == o.axis &&
         bounds_lo == o.bounds_lo && bounds_hi == o.bounds_hi &&
         budget == o.budget && add_seeds == o.add_seeds &&
         early_stop == o.early_stop && smooth_evals == o.smooth_evals &&
         budget_gpu_hours == o.budget_gpu_hours &&
         aggregate_seeds == o.aggregate_seeds &&
         keep_neighbors == o.keep_neighbors && tolerance == o.tolerance;
}

bool SampledAxis::operator==(const SampledAxis& o) const {
  return name == o.name && distribution == o.distribution && lo == o.lo &&
         hi == o.hi && choices == o.choices;
}

namespace {

// The first 8 bytes of SHA-256(text), big-endian.
uint64_t Hash64(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr);
  uint64_t x = 0;
  for (int i = 0; i < 8; ++i) x = (x << 8) | digest[i];
  return x;
}

// x rounded to 6 significant digits, through its text form.
double Round6(double x) {
  double r = 0;
  if (!absl::SimpleAtod(absl::StrFormat("%.6g", x), &r)) return x;
  return r;
}

}  // namespace

int64_t DefaultSampleSeed(absl::string_view sweep_name) {
  return static_cast<int64_t>(
      Hash64(absl::StrCat("smoe-sample-seed:", sweep_name)) >> 16);
}

json DrawSample(const SampledAxis& axis, int64_t seed, int64_t index) {
  const uint64_t bits =
      Hash64(absl::StrCat("smoe-sample:", seed, ":", index, ":", axis.name));
  const double u = static_cast<double>(bits >> 11) * 0x1.0p-53;  // [0, 1)
  if (axis.distribution == "choice") {
    if (axis.choices.empty()) return json();
    size_t i =
        static_cast<size_t>(u * static_cast<double>(axis.choices.size()));
    return axis.choices[std::min(i, axis.choices.size() - 1)];
  }
  if (axis.distribution == "int") {
    const int64_t lo = axis.lo.get<int64_t>(), hi = axis.hi.get<int64_t>();
    const double span = static_cast<double>(hi) - static_cast<double>(lo) + 1;
    const int64_t v = lo + static_cast<int64_t>(std::floor(u * span));
    return std::clamp(v, lo, hi);
  }
  const double lo = axis.lo.get<double>(), hi = axis.hi.get<double>();
  double v = axis.distribution == "loguniform"
                 ? std::exp(std::log(lo) + u * (std::log(hi) - std::log(lo)))
                 : lo + u * (hi - lo);
  v = std::clamp(Round6(v), lo, hi);
  return json(v);
}

std::vector<json> SampleConfigs(const SweepSpec& spec) {
  if (spec.sample.empty()) return {json::object()};
  std::vector<json> out;
  std::set<std::string> seen;
  for (int64_t i = 0; i < spec.samples; ++i) {
    json c = json::object();
    for (const SampledAxis& a : spec.sample) {
      c[a.name] = DrawSample(a, spec.sample_seed, i);
    }
    if (seen.insert(c.dump()).second) out.push_back(std::move(c));
  }
  return out;
}

std::vector<json> SampledValues(const SweepSpec& spec, absl::string_view name) {
  std::vector<json> values;
  const std::string key(name);
  for (const json& c : SampleConfigs(spec)) {
    auto it = c.find(key);
    if (it == c.end()) continue;
    if (std::find(values.begin(), values.end(), *it) == values.end()) {
      values.push_back(*it);
    }
  }
  std::sort(values.begin(), values.end());
  return values;
}

std::vector<std::string> AxisNames(const SweepSpec& spec) {
  std::vector<std::string> out;
  for (const Axis& a : spec.grid) out.push_back(a.name);
  for (const SampledAxis& a : spec.sample) out.push_back(a.name);
  return out;
}

absl::StatusOr<AshaCostEstimate> EstimateAshaCost(const SweepSpec& spec) {
  const SearchSpec& s = spec.search;
  if (s.strategy != "asha") {
    return absl::InvalidArgumentError(absl::StrCat(
        "search.strategy: ", s.strategy, " (the estimate is for asha)"));
  }
  AshaCostEstimate e;
  const int64_t max_steps = std::max<int64_t>(1, s.max_steps);
  // The rungs as analysis/search/asha.h's AshaRungs has them:
  // min_steps * eta^i < max_steps.
  for (int64_t r = std::max<int64_t>(1, s.min_steps); r < max_steps;
       r *= std::max<int64_t>(2, s.reduction)) {
    e.rungs.push_back(r);
    if (r > max_steps / std::max<int64_t>(2, s.reduction)) break;
  }
  // Units per group: trials, or configurations (params) with their seeds.
  std::map<std::string, std::map<std::string, int64_t>> groups;
  for (const ExpandedTrial& t : ExpandGrid(spec)) {
    json g = json::array();
    for (const std::string& name : s.group_by) {
      g.push_back(t.params.value(name, json()));
    }
    const std::string unit = s.aggregate_seeds ? t.params.dump() : t.trial_id;
    ++groups[g.dump()][unit];
  }
  e.groups = static_cast<int64_t>(groups.size());
  for (const auto& [label, units] : groups) {
    // Every unit of a group has the same number of trials (its seeds under
    // aggregate_seeds, else 1).
    int64_t n = static_cast<int64_t>(units.size());
    const double per_unit = static_cast<double>(units.begin()->second);
    int64_t from = 0;
    for (int64_t r : e.rungs) {
      e.trial_steps +=
          static_cast<double>(n) * per_unit * static_cast<double>(r - from);
      from = r;
      n = std::max<int64_t>(1, n / std::max<int64_t>(2, s.reduction));
    }
    e.trial_steps += static_cast<double>(n) * per_unit *
                     static_cast<double>(max_steps - from);
  }
  const double points = static_cast<double>(CountPoints(spec));
  e.full_grid_trial_steps = points * static_cast<double>(max_steps);
  SweepSpec untuned = spec;
  untuned.sample.clear();
  untuned.samples = 0;
  e.untuned_grid_trial_steps = static_cast<double>(CountPoints(untuned)) *
                               static_cast<double>(max_steps);
  return e;
}

const trials::TrialKind* SweepKind(const SweepSpec& spec) {
  if (spec.kind == kCommandKind) return &spec.command_kind;
  return trials::FindKind(spec.kind);
}

absl::Status ValidateTrialParams(const SweepSpec& spec, const json& params) {
  if (spec.kind != kCommandKind) return ValidateTrialParams(spec.kind, params);
  const trials::TrialKind& schema = spec.command_kind;
  for (const auto& [k, v] : params.items()) {
    const trials::Param* p = schema.Find(k);
    if (p == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("params: unknown parameter '", k, "' for kind ",
                       spec.kind, schema.Suggest(k)));
    }
    if (auto s = trials::CheckSweepValue(*p, v, "params"); !s.ok()) return s;
  }
  for (const trials::Param& p : schema.params) {
    if (p.default_value.is_null() && !params.contains(p.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("params.", p.name,
                       ": required (declared without a default) but "
                       "not set for the point ",
                       params.dump(), "; give it in fixed or grid"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateTrialParams(absl::string_view kind, const json& params) {
  const trials::TrialKind* schema = trials::FindKind(kind);
  if (schema == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown kind '", kind, "'"));
  }
  for (const auto& [k, v] : params.items()) {
    const trials::Param* p = schema->Find(k);
    if (p == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("params: unknown parameter '", k, "' for kind ", kind,
                       schema->Suggest(k)));
    }
    if (auto s = trials::CheckSweepValue(*p, v, "params"); !s.ok()) return s;
  }
  // The rules between parameters (trials/sraven_rules.h for sraven), which
  // the trainer checks too.
  if (schema->rules != nullptr) {
    if (absl::Status s = schema->rules(params); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "params: ", s.message(), " (point ", params.dump(), ")"));
    }
  }
  return absl::OkStatus();
}

int64_t CountPoints(const SweepSpec& spec) {
  int64_t n = static_cast<int64_t>(spec.seeds.size());
  if (!spec.sample.empty()) {
    const int64_t m = static_cast<int64_t>(SampleConfigs(spec).size());
    if (m != 0 && n > std::numeric_limits<int64_t>::max() / m) {
      return std::numeric_limits<int64_t>::max();
    }
    n *= m;
  }
  for (const Axis& a : spec.grid) {
    const int64_t m = static_cast<int64_t>(a.values.size());
    if (m != 0 && n > std::numeric_limits<int64_t>::max() / m) {
      return std::numeric_limits<int64_t>::max();
    }
    n *= m;
  }
  return n;
}

std::string TrialId(absl::string_view sweep, absl::string_view kind,
                    const json& params, int64_t seed) {
  // nlohmann::json objects are std::map-backed: dump() sorts keys, so the
  // text is canonical.
  const std::string canonical = json{
      {"kind", std::string(kind)},
      {"params", params},
      {"seed", seed}}.dump();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(canonical.data(), canonical.size(), digest, &len, EVP_sha256(),
             nullptr);
  return absl::StrCat(sweep, "/",
                      absl::BytesToHexString(absl::string_view(
                          reinterpret_cast<const char*>(digest), 8)));
}

void ForEachConfiguration(const SweepSpec& spec,
                          const std::function<bool(const json& params)>& fn) {
  for (const Axis& a : spec.grid) {
    if (a.values.empty()) return;
  }
  const std::vector<json> configs = SampleConfigs(spec);
  std::vector<size_t> idx(spec.grid.size(), 0);
  while (true) {
    json point = spec.fixed;
    for (size_t a = 0; a < spec.grid.size(); ++a) {
      point[spec.grid[a].name] = spec.grid[a].values[idx[a]];
    }
    for (const json& config : configs) {
      json params = point;
      for (const auto& [k, v] : config.items()) params[k] = v;
      if (!fn(params)) return;
    }
    // Odometer increment, last axis fastest.
    int a = static_cast<int>(spec.grid.size()) - 1;
    for (; a >= 0; --a) {
      if (++idx[static_cast<size_t>(a)] <
          spec.grid[static_cast<size_t>(a)].values.size()) {
        break;
      }
      idx[static_cast<size_t>(a)] = 0;
    }
    if (a < 0) break;
  }
}

std::vector<ExpandedTrial> ExpandGrid(const SweepSpec& spec) {
  std::vector<ExpandedTrial> out;
  const int64_t total = CountPoints(spec);
  if (total <= 0) return out;
  out.reserve(static_cast<size_t>(total));
  // TrialId's canonical text, {"kind":K,"params":P,"seed":S} (keys sorted),
  // built once per configuration up to the seed: the same bytes, without a
  // JSON object and a dump per point.
  const std::string kind_prefix =
      absl::StrCat("{\"kind\":", json(spec.kind).dump(), ",\"params\":");
  const std::string id_prefix = absl::StrCat(spec.name, "/");
  std::string canonical;
  unsigned char digest[EVP_MAX_MD_SIZE];
  ForEachConfiguration(spec, [&](const json& params) {
    const std::string prefix =
        absl::StrCat(kind_prefix, params.dump(), ",\"seed\":");
    for (int64_t seed : spec.seeds) {
      ExpandedTrial t;
      t.params = params;
      t.seed = seed;
      canonical.assign(prefix);
      absl::StrAppend(&canonical, seed, "}");
      unsigned int len = 0;
      EVP_Digest(canonical.data(), canonical.size(), digest, &len, EVP_sha256(),
                 nullptr);
      t.trial_id = absl::StrCat(id_prefix,
                                absl::BytesToHexString(absl::string_view(
                                    reinterpret_cast<const char*>(digest), 8)));
      out.push_back(std::move(t));
    }
    return true;
  });
  return out;
}

namespace internal {
int64_t ConfigurationsCheckedForTesting() {
  return configurations_checked.load(std::memory_order_relaxed);
}
}  // namespace internal

namespace {

// Notes where a YAML document's content starts and whether it has any.
class DocumentProbe : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { Content(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Content(m);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Content(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Content(m);
  }
  void OnMapEnd() override {}
  bool has_content = false;
  YAML::Mark first;

 private:
  void Content(const YAML::Mark& m) {
    if (!has_content) first = m;
    has_content = true;
  }
};

// The line (1-based) where a second, non-empty YAML document of `text`
// starts, or 0. Two documents at most are parsed: yaml-cpp 0.7's LoadAll
// loops forever on some malformed inputs (the sweep-file fuzzer found two),
// while each HandleNextDocument call returns.
int SecondDocumentLine(absl::string_view text) {
  std::istringstream in{std::string(text)};
  YAML::Parser parser(in);
  DocumentProbe first;
  if (!parser.HandleNextDocument(first)) return 0;
  DocumentProbe second;
  if (!parser.HandleNextDocument(second) || !second.has_content) return 0;
  return second.first.line + 1;
}

}  // namespace

absl::StatusOr<SweepSpec> ParseSweepYaml(absl::string_view text,
                                         const ParseOptions& options) {
  SweepSpec spec;
  // Refused by its size before anything is parsed: yaml-cpp holds ~100
  // bytes per value, so a 10 MB file of seeds took > 1 GB and a minute
  // (issue 36 item 8).
  if (static_cast<int64_t>(text.size()) > options.max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("sweep file: ", text.size(), " bytes, more than max ",
                     options.max_bytes, " bytes (--max-sweep-bytes)"));
  }
  if (const int64_t bad = InvalidUtf8Offset(text); bad >= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sweep file: not valid UTF-8 at byte ", bad, " (0x",
        absl::Hex(static_cast<unsigned char>(text[static_cast<size_t>(bad)])),
        ")"));
  }
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) {
      return absl::InvalidArgumentError(
          absl::StrCat("sweep file: control character 0x", absl::Hex(c),
                       " at byte ", i, " (YAML allows only tab, LF and CR)"));
    }
  }
  // yaml-cpp reports errors by throwing; this is the boundary where they are
  // caught and turned into a Status.
  try {
    // A second document ("---" then more) was silently ignored.
    if (!options.allow_lax_yaml) {
      if (const int line = SecondDocumentLine(text); line > 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "sweep file: a second YAML document at line ", line,
            "; a sweep file is one document (remove the '---' and what "
            "follows, or submit it as its own file)"));
      }
    }
    const YAML::Node root = YAML::Load(std::string(text));
    if (!root || root.IsNull()) {
      return absl::InvalidArgumentError("sweep file: empty document");
    }
    Problems problems(options.max_problems);
    ParseDocument(root, options, &spec, &problems);
    if (absl::Status s = problems.ToStatus(); !s.ok()) return s;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("sweep file: YAML error at line ", e.mark.line + 1,
                     ", column ", e.mark.column + 1, ": ", e.msg));
  }
  return spec;
}

std::string SweepSpecToYaml(const SweepSpec& spec) {
  YAML::Emitter out;
  auto emit_value = [&out](const json& v) {
    if (v.is_string()) {
      out << YAML::DoubleQuoted << v.get<std::string>();
    } else {
      out << v.dump();
    }
  };
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << spec.name;
  out << YAML::Key << "kind" << YAML::Value << spec.kind;
  out << YAML::Key << "grid" << YAML::Value << YAML::BeginMap;
  for (const Axis& a : spec.grid) {
    out << YAML::Key << a.name << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const json& v : a.values) emit_value(v);
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
  out << YAML::Key << "fixed" << YAML::Value << YAML::BeginMap;
  for (const auto& [k, v] : spec.fixed.items()) {
    out << YAML::Key << k << YAML::Value;
    emit_value(v);
  }
  out << YAML::EndMap;
  // Written only when set: sweeps without it keep their canonical form.
  if (!spec.sample.empty()) {
    out << YAML::Key << "sample" << YAML::Value << YAML::BeginMap;
    for (const SampledAxis& a : spec.sample) {
      out << YAML::Key << a.name << YAML::Value << YAML::Flow << YAML::BeginMap
          << YAML::Key << a.distribution << YAML::Value << YAML::Flow
          << YAML::BeginSeq;
      if (a.distribution == "choice") {
        for (const json& v : a.choices) emit_value(v);
      } else {
        emit_value(a.lo);
        emit_value(a.hi);
      }
      out << YAML::EndSeq << YAML::EndMap;
    }
    out << YAML::EndMap;
    out << YAML::Key << "samples" << YAML::Value << spec.samples;
    out << YAML::Key << "sample_seed" << YAML::Value << spec.sample_seed;
  }
  out << YAML::Key << "seeds" << YAML::Value << YAML::Flow << spec.seeds;
  out << YAML::Key << "resources" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "gpus_per_trial" << YAML::Value
      << spec.resources.gpus_per_trial;
  out << YAML::Key << "ep_size" << YAML::Value << spec.resources.ep_size;
  out << YAML::Key << "slots" << YAML::Value << spec.resources.slots;
  if (!spec.resources.labels.empty()) {
    out << YAML::Key << "labels" << YAML::Value << YAML::BeginMap;
    for (const auto& [k, v] : spec.resources.labels) {
      out << YAML::Key << k << YAML::Value << YAML::DoubleQuoted << v;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  out << YAML::Key << "retries" << YAML::Value << spec.retries;
  out << YAML::Key << "priority" << YAML::Value << spec.priority;
  // Written only when set: sweeps without it keep their canonical form.
  if (spec.keep_final_checkpoint) {
    out << YAML::Key << "keep_final_checkpoint" << YAML::Value << true;
  }
  if (spec.kind == kCommandKind) {
    EmitCommandBlocks(spec.command, spec.command_kind, &out);
  }
  // Grid sweeps are written as before (no search block).
  if (spec.search.strategy != "grid") {
    const SearchSpec& s = spec.search;
    out << YAML::Key << "search" << YAML::Value << YAML::BeginMap;
    for (const std::string& key :
         internal::SearchKeys(s.strategy, s.early_stop)) {
      // Keys at their defaults are left out (older sweeps read the same).
      if (key == "early_stop" && s.early_stop.empty()) continue;
      if (key == "smooth_evals" && s.smooth_evals == 1) continue;
      if (key == "budget_gpu_hours" && s.budget_gpu_hours == 0) continue;
      // (A sampled sweep's default is true: false is written.)
      if (key == "aggregate_seeds" && !s.aggregate_seeds &&
          spec.sample.empty()) {
        continue;
      }
      if (key == "keep_neighbors" && s.keep_neighbors.empty()) continue;
      if (key == "tolerance" && s.tolerance == 0) continue;
      out << YAML::Key << key << YAML::Value;
      if (key == "strategy") {
        out << s.strategy;
      } else if (key == "metric") {
        out << YAML::DoubleQuoted << s.metric;
      } else if (key == "mode") {
        out << s.mode;
      } else if (key == "min_steps") {
        out << s.min_steps;
      } else if (key == "reduction") {
        out << s.reduction;
      } else if (key == "max_steps") {
        out << s.max_steps;
      } else if (key == "group_by") {
        out << YAML::Flow << YAML::BeginSeq;
        for (const std::string& g : s.group_by) out << YAML::DoubleQuoted << g;
        out << YAML::EndSeq;
      } else if (key == "axis") {
        out << YAML::DoubleQuoted << s.axis;
      } else if (key == "bounds") {
        out << YAML::Flow << YAML::BeginSeq << s.bounds_lo << s.bounds_hi
            << YAML::EndSeq;
      } else if (key == "budget") {
        out << s.budget;
      } else if (key == "add_seeds") {
        out << s.add_seeds;
      } else if (key == "smooth_evals") {
        out << s.smooth_evals;
      } else if (key == "aggregate_seeds") {
        out << s.aggregate_seeds;
      } else if (key == "keep_neighbors") {
        out << s.keep_neighbors;
      } else if (key == "tolerance") {
        out << absl::StrFormat("%.17g", s.tolerance);
      } else if (key == "budget_gpu_hours") {
        out << absl::StrFormat("%.17g", s.budget_gpu_hours);
      } else if (key == "early_stop") {
        out << s.early_stop;
      }
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

absl::Status ExtendAxis(SweepSpec* spec, absl::string_view axis,
                        const std::vector<json>& values,
                        const ParseOptions& options) {
  SweepSpec next = *spec;
  const bool grid_axis =
      std::any_of(next.grid.begin(), next.grid.end(),
                  [&](const Axis& a) { return a.name == axis; });
  if ((axis == "samples" || axis == "samples_total") && !grid_axis) {
    // "samples": N more draws; "samples_total": up to T draws in all (a
    // retried request adds nothing).
    const bool total = axis == "samples_total";
    const std::string field(axis);
    if (next.sample.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ": sweep ", spec->name,
          " has no sampled axes (no `sample:` block); extend a grid axis or "
          "'seeds'"));
    }
    if (values.size() != 1 || !values[0].is_number_integer() ||
        values[0].get<int64_t>() < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": expected one positive integer (",
                       total ? "the configurations to have in all"
                             : "the configurations to draw",
                       "), got ", Cut(json(values).dump())));
    }
    const int64_t v = values[0].get<int64_t>();
    const int64_t n = total ? std::max<int64_t>(0, v - next.samples) : v;
    if (n > options.max_points - std::min(options.max_points, next.samples)) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ": ", next.samples, " + ", n, " draws, more than max ",
          options.max_points, " points (--max-points)"));
    }
    next.samples += n;
  } else if (axis == "seeds") {
    for (const json& v : values) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "seeds: expected a non-negative integer, got ", v.dump()));
      }
      const int64_t s = v.get<int64_t>();
      if (std::find(next.seeds.begin(), next.seeds.end(), s) ==
          next.seeds.end()) {
        next.seeds.push_back(s);
      }
    }
  } else {
    Axis* a = nullptr;
    for (Axis& x : next.grid) {
      if (x.name == axis) a = &x;
    }
    if (a == nullptr) {
      return absl::NotFoundError(
          absl::StrCat("axis '", axis, "' is not in sweep ", spec->name,
                       " (extend an existing axis or 'seeds')"));
    }
    for (const json& v : values) {
      if (std::find(a->values.begin(), a->values.end(), v) == a->values.end()) {
        a->values.push_back(v);
      }
    }
  }
  // Round-trip through the parser: the same validation as a submitted file
  // (the text is ours: its size is bounded by max_points, not max_bytes).
  ParseOptions reparse = options;
  reparse.max_bytes = INT64_MAX;
  auto reparsed = ParseSweepYaml(SweepSpecToYaml(next), reparse);
  if (!reparsed.ok()) return reparsed.status();
  *spec = std::move(*reparsed);
  return absl::OkStatus();
}

}  // namespace smoe::sweeps
