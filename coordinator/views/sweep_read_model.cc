// Copyright 2026 SMoE Lab authors.
#include "coordinator/views/sweep_read_model.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <string_view>
#include <utility>

#include "analysis/stats.h"

namespace smoe::coordinator {
namespace {

void Count(SweepSnapshot& s, const TrialRow& r, int sign) {
  for (size_t i = 0; i < r.results.size(); ++i) {
    s.metric_count[r.results.name(i)] += sign;
  }
}

// Sets the aggregator's position `i` to `row` (no TrialPoint copy).
void SetRow(analysis::CurveAggregator& agg, size_t i, const TrialRow& row) {
  agg.Set(static_cast<int64_t>(i), row.param_values(), row.seed, row.state,
          row.results.Find(agg.options().metric));
}

}  // namespace

uint64_t TrialIndex::Hash(absl::string_view id) {
  return std::hash<std::string_view>()(std::string_view(id.data(), id.size()));
}

TrialIndex::TrialIndex(const RowTable& rows) {
  by_hash_.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    by_hash_.emplace_back(Hash(rows[i]->trial_id), i);
  }
  std::sort(by_hash_.begin(), by_hash_.end());
}

std::optional<size_t> TrialIndex::Find(const RowTable& rows,
                                       absl::string_view id) const {
  const uint64_t h = Hash(id);
  for (auto it = std::lower_bound(by_hash_.begin(), by_hash_.end(),
                                  std::make_pair(h, uint64_t{0}));
       it != by_hash_.end() && it->first == h; ++it) {
    if (it->second < rows.size() && rows[it->second]->trial_id == id) {
      return it->second;
    }
  }
  return std::nullopt;
}

std::vector<std::string> SweepSnapshot::metrics() const {
  std::vector<std::string> out;
  for (const auto& [k, n] : metric_count) {
    if (n > 0) out.push_back(k);
  }
  return out;
}

analysis::CurveAggregator& AggregatorEntry::At(
    const std::shared_ptr<const SweepSnapshot>& snap,
    const analysis::AggregateOptions& o) {
  if (seen_ == snap) return *agg_;
  if (agg_ != nullptr && seen_ != nullptr && snap->base_version >= 0 &&
      seen_->version == snap->base_version && seen_->index == snap->index &&
      seen_->rows.size() == snap->rows.size()) {
    // The next snapshot of the one seen: its changed rows only (O(changes)).
    for (size_t i : snap->changed) {
      SetRow(*agg_, i, *snap->rows[i]);
    }
    seen_ = snap;
    return *agg_;
  }
  if (agg_ == nullptr || seen_ == nullptr ||
      seen_->rows.size() > snap->rows.size()) {
    agg_ = std::make_unique<analysis::CurveAggregator>(o);
    seen_ = nullptr;
  }
  for (size_t i = 0; i < snap->rows.size(); ++i) {
    if (seen_ == nullptr || i >= seen_->rows.size() ||
        seen_->rows[i] != snap->rows[i]) {
      SetRow(*agg_, i, *snap->rows[i]);
    }
  }
  seen_ = snap;
  return *agg_;
}

SweepReadModel::SweepReadModel(Scheduler* scheduler,
                               store::ExperimentStore* store)
    : scheduler_(scheduler), store_(store) {
  listener_ = scheduler_->AddSweepDeletedListener(
      [this](const DeletedSweep& d) { Forget(d.sweep_id); });
}

SweepReadModel::~SweepReadModel() {
  scheduler_->RemoveSweepDeletedListener(listener_);
}

bool SweepReadModel::KeyOf(const std::string& key,
                           const std::string& sweep_id) {
  const size_t start = key.find('\x1f');
  if (start == std::string::npos) return false;
  return key.compare(start + 1, sweep_id.size(), sweep_id) == 0 &&
         (key.size() == start + 1 + sweep_id.size() ||
          key[start + 1 + sweep_id.size()] == '\x1f');
}

void SweepReadModel::Forget(const std::string& sweep_id) {
  // A reader that built a snapshot just before the delete may still store
  // it here afterwards: it is never served (GetSweep says NotFound, and a
  // sweep re-created under the name has newer versions), only kept until
  // the next delete of the name or a restart.
  absl::MutexLock build(&build_mu_);
  absl::MutexLock lock(&mu_);
  snapshots_.erase(sweep_id);
  auto erase_keys = [&](auto* m) {
    for (auto it = m->begin(); it != m->end();) {
      it = KeyOf(it->first, sweep_id) ? m->erase(it) : std::next(it);
    }
  };
  erase_keys(&responses_);
  erase_keys(&response_put_at_);
  erase_keys(&aggregators_);
}

