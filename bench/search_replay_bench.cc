// Copyright 2026 SMoE Lab authors.
//
// Replay benchmark of the adaptive-sweep policies (analysis/search/): feeds
// the learning curves of a paper-shaped synthetic study through ASHA, the
// median stopping rule and refine with a fake clock and fake workers, and
// compares trial-steps and the optimal k per group with the full grid.
// Prints markdown tables (bench/results/search-replay-*.md).
//
// The study (8 M x 8 k x 2 attentions x 3 seeds = 384 trials) follows the
// seed paper's total error E_total(k, N) = O(N^2/k) + O(sqrt(N k d_N / m
// log(T/k))) (Section 4.3): with N = M, T = 8 experts,
//   E(k, M) = a M^2 / k + b sqrt(M k d log(4T / k)),  a = 0.005, b = 0.03,
//   d = 1.0 (softmax) or 1.3 (linear: a more complex router, smaller k*),
// where log(4T/k) replaces log(T/k) so the estimation term does not vanish at
// k = T (the paper: it "remains non-negligible"); the optimum k* then grows
// with M (1 at M = 1 to 5-6 at M = 8), as in the paper's Figure 1.
// Final accuracy = 0.97 - E + N(0, 0.005) per trial (seed effect). The
// curve: acc(s) = c + (final - c) (1 - exp(-s / tau_k)) / (1 - exp(-S /
// tau_k)) + N(0, 0.003) per evaluation, c = 0.125 (chance), S = 2700 steps,
// tau_k = 0.15 S (1 + 0.05 (k - 1)): larger k learns slightly slower, so
// curves of neighbouring k can cross (what makes early stopping risky).
// Evaluations every 100 steps; all noise from smoe::Rng streams (seed 1).
//
// Simulation: W = 16 fake workers, one tick = 100 steps of every running
// trial; after a tick each group with new reports is decided again
// (DecideAsha / DecideMedian on that group's trials and reports); a running
// trial decided kPrune stops (its checkpoint kept), a paused one decided
// kPromote is resumed from its checkpoint before any fresh trial starts (the
// median rule's prunes are final since 2026-11-25: paused trials are passed
// as paused and stay pruned). A policy's k* for a group is
// the argmax over k of the mean final accuracy of the trials it finished.
//
// "Through the real scheduler" replays the synthetic study through
// coordinator::Scheduler itself (the code the coordinator runs: search
// driver, decision log, pruned state, promotion via re-lease) over an
// InMemoryStore with a FakeClock and one fake worker of W slots: per tick it
// heartbeats (a pruned trial's attempt is cancelled there; its progress is
// its checkpoint), leases into free slots, advances every running trial by
// one evaluation interval and reports eval/ood_acc (a report refused as
// stale means the trial was pruned by an earlier report of the tick: its
// steps are not counted), and completes trials at max_steps.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/search/asha.h"
#include "analysis/search/median_stop.h"
#include "analysis/search/refine.h"
#include "common/clock.h"
#include "common/rng.h"
#include "coordinator/scheduler.h"
#include "nlohmann/json.hpp"
#include "store/in_memory_store.h"

