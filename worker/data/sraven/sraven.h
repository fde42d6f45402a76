// Copyright 2026 SMoE Lab authors.
//
// File: worker/data/sraven/sraven.h
//
// The deterministic SRAVEN generator (symbolic Raven's progressive matrices),
// exactly per docs/sraven.md section 1.
//
// A problem is a 3x3 grid of panels; each panel holds M features, each an
// integer in [0, F). Every feature follows one of R rules (1.1) row by row.
// The multiset of rules of a problem is its "latent"; a seeded 25% of all
// C(R+M-1, M) latents is held out as the OOD split (1.2). Feature slots are
// shuffled independently per column, consistently down the rows (1.3). The
// model sees 8*M one-hot context tokens and M all-zero query tokens and
// predicts the M (shuffled) values of panel (2, 2) (1.4).
//
// Determinism contract. Everything is drawn with smoe::Rng (common/rng.h),
// whose integer outputs are bit-identical on every platform, so a config
// produces the same problems on every machine and in every process:
//   * OOD split: Rng::ForStream(seed, {kLatentSplitStream}).Permutation(N);
//     the first floor(frac_ood * N) latent indices of that permutation are
//     OOD, the rest are in-distribution.
//   * Problem `i` of batch `b` of split `s`: one generator
//     Rng::ForStream(seed, {StreamId(s), b, i}), consumed in this order:
//       1. latent: UniformInt(latents(s).size());
//       2. for feature j = 0..M-1 in order, the grid of rule latent[j]:
//            constant, progressions: per row r = 0,1,2 one UniformInt(F);
//            addition, subtraction:  per row a = UniformInt(F), then b;
//            distribute-three: SampleWithoutReplacement(F, 3) once, then per
//              row a Permutation(3) `p` with V[r][c] = symbols[p[c]];
//       3. if permute_features: for column c = 0,1,2 a Permutation(M).
//   * Stream ids: train = kTrainStream, test = kTestStream, ood =
//     kOodStream, val = kValStream. With shared_stream = true train, test and
//     ood use kTrainStream (the original code's quirk, 1.5): test batch b is
//     then bit-identical to train batch b, and ood batch b uses the same
//     draws on the OOD list. The validation split (issue 33: the split
//     hyperparameters are selected on) always draws from kValStream, shared
//     or not, so selection never sees a training or test problem's draws.
//     Adding it changed no other split's stream: the existing splits'
//     problems are the same as before it existed.
// Changing any of this changes every golden sample (testdata/) and every
// experiment's data, so treat it as a wire format.
//
// Thread safety: a Generator is immutable after Create(); all const methods
// may be called concurrently.
#ifndef SMOE_WORKER_DATA_SRAVEN_SRAVEN_H_
#define SMOE_WORKER_DATA_SRAVEN_SRAVEN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace smoe::sraven {

// Rules in docs/sraven.md 1.1 order (the original `jax.lax.switch` order). A
// rule index is the enumerator's value.
enum Rule : int {
  kConstant = 0,           // V[r] = (s_r, s_r, s_r)
  kProgressionPlus1 = 1,   // V[r][c] = (s_r + c) mod F
  kProgressionPlus2 = 2,   // V[r][c] = (s_r + 2c) mod F
  kProgressionMinus1 = 3,  // V[r][c] = (s_r - c) mod F
  kProgressionMinus2 = 4,  // V[r][c] = (s_r - 2c) mod F
  kAddition = 5,           // V[r] = (a_r, b_r, (a_r + b_r) mod F)
  kSubtraction = 6,        // V[r] = (a_r, b_r, (a_r - b_r) mod F)
  kDistributeThree = 7,    // rows are permutations of one 3-symbol set per grid
};
inline constexpr int kMaxRules = 8;
inline constexpr int kMaxFeatures = 8;
inline constexpr int kMinValues = 3;  // distribute-three needs 3 symbols
inline constexpr int kMaxValues = 256;
inline constexpr int kGrid = 3;  // 3x3 panels

// Returns the rule's name: "constant", "progression+1", "progression+2",
// "progression-1", "progression-2", "addition", "subtraction",
// "distribute-three"; "unknown" for an index outside 0..7.
const char* RuleName(int rule);

// kVal: the validation split, problems of the in-distribution (training)
// rule combinations from a stream of their own, for selecting
// hyperparameters without touching the test problems.
enum class Split { kTrain, kTest, kOod, kVal };

// Parses "train", "test", "ood" or "val" (exact, lower case). Anything else:
// InvalidArgument naming the value.
absl::StatusOr<Split> ParseSplit(absl::string_view name);

// Returns "train", "test", "ood" or "val".
const char* SplitName(Split s);

// Stream ids under the run seed (see the determinism contract above).
inline constexpr uint64_t kLatentSplitStream = 0x5350'4C49'5400ULL;  // "SPLIT"
inline constexpr uint64_t kTrainStream = 1;
inline constexpr uint64_t kTestStream = 2;
inline constexpr uint64_t kOodStream = 3;
inline constexpr uint64_t kValStream = 4;