size_t SweepReadModel::EntriesOf(const std::string& sweep_id) {
  absl::MutexLock lock(&mu_);
  size_t n = snapshots_.count(sweep_id);
  for (const auto& [key, v] : responses_) n += KeyOf(key, sweep_id) ? 1 : 0;
  for (const auto& [key, v] : aggregators_) n += KeyOf(key, sweep_id) ? 1 : 0;
  return n;
}

std::shared_ptr<const SweepSnapshot> SweepReadModel::Current(
    const std::string& sweep_id, int64_t version) {
  absl::MutexLock lock(&mu_);
  auto it = snapshots_.find(sweep_id);
  if (it != snapshots_.end() && it->second->version >= version) {
    return it->second;
  }
  return nullptr;
}

absl::StatusOr<std::pair<SweepView, std::shared_ptr<const SweepSnapshot>>>
SweepReadModel::Get(const std::string& sweep_id) {
  absl::StatusOr<SweepView> view = scheduler_->GetSweep(sweep_id);
  if (!view.ok()) return view.status();
  if (auto snap = Current(sweep_id, view->version)) {
    return std::make_pair(*std::move(view), snap);
  }
  absl::MutexLock build(&build_mu_);
  if (auto snap = Current(sweep_id, view->version)) {
    return std::make_pair(*std::move(view), snap);
  }
  std::shared_ptr<const SweepSnapshot> base;
  {
    absl::MutexLock lock(&mu_);
    auto it = snapshots_.find(sweep_id);
    if (it != snapshots_.end()) base = it->second;
  }
  absl::StatusOr<std::shared_ptr<const SweepSnapshot>> snap = nullptr;
  if (base != nullptr) snap = Refresh(sweep_id, base);
  if (!snap.ok()) return snap.status();
  if (*snap == nullptr) snap = Reload(sweep_id);
  if (!snap.ok()) return snap.status();
  {
    absl::MutexLock lock(&mu_);
    snapshots_[sweep_id] = *snap;
  }
  return std::make_pair(*std::move(view), *std::move(snap));
}

absl::StatusOr<std::shared_ptr<const SweepSnapshot>> SweepReadModel::Reload(
    const std::string& sweep_id) {
  // The view first: rows read after it are at least as new as its version.
  absl::StatusOr<SweepView> view = scheduler_->GetSweep(sweep_id);
  if (!view.ok()) return view.status();
  auto rows = store_->ListSummaries(sweep_id);
  if (!rows.ok()) return rows.status();
  auto snap = std::make_shared<SweepSnapshot>();
  snap->version = view->version;
  snap->kind = view->record.kind;
  if (const trials::TrialKind* k = sweeps::SweepKind(view->spec)) {
    snap->defaults = trials::Defaults(*k);
  }
  // Row by row, each summary freed once its row is built: the summaries
  // and the rows are not both held in full (issue 35: 10^6 rows).
  RowInterner interner;
  for (size_t i = 0; i < rows->size(); ++i) {
    store::TrialSummary summary = std::move((*rows)[i]);
    snap->rows.push_back(MakeTrialRow(summary, &interner));
    Count(*snap, *snap->rows[snap->rows.size() - 1], +1);
  }
  rows->clear();
  rows->shrink_to_fit();
#if defined(__GLIBC__)
  // The summaries were freed among the rows' allocations; hand their pages
  // back (at 10^6 rows about 250 MB of RSS the heap no longer uses).
  malloc_trim(0);
#endif
  snap->index = std::make_shared<const TrialIndex>(snap->rows);
  return snap;
}

