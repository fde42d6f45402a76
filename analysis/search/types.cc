// Copyright 2026 SMoE Lab authors.
#include "analysis/search/types.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace smoe::analysis::search {

Mode ParseMode(const std::string& mode) {
  return mode == "min" ? Mode::kMin : Mode::kMax;
}

const char* ActionName(Action a) {
  switch (a) {
    case Action::kRun:
      return "run";
    case Action::kPromote:
      return "promote";
    case Action::kPrune:
      return "prune";
    case Action::kComplete:
      return "complete";
    case Action::kRetry:
      return "retry";
  }
  return "?";
}

namespace {
bool SameNumber(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}
}  // namespace

bool Decision::operator==(const Decision& o) const {
  return trial_id == o.trial_id && group == o.group && action == o.action &&
         rung == o.rung && step == o.step && SameNumber(value, o.value) &&
         SameNumber(cutoff, o.cutoff) && final == o.final && reason == o.reason;
}

std::string GroupLabel(const nlohmann::json& params,
                       const std::vector<std::string>& group_by) {
  std::string out;
  for (const std::string& g : group_by) {
    if (!out.empty()) out += ",";
    std::string v = "-";
    if (params.is_object() && params.contains(g)) {
      const nlohmann::json& x = params[g];
      v = x.is_string() ? x.get<std::string>() : x.dump();
    }
    absl::StrAppend(&out, g, "=", v);
  }
  return out;
}

double NextRunningAverage(Mode mode, double prev, size_t n, double value) {
  const double next = n == 0 ? value
                             : (prev * static_cast<double>(n) + value) /
                                   static_cast<double>(n + 1);
  if (!std::isnan(next)) return next;
  return mode == Mode::kMax ? -std::numeric_limits<double>::infinity()
                            : std::numeric_limits<double>::infinity();
}

std::vector<Report> Canonical(std::vector<Report> reports, Mode mode) {
  const double worst = mode == Mode::kMax
                           ? -std::numeric_limits<double>::infinity()
                           : std::numeric_limits<double>::infinity();
  for (Report& r : reports) {
    if (std::isnan(r.value)) r.value = worst;
  }
  std::sort(reports.begin(), reports.end(),
            [](const Report& a, const Report& b) {
              // Within (trial, step): the preferred report first.
              return std::make_tuple(std::cref(a.trial_id), a.step, -a.attempt,
                                     -a.value) <
                     std::make_tuple(std::cref(b.trial_id), b.step, -b.attempt,
                                     -b.value);
            });
  std::vector<Report> out;
  for (Report& r : reports) {
    if (!out.empty() && out.back().trial_id == r.trial_id &&
        out.back().step == r.step) {
      continue;
    }
    out.push_back(std::move(r));
  }
  return out;
}

nlohmann::json ToJson(const Decision& d) {
  auto num = [](double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
  };
  return {{"trial_id", d.trial_id},
          {"group", d.group},
          {"action", ActionName(d.action)},
          {"rung", d.rung},
          {"step", d.step},
          {"value", num(d.value)},
          {"cutoff", num(d.cutoff)},
          {"final", d.final},
          {"reason", d.reason}};
}

std::vector<Trial> SortedUniqueTrials(std::vector<Trial> trials) {
  std::sort(trials.begin(), trials.end(), [](const Trial& a, const Trial& b) {
    return a.trial_id < b.trial_id;
  });
  trials.erase(std::unique(trials.begin(), trials.end(),
                           [](const Trial& a, const Trial& b) {
                             return a.trial_id == b.trial_id;
                           }),
               trials.end());
  return trials;
}

}  // namespace smoe::analysis::search
