// Copyright 2026 SMoE Lab authors.
//
// Planning cost of the median stopping rule per group (issue 35 item 2):
// DecideMedian (each (group, step)'s running averages sorted once) against
// DecideMedianReference (the direct way: the others collected and sorted
// again per trial and step, O(n^2 S)), on one group of n trials that each
// reported S evaluations (every 100 steps, values from smoe::Rng). The
// coordinator plans the group of a report again after each report, so this
// is the planning cost per report of a median sweep with groups of n.
// Both answers are compared decision for decision (the bench fails when
// they differ). Prints a markdown table (bench/results/median-plan-*.md).
//
// Incremental (analysis/search/median_incremental.h, what the coordinator
// does per report since issue 35 item 2): the group loaded without the last
// report of each trial in flight, then those reports arrive one at a time;
// each is timed as the coordinator spends it: Set (the trial's reports),
// TakeAffected and Decide for every affected trial. p50 / p95 over the
// group's in-flight trials, and the mean number of trials decided per
// report; the decisions after the last report must equal DecideMedian's.
//
// Usage: smoe_bench_median_plan [--sizes 100,300,1000,3000] [--evals 27]
//        [--reference-max 3000] [--reps 3]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "analysis/search/median_incremental.h"
#include "analysis/search/median_stop.h"
#include "analysis/search/median_stop_reference.h"
#include "common/rng.h"

