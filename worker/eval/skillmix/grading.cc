// Copyright 2026 SMoE Lab authors.
#include "worker/eval/skillmix/grading.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

namespace smoe::skillmix {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

absl::string_view AfterLast(absl::string_view s, absl::string_view sep) {
  const size_t pos = s.rfind(sep);
  return pos == absl::string_view::npos ? s : s.substr(pos + sep.size());
}

absl::string_view BeforeFirst(absl::string_view s, absl::string_view sep) {
  const size_t pos = s.find(sep);
  return pos == absl::string_view::npos ? s : s.substr(0, pos);
}

// utils.extract_numerator: keep [0-9./], cut "digits/..." to the digits,
// skip (nullopt) when empty or not a Python float.
std::optional<double> ExtractNumerator(absl::string_view cell) {
  std::string text;
  for (char c : cell) {
    if (IsDigit(c) || c == '.' || c == '/') text.push_back(c);
  }
  size_t digits = 0;
  while (digits < text.size() && IsDigit(text[digits])) ++digits;
  if (digits > 0 && digits < text.size() && text[digits] == '/') {
    text.resize(digits);
  }
  if (text.empty()) return std::nullopt;
  return PyFloat(text);
}

// Python's str.isdigit() restricted to ASCII.
size_t SkipNonDigits(absl::string_view s, size_t i) {
  while (i < s.size() && !IsDigit(s[i])) ++i;
  return i;
}

// One regex abbreviation substitution of count_num_sentences: `prefix`, then
// any one character except '\n' (a whole UTF-8 sequence), then ' ', becomes
// prefix + '.'.
std::string SubAbbreviation(absl::string_view text, absl::string_view prefix) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text.substr(i, prefix.size()) == prefix) {
      const size_t c = i + prefix.size();
      if (c < text.size() && text[c] != '\n') {
        const unsigned char lead = static_cast<unsigned char>(text[c]);
        size_t len = 1;
        if (lead >= 0xF0) {
          len = 4;
        } else if (lead >= 0xE0) {
          len = 3;
        } else if (lead >= 0xC0) {
          len = 2;
        }
        if (c + len < text.size() && text[c + len] == ' ') {
          out.append(prefix.data(), prefix.size());
          out.push_back('.');
          i = c + len + 1;
          continue;
        }
      }
    }
    out.push_back(text[i]);
    ++i;
  }
  return out;
}

bool IsQuote(char c) { return c == '\'' || c == '"'; }

}  // namespace

std::optional<double> PyFloat(absl::string_view s) {
  s = PyStrip(s);
  if (s.empty()) return std::nullopt;
  std::string clean;
  size_t i = 0;
  if (s[i] == '+' || s[i] == '-') clean.push_back(s[i++]);
  const std::string rest = absl::AsciiStrToLower(s.substr(i));
  if (rest == "inf" || rest == "infinity" || rest == "nan") {
    clean += rest;
    return std::strtod(clean.c_str(), nullptr);
  }
  // digitpart := digit (['_'] digit)*
  auto digitpart = [&](bool required) -> bool {
    if (i >= s.size() || !IsDigit(s[i])) return !required;
    clean.push_back(s[i++]);
    while (i < s.size()) {
      if (IsDigit(s[i])) {
        clean.push_back(s[i++]);
      } else if (s[i] == '_' && i + 1 < s.size() && IsDigit(s[i + 1])) {
        ++i;
      } else {
        break;
      }
    }
    return true;
  };
  const size_t int_start = i;
  digitpart(false);
  const bool has_int = i > int_start;
  bool has_frac = false;
  if (i < s.size() && s[i] == '.') {
    clean.push_back(s[i++]);
    const size_t frac_start = i;
    digitpart(false);
    has_frac = i > frac_start;
  }
  if (!has_int && !has_frac) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    clean.push_back(s[i++]);
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) clean.push_back(s[i++]);
    if (!digitpart(true)) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  return std::strtod(clean.c_str(), nullptr);
}

