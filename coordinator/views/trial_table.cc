// Copyright 2026 SMoE Lab authors.
#include "coordinator/views/trial_table.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

// Fills `k` for `row` under `sort`; false for an unknown sort key.
bool KeyOf(const TrialRow& row, const std::string& sort, Key& k) {
  const TrialRow& p = row;
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
    const json& params = p.param_values();
    auto it = params.find(std::string(s));
    if (it == params.end()) {
      k.missing = true;
    } else if (it->is_number()) {
      k.num = it->get<double>();
    } else {
      k.str = ParamLabel(*it);
    }
  } else if (absl::ConsumePrefix(&s, "r.")) {
    const double* v = p.results.Find(s);
    if (v == nullptr || std::isnan(*v)) {
      k.missing = true;
    } else {
      k.num = *v;
    }
  } else {
    return false;
  }
  return true;
}

// A filter term with its field resolved to a sort key ("p.M", "r.acc",
// "state", ...).
struct ResolvedTerm {
  std::string key;
  FilterOp op;
  std::vector<std::string> values;
  double number = 0;  // the value of < <= > >=
};

bool NumberOf(absl::string_view s, double* out) {
  return absl::SimpleAtod(s, out) && std::isfinite(*out);
}

bool TermMatches(const TrialRow& row, const ResolvedTerm& t) {
  Key k;
  KeyOf(row, t.key, k);
  if (k.missing) return false;
  const bool numeric = k.str.empty() && t.key != "trial" && t.key != "worker" &&
                       t.key != "state" && t.key != "error";
  switch (t.op) {
    case FilterOp::kEq:
    case FilterOp::kNe: {
      bool any = false;
      for (const std::string& v : t.values) {
        if (numeric) {
          double d = 0;
          any = NumberOf(v, &d) &&
                std::fabs(d - k.num) <= 1e-12 * std::max(1.0, std::fabs(d));
        } else if (t.key == "state") {
          any = absl::EqualsIgnoreCase(v, k.str);
        } else {
          any = v == k.str;
        }
        if (any) break;
      }
      return t.op == FilterOp::kEq ? any : !any;
    }
    case FilterOp::kLt:
      return numeric && k.num < t.number;
    case FilterOp::kLe:
      return numeric && k.num <= t.number;
    case FilterOp::kGt:
      return numeric && k.num > t.number;
    case FilterOp::kGe:
      return numeric && k.num >= t.number;
  }
  return false;
}

bool Matches(const TrialRow& row, const TrialQuery& q,
             const std::vector<ResolvedTerm>& terms) {
  const TrialRow& p = row;
  if (!q.states.empty() &&
      std::find(q.states.begin(), q.states.end(),
                store::TrialStateName(p.state)) == q.states.end()) {
    return false;
  }
  for (const ResolvedTerm& t : terms) {
    if (!TermMatches(row, t)) return false;
  }
  for (const std::string& t : q.text_terms) {
    if (!row.TextContains(t)) return false;
  }
  return true;
}

constexpr const char* kBuiltinColumns[] = {
    "trial", "state", "attempt", "worker", "duration", "seed", "exit", "error"};

