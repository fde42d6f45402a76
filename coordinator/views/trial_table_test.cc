// Copyright 2026 SMoE Lab authors.
//
// Unit tests of the trials table query: filter (state, name=value, text),
// sort (every key kind, descending, missing last, stable), paging and the
// unknown-key error.
#include "coordinator/views/trial_table.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace smoe::coordinator {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::shared_ptr<const TrialRow> Row(const std::string& id, int m,
                                    const std::string& att,
                                    store::TrialState state, int64_t seed,
                                    std::map<std::string, double> results,
                                    const std::string& worker = "",
                                    int attempt = 1, double duration = 0) {
  store::TrialSummary s;
  s.trial_id = id;
  s.worker_id = worker;
  s.attempt = attempt;
  s.duration_s = duration;
  s.state = state;
  s.seed = seed;
  s.params_json = json{{"M", m}, {"attention", att}}.dump();
  s.results = std::move(results);
  analysis::TrialPoint p;
  p.trial_id = id;
  p.params = json::parse(s.params_json);
  p.seed = seed;
  p.state = state;
  p.results = s.results;
  return MakeTrialRow(s, std::move(p));
}

std::vector<std::shared_ptr<const TrialRow>> Table() {
  using S = store::TrialState;
  return {
      Row("s/a", 1, "hyla", S::kSucceeded, 0, {{"acc", 0.5}}, "w-1", 1, 3.0),
      Row("s/b", 2, "softmax", S::kFailed, 1, {}, "w-2", 3, 1.0),
      Row("s/c", 2, "hyla", S::kSucceeded, 2, {{"acc", 0.9}}, "w-1", 1, 2.0),
      Row("s/d", 1, "softmax", S::kPending, 3, {{"acc", std::nan("")}}),
  };
}

std::vector<size_t> Select(const std::string& state, const std::string& q,
                           const std::string& sort, size_t offset = 0,
                           size_t limit = 100) {
  auto page =
      SelectTrials(Table(), ParseTrialQuery(state, q, sort, offset, limit));
  EXPECT_TRUE(page.ok()) << page.status();
  return page.ok() ? page->rows : std::vector<size_t>{};
}

TEST(TrialTableTest, ParsesTheQuery) {
  const TrialQuery q =
      ParseTrialQuery("Succeeded,FAILED", "M=2  HyLa w-1", "-r.acc", 5, 7);
  EXPECT_THAT(q.states, ElementsAre("succeeded", "failed"));
  ASSERT_EQ(q.terms.size(), 1u);
  EXPECT_EQ(q.terms[0].field, "M");
  EXPECT_EQ(q.terms[0].op, FilterOp::kEq);
  EXPECT_THAT(q.terms[0].values, ElementsAre("2"));
  EXPECT_THAT(q.text_terms, ElementsAre("hyla", "w-1"));
  EXPECT_EQ(q.sort, "r.acc");
  EXPECT_TRUE(q.descending);
  EXPECT_EQ(q.offset, 5u);
  EXPECT_EQ(q.limit, 7u);
  EXPECT_EQ(ParseTrialQuery("", "", "ordinal", 0, 1).sort, "");
  // "=x" is text, not a parameter term.
  EXPECT_THAT(ParseTrialQuery("", "=x", "", 0, 1).text_terms,
              ElementsAre("=x"));
}