struct SravenConfig {
  int num_features = 4;    // M, the difficulty; 1..8
  int num_values = 8;      // F; kMinValues..kMaxValues
  int num_rules = 8;       // R: the first R rules in rule order; 1..8
  double frac_ood = 0.25;  // [0, 1); floor(frac_ood * N) latents held out
  bool permute_features = true;
  uint64_t seed = 0;  // run seed: selects the OOD split and all streams
  // true = reproduce the original quirk: train/test/ood share one stream.
  bool shared_stream = false;
};

// Returns C(num_rules + num_features - 1, num_features), the number of
// latents (multisets). REQUIRES: 1 <= num_rules, num_features <= 8.
int64_t NumLatents(int num_rules, int num_features);

// Returns all multisets of `num_features` rule indices from 0..num_rules-1,
// each non-decreasing, in itertools.combinations_with_replacement order
// (lexicographic). REQUIRES: as NumLatents.
std::vector<std::vector<int>> EnumerateLatents(int num_rules, int num_features);

struct Problem {
  int M = 0;
  int F = 0;
  // Index of the latent in the full enumeration (EnumerateLatents order).
  int latent_id = -1;
  std::vector<int> rules;  // [M] rule of each feature (before permutation),
                           // non-decreasing (= the latent)
  std::vector<int> grid;   // [3][3][M] row-major, before permutation
  // [3][M]: permutation[c][s] = feature held by slot s of column c.
  std::vector<int> permutation;
  // [3][3][M]: what the model sees, panels[r][c][s] = grid[r][c][perm[c][s]].
  std::vector<int> panels;
  std::vector<int> answer;  // [M] = panels[2][2][*]

  // Accessors into the flat row-major arrays. REQUIRES: indices in range.
  int GridAt(int r, int c, int feature) const {
    return grid[(r * kGrid + c) * M + feature];
  }
  int PanelAt(int r, int c, int slot) const {
    return panels[(r * kGrid + c) * M + slot];
  }
  int PermAt(int c, int slot) const { return permutation[c * M + slot]; }
};

class Generator {
 public:
  // Validates `config` and builds the latent lists. Errors: InvalidArgument
  // naming the field and its value (e.g. "num_features=9: must be in 1..8")
  // when a field is out of range, or when frac_ood holds out every latent.
  static absl::StatusOr<Generator> Create(const SravenConfig& config);

  const SravenConfig& config() const { return config_; }

  // 9 * M: 8*M context tokens, then M query tokens.
  int seq_len() const { return 9 * config_.num_features; }

  // The split's latents, each a sorted multiset, in enumeration order.
  // kTrain, kTest and kVal return the same (in-distribution) list; kOod the
  // held-out list, which is empty when floor(frac_ood * N) == 0.
  const std::vector<std::vector<int>>& latents(Split split) const;

  // The enumeration ids (indices into all_latents()) of latents(split),
  // ascending.
  const std::vector<int>& latent_ids(Split split) const;

  // Every latent in enumeration order; size num_latents_total().
  const std::vector<std::vector<int>>& all_latents() const {
    return all_latents_;
  }

  // True when enumeration id `latent_id` is held out. REQUIRES: in range.
  bool IsOod(int latent_id) const { return is_ood_[latent_id] != 0; }

  // C(R+M-1, M).
  int64_t num_latents_total() const {
    return static_cast<int64_t>(all_latents_.size());
  }

  // Problem `index_in_batch` of batch `batch_index` of `split`: a pure
  // function of (config, split, batch_index, index_in_batch), independent of
  // any batch size. REQUIRES: index_in_batch >= 0; latents(split) non-empty
  // (aborts otherwise).
  Problem Sample(Split split, uint64_t batch_index, int index_in_batch) const;

  // Fills `inputs` [batch_size, 9M, F] float32 with the one-hot encoding of
  // problems Sample(split, batch_index, i), i = 0..batch_size-1: token
  // t = M*p + s (panel p = 3r + c for p < 8, slot s) is one_hot(panels[r][c]
  // [s]); the M query tokens t >= 8M are all zero. Fills `targets`
  // [batch_size, M] int64 with each problem's answer. Caller owns the
  // buffers. REQUIRES: as Sample; batch_size >= 0; buffers hold
  // batch_size*9M*F and batch_size*M elements.
  void SampleBatch(Split split, uint64_t batch_index, int batch_size,
                   float* inputs, int64_t* targets) const;

  // The stream id that problems of `split` are drawn from under this config
  // (kTrainStream for train, test and ood when shared_stream; kValStream for
  // val always).
  uint64_t StreamId(Split split) const;

 private:
  Generator() = default;

  SravenConfig config_;
  std::vector<std::vector<int>> all_latents_;
  std::vector<std::vector<int>> in_dist_;  // train, test and val
  std::vector<std::vector<int>> ood_;
  std::vector<int> in_dist_ids_;
  std::vector<int> ood_ids_;
  std::vector<char> is_ood_;  // [N]
};

}  // namespace smoe::sraven

#endif  // SMOE_WORKER_DATA_SRAVEN_SRAVEN_H_