// Resolves every term's field against the builtin columns, the parameters
// and the results (those of the rows and the query's known ones).
absl::StatusOr<std::vector<ResolvedTerm>> ResolveTerms(const RowTable& rows,
                                                       const TrialQuery& q) {
  std::vector<ResolvedTerm> out;
  if (q.terms.empty()) return out;
  std::set<std::string> params(q.known_params.begin(), q.known_params.end());
  std::set<std::string> results(q.known_results.begin(), q.known_results.end());
  for (const auto& r : rows) {
    const json& values = r->param_values();
    for (auto it = values.begin(); it != values.end(); ++it) {
      params.insert(it.key());
    }
    for (size_t i = 0; i < r->results.size(); ++i) {
      results.insert(r->results.name(i));
    }
  }
  for (const FilterTerm& t : q.terms) {
    ResolvedTerm r;
    r.op = t.op;
    r.values = t.values;
    const std::string& f = t.field;
    const bool builtin =
        std::find_if(std::begin(kBuiltinColumns), std::end(kBuiltinColumns),
                     [&](const char* c) { return f == c; }) !=
        std::end(kBuiltinColumns);
    if (builtin || (absl::StartsWith(f, "p.") && params.count(f.substr(2))) ||
        (absl::StartsWith(f, "r.") && results.count(f.substr(2)))) {
      r.key = f;
    } else if (params.count(f)) {
      r.key = absl::StrCat("p.", f);
    } else if (results.count(f)) {
      r.key = absl::StrCat("r.", f);
    } else {
      std::vector<std::string> known(std::begin(kBuiltinColumns),
                                     std::end(kBuiltinColumns));
      known.insert(known.end(), params.begin(), params.end());
      known.insert(known.end(), results.begin(), results.end());
      return absl::InvalidArgumentError(
          absl::StrCat("unknown filter field '", t.field, "' in '", t.text,
                       "'; known fields: ", absl::StrJoin(known, ", ")));
    }
    if (t.op != FilterOp::kEq && t.op != FilterOp::kNe) {
      if (t.values.size() != 1 || !NumberOf(t.values[0], &r.number)) {
        return absl::InvalidArgumentError(
            absl::StrCat("filter '", t.text, "' compares numbers, but '",
                         absl::StrJoin(t.values, "|"), "' is not a number"));
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

const double* RowResults::Find(absl::string_view name) const {
  if (names == nullptr) return nullptr;
  auto it = std::lower_bound(names->begin(), names->end(), name,
                             [](const std::string& a, absl::string_view b) {
                               return absl::string_view(a) < b;
                             });
  if (it == names->end() || *it != name) return nullptr;
  return &values[static_cast<size_t>(it - names->begin())];
}

std::map<std::string, double> RowResults::ToMap() const {
  std::map<std::string, double> out;
  for (size_t i = 0; i < values.size(); ++i) {
    out.emplace_hint(out.end(), (*names)[i], values[i]);
  }
  return out;
}

std::shared_ptr<const RowParams> RowInterner::Params(
    const std::string& params_json,
    const std::shared_ptr<const RowParams>& reuse) {
  if (reuse != nullptr && reuse->text == params_json) return reuse;
  std::shared_ptr<const RowParams>& slot = params_[params_json];
  if (slot == nullptr) {
    auto p = std::make_shared<RowParams>();
    p->value = json::parse(params_json, nullptr, /*allow_exceptions=*/false);
    if (!p->value.is_object()) p->value = json::object();
    p->text = params_json;
    slot = std::move(p);
  }
  return slot;
}

RowResults RowInterner::Results(const std::map<std::string, double>& results) {
  RowResults out;
  if (results.empty()) return out;
  out.values.reserve(results.size());
  for (const auto& [name, v] : results) out.values.push_back(v);
  auto same = [&](const std::vector<std::string>& names) {
    if (names.size() != results.size()) return false;
    size_t i = 0;
    for (const auto& [name, v] : results) {
      if (names[i++] != name) return false;
    }
    return true;
  };
  // A sweep's rows report a handful of distinct name lists; the most recent
  // first.
  for (auto it = names_.rbegin(); it != names_.rend(); ++it) {
    if (same(**it)) {
      out.names = *it;
      return out;
    }
  }
  auto names = std::make_shared<std::vector<std::string>>();
  for (const auto& [name, v] : results) names->push_back(name);
  out.names = names;
  if (names_.size() >= kMaxNameLists) names_.erase(names_.begin());
  names_.push_back(std::move(names));
  return out;
}

analysis::TrialPoint TrialRow::Point() const {
  analysis::TrialPoint p;
  p.trial_id = trial_id;
  p.params = params->value;
  p.seed = seed;
  p.state = state;
  p.results = results.ToMap();
  return p;
}

namespace {

// Whether `text` contains the lower-case `term`, ASCII case ignored.
bool ContainsLower(absl::string_view text, absl::string_view term) {
  if (term.empty()) return true;
  if (text.size() < term.size()) return false;
  return std::search(
             text.begin(), text.end(), term.begin(), term.end(),
             [](char a, char b) {
               return absl::ascii_tolower(static_cast<unsigned char>(a)) == b;
             }) != text.end();
}

}  // namespace

bool TrialRow::TextContains(absl::string_view term) const {
  // The row's text was "<trial id> <worker> <params> <state> <error>",
  // lower-cased: a term without spaces can only match inside one of them.
  return ContainsLower(trial_id, term) || ContainsLower(worker, term) ||
         ContainsLower(params->text, term) ||
         ContainsLower(store::TrialStateName(state), term) ||
         ContainsLower(error, term);
}

namespace {

void FillRow(const store::TrialSummary& r, TrialRow* row) {
  row->trial_id = r.trial_id;
  row->seed = r.seed;
  row->state = r.state;
  row->attempt = r.attempt;
  row->worker = r.worker_id;
  row->duration_s = r.duration_s;
  row->error = r.last_error.substr(0, r.last_error.find('\n'));
  row->exit_code = r.last_exit_code;
}

}  // namespace

std::shared_ptr<const TrialRow> MakeTrialRow(const store::TrialSummary& r,
                                             analysis::TrialPoint point) {
  auto row = std::make_shared<TrialRow>();
  FillRow(r, row.get());
  row->trial_id = std::move(point.trial_id);
  row->seed = point.seed;
  row->state = point.state;
  auto params = std::make_shared<RowParams>();
  params->value = std::move(point.params);
  params->text = r.params_json;
  row->params = std::move(params);
  RowInterner names;
  row->results = names.Results(point.results);
  return row;
}

std::shared_ptr<const TrialRow> MakeTrialRow(const store::TrialSummary& r,
                                             RowInterner* interner,
                                             const TrialRow* old) {
  auto row = std::make_shared<TrialRow>();
  FillRow(r, row.get());
  row->params =
      interner->Params(r.params_json, old != nullptr ? old->params : nullptr);
  row->results = interner->Results(r.results);
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
    const size_t at = t.find_first_of("!<>=");
    FilterOp op = FilterOp::kEq;
    size_t len = 0;
    if (at != absl::string_view::npos && at > 0) {
      const absl::string_view rest = t.substr(at);
      if (absl::StartsWith(rest, "!=")) {
        op = FilterOp::kNe;
        len = 2;
      } else if (absl::StartsWith(rest, "<=")) {
        op = FilterOp::kLe;
        len = 2;
      } else if (absl::StartsWith(rest, ">=")) {
        op = FilterOp::kGe;
        len = 2;
      } else if (rest[0] == '=') {
        len = 1;
      } else if (rest[0] == '<') {
        op = FilterOp::kLt;
        len = 1;
      } else if (rest[0] == '>') {
        op = FilterOp::kGt;
        len = 1;
      }
    }
    if (len > 0) {
      FilterTerm term;
      term.field = std::string(t.substr(0, at));
      term.op = op;
      term.values = absl::StrSplit(t.substr(at + len), '|');
      term.text = std::string(t);
      out.terms.push_back(std::move(term));
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

RowTable::RowTable(const std::vector<Row>& rows) {
  for (const Row& r : rows) push_back(r);
}

std::vector<RowTable::Row>& RowTable::Own(size_t chunk) {
  std::shared_ptr<std::vector<Row>>& c = chunks_[chunk];
  // use_count() == 1: no other table holds the chunk, and none can start to
  // (only copies of this table could), so writing it in place is safe.
  if (c.use_count() > 1) c = std::make_shared<std::vector<Row>>(*c);
  return *c;
}

void RowTable::push_back(Row row) {
  if (size_ % kChunk == 0) {
    chunks_.push_back(std::make_shared<std::vector<Row>>());
    chunks_.back()->reserve(kChunk);
  }
  Own(chunks_.size() - 1).push_back(std::move(row));
  ++size_;
}

void RowTable::Set(size_t i, Row row) {
  Own(i / kChunk)[i % kChunk] = std::move(row);
}

absl::StatusOr<TrialPage> SelectTrials(const RowTable& rows,
                                       const TrialQuery& query) {
  if (query.states.empty() && query.terms.empty() && query.text_terms.empty() &&
      query.sort.empty()) {
    // Every row in sweep order (the dashboard's first page): O(page), not
    // O(rows) (issue 35).
    TrialPage page;
    page.matched = rows.size();
    for (size_t j = query.offset;
         j < rows.size() && j - query.offset < query.limit; ++j) {
      page.rows.push_back(query.descending ? rows.size() - 1 - j : j);
    }
    return page;
  }
  absl::StatusOr<std::vector<ResolvedTerm>> terms = ResolveTerms(rows, query);
  if (!terms.ok()) return terms.status();
  std::vector<size_t> idx;
  idx.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    if (Matches(*rows[i], query, *terms)) idx.push_back(i);
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