TEST(TrialTableTest, Filters) {
  EXPECT_THAT(Select("", "", ""), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(Select("succeeded", "", ""), ElementsAre(0, 2));
  EXPECT_THAT(Select("failed,pending", "", ""), ElementsAre(1, 3));
  EXPECT_THAT(Select("", "M=2", ""), ElementsAre(1, 2));
  EXPECT_THAT(Select("", "M=2 attention=hyla", ""), ElementsAre(2));
  // Text terms: case-insensitive substrings of id, worker, params, state.
  EXPECT_THAT(Select("", "HYLA", ""), ElementsAre(0, 2));
  EXPECT_THAT(Select("", "w-1 hyla", ""), ElementsAre(0, 2));
  EXPECT_THAT(Select("", "s/b", ""), ElementsAre(1));
  EXPECT_THAT(Select("", "pending", ""), ElementsAre(3));
}

TEST(TrialTableTest, ParsesComparisonOperators) {
  const TrialQuery q = ParseTrialQuery(
      "", "a!=1 b<2 c<=3 d>4 e>=5 top_k=2|4 r.acc>0.5 !x", "", 0, 1);
  ASSERT_EQ(q.terms.size(), 7u);
  const FilterOp want[] = {FilterOp::kNe, FilterOp::kLt, FilterOp::kLe,
                           FilterOp::kGt, FilterOp::kGe, FilterOp::kEq,
                           FilterOp::kGt};
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(q.terms[i].op, want[i]) << i;
  EXPECT_EQ(q.terms[1].field, "b");
  EXPECT_THAT(q.terms[1].values, ElementsAre("2"));
  EXPECT_THAT(q.terms[5].values, ElementsAre("2", "4"));
  EXPECT_EQ(q.terms[6].field, "r.acc");
  EXPECT_EQ(q.terms[6].text, "r.acc>0.5");
  EXPECT_THAT(q.text_terms, ElementsAre("!x"));
}

TEST(TrialTableTest, FiltersWithComparisonsOnAnyColumn) {
  // Parameters (bare or p.), results (bare or r.), builtin columns.
  EXPECT_THAT(Select("", "M!=2", ""), ElementsAre(0, 3));
  EXPECT_THAT(Select("", "p.M>1", ""), ElementsAre(1, 2));
  EXPECT_THAT(Select("", "M<=1", ""), ElementsAre(0, 3));
  EXPECT_THAT(Select("", "attention=hyla|softmax M=1", ""), ElementsAre(0, 3));
  EXPECT_THAT(Select("", "attention!=hyla", ""), ElementsAre(1, 3));
  // A missing (or NaN) result never matches, not even !=.
  EXPECT_THAT(Select("", "acc>0.6", ""), ElementsAre(2));
  EXPECT_THAT(Select("", "r.acc<0.6", ""), ElementsAre(0));
  EXPECT_THAT(Select("", "acc!=0.5", ""), ElementsAre(2));
  EXPECT_THAT(Select("", "acc=0.9", ""), ElementsAre(2));
  EXPECT_THAT(Select("", "acc>=0.5 acc<=0.9", ""), ElementsAre(0, 2));
  EXPECT_THAT(Select("", "seed>=2", ""), ElementsAre(2, 3));
  EXPECT_THAT(Select("", "attempt>1", ""), ElementsAre(1));
  // (A trial that never ran has duration 0, as the table shows it.)
  EXPECT_THAT(Select("", "duration<2.5", ""), ElementsAre(1, 2, 3));
  EXPECT_THAT(Select("", "duration>0 duration<2.5", ""), ElementsAre(1, 2));
  EXPECT_THAT(Select("", "state=SUCCEEDED", ""), ElementsAre(0, 2));
  EXPECT_THAT(Select("", "state!=succeeded", ""), ElementsAre(1, 3));
  EXPECT_THAT(Select("", "worker=w-1", ""), ElementsAre(0, 2));
  EXPECT_THAT(Select("", "trial=s/c|s/d", ""), ElementsAre(2, 3));
  // Combined with text terms and the state list.
  EXPECT_THAT(Select("succeeded", "M>=1 hyla", ""), ElementsAre(0, 2));
  // A string column compared with < matches nothing.
  EXPECT_THAT(Select("", "attention>1", ""), ElementsAre());
}

TEST(TrialTableTest, UnknownFilterFieldIsAnErrorNamingKnownFields) {
  auto page = SelectTrials(Table(), ParseTrialQuery("", "nope=1", "", 0, 10));
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string msg(page.status().message());
  EXPECT_THAT(msg, HasSubstr("unknown filter field 'nope' in 'nope=1'"));
  EXPECT_THAT(msg, HasSubstr("known fields: trial, state"));
  EXPECT_THAT(msg, HasSubstr("M, attention, acc"));
  // r. and p. prefixes must name a known column too.
  EXPECT_FALSE(
      SelectTrials(Table(), ParseTrialQuery("", "r.M>1", "", 0, 10)).ok());
  EXPECT_FALSE(
      SelectTrials(Table(), ParseTrialQuery("", "p.acc>1", "", 0, 10)).ok());
  // A known (declared) column no row has yet matches nothing.
  TrialQuery q = ParseTrialQuery("", "loss<1", "", 0, 10);
  q.known_results = {"loss"};
  auto none = SelectTrials(Table(), q);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->matched, 0u);
}

