// Copyright 2026 SMoE Lab authors.
#include "analysis/curve_aggregator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "analysis/analyze.h"
#include "analysis/cells.h"
#include "analysis/theory_fit.h"

namespace smoe::analysis {

using internal::CellKey;
using internal::CellOf;
using internal::CellParams;
using internal::MakeCurvePoint;
using internal::TrialTm;
using nlohmann::json;

struct CurveAggregator::Impl {
  explicit Impl(AggregateOptions o)
      : options(std::move(o)), defaults(ParamDefaults(options)) {}

  // One trial in its cell: 24 bytes (issue 35: an aggregator's memory per
  // trial; was a std::map node of about 80).
  struct Entry {
    int64_t seed = 0;
    double value = 0;  // NaN: the trial has no finite value of the metric
    uint32_t position = 0;
    uint32_t tm = 0;  // index into `tms`: (T, m)
    bool has_value() const { return !std::isnan(value); }
  };
  struct Cell {
    std::vector<Entry> entries;  // by position, ascending
    int values = 0;              // entries with has_value()
    bool dirty = true;
    // point.seeds / point.values hold the entries with values in (seed,
    // value) order (MakeCurvePoint's), kept so while few entries change
    // between recomputes: a change costs O(cell), no sort. Else they are
    // rebuilt (one sort) by the next Recompute.
    bool sorted = false;
    size_t changes = 0;  // Set()s since the last Recompute
    // The cell's point lives in curves() at slots[slot] while laid out
    // there (one copy of its seeds and values, not two), else here (-1).
    int64_t slot = -1;
    CurvePoint point;
    std::string point_json;  // Dump(ToJson(point))
  };
  using SeriesKey = std::pair<GroupKey, GroupKey>;  // (facet, series)

  AggregateOptions options;
  const json& defaults;
  std::map<CellKey, Cell> cells;
  // Per position: the cell it contributes to (cells.end(): none, filtered
  // out or never Set; std::map's end() and its other iterators stay valid
  // while other cells come and go), and whether it was ever Set. Positions
  // are dense (row indices), so 9 bytes a trial instead of hash and tree
  // nodes (issue 35: an aggregator's memory per trial).
  std::vector<std::map<CellKey, Cell>::iterator> where;
  std::vector<bool> seen;
  int64_t positions = 0;  // positions ever Set
  // The distinct (T, m) of the trials (a handful), which entries index.
  std::vector<std::pair<double, double>> tms;
  std::map<std::pair<double, double>, uint32_t> tm_index;
  std::set<SeriesKey> dirty_series;
  std::map<SeriesKey, OptimalK> optimal_by_series;
  bool curves_dirty = true;
  bool optimal_dirty = true;
  Curves curves;
  std::vector<OptimalK> optimal;
  int64_t cells_computed = 0;

  void Touch(const CellKey& key) {
    dirty_series.insert({key.facet, key.series});
    curves_dirty = true;
    optimal_dirty = true;
  }

  uint32_t TmIndex(const std::pair<double, double>& tm) {
    auto [it, added] =
        tm_index.try_emplace(tm, static_cast<uint32_t>(tms.size()));
    if (added) tms.push_back(tm);
    return it->second;
  }

  static bool ByPosition(const Entry& e, uint32_t position) {
    return e.position < position;
  }

  // Counts a change of `cell`; past a bound its sorted values are dropped
  // (rebuilt by one sort at the next Recompute instead of O(cell) each).
  void Changed(Cell& cell) {
    cell.dirty = true;
    if (cell.sorted && ++cell.changes > 64 + cell.entries.size() / 16) {
      cell.sorted = false;
      CurvePoint& point = PointOf(cell);
      point.seeds.clear();
      point.values.clear();
    }
  }

  // Where the cell's point is now (see Cell::slot).
  CurvePoint& PointOf(Cell& cell) {
    if (cell.slot < 0) return cell.point;
    const std::array<size_t, 3>& at = slots[static_cast<size_t>(cell.slot)];
    return curves.facets[at[0]].series[at[1]].points[at[2]];
  }
  const CurvePoint& PointOf(const Cell& cell) const {
    return const_cast<Impl*>(this)->PointOf(const_cast<Cell&>(cell));
  }

