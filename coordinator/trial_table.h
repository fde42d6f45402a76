// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/trial_table.h
//
// The dashboard's trials table as a pure query: filter, sort and page a
// sweep's parsed summary rows. No HTTP, no store, no locks: the HTTP adapter
// parses the request into a TrialQuery, the read model supplies the rows, and
// this module returns which rows make up the page.
//
// Query language (the `q` field): space-separated terms; "name=value" matches
// a parameter whose value's label is `value`, anything else is a
// case-insensitive substring of the row's text (trial id, worker, params
// JSON, state). `state` is a comma-separated list of state names. Sort keys:
// ordinal (default) | trial | state | attempt | worker | duration | seed |
// exit | error | p.<param> | r.<result>, with a '-' prefix for descending; rows
// missing the key sort last either way; ties keep sweep order.
//
// Thread safety: every function is pure.
#ifndef SMOE_COORDINATOR_TRIAL_TABLE_H_
#define SMOE_COORDINATOR_TRIAL_TABLE_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "analysis/stats.h"
#include "nlohmann/json.hpp"
#include "store/types.h"

namespace smoe::coordinator {

// One parsed summary row. Immutable once built: snapshots share unchanged
// rows, so pointer inequality between two snapshots' rows at a position means
// "changed".
struct TrialRow {
  analysis::TrialPoint point;
  int attempt = 0;
  std::string worker;
  double duration_s = 0;
  // First line of the trial's last error ("" if it never failed) and the
  // exit code of its latest ended attempt, if any.
  std::string error;
  std::optional<int> exit_code;
  std::string search;  // lower-case trial id, worker, params, state, error
};

// Builds a row from the store's summary and its parsed point.
std::shared_ptr<const TrialRow> MakeTrialRow(const store::TrialSummary& r,
                                             analysis::TrialPoint point);

struct TrialQuery {
  std::vector<std::string> states;  // lower-case state names; empty: all
  std::vector<std::pair<std::string, std::string>> param_terms;  // name=value
  std::vector<std::string> text_terms;  // lower-case substrings
  std::string sort;                     // key without the '-'; "" = ordinal
  bool descending = false;
  size_t offset = 0;
  size_t limit = 100;
};

// Parses the request fields (see the file comment). Never fails: unknown
// sort keys are reported by SelectTrials.
TrialQuery ParseTrialQuery(absl::string_view state, absl::string_view q,
                           absl::string_view sort, size_t offset, size_t limit);

struct TrialPage {
  size_t matched = 0;        // rows passing the filter
  std::vector<size_t> rows;  // positions (into the input) of the page's rows
};

// Filters, sorts and pages `rows`. InvalidArgument "unknown sort key '...'"
// for a sort key outside the list above.
absl::StatusOr<TrialPage> SelectTrials(
    const std::vector<std::shared_ptr<const TrialRow>>& rows,
    const TrialQuery& query);

// A parameter value as the table shows and matches it: strings as they are,
// integral floats without a decimal point, anything else as JSON.
std::string ParamLabel(const nlohmann::json& v);

// Which of `n` points of one learning curve to send when at most
// `max_points` (>= 2) are wanted: all when n <= max_points, else an even
// stride over the indices with the first and the last always kept; strictly
// increasing.
std::vector<size_t> DownsampleIndices(size_t n, size_t max_points);

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_TRIAL_TABLE_H_
