// Copyright 2026 SMoE Lab authors.
#include "coordinator/trial_table.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace smoe::coordinator {
namespace {

using nlohmann::json;

// The sort key of one row.
struct Key {
  bool missing = true;
  double num = 0;
  std::string str;
};

bool Matches(const TrialRow& row, const TrialQuery& q) {
  const analysis::TrialPoint& p = row.point;
  if (!q.states.empty() &&
      std::find(q.states.begin(), q.states.end(),
                store::TrialStateName(p.state)) == q.states.end()) {
    return false;
  }
  for (const auto& [name, value] : q.param_terms) {
    auto it = p.params.find(name);
    if (it == p.params.end() || ParamLabel(*it) != value) return false;
  }
  for (const std::string& t : q.text_terms) {
    if (!absl::StrContains(row.search, t)) return false;
  }
  return true;
}

// Fills `k` for `row` under `sort`; false for an unknown sort key.
bool KeyOf(const TrialRow& row, const std::string& sort, Key& k) {
  const analysis::TrialPoint& p = row.point;
  k.missing = false;
  absl::string_view s(sort);
  if (sort == "trial") {
    k.str = p.trial_id;
  } else if (sort == "state") {
    k.str = store::TrialStateName(p.state);
  } else if (sort == "attempt") {
    k.num = row.attempt;
  } else if (sort == "worker") {
    k.str = row.worker;
  } else if (sort == "duration") {
    k.num = row.duration_s;
  } else if (sort == "seed") {
    k.num = static_cast<double>(p.seed);
  } else if (sort == "exit") {
    k.missing = !row.exit_code.has_value() || row.error.empty();
    k.num = row.exit_code.value_or(0);
  } else if (sort == "error") {
    k.missing = row.error.empty();
    k.str = row.error;
  } else if (absl::ConsumePrefix(&s, "p.")) {
    auto it = p.params.find(std::string(s));
    if (it == p.params.end()) {
      k.missing = true;
    } else if (it->is_number()) {
      k.num = it->get<double>();
    } else {
      k.str = ParamLabel(*it);
    }
  } else if (absl::ConsumePrefix(&s, "r.")) {
    auto it = p.results.find(std::string(s));
    if (it == p.results.end() || std::isnan(it->second)) {
      k.missing = true;
    } else {
      k.num = it->second;
    }
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::shared_ptr<const TrialRow> MakeTrialRow(const store::TrialSummary& r,
                                             analysis::TrialPoint point) {
  auto row = std::make_shared<TrialRow>();
  row->point = std::move(point);
  row->attempt = r.attempt;
  row->worker = r.worker_id;
  row->duration_s = r.duration_s;
  row->error = r.last_error.substr(0, r.last_error.find('\n'));
  row->exit_code = r.last_exit_code;
  row->search = absl::AsciiStrToLower(
      absl::StrCat(r.trial_id, " ", r.worker_id, " ", r.params_json, " ",
                   store::TrialStateName(r.state), " ", row->error));
  return row;
}

std::string ParamLabel(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d == std::floor(d) && std::fabs(d) < 1e15) {
      return absl::StrCat(static_cast<int64_t>(d));
    }
  }
  return v.dump();
}

TrialQuery ParseTrialQuery(absl::string_view state, absl::string_view q,
                           absl::string_view sort, size_t offset,
                           size_t limit) {
  TrialQuery out;
  if (!state.empty()) {
    out.states = absl::StrSplit(absl::AsciiStrToLower(state), ',');
  }
  for (absl::string_view t : absl::StrSplit(q, ' ', absl::SkipEmpty())) {
    const size_t eq = t.find('=');
    if (eq != absl::string_view::npos && eq > 0) {
      out.param_terms.emplace_back(std::string(t.substr(0, eq)),
                                   std::string(t.substr(eq + 1)));
    } else {
      out.text_terms.push_back(absl::AsciiStrToLower(t));
    }
  }
  out.descending = absl::ConsumePrefix(&sort, "-");
  out.sort = std::string(sort);
  if (out.sort == "ordinal") out.sort.clear();
  out.offset = offset;
  out.limit = limit;
  return out;
}

absl::StatusOr<TrialPage> SelectTrials(
    const std::vector<std::shared_ptr<const TrialRow>>& rows,
    const TrialQuery& query) {
  std::vector<size_t> idx;
  idx.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    if (Matches(*rows[i], query)) idx.push_back(i);
  }
  if (!query.sort.empty()) {
    std::vector<Key> keys(rows.size());
    for (size_t i : idx) {
      if (!KeyOf(*rows[i], query.sort, keys[i])) {
        return absl::InvalidArgumentError(
            absl::StrCat("unknown sort key '", query.sort, "'"));
      }
    }
    const bool desc = query.descending;
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      const Key& x = keys[a];
      const Key& y = keys[b];
      if (x.missing != y.missing) return y.missing;
      if (x.missing) return false;
      if (x.str != y.str) return desc ? y.str < x.str : x.str < y.str;
      if (x.num != y.num) return desc ? y.num < x.num : x.num < y.num;
      return false;
    });
  } else if (query.descending) {
    std::reverse(idx.begin(), idx.end());
  }
  TrialPage page;
  page.matched = idx.size();
  for (size_t j = query.offset;
       j < idx.size() && j - query.offset < query.limit; ++j) {
    page.rows.push_back(idx[j]);
  }
  return page;
}

std::vector<size_t> DownsampleIndices(size_t n, size_t max_points) {
  std::vector<size_t> out;
  if (n == 0) return out;
  if (max_points < 2) max_points = 2;
  const double stride =
      n <= max_points ? 1.0 : static_cast<double>(n - 1) / (max_points - 1);
  for (double f = 0; f < static_cast<double>(n) - 0.5; f += stride) {
    const size_t k = static_cast<size_t>(std::llround(f));
    if (k >= n || (!out.empty() && k == out.back())) continue;
    out.push_back(k);
  }
  if (out.back() != n - 1) out.push_back(n - 1);
  return out;
}

}  // namespace smoe::coordinator
