// Copyright 2026 SMoE Lab authors.
#include "worker/data/sraven/sraven.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/rng.h"

namespace smoe::sraven {
namespace {

// Non-negative remainder (Python/JAX `%`): Mod(-1, 8) == 7.
inline int Mod(int x, int n) {
  const int m = x % n;
  return m < 0 ? m + n : m;
}

// Step of a progression rule; 0 for other rules.
int ProgressionStep(int rule) {
  switch (rule) {
    case kProgressionPlus1:
      return 1;
    case kProgressionPlus2:
      return 2;
    case kProgressionMinus1:
      return -1;
    case kProgressionMinus2:
      return -2;
    default:
      return 0;
  }
}

// Draws one feature's 3x3 grid for `rule` into out[r*3 + c] (see the draw order
// in sraven.h).
void DrawRuleGrid(int rule, int F, Rng& rng, int out[kGrid * kGrid]) {
  const auto uniform = [&rng, F]() {
    return static_cast<int>(rng.UniformInt(static_cast<uint64_t>(F)));
  };
  switch (rule) {
    case kConstant:
      for (int r = 0; r < kGrid; ++r) {
        const int s = uniform();
        for (int c = 0; c < kGrid; ++c) out[r * kGrid + c] = s;
      }
      return;
    case kProgressionPlus1:
    case kProgressionPlus2:
    case kProgressionMinus1:
    case kProgressionMinus2: {
      const int step = ProgressionStep(rule);
      for (int r = 0; r < kGrid; ++r) {
        const int s = uniform();
        for (int c = 0; c < kGrid; ++c)
          out[r * kGrid + c] = Mod(s + step * c, F);
      }
      return;
    }
    case kAddition:
    case kSubtraction:
      for (int r = 0; r < kGrid; ++r) {
        const int a = uniform();
        const int b = uniform();
        out[r * kGrid + 0] = a;
        out[r * kGrid + 1] = b;
        out[r * kGrid + 2] = rule == kAddition ? Mod(a + b, F) : Mod(a - b, F);
      }
      return;
    case kDistributeThree: {
      const std::vector<int> symbols = rng.SampleWithoutReplacement(F, kGrid);
      for (int r = 0; r < kGrid; ++r) {
        const std::vector<int> p = rng.Permutation(kGrid);
        for (int c = 0; c < kGrid; ++c) out[r * kGrid + c] = symbols[p[c]];
      }
      return;
    }
    default:
      std::fprintf(stderr, "sraven: internal error: rule %d\n", rule);
      std::abort();
  }
}

absl::Status RangeError(absl::string_view field, double value,
                        absl::string_view want) {
  return absl::InvalidArgumentError(
      absl::StrCat("sraven config: ", field, "=", value, ": ", want));
}

}  // namespace

const char* RuleName(int rule) {
  switch (rule) {
    case kConstant:
      return "constant";
    case kProgressionPlus1:
      return "progression+1";
    case kProgressionPlus2:
      return "progression+2";
    case kProgressionMinus1:
      return "progression-1";
    case kProgressionMinus2:
      return "progression-2";
    case kAddition:
      return "addition";
    case kSubtraction:
      return "subtraction";
    case kDistributeThree:
      return "distribute-three";
    default:
      return "unknown";
  }
}

absl::StatusOr<Split> ParseSplit(absl::string_view name) {
  if (name == "train") return Split::kTrain;
  if (name == "test") return Split::kTest;
  if (name == "ood") return Split::kOod;
  if (name == "val") return Split::kVal;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown SRAVEN split '", name, "' (want train, test, ood or val)"));
}

const char* SplitName(Split s) {
  switch (s) {
    case Split::kTrain:
      return "train";
    case Split::kTest:
      return "test";
    case Split::kOod:
      return "ood";
    case Split::kVal:
      return "val";
  }
  return "unknown";
}

int64_t NumLatents(int num_rules, int num_features) {
  // C(n, k) with n = R + M - 1, k = M; exact for these small sizes.
  const int64_t n = num_rules + num_features - 1;
  int64_t result = 1;
  for (int64_t i = 1; i <= num_features; ++i) {
    result = result * (n - num_features + i) / i;
  }
  return result;
}

std::vector<std::vector<int>> EnumerateLatents(int num_rules,
                                               int num_features) {
  std::vector<std::vector<int>> out;
  out.reserve(static_cast<size_t>(NumLatents(num_rules, num_features)));
  std::vector<int> cur(static_cast<size_t>(num_features), 0);
  while (true) {
    out.push_back(cur);
    // itertools.combinations_with_replacement: find the rightmost element that
    // can still grow, increment it and reset everything after it to its value.
    int i = num_features - 1;
    while (i >= 0 && cur[i] == num_rules - 1) --i;
    if (i < 0) break;
    const int v = cur[i] + 1;
    for (int j = i; j < num_features; ++j) cur[j] = v;
  }
  return out;
}

absl::StatusOr<Generator> Generator::Create(const SravenConfig& config) {
  if (config.num_features < 1 || config.num_features > kMaxFeatures) {
    return RangeError("num_features", config.num_features, "must be in 1..8");
  }
  if (config.num_values < kMinValues || config.num_values > kMaxValues) {
    return RangeError(
        "num_values", config.num_values,
        absl::StrCat("must be in ", kMinValues, "..", kMaxValues));
  }
  if (config.num_rules < 1 || config.num_rules > kMaxRules) {
    return RangeError("num_rules", config.num_rules, "must be in 1..8");
  }
  if (!(config.frac_ood >= 0.0 && config.frac_ood < 1.0)) {  // NaN fails too
    return RangeError("frac_ood", config.frac_ood, "must be in [0, 1)");
  }
  Generator g;
  g.config_ = config;
  g.all_latents_ = EnumerateLatents(config.num_rules, config.num_features);
  const int n = static_cast<int>(g.all_latents_.size());
  // Python's int(N * frac): truncation of the double product.
  const int n_ood =
      static_cast<int>(std::floor(static_cast<double>(n) * config.frac_ood));
  if (n_ood >= n) {
    return RangeError("frac_ood", config.frac_ood,
                      absl::StrCat("holds out all ", n, " latents"));
  }
  const std::vector<int> perm =
      Rng::ForStream(config.seed, {kLatentSplitStream}).Permutation(n);
  g.is_ood_.assign(static_cast<size_t>(n), 0);
  for (int i = 0; i < n_ood; ++i) g.is_ood_[perm[i]] = 1;
  for (int id = 0; id < n; ++id) {
    if (g.is_ood_[id]) {
      g.ood_ids_.push_back(id);
      g.ood_.push_back(g.all_latents_[id]);
    } else {
      g.in_dist_ids_.push_back(id);
      g.in_dist_.push_back(g.all_latents_[id]);
    }
  }
  return g;
}

const std::vector<std::vector<int>>& Generator::latents(Split split) const {
  return split == Split::kOod ? ood_ : in_dist_;
}

const std::vector<int>& Generator::latent_ids(Split split) const {
  return split == Split::kOod ? ood_ids_ : in_dist_ids_;
}

uint64_t Generator::StreamId(Split split) const {
  // The validation split never shares: selecting hyperparameters on training
  // (or test) problems is what it exists to avoid.
  if (split == Split::kVal) return kValStream;
  if (config_.shared_stream) return kTrainStream;
  switch (split) {
    case Split::kTrain:
      return kTrainStream;
    case Split::kTest:
      return kTestStream;
    case Split::kOod:
      return kOodStream;
    case Split::kVal:
      return kValStream;
  }
  return kTrainStream;
}

Problem Generator::Sample(Split split, uint64_t batch_index,
                          int index_in_batch) const {
  const std::vector<int>& ids = latent_ids(split);
  if (ids.empty() || index_in_batch < 0) {
    std::fprintf(stderr,
                 "sraven: Sample(%s, %llu, %d): precondition violated "
                 "(split has %zu latents)\n",
                 SplitName(split), static_cast<unsigned long long>(batch_index),
                 index_in_batch, ids.size());
    std::abort();
  }
  const int M = config_.num_features;
  const int F = config_.num_values;
  Rng rng = Rng::ForStream(
      config_.seed,
      {StreamId(split), batch_index, static_cast<uint64_t>(index_in_batch)});

  Problem p;
  p.M = M;
  p.F = F;
  p.latent_id = ids[rng.UniformInt(ids.size())];
  p.rules = all_latents_[p.latent_id];

  // 1. One grid per feature, in feature order.
  p.grid.assign(static_cast<size_t>(kGrid * kGrid * M), 0);
  int cells[kGrid * kGrid];
  for (int j = 0; j < M; ++j) {
    DrawRuleGrid(p.rules[j], F, rng, cells);
    for (int rc = 0; rc < kGrid * kGrid; ++rc) p.grid[rc * M + j] = cells[rc];
  }

  // 2. Per-column slot permutation, shared down the column.
  p.permutation.resize(static_cast<size_t>(kGrid * M));
  for (int c = 0; c < kGrid; ++c) {
    std::vector<int> pi(static_cast<size_t>(M));
    if (config_.permute_features) {
      pi = rng.Permutation(M);
    } else {
      for (int s = 0; s < M; ++s) pi[s] = s;
    }
    std::copy(pi.begin(), pi.end(), p.permutation.begin() + c * M);
  }

  // 3. What the model sees.
  p.panels.resize(p.grid.size());
  for (int r = 0; r < kGrid; ++r) {
    for (int c = 0; c < kGrid; ++c) {
      for (int s = 0; s < M; ++s) {
        p.panels[(r * kGrid + c) * M + s] = p.GridAt(r, c, p.PermAt(c, s));
      }
    }
  }
  p.answer.assign(p.panels.end() - M, p.panels.end());
  return p;
}

void Generator::SampleBatch(Split split, uint64_t batch_index, int batch_size,
                            float* inputs, int64_t* targets) const {
  const int M = config_.num_features;
  const int F = config_.num_values;
  const int64_t tokens = seq_len();
  const int64_t context = 8 * static_cast<int64_t>(M);
  std::fill(inputs, inputs + static_cast<int64_t>(batch_size) * tokens * F,
            0.0f);
  for (int b = 0; b < batch_size; ++b) {
    const Problem p = Sample(split, batch_index, b);
    float* x = inputs + static_cast<int64_t>(b) * tokens * F;
    // panels is [9][M] row-major, so token t < 8M reads panels[t].
    for (int64_t t = 0; t < context; ++t) x[t * F + p.panels[t]] = 1.0f;
    for (int s = 0; s < M; ++s) {
      targets[static_cast<int64_t>(b) * M + s] = p.answer[s];
    }
  }
}

}  // namespace smoe::sraven