TEST(TrialTableTest, OrderingNeedsANumber) {
  auto page = SelectTrials(Table(), ParseTrialQuery("", "acc>high", "", 0, 10));
  ASSERT_FALSE(page.ok());
  EXPECT_THAT(std::string(page.status().message()),
              HasSubstr("filter 'acc>high' compares numbers, but 'high' is "
                        "not a number"));
}

TEST(TrialTableTest, SortsEveryKeyKindMissingLast) {
  EXPECT_THAT(Select("", "", "-"), ElementsAre(3, 2, 1, 0));
  EXPECT_THAT(Select("", "", "-ordinal"), ElementsAre(3, 2, 1, 0));
  EXPECT_THAT(Select("", "", "-trial"), ElementsAre(3, 2, 1, 0));
  EXPECT_THAT(Select("", "", "state"), ElementsAre(1, 3, 0, 2));
  EXPECT_THAT(Select("", "", "-attempt"), ElementsAre(1, 0, 2, 3));
  EXPECT_THAT(Select("", "", "worker"), ElementsAre(3, 0, 2, 1));
  EXPECT_THAT(Select("", "", "duration"), ElementsAre(3, 1, 2, 0));
  EXPECT_THAT(Select("", "", "-seed"), ElementsAre(3, 2, 1, 0));
  EXPECT_THAT(Select("", "", "p.attention"), ElementsAre(0, 2, 1, 3));
  EXPECT_THAT(Select("", "", "-p.M"), ElementsAre(1, 2, 0, 3));
  // Results: missing (b) and NaN (d) sort last in both directions.
  EXPECT_THAT(Select("", "", "r.acc"), ElementsAre(0, 2, 1, 3));
  EXPECT_THAT(Select("", "", "-r.acc"), ElementsAre(2, 0, 1, 3));
  EXPECT_THAT(Select("", "", "p.nope"), ElementsAre(0, 1, 2, 3));
}

// The error columns: the first line of the last error is searchable and
// sortable; the exit code sorts numerically; rows that never failed sort last.
TEST(TrialTableTest, ErrorAndExitCodeColumns) {
  using S = store::TrialState;
  auto failed = [](const std::string& id, const std::string& error,
                   std::optional<int> code) {
    store::TrialSummary s;
    s.trial_id = id;
    s.state = S::kFailed;
    s.params_json = "{}";
    s.last_error = error;
    s.last_exit_code = code;
    analysis::TrialPoint p;
    p.trial_id = id;
    p.params = json::object();
    p.state = S::kFailed;
    return MakeTrialRow(s, std::move(p));
  };
  std::vector<std::shared_ptr<const TrialRow>> rows = {
      failed("s/a", "", 0),
      failed("s/b", "trainer exited with status 70: no CUDA device\nstack", 70),
      failed("s/c", "worker lost", std::nullopt),
      failed("s/d", "bad width 0.1", 64),
  };
  EXPECT_EQ(rows[1]->error, "trainer exited with status 70: no CUDA device");
  EXPECT_EQ(rows[1]->exit_code, 70);
  auto select = [&](const std::string& q, const std::string& sort) {
    auto page = SelectTrials(rows, ParseTrialQuery("", q, sort, 0, 10));
    EXPECT_TRUE(page.ok()) << page.status();
    return page.ok() ? page->rows : std::vector<size_t>{};
  };
  EXPECT_THAT(select("cuda", ""), ElementsAre(1));
  EXPECT_THAT(select("stack", ""), ElementsAre());  // only the first line
  EXPECT_THAT(select("", "exit"), ElementsAre(3, 1, 0, 2));
  EXPECT_THAT(select("", "-exit"), ElementsAre(1, 3, 0, 2));
  EXPECT_THAT(select("", "error"), ElementsAre(3, 1, 2, 0));
}

TEST(TrialTableTest, PagesAfterFilterAndSort) {
  auto page = SelectTrials(Table(), ParseTrialQuery("", "", "-r.acc", 1, 2));
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->matched, 4u);
  EXPECT_THAT(page->rows, ElementsAre(0, 1));
  page = SelectTrials(Table(), ParseTrialQuery("succeeded", "", "", 5, 10));
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->matched, 2u);
  EXPECT_TRUE(page->rows.empty());
  page = SelectTrials(Table(), ParseTrialQuery("", "", "", 0, 0));
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->matched, 4u);
  EXPECT_TRUE(page->rows.empty());
}