absl::StatusOr<std::shared_ptr<const SweepSnapshot>> SweepReadModel::Refresh(
    const std::string& sweep_id,
    const std::shared_ptr<const SweepSnapshot>& base) {
  auto w =
      scheduler_->WatchSweep(sweep_id, base->version, absl::ZeroDuration());
  if (!w.ok()) return w.status();
  if (w->timed_out) return base;
  if (w->changed.size() > base->rows.size() / 4 + 64) return nullptr;
  std::vector<std::string> ids;
  for (const store::TrialRecord& t : w->changed) {
    if (!base->Find(t.trial_id)) return nullptr;  // new trials
    ids.push_back(t.trial_id);
  }
  auto rows = store_->ListSummariesOf(sweep_id, ids);
  if (!rows.ok()) return rows.status();
  auto snap = std::make_shared<SweepSnapshot>(*base);  // shares the rows
  snap->version = w->sweep.version;
  snap->base_version = base->version;
  snap->changed.clear();
  RowInterner interner;
  for (size_t i = 0; i < rows->size(); ++i) {
    const std::optional<size_t> at = snap->Find((*rows)[i].trial_id);
    if (!at) return nullptr;  // not a trial of the base (checked above)
    const size_t pos = *at;
    Count(*snap, *snap->rows[pos], -1);
    snap->rows.Set(pos,
                   MakeTrialRow((*rows)[i], &interner, snap->rows[pos].get()));
    Count(*snap, *snap->rows[pos], +1);
    snap->changed.push_back(pos);
  }
  return std::shared_ptr<const SweepSnapshot>(std::move(snap));
}

std::shared_ptr<AggregatorEntry> SweepReadModel::Aggregator(
    const std::string& key) {
  absl::MutexLock lock(&mu_);
  std::shared_ptr<AggregatorEntry>& slot = aggregators_[key];
  if (slot == nullptr) slot = std::make_shared<AggregatorEntry>();
  slot->used_ = ++aggregator_uses_;
  std::shared_ptr<AggregatorEntry> out = slot;
  // The bound: evict the least recently used others while the estimated
  // memory (or the count) is over it. An evicted entry still in use by a
  // reader lives until that reader is done.
  size_t total = 0;
  for (const auto& [k, e] : aggregators_) total += e->bytes();
  while (aggregators_.size() > 1 && (total > max_aggregator_bytes_ ||
                                     aggregators_.size() > kMaxAggregators)) {
    auto lru = aggregators_.end();
    for (auto it = aggregators_.begin(); it != aggregators_.end(); ++it) {
      if (it->second == out) continue;
      if (lru == aggregators_.end() || it->second->used_ < lru->second->used_) {
        lru = it;
      }
    }
    total -= std::min(total, lru->second->bytes());
    aggregators_.erase(lru);
  }
  return out;
}

void SweepReadModel::set_max_aggregator_bytes(size_t bytes) {
  absl::MutexLock lock(&mu_);
  max_aggregator_bytes_ = bytes;
}

size_t SweepReadModel::max_aggregator_bytes() {
  absl::MutexLock lock(&mu_);
  return max_aggregator_bytes_;
}

size_t SweepReadModel::aggregator_count() {
  absl::MutexLock lock(&mu_);
  return aggregators_.size();
}

size_t SweepReadModel::aggregator_bytes() {
  absl::MutexLock lock(&mu_);
  size_t total = 0;
  for (const auto& [k, e] : aggregators_) total += e->bytes();
  return total;
}

std::shared_ptr<const std::string> SweepReadModel::CacheGet(
    const std::string& key, int64_t version) {
  absl::MutexLock lock(&mu_);
  auto it = responses_.find(key);
  if (it != responses_.end() && it->second.first == version) {
    return it->second.second;
  }
  return nullptr;
}

void SweepReadModel::CachePut(const std::string& key, int64_t version,
                              std::shared_ptr<const std::string> body) {
  absl::MutexLock lock(&mu_);
  responses_[key] = {version, std::move(body)};
  response_put_at_[key] = ++response_puts_;
  // Bounded by count and bytes: the least recently stored others go first.
  size_t total = 0;
  for (const auto& [k, v] : responses_) total += v.second->size();
  while (responses_.size() > 1 &&
         (responses_.size() > kMaxResponses || total > kMaxResponseBytes)) {
    auto oldest = response_put_at_.end();
    for (auto it = response_put_at_.begin(); it != response_put_at_.end();
         ++it) {
      if (it->first == key) continue;
      if (oldest == response_put_at_.end() || it->second < oldest->second) {
        oldest = it;
      }
    }
    auto r = responses_.find(oldest->first);
    total -= std::min(total, r->second.second->size());
    responses_.erase(r);
    response_put_at_.erase(oldest);
  }
}

}  // namespace smoe::coordinator
