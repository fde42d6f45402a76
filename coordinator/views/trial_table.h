// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/views/trial_table.h
//
// The dashboard's trials table as a pure query: filter, sort and page a
// sweep's parsed summary rows. No HTTP, no store, no locks: the HTTP adapter
// parses the request into a TrialQuery, the read model supplies the rows, and
// this module returns which rows make up the page.
//
// Query language (the `q` field): space-separated terms, all of which must
// match. A term "FIELD OP VALUE" (OP one of = != < <= > >=, no spaces)
// compares a column: FIELD is a parameter (`M`, or `p.M`), a result (`ood_acc`,
// or `r.ood_acc`) or one of trial | state | attempt | worker | duration | seed
// | exit | error. `=` and `!=` take alternatives separated by '|'
// (`top_k=2|4`); a parameter matches by its label (ParamLabel), a number by
// value; `<`, `<=`, `>`, `>=` compare numbers. A row without the column never
// matches (not even `!=`). A field that is none of these is an error naming it
// and the known fields. Any other term is a case-insensitive substring of the
// row's text (trial id, worker, params JSON, state, error); "=x" is text.
// `state` is a comma-separated list of state names. Sort keys:
// ordinal (default) | trial | state | attempt | worker | duration | seed |
// exit | error | p.<param> | r.<result>, with a '-' prefix for descending; rows
// missing the key sort last either way; ties keep sweep order.
//
// Thread safety: every function is pure.
#ifndef SMOE_COORDINATOR_VIEWS_TRIAL_TABLE_H_
#define SMOE_COORDINATOR_VIEWS_TRIAL_TABLE_H_

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "analysis/stats.h"
#include "nlohmann/json.hpp"
#include "store/types.h"

namespace smoe::coordinator {

// A trial's parameters as one row of the table holds them: rows with the
// same stored params JSON share one (a grid sweep has one per configuration,
// not one per trial: issue 35, a snapshot's memory per row).
struct RowParams {
  nlohmann::json value = nlohmann::json::object();  // parsed ({} if bad)
  std::string text;  // the params JSON as stored (the text filter's)
};

// A trial's results as a row holds them: the names, sorted (shared by the
// rows that reported the same metrics), and a value per name.
struct RowResults {
  std::shared_ptr<const std::vector<std::string>> names;  // null: none
  // Per name; inline up to 4 (no allocation of its own for most rows).
  absl::InlinedVector<double, 4> values;

  size_t size() const { return values.size(); }
  const std::string& name(size_t i) const { return (*names)[i]; }
  // The value of `name`; null when the row has none.
  const double* Find(absl::string_view name) const;
  // As the store's map (sorted by name).
  std::map<std::string, double> ToMap() const;
};

// Interns the parts rows share while a table is built: params by their
// stored JSON, result names by their list. Not thread-safe.
class RowInterner {
 public:
  // `reuse` when its text is `params_json` (a refreshed row's old params).
  std::shared_ptr<const RowParams> Params(
      const std::string& params_json,
      const std::shared_ptr<const RowParams>& reuse = nullptr);
  RowResults Results(const std::map<std::string, double>& results);

 private:
  static constexpr size_t kMaxNameLists = 8;
  std::unordered_map<std::string, std::shared_ptr<const RowParams>> params_;
  std::vector<std::shared_ptr<const std::vector<std::string>>> names_;
};

// One parsed summary row. Immutable once built: snapshots share unchanged
// rows, so pointer inequality between two snapshots' rows at a position means
// "changed".
struct TrialRow {
  std::string trial_id;
  int64_t seed = 0;
  store::TrialState state = store::TrialState::kPending;
  int attempt = 0;
  std::shared_ptr<const RowParams> params;  // never null
  RowResults results;
  std::string worker;
  double duration_s = 0;
  // First line of the trial's last error ("" if it never failed) and the
  // exit code of its latest ended attempt, if any.
  std::string error;
  std::optional<int> exit_code;

  const nlohmann::json& param_values() const { return params->value; }
  // The row as analysis takes it (a copy of its params and results).
  analysis::TrialPoint Point() const;
  // Whether the lower-case `term` (no spaces) is in the row's text: trial
  // id, worker, params JSON, state or error, ASCII case ignored.
  bool TextContains(absl::string_view term) const;
};

// A sweep's rows by ordinal, stored in chunks that copies share: copying a
// table copies one pointer per kChunk rows, and Set() copies only the chunk it
// writes when another table shares it (copy on write). A read-model snapshot
// refreshed after one completion thus costs O(rows / kChunk + kChunk), not
// O(rows) (issue 35). Not thread-safe to mutate; const use is.
class RowTable {
 public:
  using Row = std::shared_ptr<const TrialRow>;
  static constexpr size_t kChunk = 1024;

  RowTable() = default;
  // Implicit on purpose: a vector of rows is a table (tests, small callers).
  RowTable(const std::vector<Row>& rows);  // NOLINT(runtime/explicit)

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Row& operator[](size_t i) const {
    return (*chunks_[i / kChunk])[i % kChunk];
  }
  void push_back(Row row);
  // Replaces row `i` (< size()).
  void Set(size_t i, Row row);

  class const_iterator {
   public:
    const_iterator(const RowTable* t, size_t i) : t_(t), i_(i) {}
    const Row& operator*() const { return (*t_)[i_]; }
    const_iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const const_iterator& o) const { return i_ != o.i_; }
    bool operator==(const const_iterator& o) const { return i_ == o.i_; }

   private:
    const RowTable* t_;
    size_t i_;
  };
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size_); }

 private:
  // The chunk holding row `i`, owned by this table alone from now on.
  std::vector<Row>& Own(size_t chunk);

  std::vector<std::shared_ptr<std::vector<Row>>> chunks_;
  size_t size_ = 0;
};

// Builds a row from the store's summary and its parsed point.
std::shared_ptr<const TrialRow> MakeTrialRow(const store::TrialSummary& r,
                                             analysis::TrialPoint point);
// Builds a row from the store's summary alone, sharing what `interner` has
// seen (a params JSON is parsed once per distinct string) and `old`'s params
// when they are the same (a refreshed row; may be null).
std::shared_ptr<const TrialRow> MakeTrialRow(const store::TrialSummary& r,
                                             RowInterner* interner,
                                             const TrialRow* old = nullptr);

enum class FilterOp { kEq, kNe, kLt, kLe, kGt, kGe };

// One "FIELD OP VALUE" term of the query.
struct FilterTerm {
  std::string field;  // as written ("M", "r.acc", "state")
  FilterOp op = FilterOp::kEq;
  std::vector<std::string> values;  // '|' alternatives; one for < <= > >=
  std::string text;                 // the whole term, for error messages
};

struct TrialQuery {
  std::vector<std::string> states;  // lower-case state names; empty: all
  std::vector<FilterTerm> terms;
  std::vector<std::string> text_terms;  // lower-case substrings
  // Columns a filter may name besides those some row has: the sweep's axes
  // and the metrics it reported (so a filter on a metric no trial has yet
  // matches nothing instead of failing).
  std::vector<std::string> known_params;
  std::vector<std::string> known_results;
  std::string sort;  // key without the '-'; "" = ordinal
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
// for a sort key outside the list above; "unknown filter field '...'" (with
// the known fields) for a filter on no column, and one naming the term when
// `<`/`>` is given something that is not a number.
absl::StatusOr<TrialPage> SelectTrials(const RowTable& rows,
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

#endif  // SMOE_COORDINATOR_VIEWS_TRIAL_TABLE_H_