namespace smoe::analysis::search {
namespace {

constexpr int64_t kSteps = 2700;
constexpr int64_t kEvalEvery = 100;
constexpr int kExperts = 8;
// The generator's seed (--seed=N; default 1, the seed of the 2026-11-24/25
// results).
uint64_t g_noise_seed = 1;
// tau_k = 0.15 S (1 + kTauSlope (k - 1)); 0 in the sensitivity run (no
// crossing curves).
double g_tau_slope = 0.05;
// --config-replay: also the lockstep "asha over configs" rows.
bool g_config_replay = false;
// --median: also the median rule through the real scheduler (slow).
bool g_median_sched = false;

struct TrialDef {
  std::string id;
  int m = 1;
  int k = 1;
  int attention = 0;  // 0 softmax, 1 linear
  int64_t seed = 0;
  std::string group;
  double final_acc = 0;
  double tau = 1;
  uint64_t stream = 0;
};

double Gaussian(Rng& rng) {  // Box-Muller
  const double u1 = 1.0 - rng.UniformDouble();
  const double u2 = rng.UniformDouble();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

double Etotal(int k, int m, int attention) {
  const double a = 0.005, b = 0.03, d = attention == 0 ? 1.0 : 1.3;
  return a * m * m / k +
         b * std::sqrt(m * k * d * std::log(4.0 * kExperts / k));
}

std::string GroupOf(int m, int attention) {
  return absl::StrCat("M=", m,
                      ",attention=", attention == 0 ? "softmax" : "linear");
}

TrialDef MakeTrial(int m, int k, int attention, int64_t seed) {
  TrialDef t;
  t.m = m;
  t.k = k;
  t.attention = attention;
  t.seed = seed;
  t.group = GroupOf(m, attention);
  t.id = absl::StrFormat("M%d-k%d-%s-s%d", m, k,
                         attention == 0 ? "softmax" : "linear", seed);
  t.stream = static_cast<uint64_t>(((m * 16 + k) * 2 + attention) * 64 + seed);
  Rng rng = Rng::ForStream(g_noise_seed, {t.stream, 0});
  t.final_acc = 0.97 - Etotal(k, m, attention) + 0.005 * Gaussian(rng);
  t.tau = 0.15 * kSteps * (1 + g_tau_slope * (k - 1));
  return t;
}

double AccAt(const TrialDef& t, int64_t step) {
  const double c = 0.125;
  const double shape = (1 - std::exp(-static_cast<double>(step) / t.tau)) /
                       (1 - std::exp(-static_cast<double>(kSteps) / t.tau));
  Rng rng =
      Rng::ForStream(g_noise_seed, {t.stream, static_cast<uint64_t>(step) + 1});
  return c + (t.final_acc - c) * shape + 0.003 * Gaussian(rng);
}

std::vector<TrialDef> Study() {
  std::vector<TrialDef> out;
  for (int m = 1; m <= 8; ++m) {
    for (int attention = 0; attention < 2; ++attention) {
      for (int k = 1; k <= kExperts; ++k) {
        for (int64_t seed = 0; seed < 3; ++seed) {
          out.push_back(MakeTrial(m, k, attention, seed));
        }
      }
    }
  }
  return out;
}

// A study to replay: per trial its group, k and values at eval_every,
// 2 eval_every, ..., max_steps.
struct Curve {
  std::string id;
  std::string group;
  int k = 0;
  std::vector<double> values;
};

struct Replay {
  std::string name;
  int64_t eval_every = 0;
  int64_t max_steps = 0;
  std::vector<Curve> trials;
  int64_t seeds_per_trial = 1;  // > 1: a "trial" is a config's seeds run
                                //   in lockstep (ConfigReplay)
};

// The configs of `r` as units: one curve per (group, k), the mean over its
// seeds, each step costing `seeds` trial-steps. ASHA then ranks configs by
// their seed mean (replicates judged together) instead of single runs.
Replay ConfigReplay(const Replay& r) {
  std::map<std::pair<std::string, int>, std::vector<const Curve*>> by_config;
  for (const Curve& c : r.trials) by_config[{c.group, c.k}].push_back(&c);
  Replay out;
  out.name = r.name + ", configs (seed means)";
  out.eval_every = r.eval_every;
  out.max_steps = r.max_steps;
  for (const auto& [key, curves] : by_config) {
    Curve c;
    c.id = absl::StrCat(key.first, ",k=", key.second);
    c.group = key.first;
    c.k = key.second;
    c.values.assign(curves[0]->values.size(), 0.0);
    for (const Curve* x : curves) {
      for (size_t i = 0; i < c.values.size(); ++i) {
        c.values[i] += x->values[i] / static_cast<double>(curves.size());
      }
    }
    out.seeds_per_trial = static_cast<int64_t>(curves.size());
    out.trials.push_back(std::move(c));
  }
  return out;
}

Replay SyntheticReplay(const std::vector<TrialDef>& study) {
  Replay r;
  r.name = "synthetic";
  r.eval_every = kEvalEvery;
  r.max_steps = kSteps;
  for (const TrialDef& t : study) {
    Curve c{t.id, t.group, t.k, {}};
    for (int64_t s = kEvalEvery; s <= kSteps; s += kEvalEvery) {
      c.values.push_back(AccAt(t, s));
    }
    r.trials.push_back(std::move(c));
  }
  return r;
}

// bench/data/sraven-cpu-mini-ood-acc.csv: trial_id,M,top_k,attention,seed,
// attempt,step,ood_acc (sorted by trial, step), exported from the CPU
// miniature study's SQLite store. The step-1 evaluation (at initialisation)
// is dropped; the rest are every 500 steps to 2500.
bool CsvReplay(const std::string& path, Replay* out) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return false;
  char line[512];
  std::map<std::string, Curve> by_id;
  std::map<std::string, std::vector<std::pair<int64_t, double>>> points;
  bool header = true;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (header) {
      header = false;
      continue;
    }
    char id[128], attention[32];
    int m, k, seed, attempt;
    long long step;
    double v;
    if (std::sscanf(line, "%127[^,],%d,%d,%31[^,],%d,%d,%lld,%lf", id, &m, &k,
                    attention, &seed, &attempt, &step, &v) != 8) {
      continue;
    }
    Curve& c = by_id[id];
    c.id = id;
    c.k = k;
    c.group = absl::StrCat("M=", m, ",attention=", attention);
    if (step > 1) points[id].push_back({step, v});
  }
  std::fclose(f);
  out->name = "sraven-cpu-mini";
  out->eval_every = 500;
  out->max_steps = 2500;
  for (auto& [id, c] : by_id) {
    std::sort(points[id].begin(), points[id].end());
    for (const auto& [step, v] : points[id]) c.values.push_back(v);
    if (c.values.size() != 5) return false;
    out->trials.push_back(c);
  }
  return !out->trials.empty();
}

// argmax over k of the mean of `value` (k -> values); 0 when empty.
int ArgmaxK(const std::map<int, std::vector<double>>& by_k, double* mean) {
  int best = 0;
  double best_mean = -1e300;
  for (const auto& [k, v] : by_k) {
    if (v.empty()) continue;
    double s = 0;
    for (double x : v) s += x;
    const double m = s / static_cast<double>(v.size());
    if (m > best_mean) {
      best = k;
      best_mean = m;
    }
  }
  if (mean != nullptr) *mean = best_mean;
  return best;
}

struct GridTruth {
  std::map<std::string, int> k_star;  // from the full grid (3 seeds)
  std::map<std::string, int> k_true;  // noiseless argmin of E
  std::map<std::string, std::map<int, double>> mean;  // group -> k -> mean
  int64_t trial_steps = 0;
  int trials = 0;
};

GridTruth FullGrid(const Replay& replay) {
  GridTruth g;
  std::map<std::string, std::map<int, std::vector<double>>> vals;
  for (const Curve& t : replay.trials) {
    vals[t.group][t.k].push_back(t.values.back());
    g.trial_steps += replay.max_steps;
    ++g.trials;
  }
  for (const auto& [group, by_k] : vals) {
    g.k_star[group] = ArgmaxK(by_k, nullptr);
    for (const auto& [k, v] : by_k) {
      double s = 0;
      for (double x : v) s += x;
      g.mean[group][k] = s / static_cast<double>(v.size());
    }
  }
  return g;
}

std::map<std::string, int> NoiselessKStar(const std::vector<TrialDef>& study) {
  std::map<std::string, int> out;
  for (const TrialDef& t : study) {
    int best = 1;
    for (int k = 2; k <= kExperts; ++k) {
      if (Etotal(k, t.m, t.attention) < Etotal(best, t.m, t.attention)) {
        best = k;
      }
    }
    out[t.group] = best;
  }
  return out;
}

enum class Status { kQueued, kRunning, kPaused, kDone };

struct SimResult {
  int64_t trial_steps = 0;
  int64_t ticks = 0;
  int finished = 0;
  int prunes = 0;      // running trials stopped
  int promotions = 0;  // paused trials resumed
  std::map<std::string, int> k_star;
};

template <typename Decide>
SimResult Simulate(const Replay& replay, int workers, Decide decide) {
  const std::vector<Curve>& study = replay.trials;
  const size_t n = study.size();
  std::vector<Status> status(n, Status::kQueued);
  std::vector<int64_t> progress(n, 0);
  std::map<std::string, std::vector<size_t>> members;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < n; ++i) {
    members[study[i].group].push_back(i);
    index[study[i].id] = i;
  }
  std::map<std::string, std::vector<Report>> reports;
  std::set<size_t> fresh, resume;
  for (size_t i = 0; i < n; ++i) fresh.insert(i);
  SimResult r;
  int running = 0;
  while (true) {
    // Fill free workers: promotions first, then fresh trials in grid order.
    while (running < workers && (!resume.empty() || !fresh.empty())) {
      std::set<size_t>& q = resume.empty() ? fresh : resume;
      const size_t i = *q.begin();
      q.erase(q.begin());
      status[i] = Status::kRunning;
      ++running;
    }
    if (running == 0) break;
    ++r.ticks;
    std::set<std::string> dirty;
    for (size_t i = 0; i < n; ++i) {
      if (status[i] != Status::kRunning) continue;
      progress[i] += replay.eval_every;
      r.trial_steps += replay.eval_every * replay.seeds_per_trial;
      const size_t e = static_cast<size_t>(progress[i] / replay.eval_every) - 1;
      reports[study[i].group].push_back(
          {study[i].id, 1, progress[i], study[i].values[e]});
      dirty.insert(study[i].group);
      if (progress[i] >= replay.max_steps) {
        status[i] = Status::kDone;
        --running;
        ++r.finished;
      }
    }
    for (const std::string& g : dirty) {
      std::vector<Trial> trials;
      for (size_t i : members[g]) {
        // paused: the median rule keeps a pruned trial pruned (final).
        Trial t{study[i].id, g, false, status[i] == Status::kPaused};
        t.config = absl::StrCat(g, ",top_k=", study[i].k);
        t.has_axis = true;
        t.axis = study[i].k;
        t.rest = g;
        trials.push_back(std::move(t));
      }
      for (const Decision& d : decide(trials, reports[g])) {
        const size_t i = index[d.trial_id];
        if (status[i] == Status::kRunning && d.action == Action::kPrune) {
          status[i] = Status::kPaused;
          --running;
          ++r.prunes;
        } else if (status[i] == Status::kPaused &&
                   (d.action == Action::kPromote || d.action == Action::kRun ||
                    d.action == Action::kRetry)) {
          status[i] = Status::kQueued;
          resume.insert(i);
          ++r.promotions;
        }
      }
    }
  }
  std::map<std::string, std::map<int, std::vector<double>>> done;
  for (size_t i = 0; i < n; ++i) {
    if (status[i] == Status::kDone) {
      done[study[i].group][study[i].k].push_back(study[i].values.back());
    }
  }
  for (const auto& [g, unused] : members) {
    r.k_star[g] = done.count(g) ? ArgmaxK(done[g], nullptr) : 0;
  }
  return r;
}