// The unfiltered, unsorted query (the dashboard's first page) takes a
// shortcut that reads only the page's rows; it pages as the general path
// does (a filter every row passes: state=all states).
TEST(TrialTableTest, UnfilteredPagesEqualTheGeneralPath) {
  const std::string all = "pending,running,succeeded,failed,cancelled,pruned";
  for (const char* sort : {"", "-"}) {
    for (size_t offset : {0, 1, 3, 4, 7}) {
      for (size_t limit : {0, 1, 2, 100}) {
        auto fast =
            SelectTrials(Table(), ParseTrialQuery("", "", sort, offset, limit));
        auto general = SelectTrials(
            Table(), ParseTrialQuery(all, "", sort, offset, limit));
        ASSERT_TRUE(fast.ok() && general.ok());
        EXPECT_EQ(fast->matched, general->matched);
        EXPECT_EQ(fast->rows, general->rows)
            << "sort '" << sort << "' offset " << offset << " limit " << limit;
      }
    }
  }
}

// Copies share chunks; writes to one never show in another.
TEST(TrialTableTest, RowTableCopiesOnWrite) {
  using S = store::TrialState;
  const size_t n = 2 * RowTable::kChunk + 7;
  RowTable a;
  for (size_t i = 0; i < n; ++i) {
    a.push_back(Row(absl::StrCat("s/", i), 1, "hyla", S::kPending,
                    static_cast<int64_t>(i), {}));
  }
  ASSERT_EQ(a.size(), n);
  RowTable b = a;
  const auto x = Row("s/x", 2, "softmax", S::kSucceeded, 0, {{"acc", 1}});
  b.Set(RowTable::kChunk + 3, x);
  b.push_back(x);
  EXPECT_EQ(a.size(), n);
  EXPECT_EQ(b.size(), n + 1);
  EXPECT_EQ(a[RowTable::kChunk + 3]->trial_id,
            absl::StrCat("s/", RowTable::kChunk + 3));
  EXPECT_EQ(b[RowTable::kChunk + 3], x);
  EXPECT_EQ(b[n], x);
  a.Set(0, x);
  EXPECT_EQ(b[0]->trial_id, "s/0");
  size_t i = 0;
  for (const auto& r : b) {
    EXPECT_EQ(r, b[i]);
    ++i;
  }
  EXPECT_EQ(i, b.size());
}

TEST(TrialTableTest, UnknownSortKeyIsAnError) {
  auto page = SelectTrials(Table(), ParseTrialQuery("", "", "-bogus", 0, 10));
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(page.status().message()),
              HasSubstr("unknown sort key 'bogus'"));
}

