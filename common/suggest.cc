// Copyright 2026 SMoE Lab authors.
#include "common/suggest.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace smoe {
namespace {

std::string Normalise(absl::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '-' || c == '_' || c == '.' || c == ' ') continue;
    out.push_back(absl::ascii_tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// Optimal string alignment distance (Damerau-Levenshtein with adjacent
// transpositions, each substring edited once).
size_t EditDistance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] =
          std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

}  // namespace

std::string ClosestName(absl::string_view name,
                        const std::vector<std::string>& candidates) {
  const std::string n = Normalise(name);
  if (n.empty()) return "";
  const size_t limit = std::max<size_t>(1, n.size() / 4);
  std::string best;
  size_t best_d = limit + 1;
  for (const std::string& c : candidates) {
    if (c == name) continue;  // an exact match is no suggestion
    const size_t d = EditDistance(n, Normalise(c));
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string DidYouMean(absl::string_view name,
                       const std::vector<std::string>& candidates) {
  const std::string c = ClosestName(name, candidates);
  return c.empty() ? "" : absl::StrCat(" (did you mean '", c, "'?)");
}

}  // namespace smoe