struct Score {
  int match = 0;
  int groups = 0;
  double mean_regret = 0;
  double max_regret = 0;
};

Score Compare(const GridTruth& g, const std::map<std::string, int>& k_star) {
  Score s;
  for (const auto& [group, k] : g.k_star) {
    ++s.groups;
    const auto it = k_star.find(group);
    const int mine = it == k_star.end() ? 0 : it->second;
    if (mine == k) ++s.match;
    const auto& means = g.mean.at(group);
    // No answer (no trial of the group finished) costs the group's range.
    double worst = means.at(k);
    for (const auto& [x, v] : means) worst = std::min(worst, v);
    const double regret =
        mine == 0 ? means.at(k) - worst : means.at(k) - means.at(mine);
    s.mean_regret += regret;
    s.max_regret = std::max(s.max_regret, regret);
  }
  s.mean_regret /= std::max(1, s.groups);
  return s;
}

// "a/b" of the groups whose k* is the noiseless one (g.k_true); "-" when
// the study has none (recorded curves).
std::string NoiselessMatch(const GridTruth& g,
                           const std::map<std::string, int>& k_star) {
  if (g.k_true.empty()) return "-";
  int match = 0;
  for (const auto& [group, k] : g.k_true) {
    auto it = k_star.find(group);
    match += it != k_star.end() && it->second == k;
  }
  return absl::StrCat(match, "/", g.k_true.size());
}

