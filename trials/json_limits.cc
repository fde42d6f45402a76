// Copyright 2026 SMoE Lab authors.
#include "trials/json_limits.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace smoe::trials {
namespace {

using json = nlohmann::json;

// Stand-ins for overflowing numbers while nlohmann parses the line (it
// refuses them): JSON strings whose value starts with a control character,
// so they cannot match real text. As written in the JSON, and as parsed.
constexpr char kPosInfJson[] = "\"\\u0001smoe+inf\"";
constexpr char kNegInfJson[] = "\"\\u0001smoe-inf\"";
constexpr char kPosInf[] = "\x01smoe+inf";
constexpr char kNegInf[] = "\x01smoe-inf";

bool IsNumberChar(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' ||
         c == 'e' || c == 'E';
}

// `text` with every number token outside strings that overflows a double
// replaced by a quoted stand-in; false when there is none.
bool ReplaceOverflows(absl::string_view text, std::string* out) {
  bool replaced = false;
  bool in_string = false;
  bool escaped = false;
  out->clear();
  out->reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (in_string) {
      out->push_back(c);
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      ++i;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out->push_back(c);
      ++i;
      continue;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      size_t j = i;
      while (j < text.size() && IsNumberChar(text[j])) ++j;
      const std::string token(text.substr(i, j - i));
      errno = 0;
      char* end = nullptr;
      const double v = std::strtod(token.c_str(), &end);
      if (end == token.c_str() + token.size() && std::isinf(v)) {
        out->append(v > 0 ? kPosInfJson : kNegInfJson);
        replaced = true;
      } else {
        out->append(token);
      }
      i = j;
      continue;
    }
    out->push_back(c);
    ++i;
  }
  return replaced;
}

// Turns the stand-ins back into infinities, without recursion.
void RestoreInfinities(json* root) {
  std::vector<json*> stack = {root};
  while (!stack.empty()) {
    json* j = stack.back();
    stack.pop_back();
    if (j->is_string()) {
      const std::string& s = j->get_ref<const std::string&>();
      if (s == kPosInf) {
        *j = std::numeric_limits<double>::infinity();
      } else if (s == kNegInf) {
        *j = -std::numeric_limits<double>::infinity();
      }
    } else if (j->is_structured()) {
      for (auto& child : *j) stack.push_back(&child);
    }
  }
}

}  // namespace

absl::Status CheckJsonDepth(absl::string_view text, absl::string_view what,
                            int max_depth) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, " nests deeper than ", max_depth,
                         " levels (at byte ", i, ")"));
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return absl::OkStatus();
}

json ParseJsonLine(absl::string_view text) {
  if (!CheckJsonDepth(text, "line").ok()) return json(json::value_t::discarded);
  json j = json::parse(text.begin(), text.end(), nullptr,
                       /*allow_exceptions=*/false);
  if (!j.is_discarded()) return j;
  std::string rewritten;
  if (!ReplaceOverflows(text, &rewritten)) return j;
  j = json::parse(rewritten, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded()) RestoreInfinities(&j);
  return j;
}

}  // namespace smoe::trials
