// Copyright 2026 SMoE Lab authors.
#include "analysis/trial_labels.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace smoe::analysis {
namespace {

std::string ValueText(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// ValueText(v) == first_text, without the text when `v` is `first` again:
// equal strings, booleans and integers and bit-equal floats print the same.
bool SameText(const nlohmann::json& v, const nlohmann::json& first,
              const std::string& first_text) {
  using T = nlohmann::json::value_t;
  if (v.type() == first.type()) {
    switch (v.type()) {
      case T::string:
        return v.get_ref<const std::string&>() == first_text;
      case T::null:
      case T::boolean:
      case T::number_integer:
      case T::number_unsigned:
        return v == first;
      case T::number_float: {
        const double a = v.get<double>(), b = first.get<double>();
        if (std::memcmp(&a, &b, sizeof a) == 0) return true;
        break;
      }
      default:
        break;
    }
  }
  return ValueText(v) == first_text;
}

}  // namespace

TrialLabeler::TrialLabeler(std::vector<std::string> axis_order)
    : axis_order_(std::move(axis_order)) {}

void TrialLabeler::Add(const nlohmann::json& params, int64_t seed) {
  finished_ = false;
  ++trials_;
  if (!have_seed_) {
    have_seed_ = true;
    first_seed_ = seed;
  } else if (seed != first_seed_) {
    multi_seed_ = true;
  }
  if (!params.is_object()) return;
  size_t i = 0;
  bool same_names = true;
  for (auto it = params.begin(); it != params.end(); ++it, ++i) {
    const std::string& name = it.key();
    Param* p = nullptr;
    if (same_names && i < last_.size() && last_[i].first == name) {
      p = last_[i].second;
    } else {
      if (same_names) last_.resize(i);
      same_names = false;
      auto [at, added] = params_.try_emplace(name);
      p = &at->second;
      last_.emplace_back(name, p);
    }
    ++p->present;
    if (p->present == 1) {
      p->first = it.value();
      p->first_text = ValueText(it.value());
    } else if (!p->multi && !SameText(it.value(), p->first, p->first_text)) {
      p->multi = true;
    }
  }
  if (same_names && i < last_.size()) last_.resize(i);
}

void TrialLabeler::Finish() {
  if (finished_) return;
  finished_ = true;
  varying_.clear();
  // A parameter missing from some trials varies too.
  auto varies = [&](const std::string& name) {
    auto it = params_.find(name);
    if (it == params_.end()) return false;
    return it->second.multi || it->second.present < trials_;
  };
  for (const std::string& a : axis_order_) {
    if (varies(a) &&
        std::find(varying_.begin(), varying_.end(), a) == varying_.end()) {
      varying_.push_back(a);
    }
  }
  for (const auto& [name, p] : params_) {
    if (varies(name) &&
        std::find(varying_.begin(), varying_.end(), name) == varying_.end()) {
      varying_.push_back(name);
    }
  }
}

std::string TrialLabeler::Label(const nlohmann::json& params, int64_t seed) {
  Finish();
  std::vector<std::string> parts;
  for (const std::string& a : varying_) {
    if (params.is_object()) {
      auto it = params.find(a);
      if (it != params.end())
        parts.push_back(absl::StrCat(a, "=", ValueText(*it)));
    }
  }
  if (multi_seed_ || parts.empty())
    parts.push_back(absl::StrCat("seed ", seed));
  return absl::StrJoin(parts, " ");
}

std::map<std::string, std::string> TrialLabels(
    const std::vector<LabelInput>& trials,
    const std::vector<std::string>& axis_order) {
  TrialLabeler labeler(axis_order);
  for (const LabelInput& t : trials) labeler.Add(t.params, t.seed);
  std::map<std::string, std::string> out;
  for (const LabelInput& t : trials) {
    out[t.trial_id] = labeler.Label(t.params, t.seed);
  }
  return out;
}

}  // namespace smoe::analysis