struct AshaCase {
  int64_t min_steps, eta;
  int64_t smooth = 1;      // AshaConfig::smooth
  int64_t min_keep = 1;    // AshaConfig::min_keep
  bool seeds = false;      // AshaConfig::aggregate_seeds
  bool neighbors = false;  // AshaConfig::keep_neighbors (axis top_k)
};

AshaConfig AshaConfigOf(const AshaCase& a, int64_t max_steps) {
  AshaConfig c;
  c.mode = Mode::kMax;
  c.min_steps = a.min_steps;
  c.reduction = a.eta;
  c.max_steps = max_steps;
  c.smooth = a.smooth;
  c.min_keep = a.min_keep;
  c.aggregate_seeds = a.seeds;
  c.keep_neighbors = a.neighbors;
  return c;
}

std::string AshaName(const AshaCase& a) {
  return absl::StrCat(
      "asha min_steps ", a.min_steps, ", eta ", a.eta,
      a.smooth > 1 ? absl::StrCat(", smooth ", a.smooth) : "",
      a.min_keep > 1 ? absl::StrCat(", keep >= ", a.min_keep) : "",
      a.seeds ? ", aggregate_seeds" : "",
      a.neighbors ? ", keep_neighbors top_k" : "");
}

// How early the full grid's answer is visible: per step s, the groups
// whose full-grid k* ranks first (top 2, top 3) among the 8 k by the mean
// over its seeds of the value at s. A policy that picks at step s the m
// configurations it runs to the end cannot find the grid's k* in more
// groups than "top m" at s (with seeds judged together; fewer with single
// seeds).
void RankStability(const Replay& replay, const GridTruth& g) {
  std::printf(
      "\n## Where the grid's k* ranks at step s (%s; by the seed mean at "
      "s)\n\n| step | k* ranks 1st | in the top 2 | in the top 3 |\n"
      "|---|---|---|---|\n",
      replay.name.c_str());
  for (int64_t step : {100, 200, 300, 600, 900, 1200, 1800, 2400, 2700}) {
    if (step > replay.max_steps || step % replay.eval_every != 0) continue;
    const size_t e = static_cast<size_t>(step / replay.eval_every) - 1;
    std::map<std::string, std::map<int, std::vector<double>>> at;
    for (const Curve& c : replay.trials) {
      at[c.group][c.k].push_back(c.values[e]);
    }
    int top[3] = {0, 0, 0};
    for (const auto& [group, by_k] : at) {
      const int want = g.k_star.at(group);
      double mine = 0;
      std::vector<double> means;
      for (const auto& [k, v] : by_k) {
        double sum = 0;
        for (double x : v) sum += x;
        means.push_back(sum / static_cast<double>(v.size()));
        if (k == want) mine = means.back();
      }
      int above = 0;
      for (double m : means) above += m > mine;
      for (int m = 0; m < 3; ++m) top[m] += above <= m;
    }
    std::printf("| %lld | %d/%zu | %d/%zu | %d/%zu |\n",
                static_cast<long long>(step), top[0], at.size(), top[1],
                at.size(), top[2], at.size());
  }
}

void EarlyStopping(const Replay& replay, const GridTruth& g, int workers,
                   const std::vector<AshaCase>& ashas,
                   const std::vector<int64_t>& medians) {
  std::printf(
      "\n## Early stopping: %s (group_by [M, attention]; %d workers)\n\n"
      "| policy | trial-steps | vs grid | finished trials | prunes | "
      "promotions | ticks | k* = grid's | k* = noiseless | mean regret | "
      "max regret |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n",
      replay.name.c_str(), workers);
  auto row = [&](const std::string& name, const SimResult& r) {
    const Score s = Compare(g, r.k_star);
    std::printf(
        "| %s | %lld | %.2fx fewer | %d | %d | %d | %lld | %d/%d "
        "(%.0f%%) | %s | %.4f | %.4f |\n",
        name.c_str(), static_cast<long long>(r.trial_steps),
        static_cast<double>(g.trial_steps) / static_cast<double>(r.trial_steps),
        r.finished, r.prunes, r.promotions, static_cast<long long>(r.ticks),
        s.match, s.groups, 100.0 * s.match / s.groups,
        NoiselessMatch(g, r.k_star).c_str(), s.mean_regret, s.max_regret);
  };
  {
    SimResult grid;
    grid.trial_steps = g.trial_steps;
    grid.finished = g.trials;
    grid.k_star = g.k_star;
    grid.ticks = (g.trials + workers - 1) / workers *
                 (replay.max_steps / replay.eval_every);
    row(absl::StrCat("grid (all ", g.trials, " to ", replay.max_steps,
                     " steps)"),
        grid);
  }
  for (const AshaCase& a : ashas) {
    const AshaConfig c = AshaConfigOf(a, replay.max_steps);
    std::string rungs;
    for (int64_t r : AshaRungs(c)) absl::StrAppend(&rungs, r, " ");
    row(absl::StrCat(AshaName(a), " (rungs ", rungs, ")"),
        Simulate(
            replay, workers,
            [&](const std::vector<Trial>& t, const std::vector<Report>& r) {
              return DecideAsha(c, t, r);
            }));
  }
  // ASHA over configs in lockstep (--config-replay; the 2026-11-25
  // approximation of aggregate_seeds): a config's seeds run together and
  // are judged by their mean; workers / seeds config slots.
  const Replay configs = ConfigReplay(replay);
  for (const AshaCase& a : ashas) {
    if (!g_config_replay) break;
    if (a.seeds || a.neighbors) continue;  // rows above do it for real
    const AshaConfig c = AshaConfigOf(a, replay.max_steps);
    SimResult r = Simulate(
        configs,
        static_cast<int>(
            std::max<int64_t>(1, workers / configs.seeds_per_trial)),
        [&](const std::vector<Trial>& t, const std::vector<Report>& r) {
          return DecideAsha(c, t, r);
        });
    r.finished *= static_cast<int>(configs.seeds_per_trial);
    row(absl::StrCat("asha over configs (seed means), ", AshaName(a).substr(5)),
        r);
  }
  for (int64_t min_steps : medians) {
    const MedianConfig c{Mode::kMax, min_steps, replay.max_steps};
    row(absl::StrCat("median min_steps ", min_steps),
        Simulate(
            replay, workers,
            [&](const std::vector<Trial>& t, const std::vector<Report>& r) {
              return DecideMedian(c, t, r);
            }));
  }
}

