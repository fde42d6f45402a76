// Copyright 2026 SMoE Lab authors.
#include "cli/search_show.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace smoe::cli {

namespace pb = smoe::v1;

std::string FormatDecision(const pb::Decision& d) {
  // The reason names the rung, step, value and cutoff.
  return absl::StrCat(
      "#", d.seq(), " ",
      d.trial_id().empty() ? absl::StrCat("group ", d.group()) : d.trial_id(),
      " ", d.action(), d.final() ? " (final)" : "", ": ", d.reason());
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
  for (const pb::Decision& d : resp.decisions()) {
    out << "    " << FormatDecision(d) << "\n";
  }
}

}  // namespace smoe::cli