ParsedGrade ParseGradeTable(absl::string_view output) {
  absl::string_view out =
      PyStrip(AfterLast(output, "Here's the grading table:"));
  out = PyStrip(BeforeFirst(out, "Explanation:"));

  // Insertion-ordered dict: key -> value (a repeated key keeps its first
  // position and takes the later value).
  std::vector<std::pair<std::string, double>> dict;
  auto put = [](std::vector<std::pair<std::string, double>>& d,
                const std::string& key, double value) {
    for (auto& [k, v] : d) {
      if (k == key) {
        v = value;
        return;
      }
    }
    d.emplace_back(key, value);
  };
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (!absl::StrContains(line, '|') || absl::StrContains(line, "--") ||
        absl::StrContains(absl::AsciiStrToLower(line), "criteria")) {
      continue;
    }
    std::vector<absl::string_view> cells;
    for (absl::string_view cell : absl::StrSplit(line, '|')) {
      cell = PyStrip(cell);
      if (!cell.empty()) cells.push_back(cell);
    }
    if (cells.size() < 2) continue;  // reference: IndexError (see header)
    const std::optional<double> value = ExtractNumerator(cells[1]);
    if (!value.has_value()) continue;
    put(dict, absl::AsciiStrToLower(PyStrip(cells[0])), *value);
  }
  std::vector<std::pair<std::string, double>> renamed;
  for (const auto& [key, value] : dict) {
    put(renamed, absl::StrContains(key, "total") ? "score" : key, value);
  }
  ParsedGrade g;
  for (const auto& [key, value] : renamed) {
    if (key == "score") {
      g.score = value;
    } else {
      g.extracted_score += value;
    }
    if (!absl::StrContains(key, "score")) g.points.push_back(value);
  }
  return g;
}

ParsedGrade ParseGradeMarkers(absl::string_view output) {
  const std::string lower = absl::AsciiStrToLower(output);
  ParsedGrade g;
  std::vector<absl::string_view> pieces = absl::StrSplit(lower, "earned:");
  for (size_t p = 1; p < pieces.size(); ++p) {
    absl::string_view txt = PyStrip(pieces[p]);
    txt = BeforeFirst(txt, "\n");
    if (txt.empty()) continue;
    txt = BeforeFirst(txt, " ");
    if (txt.empty()) continue;
    txt = BeforeFirst(txt, "/");
    while (!txt.empty() && !IsDigit(txt.back())) txt.remove_suffix(1);
    g.points.push_back(PyFloat(txt).value_or(0.0));
  }
  for (double v : g.points) g.extracted_score += v;

  absl::string_view score = PyStrip(AfterLast(lower, "grade:"));
  size_t i = SkipNonDigits(score, 0);
  std::string res;
  for (; i < score.size() && (IsDigit(score[i]) || score[i] == '.'); ++i) {
    res.push_back(score[i]);
  }
  while (!res.empty() && res.back() == '.') res.pop_back();
  g.score = res.empty() ? 0.0 : PyFloat(res).value_or(0.0);
  return g;
}

ParsedGrade ParseGrade(GradingPrompt prompt, absl::string_view output) {
  return prompt == GradingPrompt::kGpt ? ParseGradeTable(output)
                                       : ParseGradeMarkers(output);
}

int CountSentences(absl::string_view text) {
  std::string t(text);
  for (absl::string_view prefix : {"Mr", "Mrs", "Ms", "Dr", "Prof"}) {
    t = SubAbbreviation(t, prefix);
  }
  int count = 1;
  size_t i = 0;
  while (i < t.size()) {
    const char c = t[i];
    if (c == '.' || c == '!' || c == '?') {
      size_t j = i + 1;
      while (j < t.size() && IsQuote(t[j])) ++j;
      if (j < t.size() && t[j] == ' ') {
        ++j;
        while (j < t.size() && IsQuote(t[j])) ++j;
        if (j < t.size() && t[j] >= 'A' && t[j] <= 'Z') {
          ++count;
          i = j + 1;
          continue;
        }
      }
    }
    ++i;
  }
  return count;
}

std::vector<double> FinalPoints(const std::vector<double>& parsed, int k,
                                absl::string_view answer,
                                const std::vector<std::string>& skills,
                                bool filter_explicit_name) {
  const size_t n = static_cast<size_t>(k + 3);
  std::vector<double> points = parsed;
  points.resize(n, 0.0);  // truncates, or pads with zeros
  points[n - 1] = CountSentences(answer) <= NumSentences(k) ? 1.0 : 0.0;
  if (filter_explicit_name) {
    const std::string text = absl::AsciiStrToLower(PyStrip(answer));
    for (size_t i = 0; i < skills.size() && i < static_cast<size_t>(k); ++i) {
      const std::string name =
          absl::AsciiStrToLower(PyStrip(BeforeFirst(skills[i], "(")));
      if (absl::StrContains(text, name)) points[i] = 0.0;
    }
  }
  return points;
}

}  // namespace smoe::skillmix