struct SchedulerRun {
  SimResult sim;
  int64_t usage_used = 0;  // Scheduler::GetSearchUsage
  int64_t usage_full = 0;
  int decisions = 0;
  int trials = 0;    // the sweep's trials at the end (refine adds some)
  int resolved = 0;  // refine: groups whose last group decision is resolved
  int settled = 0;   // refine: groups with a group decision
  double wall_s = 0;
};

// The synthetic study through coordinator::Scheduler (see the file comment).
SchedulerRun SimulateScheduler(const Replay& replay, int workers,
                               const std::string& search,
                               const std::string& top_k,
                               const std::string& seeds) {
  using coordinator::LeaseGrant;
  using coordinator::RunningReport;
  const absl::Time wall0 = absl::Now();
  std::map<std::string, size_t> curve_of;  // "M%d-k%d-%s-s%d" -> index
  for (size_t i = 0; i < replay.trials.size(); ++i) {
    curve_of[replay.trials[i].id] = i;
  }
  store::InMemoryStore store;
  FakeClock clock;
  coordinator::SchedulerOptions opts;
  opts.lease_timeout = absl::Hours(1);
  SchedulerRun out;
  auto sched_or = coordinator::Scheduler::Create(&store, &clock, opts);
  if (!sched_or.ok()) return out;
  coordinator::Scheduler& sched = **sched_or;
  const std::string yaml = absl::StrCat(
      "name: replay\nkind: sraven\ngrid:\n  M: [1, 2, 3, 4, 5, 6, 7, 8]\n"
      "  attention: [softmax, hyla]\n  top_k: ",
      top_k, "\nfixed: {steps: ", replay.max_steps,
      ", num_experts: 8}\nseeds: ", seeds, "\nsearch: ", search, "\n");
  auto sub = sched.SubmitSweep(yaml, false);
  if (!sub.ok()) {
    std::fprintf(stderr, "submit: %s\n", sub.status().ToString().c_str());
    return out;
  }
  coordinator::WorkerInfo info;
  info.hostname = "replay";
  info.slots = workers;
  const std::string w = sched.Register(info)->worker_id;
  struct Run {
    int attempt = 0;
    size_t curve = 0;
  };
  std::map<std::string, Run> running;
  std::map<std::string, int64_t> progress;  // trial -> checkpoint step
  std::map<std::string, size_t> curve_of_trial;
  SimResult& r = out.sim;
  const int64_t every = replay.eval_every;
  std::vector<Curve> pool = replay.trials;  // plus seeds refine adds
  while (true) {
    std::vector<RunningReport> hb;
    for (const auto& [id, run] : running) hb.push_back({id, run.attempt});
    auto reply = sched.Heartbeat(w, hb, false);
    for (const auto& [id, attempt] : reply->cancel) {
      if (running.erase(id) > 0) ++r.prunes;
    }
    const int free = workers - static_cast<int>(running.size());
    if (free > 0) {
      auto grants = sched.Lease(w, free, 0);
      if (!grants.ok()) break;
      for (const LeaseGrant& g : *grants) {
        auto it = curve_of_trial.find(g.trial_id);
        if (it == curve_of_trial.end()) {
          const nlohmann::json p = nlohmann::json::parse(g.params_json);
          const int m = p.at("M").get<int>(), k = p.at("top_k").get<int>();
          const int attention = p.at("attention") == "softmax" ? 0 : 1;
          const std::string id =
              absl::StrFormat("M%d-k%d-%s-s%d", m, k,
                              attention == 0 ? "softmax" : "linear", g.seed);
          auto known = curve_of.find(id);
          if (known == curve_of.end()) {
            // A seed refine added (add_seeds): drawn from the same generator.
            const TrialDef t = MakeTrial(m, k, attention, g.seed);
            Curve c{t.id, t.group, t.k, {}};
            for (int64_t s = every; s <= replay.max_steps; s += every) {
              c.values.push_back(AccAt(t, s));
            }
            pool.push_back(std::move(c));
            known = curve_of.emplace(id, pool.size() - 1).first;
          }
          it = curve_of_trial.emplace(g.trial_id, known->second).first;
        }
        running[g.trial_id] = {g.attempt, it->second};
        if (g.attempt > 1) ++r.promotions;
      }
    }
    if (running.empty()) break;
    ++r.ticks;
    clock.Advance(absl::Seconds(1));
    std::vector<std::string> ended;
    for (const auto& [id, run] : running) {
      const Curve& c = pool[run.curve];
      const int64_t step = progress[id] + every;
      store::MetricRecord m;
      m.name = "eval/ood_acc";
      m.step = step;
      m.value = c.values[static_cast<size_t>(step / every) - 1];
      if (!sched.ReportMetrics(w, id, run.attempt, {m}).ok()) {
        ended.push_back(id);  // pruned by an earlier report of this tick
        ++r.prunes;
        continue;
      }
      progress[id] = step;
      r.trial_steps += every;
      if (step >= replay.max_steps) {
        if (sched
                .Complete(w, id, run.attempt, {{"ood_acc", c.values.back()}}, 1)
                .ok()) {
          ++r.finished;
        }
        ended.push_back(id);
      }
    }
    for (const std::string& id : ended) running.erase(id);
  }
  std::map<std::string, std::map<int, std::vector<double>>> done;
  std::set<std::string> groups;
  for (const Curve& c : replay.trials) groups.insert(c.group);
  const std::vector<store::TrialRecord> trials = *sched.ListTrials("replay");
  out.trials = static_cast<int>(trials.size());
  for (const store::TrialRecord& t : trials) {
    if (t.state != store::TrialState::kSucceeded) continue;
    const Curve& c = pool[curve_of_trial.at(t.trial_id)];
    done[c.group][c.k].push_back(c.values.back());
  }
  for (const std::string& g : groups) {
    r.k_star[g] = done.count(g) ? ArgmaxK(done[g], nullptr) : 0;
  }
  auto usage = sched.GetSearchUsage("replay");
  if (usage.ok()) {
    out.usage_used = usage->trial_steps_used;
    out.usage_full = usage->full_grid_trial_steps;
  }
  const std::vector<store::DecisionRecord> log =
      *store.ListDecisions("replay", 0, 0);
  out.decisions = static_cast<int>(log.size());
  std::map<std::string, std::string> settled;
  for (const store::DecisionRecord& d : log) {
    if (d.trial_id.empty()) settled[d.group] = d.action;
  }
  out.settled = static_cast<int>(settled.size());
  for (const auto& [group, action] : settled) {
    out.resolved += action == "resolved";
  }
  out.wall_s = absl::ToDoubleSeconds(absl::Now() - wall0);
  return out;
}

