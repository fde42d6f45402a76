// Copyright 2026 SMoE Lab authors.
#include "analysis/curve_aggregator.h"

#include <array>
#include <cmath>
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

  struct Entry {
    bool has_value = false;
    int64_t seed = 0;
    double value = 0;
    std::pair<double, double> tm;  // (T, m)
  };
  struct Cell {
    std::map<int64_t, Entry> entries;  // by position
    int values = 0;                    // entries with has_value
    bool dirty = true;
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

  void Set(int64_t position, const TrialPoint& t) {
    const size_t p = static_cast<size_t>(position);
    if (p >= seen.size()) {
      seen.resize(p + 1, false);
      where.resize(p + 1, cells.end());
    }
    if (!seen[p]) {
      seen[p] = true;
      ++positions;
    }
    if (where[p] != cells.end()) {
      auto c = where[p];
      auto e = c->second.entries.find(position);
      if (e->second.has_value) --c->second.values;
      c->second.entries.erase(e);
      c->second.dirty = true;
      Touch(c->first);
      if (c->second.entries.empty()) cells.erase(c);
      where[p] = cells.end();
    }
    if (options.succeeded_only && t.state != store::TrialState::kSucceeded) {
      curves_dirty = true;  // trials_total may have changed
      return;
    }
    const CellKey key = CellOf(t, options, defaults);
    Entry e;
    e.seed = t.seed;
    e.tm = TrialTm(t, defaults);
    auto r = t.results.find(options.metric);
    e.has_value = r != t.results.end() && std::isfinite(r->second);
    if (e.has_value) e.value = r->second;
    auto it = cells.try_emplace(key).first;
    Cell& c = it->second;
    c.entries[position] = e;
    if (e.has_value) ++c.values;
    c.dirty = true;
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
      if (i >= layout.size() || key < layout[i] || layout[i] < key) {
        return false;
      }
      ++i;
    }
    if (i != layout.size()) return false;
    i = 0;
    curves.trials_used = 0;
    for (auto& [key, cell] : cells) {
      if (cell.values == 0) continue;
      if (cell.dirty) {
        Recompute(key, cell);
        const std::array<size_t, 3>& at = slots[i];
        curves.facets[at[0]].series[at[1]].points[at[2]] = cell.point;
      }
      curves.trials_used += cell.values;
      ++i;
    }
    curves.trials_total = static_cast<int>(positions);
    return true;
  }

  void Recompute(const CellKey& key, Cell& cell) {
    std::vector<std::pair<int64_t, double>> vals;
    vals.reserve(cell.values);
    for (const auto& [pos, e] : cell.entries) {
      if (e.has_value) vals.emplace_back(e.seed, e.value);
    }
    cell.point = MakeCurvePoint(options, key, std::move(vals));
    cell.point_json = Dump(ToJson(cell.point));
    cell.dirty = false;
    ++cells_computed;
  }

  const Curves& GetCurves() {
    if (!curves_dirty) return curves;
    if (!layout.empty() && UpdateInPlace()) {
      curves_dirty = false;
      return curves;
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
      f.series.back().points.push_back(cell.point);
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
        tm.emplace(key, cell.entries.begin()->second.tm);
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
  impl_->Set(position, trial);
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
    bytes += cell.entries.size() * node(sizeof(int64_t) + sizeof(Impl::Entry));
    // The point's seeds and values, twice (the cell's and curves()'s copy).
    bytes += 2 * cell.point.seeds.capacity() * sizeof(int64_t) +
             2 * cell.point.values.capacity() * sizeof(double);
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