  // Where (seed, value) is or goes in the sorted values of `point`.
  static size_t SortedAt(const CurvePoint& point, int64_t seed, double value) {
    const std::vector<int64_t>& seeds = point.seeds;
    const std::vector<double>& values = point.values;
    size_t lo = 0, hi = seeds.size();
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (seeds[mid] < seed || (seeds[mid] == seed && values[mid] < value)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }
  void AddSorted(Cell& cell, const Entry& e) {
    if (!cell.sorted || !e.has_value()) return;
    CurvePoint& point = PointOf(cell);
    const size_t at = SortedAt(point, e.seed, e.value);
    point.seeds.insert(point.seeds.begin() + at, e.seed);
    point.values.insert(point.values.begin() + at, e.value);
  }
  void RemoveSorted(Cell& cell, const Entry& e) {
    if (!cell.sorted || !e.has_value()) return;
    CurvePoint& point = PointOf(cell);
    const size_t at = SortedAt(point, e.seed, e.value);
    point.seeds.erase(point.seeds.begin() + at);
    point.values.erase(point.values.begin() + at);
  }

  void Set(int64_t position, const json& params, int64_t seed,
           store::TrialState state, const double* value) {
    const size_t p = static_cast<size_t>(position);
    const uint32_t pos = static_cast<uint32_t>(position);
    if (p >= seen.size()) {
      seen.resize(p + 1, false);
      where.resize(p + 1, cells.end());
    }
    if (!seen[p]) {
      seen[p] = true;
      ++positions;
    }
    const bool kept =
        !options.succeeded_only || state == store::TrialState::kSucceeded;
    Entry e;
    CellKey key;
    if (kept) {
      key = CellOf(params, options, defaults);
      e.seed = seed;
      e.position = pos;
      e.tm = TmIndex(TrialTm(params, defaults));
      e.value = value != nullptr && std::isfinite(*value)
                    ? *value
                    : std::numeric_limits<double>::quiet_NaN();
    }
    if (where[p] != cells.end()) {
      auto c = where[p];
      Cell& cell = c->second;
      auto old = std::lower_bound(cell.entries.begin(), cell.entries.end(), pos,
                                  ByPosition);
      if (kept && !(key < c->first) && !(c->first < key)) {
        // The same cell (a trial's params do not change): in place.
        Changed(cell);
        RemoveSorted(cell, *old);
        cell.values += (e.has_value() ? 1 : 0) - (old->has_value() ? 1 : 0);
        *old = e;
        AddSorted(cell, e);
        Touch(c->first);
        return;
      }
      Changed(cell);
      RemoveSorted(cell, *old);
      if (old->has_value()) --cell.values;
      cell.entries.erase(old);
      Touch(c->first);
      if (cell.entries.empty()) cells.erase(c);
      where[p] = cells.end();
    }
    if (!kept) {
      curves_dirty = true;  // trials_total may have changed
      return;
    }
    auto it = cells.try_emplace(key).first;
    Cell& c = it->second;
    Changed(c);
    if (c.entries.empty() || c.entries.back().position < pos) {
      c.entries.push_back(e);
    } else {
      c.entries.insert(
          std::lower_bound(c.entries.begin(), c.entries.end(), pos, ByPosition),
          e);
    }
    if (e.has_value()) ++c.values;
    AddSorted(c, e);
    where[p] = it;
    Touch(key);
  }

  // The cells with values when `curves` was last laid out, and where each
  // one's point sits in it (facet, series, point).
  std::vector<CellKey> layout;
  std::vector<std::array<size_t, 3>> slots;

  // Brings `curves` up to date in place when the cells with values are the
  // ones laid out last time (a completion's usual case): only the dirty
  // cells are recomputed and copied, not every cell's seeds. False when the
  // layout changed.
  bool UpdateInPlace() {
    size_t i = 0;
    for (const auto& [key, cell] : cells) {
      if (cell.values == 0) continue;
      // (A cell emptied and made again has the key but not the slot.)
      if (i >= layout.size() || key < layout[i] || layout[i] < key ||
          cell.slot != static_cast<int64_t>(i)) {
        return false;
      }
      ++i;
    }
    if (i != layout.size()) return false;
    i = 0;
    curves.trials_used = 0;
    for (auto& [key, cell] : cells) {
      if (cell.values == 0) continue;
      if (cell.dirty) Recompute(key, cell);  // in place, in curves
      curves.trials_used += cell.values;
      ++i;
    }
    curves.trials_total = static_cast<int>(positions);
    return true;
  }

  void Recompute(const CellKey& key, Cell& cell) {
    CurvePoint& point = PointOf(cell);
    if (!cell.sorted) {
      std::vector<std::pair<int64_t, double>> vals;
      vals.reserve(cell.values);
      for (const Entry& e : cell.entries) {
        if (e.has_value()) vals.emplace_back(e.seed, e.value);
      }
      std::sort(vals.begin(), vals.end());
      point.seeds.clear();
      point.values.clear();
      point.seeds.shrink_to_fit();
      point.values.shrink_to_fit();
      point.seeds.reserve(vals.size());
      point.values.reserve(vals.size());
      for (const auto& [seed, v] : vals) {
        point.seeds.push_back(seed);
        point.values.push_back(v);
      }
      cell.sorted = true;
      // Built entry by entry (a vector doubles): its slack goes now.
      if (cell.entries.capacity() > cell.entries.size() + 16) {
        cell.entries.shrink_to_fit();
      }
    }
    internal::FinishCurvePoint(options, key, &point);
    cell.point_json = Dump(ToJson(point));
    cell.dirty = false;
    cell.changes = 0;
    ++cells_computed;
  }

  const Curves& GetCurves() {
    if (!curves_dirty) return curves;
    if (!layout.empty() && UpdateInPlace()) {
      curves_dirty = false;
      return curves;
    }
    // The points laid out go back to their cells before the new layout.
    for (auto& [key, cell] : cells) {
      if (cell.slot >= 0) {
        cell.point = std::move(PointOf(cell));
        cell.slot = -1;
      }
    }
    layout.clear();
    slots.clear();
    curves = Curves();
    curves.options = options;
    curves.trials_total = static_cast<int>(positions);
    for (auto& [key, cell] : cells) {
      if (cell.values == 0) continue;
      if (cell.dirty) Recompute(key, cell);
      curves.trials_used += cell.values;
      if (curves.facets.empty() || !(curves.facets.back().key == key.facet)) {
        curves.facets.push_back(Facet{key.facet, {}});
      }
      Facet& f = curves.facets.back();
      if (f.series.empty() || !(f.series.back().key == key.series)) {
        f.series.push_back(Series{key.series, {}});
      }
      f.series.back().points.push_back(std::move(cell.point));
      cell.point = CurvePoint();
      cell.slot = static_cast<int64_t>(slots.size());
      layout.push_back(key);
      slots.push_back({curves.facets.size() - 1, f.series.size() - 1,
                       f.series.back().points.size() - 1});
    }
    curves_dirty = false;
    return curves;
  }

  const std::vector<OptimalK>& GetOptimal() {
    const Curves& c = GetCurves();
    if (!optimal_dirty) return optimal;
    optimal.clear();
    std::map<SeriesKey, OptimalK> next;
    for (const Facet& f : c.facets) {
      for (const Series& s : f.series) {
        if (s.points.empty()) continue;
        const SeriesKey key{f.key, s.key};
        auto old = optimal_by_series.find(key);
        if (old != optimal_by_series.end() && !dirty_series.count(key)) {
          next.emplace(key, std::move(old->second));
        } else {
          next.emplace(key, OptimalForSeries(options, f.key, s));
        }
        optimal.push_back(next.at(key));
      }
    }
    optimal_by_series = std::move(next);
    dirty_series.clear();
    optimal_dirty = false;
    return optimal;
  }

  std::vector<TheoryFit> Fits() {
    std::vector<TheoryFit> fits;
    if (FitsTheory(options)) {
      CellParams tm;
      for (const auto& [key, cell] : cells) {
        tm.emplace(key, tms[cell.entries.front().tm]);
      }
      fits = internal::FitWithCellParams(GetCurves(), tm);
    }
    return fits;
  }

  json GetAnalysis() {
    const Curves& c = GetCurves();
    const std::vector<OptimalK>& o = GetOptimal();
    return AnalysisJson(options, c, o, Fits());
  }

  static std::string Dump(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
  }

  // ToJson(curves).at("facets") serialised, from the cells' fragments.
  std::string FacetsBody() {
    const Curves& c = GetCurves();
    // An object whose last key (in nlohmann's sorted order) is an empty
    // array, without its closing "]}": the opening of that array.
    auto open = [](json j) {
      std::string s = Dump(j);
      s.resize(s.size() - 2);
      return s;
    };
    std::string out = "[";
    auto cell = cells.begin();
    for (size_t fi = 0; fi < c.facets.size(); ++fi) {
      const Facet& f = c.facets[fi];
      if (fi > 0) out += ',';
      out += open({{"key", ToJson(f.key)},
                   {"label", f.key.label},
                   {"series", json::array()}});
      for (size_t si = 0; si < f.series.size(); ++si) {
        const Series& s = f.series[si];
        if (si > 0) out += ',';
        out += open({{"key", ToJson(s.key)},
                     {"label", s.key.label},
                     {"points", json::array()}});
        for (size_t pi = 0; pi < s.points.size(); ++pi) {
          // The cells with values, in map order, are the points in order.
          while (cell->second.values == 0) ++cell;
          if (pi > 0) out += ',';
          out += cell->second.point_json;
          ++cell;
        }
        out += "]}";
      }
      out += "]}";
    }
    out += ']';
    return out;
  }

  // Dump(j) with the string `kHole` (once in it) replaced by `fragment`;
  // Dump(fallback()) when it is not there exactly once (a label or a query
  // that contains it).
  template <typename Fallback>
  static std::string Splice(const json& j, const std::string& fragment,
                            Fallback&& fallback) {
    std::string s = Dump(j);
    const std::string hole = Dump(json(kHole));
    const size_t at = s.find(hole);
    if (at == std::string::npos || s.find(hole, at + 1) != std::string::npos) {
      return Dump(fallback());
    }
    s.replace(at, hole.size(), fragment);
    return s;
  }
  static constexpr const char* kHole = "\x01smoe-curve-facets\x01";

  // Curves without their facets (the head ToJson writes around them).
  Curves Head() {
    const Curves& c = GetCurves();
    Curves head;
    head.options = c.options;
    head.trials_used = c.trials_used;
    head.trials_total = c.trials_total;
    return head;
  }

  std::string CurvesBody(const json& extra) {
    json j = ToJson(Head());
    j["facets"] = kHole;
    for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = *it;
    return Splice(j, FacetsBody(), [&] {
      json full = ToJson(GetCurves());
      for (auto it = extra.begin(); it != extra.end(); ++it) {
        full[it.key()] = *it;
      }
      return full;
    });
  }

  std::string AnalysisBody(const json& extra) {
    const std::vector<OptimalK>& o = GetOptimal();
    json j = AnalysisJson(options, Head(), o, Fits());
    j["curves"]["facets"] = kHole;
    for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = *it;
    return Splice(j, FacetsBody(), [&] {
      json full = GetAnalysis();
      for (auto it = extra.begin(); it != extra.end(); ++it) {
        full[it.key()] = *it;
      }
      return full;
    });
  }
};

CurveAggregator::CurveAggregator(AggregateOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
CurveAggregator::~CurveAggregator() = default;
const AggregateOptions& CurveAggregator::options() const {
  return impl_->options;
}
void CurveAggregator::Set(int64_t position, const TrialPoint& trial) {
  auto r = trial.results.find(impl_->options.metric);
  impl_->Set(position, trial.params, trial.seed, trial.state,
             r != trial.results.end() ? &r->second : nullptr);
}
void CurveAggregator::Set(int64_t position, const nlohmann::json& params,
                          int64_t seed, store::TrialState state,
                          const double* value) {
  impl_->Set(position, params, seed, state, value);
}
const Curves& CurveAggregator::curves() { return impl_->GetCurves(); }
const std::vector<OptimalK>& CurveAggregator::optimal() {
  return impl_->GetOptimal();
}
json CurveAggregator::Analysis() { return impl_->GetAnalysis(); }
std::string CurveAggregator::CurvesBody(const json& extra) {
  return impl_->CurvesBody(extra);
}
std::string CurveAggregator::AnalysisBody(const json& extra) {
  return impl_->AnalysisBody(extra);
}
size_t CurveAggregator::ApproxBytes() const {
  // Node sizes of libstdc++'s trees and hash tables (header + payload),
  // rounded up to the allocator's 16 bytes.
  auto node = [](size_t payload) { return (payload + 32 + 15) / 16 * 16; };
  const Impl& m = *impl_;
  size_t bytes = sizeof(Impl);
  bytes += m.where.capacity() * sizeof(m.where[0]) + m.seen.capacity() / 8;
  for (const auto& [key, cell] : m.cells) {
    bytes += node(sizeof(CellKey) + sizeof(Impl::Cell));
    bytes += cell.entries.capacity() * sizeof(Impl::Entry);
    // The point's seeds and values (in curves() or in the cell).
    const CurvePoint& point = m.PointOf(cell);
    bytes += point.seeds.capacity() * sizeof(int64_t) +
             point.values.capacity() * sizeof(double);
    bytes += cell.point_json.capacity();
  }
  bytes += m.optimal_by_series.size() * node(sizeof(OptimalK)) +
           m.optimal.size() * sizeof(OptimalK);
  return bytes;
}

int64_t CurveAggregator::cells_computed() const {
  return impl_->cells_computed;
}

}  // namespace smoe::analysis
