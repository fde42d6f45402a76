// Copyright 2026 SMoE Lab authors.
#include "analysis/trial_labels.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace smoe::analysis {
namespace {

std::string ValueText(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

std::map<std::string, std::string> TrialLabels(
    const std::vector<LabelInput>& trials,
    const std::vector<std::string>& axis_order) {
  std::map<std::string, std::set<std::string>> values;  // name -> values
  std::set<int64_t> seeds;
  for (const LabelInput& t : trials) {
    seeds.insert(t.seed);
    if (!t.params.is_object()) continue;
    for (const auto& [k, v] : t.params.items()) values[k].insert(ValueText(v));
  }
  // A parameter missing from some trials varies too.
  std::vector<std::string> varying;
  auto varies = [&](const std::string& name) {
    auto it = values.find(name);
    if (it == values.end()) return false;
    if (it->second.size() > 1) return true;
    return std::any_of(trials.begin(), trials.end(), [&](const LabelInput& t) {
      return !t.params.is_object() || !t.params.contains(name);
    });
  };
  for (const std::string& a : axis_order) {
    if (varies(a) &&
        std::find(varying.begin(), varying.end(), a) == varying.end()) {
      varying.push_back(a);
    }
  }
  for (const auto& [name, vs] : values) {
    if (varies(name) &&
        std::find(varying.begin(), varying.end(), name) == varying.end()) {
      varying.push_back(name);
    }
  }
  std::map<std::string, std::string> out;
  for (const LabelInput& t : trials) {
    std::vector<std::string> parts;
    for (const std::string& a : varying) {
      if (t.params.is_object() && t.params.contains(a)) {
        parts.push_back(absl::StrCat(a, "=", ValueText(t.params[a])));
      }
    }
    if (seeds.size() > 1 || parts.empty()) {
      parts.push_back(absl::StrCat("seed ", t.seed));
    }
    out[t.trial_id] = absl::StrJoin(parts, " ");
  }
  return out;
}

}  // namespace smoe::analysis
