// Copyright 2026 SMoE Lab authors.
#include "analysis/curve_aggregator.h"

#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
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
  };
  using SeriesKey = std::pair<GroupKey, GroupKey>;  // (facet, series)

  AggregateOptions options;
  const json& defaults;
  std::map<CellKey, Cell> cells;
  // position -> the cell it contributes to (absent: filtered out).
  std::unordered_map<int64_t, CellKey> where;
  std::set<int64_t> positions;  // every position ever Set
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
    positions.insert(position);
    if (auto w = where.find(position); w != where.end()) {
      auto c = cells.find(w->second);
      auto e = c->second.entries.find(position);
      if (e->second.has_value) --c->second.values;
      c->second.entries.erase(e);
      c->second.dirty = true;
      Touch(c->first);
      if (c->second.entries.empty()) cells.erase(c);
      where.erase(w);
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
    Cell& c = cells[key];
    c.entries[position] = e;
    if (e.has_value) ++c.values;
    c.dirty = true;
    where[position] = key;
    Touch(key);
  }

  const Curves& GetCurves() {
    if (!curves_dirty) return curves;
    curves = Curves();
    curves.options = options;
    curves.trials_total = static_cast<int>(positions.size());
    for (auto& [key, cell] : cells) {
      if (cell.values == 0) continue;
      if (cell.dirty) {
        std::vector<std::pair<int64_t, double>> vals;
        vals.reserve(cell.values);
        for (const auto& [pos, e] : cell.entries) {
          if (e.has_value) vals.emplace_back(e.seed, e.value);
        }
        cell.point = MakeCurvePoint(options, key, std::move(vals));
        cell.dirty = false;
        ++cells_computed;
      }
      curves.trials_used += cell.values;
      if (curves.facets.empty() || !(curves.facets.back().key == key.facet)) {
        curves.facets.push_back(Facet{key.facet, {}});
      }
      Facet& f = curves.facets.back();
      if (f.series.empty() || !(f.series.back().key == key.series)) {
        f.series.push_back(Series{key.series, {}});
      }
      f.series.back().points.push_back(cell.point);
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

  json GetAnalysis() {
    const Curves& c = GetCurves();
    const std::vector<OptimalK>& o = GetOptimal();
    std::vector<TheoryFit> fits;
    if (FitsTheory(options)) {
      CellParams tm;
      for (const auto& [key, cell] : cells) {
        tm.emplace(key, cell.entries.begin()->second.tm);
      }
      fits = internal::FitWithCellParams(c, tm);
    }
    return AnalysisJson(options, c, o, fits);
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
int64_t CurveAggregator::cells_computed() const {
  return impl_->cells_computed;
}

}  // namespace smoe::analysis