namespace {

using smoe::Rng;
using namespace smoe::analysis::search;  // NOLINT

struct Group {
  std::vector<Trial> trials;
  std::vector<Report> reports;
};

// n trials of one group; trial i reports at 100, 200, ... up to its own
// progress (the first half all S evaluations, the rest fewer: a sweep in
// flight), accuracy-like values rising with the step plus a per-trial level.
Group MakeGroup(int n, int evals, uint64_t seed) {
  Rng rng = Rng::ForStream(seed, {0x6d706c616eULL, static_cast<uint64_t>(n)});
  Group g;
  for (int i = 0; i < n; ++i) {
    Trial t;
    t.trial_id = absl::StrCat("t", 1000000 + i);
    g.trials.push_back(t);
    const double level = 0.5 + 0.4 * rng.UniformDouble();
    const int done =
        i < n / 2 ? evals : 1 + static_cast<int>(rng.UniformInt(evals));
    for (int e = 1; e <= done; ++e) {
      const double v = level * (1.0 - 0.5 / e) + 0.01 * rng.UniformDouble();
      g.reports.push_back({t.trial_id, 1, 100LL * e, v});
    }
  }
  return g;
}

template <typename F>
double BestMs(int reps, F&& f) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best,
                    std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return best;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

struct IncrementalRun {
  std::vector<double> ms;  // per report
  double decided = 0;      // mean trials decided per report
  bool same = true;        // final decisions equal `want`
};

IncrementalRun RunIncremental(const MedianConfig& c, const Group& g,
                              const std::vector<Decision>& want) {
  std::map<std::string, std::vector<Report>> by_trial;
  for (const Report& r : g.reports) by_trial[r.trial_id].push_back(r);
  const std::string group;
  const size_t n = g.trials.size();
  std::vector<std::vector<Report>> initial_reports(n);
  std::vector<IncrementalMedian::Initial> initial;
  for (size_t i = 0; i < n; ++i) {
    initial_reports[i] = by_trial[g.trials[i].trial_id];
    if (i >= n / 2 && !initial_reports[i].empty()) {
      initial_reports[i].pop_back();  // arrives below
    }
  }
  for (size_t i = 0; i < n; ++i) {
    initial.push_back({&g.trials[i].trial_id, &group, &initial_reports[i]});
  }
  IncrementalMedian inc(c);
  inc.Load(initial);
  IncrementalRun out;
  size_t decided = 0;
  for (size_t i = n / 2; i < n; ++i) {
    const std::string& id = g.trials[i].trial_id;
    const auto t0 = std::chrono::steady_clock::now();
    inc.Set(id, group, by_trial[id]);
    for (const std::string& a : inc.TakeAffected()) {
      const Decision d = inc.Decide(a, false, false);
      if (!d.trial_id.empty()) ++decided;
    }
    const auto t1 = std::chrono::steady_clock::now();
    out.ms.push_back(
        std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  out.decided =
      out.ms.empty() ? 0 : static_cast<double>(decided) / out.ms.size();
  for (const Decision& d : want) {
    out.same = out.same && inc.Decide(d.trial_id, false, false) == d;
  }
  return out;
}

std::vector<int> ParseSizes(const std::string& s) {
  std::vector<int> out;
  for (absl::string_view p : absl::StrSplit(s, ',')) {
    int v = 0;
    if (absl::SimpleAtoi(p, &v) && v > 0) out.push_back(v);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {100, 300, 1000, 3000};
  int evals = 27;  // 2700 steps, evaluations every 100 (the replay study)
  int reference_max = 3000;
  int reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const std::string v = argv[i + 1];
    if (a == "--sizes") {
      sizes = ParseSizes(v);
    } else if (a == "--evals") {
      evals = std::max(1, std::atoi(v.c_str()));
    } else if (a == "--reference-max") {
      reference_max = std::atoi(v.c_str());
    } else if (a == "--reps") {
      reps = std::max(1, std::atoi(v.c_str()));
    } else {
      std::fprintf(stderr, "unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  MedianConfig c;
  c.mode = Mode::kMax;
  c.min_steps = 300;
  c.max_steps = 100LL * evals;
  std::printf(
      "# Median rule: planning one group\n\n"
      "%d evaluations per finished trial (every 100 steps; half the group "
      "finished, half in flight), min_steps 300, best of %d runs, 1 thread.\n\n"
      "| trials in the group | reports | DecideMedian (ms) | reference "
      "(ms) | reference / DecideMedian | pruned | incremental per report "
      "(ms, p50 / p95) | trials decided per report | DecideMedian / "
      "incremental p50 |\n"
      "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
      evals, reps);
  int failures = 0;
  for (int n : sizes) {
    const Group g = MakeGroup(n, evals, 1);
    std::vector<Decision> fast;
    const double fast_ms =
        BestMs(reps, [&] { fast = DecideMedian(c, g.trials, g.reports); });
    const int pruned = static_cast<int>(std::count_if(
        fast.begin(), fast.end(),
        [](const Decision& d) { return d.action == Action::kPrune; }));
    std::string ref_cell = "(not run)";
    std::string ratio_cell = "";
    if (n <= reference_max) {
      std::vector<Decision> ref;
      const double ref_ms = BestMs(
          1, [&] { ref = DecideMedianReference(c, g.trials, g.reports); });
      if (ref != fast) {
        std::fprintf(stderr, "n=%d: DecideMedian differs from the reference\n",
                     n);
        ++failures;
      }
      ref_cell = absl::StrCat(static_cast<int64_t>(ref_ms * 10) / 10.0);
      ratio_cell =
          absl::StrCat(static_cast<int64_t>(ref_ms / fast_ms * 10) / 10.0);
    }
    const IncrementalRun inc = RunIncremental(c, g, fast);
    if (!inc.same) {
      std::fprintf(stderr,
                   "n=%d: IncrementalMedian differs from DecideMedian\n", n);
      ++failures;
    }
    const double p50 = Percentile(inc.ms, 0.5);
    std::printf(
        "| %d | %zu | %.2f | %s | %s | %d | %.4f / %.4f | %.1f | %.0f |\n", n,
        g.reports.size(), fast_ms, ref_cell.c_str(), ratio_cell.c_str(), pruned,
        p50, Percentile(inc.ms, 0.95), inc.decided,
        p50 > 0 ? fast_ms / p50 : 0.0);
    std::fflush(stdout);
  }
  return failures == 0 ? 0 : 1;
}
