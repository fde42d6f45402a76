// Copyright 2026 SMoE Lab authors.
#include "cli/search_show.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/trial_labels.h"

namespace smoe::cli {

namespace pb = smoe::v1;
using json = nlohmann::json;

std::vector<std::string> SpecAxisNames(const pb::SweepSpec& spec) {
  std::vector<std::string> axes;
  for (const auto& a : spec.grid()) axes.push_back(a.name());
  for (const auto& a : spec.sample()) axes.push_back(a.name());
  return axes;
}

TrialLabels LabelTrials(const pb::GetSweepResponse& resp) {
  const std::vector<std::string> axes = SpecAxisNames(resp.sweep().spec());
  std::vector<analysis::LabelInput> in;
  in.reserve(static_cast<size_t>(resp.trials_size()));
  for (const auto& t : resp.trials()) {
    in.push_back(
        {t.trial_id(), json::parse(t.params_json(), nullptr, false), t.seed()});
  }
  return analysis::TrialLabels(in, axes);
}

std::string FormatDecision(const pb::Decision& d, const TrialLabels& labels) {
  // The reason names the rung, step, value and cutoff.
  std::string who;
  if (d.trial_id().empty()) {
    who = absl::StrCat("group ", d.group());
  } else {
    auto it = labels.find(d.trial_id());
    who = it == labels.end()
              ? d.trial_id()
              : absl::StrCat(it->second, " (",
                             d.trial_id().substr(d.trial_id().rfind('/') + 1),
                             ")");
  }
  return absl::StrCat("#", d.seq(), " ", who, " ", d.action(),
                      d.final() ? " (final)" : "", ": ", d.reason());
}

std::map<std::string, pb::Decision> LastPrunes(
    const pb::GetSweepResponse& resp) {
  std::map<std::string, pb::Decision> out;
  for (const pb::Decision& d : resp.decisions()) {
    if (d.action() == "prune" && !d.trial_id().empty()) out[d.trial_id()] = d;
  }
  return out;
}

void PrintSearchSummary(const pb::GetSweepResponse& resp, std::ostream& out) {
  const pb::Sweep& s = resp.sweep();
  if (!resp.has_search_usage()) return;
  const pb::SearchUsage& u = resp.search_usage();
  std::string head = "  search: ";
  if (!s.spec_yaml().empty()) {
    // The strategy is in the spec; the proto spec carries no search block.
    const size_t at = s.spec_yaml().find("strategy:");
    if (at != std::string::npos) {
      const size_t end = s.spec_yaml().find_first_of(",}\n", at);
      absl::StrAppend(&head, s.spec_yaml().substr(at, end - at));
    }
    const size_t early = s.spec_yaml().find("early_stop:");
    if (early != std::string::npos) {
      const size_t end = s.spec_yaml().find_first_of(",}\n", early);
      absl::StrAppend(&head, ", ", s.spec_yaml().substr(early, end - early));
    }
  }
  out << head << "\n";
  if (u.full_grid_trial_steps() > 0) {
    out << absl::StrFormat(
        "  trial-steps used: %d / full-grid estimate %d (%.0f%%; %.2fx "
        "fewer)\n",
        u.trial_steps_used(), u.full_grid_trial_steps(),
        100.0 * static_cast<double>(u.trial_steps_used()) /
            static_cast<double>(u.full_grid_trial_steps()),
        u.trial_steps_used() > 0
            ? static_cast<double>(u.full_grid_trial_steps()) /
                  static_cast<double>(u.trial_steps_used())
            : 0.0);
  }
  out << "  decisions: " << u.decisions();
  if (resp.decisions_size() < u.decisions()) {
    out << " (the last " << resp.decisions_size() << ")";
  }
  out << "\n";
  const TrialLabels labels = LabelTrials(resp);
  for (const pb::Decision& d : resp.decisions()) {
    out << "    " << FormatDecision(d, labels) << "\n";
  }
}

}  // namespace smoe::cli