// The trial page's curves: at most max_points, first and last kept, evenly
// strided, strictly increasing; short curves whole.
TEST(TrialTableTest, DownsampleIndices) {
  EXPECT_THAT(DownsampleIndices(0, 10), ElementsAre());
  EXPECT_THAT(DownsampleIndices(1, 10), ElementsAre(0));
  EXPECT_THAT(DownsampleIndices(4, 4), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(DownsampleIndices(5, 3), ElementsAre(0, 2, 4));
  EXPECT_THAT(DownsampleIndices(10, 2), ElementsAre(0, 9));
  for (size_t n : {7u, 100u, 1001u, 5000u}) {
    for (size_t max_points : {2u, 3u, 10u, 999u}) {
      const std::vector<size_t> idx = DownsampleIndices(n, max_points);
      ASSERT_FALSE(idx.empty());
      EXPECT_LE(idx.size(), std::max(max_points, size_t{2})) << n;
      EXPECT_EQ(idx.front(), 0u);
      EXPECT_EQ(idx.back(), n - 1);
      for (size_t i = 1; i < idx.size(); ++i) EXPECT_LT(idx[i - 1], idx[i]);
    }
  }
}

TEST(TrialTableTest, ParamLabels) {
  EXPECT_EQ(ParamLabel(json("hyla")), "hyla");
  EXPECT_EQ(ParamLabel(json(2)), "2");
  EXPECT_EQ(ParamLabel(json(2.0)), "2");
  EXPECT_EQ(ParamLabel(json(0.5)), "0.5");
  EXPECT_EQ(ParamLabel(json(true)), "true");
}

// Rows built through one interner share a params object per distinct
// params JSON and a result-name list per distinct set of names, and read
// back as the store's summary (Point(), RowResults::ToMap/Find).
TEST(TrialTableTest, InternedRowsShareParamsAndResultNames) {
  RowInterner interner;
  auto summary = [](const std::string& id, int m, int64_t seed,
                    std::map<std::string, double> results) {
    store::TrialSummary s;
    s.trial_id = id;
    s.seed = seed;
    s.state = store::TrialState::kSucceeded;
    s.params_json = json{{"M", m}, {"attention", "hyla"}}.dump();
    s.results = std::move(results);
    return s;
  };
  const std::vector<store::TrialSummary> rows = {
      summary("s/a", 1, 0, {{"acc", 0.5}, {"loss", 2}}),
      summary("s/b", 1, 1, {{"acc", 0.25}, {"loss", 3}}),
      summary("s/c", 2, 0, {{"acc", 0.75}}), summary("s/d", 2, 1, {})};
  std::vector<std::shared_ptr<const TrialRow>> built;
  for (const auto& r : rows) built.push_back(MakeTrialRow(r, &interner));
  EXPECT_EQ(built[0]->params, built[1]->params);
  EXPECT_NE(built[0]->params, built[2]->params);
  EXPECT_EQ(built[2]->params, built[3]->params);
  EXPECT_EQ(built[0]->results.names, built[1]->results.names);
  EXPECT_EQ(built[3]->results.names, nullptr);
  const std::vector<analysis::TrialPoint> want = analysis::FromSummaries(rows);
  for (size_t i = 0; i < rows.size(); ++i) {
    const analysis::TrialPoint got = built[i]->Point();
    EXPECT_EQ(got.trial_id, want[i].trial_id);
    EXPECT_EQ(got.params, want[i].params);
    EXPECT_EQ(got.seed, want[i].seed);
    EXPECT_EQ(got.state, want[i].state);
    EXPECT_EQ(got.results, want[i].results);
    EXPECT_EQ(built[i]->params->text, rows[i].params_json);
  }
  ASSERT_NE(built[1]->results.Find("loss"), nullptr);
  EXPECT_EQ(*built[1]->results.Find("loss"), 3);
  EXPECT_EQ(built[1]->results.Find("los"), nullptr);
  EXPECT_EQ(built[2]->results.Find("loss"), nullptr);
  EXPECT_EQ(built[3]->results.Find("acc"), nullptr);
  // A refreshed row keeps the old row's params when its JSON is the same,
  // and gets new ones when it is not.
  RowInterner other;
  EXPECT_EQ(MakeTrialRow(rows[0], &other, built[1].get())->params,
            built[1]->params);
  EXPECT_NE(MakeTrialRow(rows[2], &other, built[1].get())->params,
            built[1]->params);
}

// The text filter matches a term in any field, ASCII case ignored: the same
// answer as the lower-cased "<trial id> <worker> <params> <state> <error>"
// the rows used to keep.
TEST(TrialTableTest, TextContainsEqualsTheLowerCasedRowText) {
  RowInterner interner;
  std::vector<store::TrialSummary> rows(3);
  rows[0].trial_id = "Sweep/AbC0";
  rows[0].worker_id = "GPU-Host-7";
  rows[0].params_json = R"({"Attention":"HyLA","M":3})";
  rows[0].state = store::TrialState::kFailed;
  rows[0].last_error = "Trainer EXITED with status 70\nsecond line";
  rows[1].trial_id = "sweep/x";
  rows[1].params_json = "{}";
  rows[2].trial_id = "s/q";
  rows[2].params_json = "not json";
  rows[2].state = store::TrialState::kSucceeded;
  const std::vector<std::string> terms = {
      "sweep/abc0", "abc",     "gpu-host",  "host-7", "hyla",   "\"m\":3",
      "failed",     "trainer", "exited",    "70",     "second", "x",
      "/x",         "pending", "succeeded", "not",    "json",   "{}",
      "zzz",        "s/",      "c0 gpu"};
  for (const auto& r : rows) {
    const auto row = MakeTrialRow(r, &interner);
    const std::string old = absl::AsciiStrToLower(
        absl::StrCat(r.trial_id, " ", r.worker_id, " ", r.params_json, " ",
                     store::TrialStateName(r.state), " ", row->error));
    for (const std::string& t : terms) {
      if (t.find(' ') != std::string::npos) continue;  // terms have none
      EXPECT_EQ(row->TextContains(t), old.find(t) != std::string::npos)
          << r.trial_id << " / " << t;
    }
  }
}

}  // namespace
}  // namespace smoe::coordinator