struct SchedCase {
  std::string name;
  std::string search;  // the sweep file's search block (flow style)
  std::string top_k;   // the grid's top_k axis
  std::string seeds = "[0, 1, 2]";  // the sweep's seeds
};

std::string AshaSearch(const AshaCase& a) {
  return absl::StrCat(
      "{strategy: asha, metric: ood_acc, min_steps: ", a.min_steps,
      ", reduction: ", a.eta,
      a.smooth > 1 ? absl::StrCat(", smooth_evals: ", a.smooth) : "",
      a.seeds ? ", aggregate_seeds: true" : "",
      a.neighbors ? ", keep_neighbors: top_k" : "",
      ", group_by: [M, attention]}");
}

void ThroughScheduler(const Replay& replay, const GridTruth& g, int workers,
                      const std::vector<SchedCase>& cases) {
  std::printf(
      "\n## Through the real scheduler: %s (coordinator::Scheduler, "
      "InMemoryStore, fake clock, one fake worker with %d slots)\n\n"
      "Trial-steps and trials are compared with the full 1..8 grid (%d "
      "trials, %lld trial-steps). Refine: k* is the argmax of the mean over "
      "the finished trials (refine's x*); resolved = groups whose last group "
      "decision is `resolved`.\n\n"
      "| policy | grid top_k | trial-steps | vs grid | scheduler's usage "
      "(used / full) | finished trials | trials (vs the grid's 384) | stops | "
      "re-leases | ticks | "
      "decisions logged | resolved | k* = grid's | k* = noiseless | mean "
      "regret | wall s |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
      replay.name.c_str(), workers, g.trials,
      static_cast<long long>(g.trial_steps));
  for (const SchedCase& c : cases) {
    const SchedulerRun run =
        SimulateScheduler(replay, workers, c.search, c.top_k, c.seeds);
    const SimResult& r = run.sim;
    const Score s = Compare(g, r.k_star);
    std::printf(
        "| %s | %s | %lld | %.2fx fewer | %lld / %lld | %d | %d (%.0f%%) | %d "
        "| %d | "
        "%lld | %d | %d/%d | %d/%d (%.0f%%) | %s | %.4f | %.1f |\n",
        c.name.c_str(), c.top_k.c_str(), static_cast<long long>(r.trial_steps),
        static_cast<double>(g.trial_steps) /
            static_cast<double>(std::max<int64_t>(1, r.trial_steps)),
        static_cast<long long>(run.usage_used),
        static_cast<long long>(run.usage_full), r.finished, run.trials,
        100.0 * run.trials / std::max(1, g.trials), r.prunes, r.promotions,
        static_cast<long long>(r.ticks), run.decisions, run.resolved,
        run.settled, s.match, s.groups, 100.0 * s.match / std::max(1, s.groups),
        NoiselessMatch(g, r.k_star).c_str(), s.mean_regret, run.wall_s);
  }
}

void Refine(const std::vector<TrialDef>& study, const GridTruth& g,
            const std::map<std::string, int>& k_true) {
  std::printf(
      "\n## Refine (axis top_k, bounds [1, 8], group_by [M, attention]; "
      "final accuracy at 2700 steps)\n\n"
      "Full 1..8 grid: %d trials (8 k x 3 seeds x 16 groups).\n\n"
      "| initial k | seeds | add_seeds | tolerance | trials | vs full grid | "
      "rounds | "
      "resolved | unresolved | k* = grid's | k* = noiseless | mean regret "
      "| max regret |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
      g.trials);
  std::set<std::string> groups;
  for (const TrialDef& t : study) groups.insert(t.group);
  struct Case {
    std::vector<int64_t> initial;
    std::vector<int64_t> seeds;
    int64_t add_seeds;
    double tolerance = 0;
  };
  for (const Case& cs : std::vector<Case>{{{1, 2, 4, 8}, {0, 1, 2}, 0},
                                          {{1, 2, 4, 8}, {0, 1, 2}, 1},
                                          {{2, 5, 8}, {0, 1, 2}, 1},
                                          {{1, 2, 4, 8}, {0, 1}, 1},
                                          {{2, 5, 8}, {0, 1}, 1},
                                          {{2, 5}, {0, 1}, 1},
                                          {{1, 2, 4, 8}, {0}, 2},
                                          {{1, 2, 4, 8}, {0, 1, 2}, 1, 0.002},
                                          {{1, 2, 4, 8}, {0, 1, 2}, 1, 0.005},
                                          {{1, 2, 4, 8}, {0, 1}, 1, 0.005},
                                          {{1, 2, 4, 8}, {0, 1}, 2, 0.005},
                                          {{2, 5}, {0, 1}, 2, 0.005}}) {
    RefineConfig c;
    c.lo = 1;
    c.hi = kExperts;
    c.seeds = cs.seeds;
    c.add_seeds = cs.add_seeds;
    c.tolerance = cs.tolerance;
    std::vector<RefinePoint> points;
    auto measure = [&](const std::string& group, int64_t x, int64_t seed) {
      // group "M=<m>,attention=<a>"
      int m = 0;
      std::sscanf(group.c_str(), "M=%d", &m);
      const int attention = group.find("linear") != std::string::npos;
      const TrialDef t = MakeTrial(m, static_cast<int>(x), attention, seed);
      points.push_back({group, x, seed, true, false, AccAt(t, kSteps)});
    };
    for (const std::string& group : groups) {
      for (int64_t x : cs.initial) {
        for (int64_t s : cs.seeds) measure(group, x, s);
      }
    }
    int rounds = 0;
    RefineResult r;
    while (true) {
      r = DecideRefine(c, points);
      if (r.proposals.empty()) break;
      ++rounds;
      for (const RefineProposal& p : r.proposals) {
        measure(p.group, p.x, p.seed);
      }
    }
    std::map<std::string, int> k_star;
    int resolved = 0, unresolved = 0;
    int true_match = 0;
    for (const RefineGroup& rg : r.groups) {
      k_star[rg.group] = static_cast<int>(rg.best);
      resolved += rg.state == RefineState::kResolved;
      unresolved += rg.state != RefineState::kResolved;
      true_match += rg.best == k_true.at(rg.group);
    }
    const Score s = Compare(g, k_star);
    std::string initial, seeds;
    for (int64_t x : cs.initial) absl::StrAppend(&initial, x, " ");
    for (int64_t x : cs.seeds) absl::StrAppend(&seeds, x, " ");
    std::printf(
        "| %s| %s| %lld | %g | %zu | %.0f%% | %d | %d/%zu | %d | %d/%d "
        "(%.0f%%) | %d/%d | %.4f | %.4f |\n",
        initial.c_str(), seeds.c_str(), static_cast<long long>(cs.add_seeds),
        cs.tolerance, points.size(),
        100.0 * static_cast<double>(points.size()) / g.trials, rounds, resolved,
        r.groups.size(), unresolved, s.match, s.groups,
        100.0 * s.match / s.groups, true_match, s.groups, s.mean_regret,
        s.max_regret);
  }
}

}  // namespace
}  // namespace smoe::analysis::search

int main(int argc, char** argv) {
  using namespace smoe::analysis::search;  // NOLINT
  // Arguments: [--seed=N] [--no-mini] [--pure-only] [CSV of the recorded
  // study].
  std::string csv = "bench/data/sraven-cpu-mini-ood-acc.csv";
  bool mini_study = true;
  bool pure_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--seed=", 0) == 0) {
      g_noise_seed = std::stoull(a.substr(7));
    } else if (a == "--no-mini") {
      mini_study = false;
    } else if (a == "--median") {
      g_median_sched = true;
    } else if (a == "--config-replay") {
      g_config_replay = true;
    } else if (a == "--pure-only") {
      pure_only = true;
    } else {
      csv = a;
    }
  }
  const std::vector<TrialDef> study = Study();
  const Replay synthetic = SyntheticReplay(study);
  GridTruth g = FullGrid(synthetic);
  const std::map<std::string, int> k_true = NoiselessKStar(study);
  g.k_true = k_true;
  std::printf(
      "# Adaptive-sweep replay\n\n"
      "## Synthetic study\n\n"
      "384 trials = 8 M x 8 k x 2 attentions x 3 seeds, %lld steps each, "
      "evaluations every %lld steps.\n"
      "Generator: final acc = 0.97 - E(k, M) + N(0, 0.005), E = 0.005 M^2/k "
      "+ 0.03 sqrt(M k d log(32/k)), d = 1.0 softmax / 1.3 linear;\n"
      "acc(s) = 0.125 + (final - 0.125)(1 - exp(-s/tau_k))/(1 - "
      "exp(-2700/tau_k)) + N(0, 0.003), tau_k = 405 (1 + 0.05 (k - 1)); "
      "smoe::Rng seed %llu.\n\n",
      static_cast<long long>(kSteps), static_cast<long long>(kEvalEvery),
      static_cast<unsigned long long>(g_noise_seed));
  std::printf(
      "k* per group (full grid, mean of 3 seeds; noiseless in "
      "brackets):\n\n| M | softmax | linear |\n|---|---|---|\n");
  for (int m = 1; m <= 8; ++m) {
    std::printf("| %d | %d (%d) | %d (%d) |\n", m, g.k_star.at(GroupOf(m, 0)),
                k_true.at(GroupOf(m, 0)), g.k_star.at(GroupOf(m, 1)),
                k_true.at(GroupOf(m, 1)));
  }
  // Per trial (as before), then per configuration (aggregate_seeds), with
  // and without keep_neighbors.
  EarlyStopping(synthetic, g, 16,
                {{100, 3},
                 {300, 3},
                 {900, 3},
                 {300, 2},
                 {300, 3, 3},
                 {300, 2, 3},
                 {300, 3, 3, 3},
                 {300, 3, 1, 1, false, true},
                 {300, 3, 3, 1, false, true},
                 {300, 3, 1, 1, true},
                 {300, 3, 3, 1, true},
                 {100, 3, 1, 1, true, true},
                 {100, 3, 3, 1, true, true},
                 {200, 3, 3, 1, true, true},
                 {300, 3, 1, 1, true, true},
                 {300, 3, 3, 1, true, true},
                 {300, 2, 3, 1, true, true},
                 {100, 4, 3, 1, true, true},
                 {300, 4, 3, 1, true, true},
                 {600, 3, 3, 1, true, true}},
                {300});
  RankStability(synthetic, g);
  if (pure_only) return 0;
  const std::string full = "[1, 2, 3, 4, 5, 6, 7, 8]";
  const std::string paper = "[1, 2, 4, 8]";
  const std::string refine =
      "{strategy: refine, metric: ood_acc, axis: top_k, bounds: [1, 8], "
      "group_by: [M, attention], add_seeds: 1";
  std::vector<SchedCase> cases;
  for (const AshaCase& a : std::vector<AshaCase>{{300, 3},
                                                 {300, 3, 3},
                                                 {300, 2, 3},
                                                 {300, 3, 3, 1, true},
                                                 {300, 3, 3, 1, true, true},
                                                 {300, 2, 3, 1, true, true}}) {
    cases.push_back({AshaName(a), AshaSearch(a), full});
  }
  // The median rule through the scheduler (unchanged since
  // search-replay-2026-11-25b.md: 1.01x, 3-7 min of wall per seed) only
  // with --median.
  if (g_median_sched) {
    cases.push_back({"median min_steps 300",
                     "{strategy: median, metric: ood_acc, min_steps: 300, "
                     "group_by: [M, attention]}",
                     full});
  }
  cases.push_back({"refine, add_seeds 1", refine + "}", paper});
  cases.push_back({"refine, add_seeds 1, tolerance 0.005",
                   refine + ", tolerance: 0.005}", paper});
  cases.push_back({"refine, seeds [0, 1], add_seeds 2, tolerance 0.005",
                   "{strategy: refine, metric: ood_acc, axis: top_k, bounds: "
                   "[1, 8], group_by: [M, attention], add_seeds: 2, "
                   "tolerance: 0.005}",
                   paper, "[0, 1]"});
  cases.push_back({"refine, seeds [0, 1], add_seeds 2",
                   "{strategy: refine, metric: ood_acc, axis: top_k, bounds: "
                   "[1, 8], group_by: [M, attention], add_seeds: 2}",
                   paper, "[0, 1]"});
  for (const AshaCase& a : std::vector<AshaCase>{{300, 3}, {300, 3, 3}}) {
    cases.push_back(
        {absl::StrCat("refine + ", AshaName(a), ", add_seeds 1"),
         absl::StrCat(
             refine, ", early_stop: asha, min_steps: ", a.min_steps,
             ", reduction: ", a.eta,
             a.smooth > 1 ? absl::StrCat(", smooth_evals: ", a.smooth) : "",
             "}"),
         paper});
  }
  ThroughScheduler(synthetic, g, 16, cases);
  Refine(study, g, k_true);
  // Sensitivity: the same study without the slower learning of larger k
  // (tau_k = 405 for every k: curves of different k do not cross).
  g_tau_slope = 0;
  Replay flat = SyntheticReplay(Study());
  flat.name = "synthetic without crossing curves (tau_k = 405 for all k)";
  GridTruth fg = FullGrid(flat);
  fg.k_true = k_true;  // the same E(k, M)
  EarlyStopping(flat, fg, 16, {{100, 3}, {300, 3}, {900, 3}, {300, 2}}, {});
  // The CPU miniature study's recorded curves.
  if (!mini_study) return 0;
  Replay mini;
  if (!CsvReplay(csv, &mini)) {
    std::printf("\n(no recorded study: %s not readable; pass its path)\n",
                csv.c_str());
    return 0;
  }
  const GridTruth mg = FullGrid(mini);
  std::printf(
      "\n## Recorded study: sraven-cpu-mini (%s)\n\n"
      "%zu trials (M 1-4 x top_k {1,2,3,4,6,8} x softmax x 3 seeds, 2500 "
      "steps, eval/ood_acc every 500 steps). Full grid k*: ",
      csv.c_str(), mini.trials.size());
  for (const auto& [group, k] : mg.k_star) {
    std::printf("%s k*=%d; ", group.c_str(), k);
  }
  std::printf("\n");
  EarlyStopping(mini, mg, 16, {{500, 3}, {500, 2}}, {500, 1000});
  return 0;
}
