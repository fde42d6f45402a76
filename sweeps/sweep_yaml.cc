// Copyright 2026 SMoE Lab authors.
#include "sweeps/sweep_yaml.h"

#include <cctype>

#include "absl/strings/str_cat.h"
#include "common/utf8.h"

namespace smoe::sweeps::internal {

using nlohmann::json;

namespace {

// At most this many bytes of a value are echoed in a message; longer ones
// are cut (on a character boundary) and their length given.
constexpr size_t kMaxShownValue = 200;

}  // namespace

// Cuts `text` to at most kMaxShownValue bytes on a UTF-8 character boundary,
// with "... (N bytes)" when cut.
std::string Cut(std::string text) {
  if (text.size() <= kMaxShownValue) return text;
  const size_t total = text.size();
  size_t n = kMaxShownValue;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  text.resize(n);
  absl::StrAppend(&text, "... (", total, " bytes)");
  return text;
}

std::string Show(const json& v) { return Cut(v.dump()); }

// Converts a YAML scalar to JSON: ints, floats, bools, then strings.
absl::StatusOr<json> ScalarToJson(const YAML::Node& node,
                                  absl::string_view field) {
  if (!node.IsScalar()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": expected a scalar value, got a ",
                     node.IsSequence() ? "list" : "map"));
  }
  const std::string s = node.Scalar();
  if (InvalidUtf8Offset(s) >= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": value is not valid UTF-8"));
  }
  if (node.Tag() == "!") return json(s);  // quoted: always a string
  int64_t i;
  if (YAML::convert<int64_t>::decode(node, i) &&
      s.find_first_of(".eE") == std::string::npos) {
    return json(i);
  }
  double d;
  if (YAML::convert<double>::decode(node, d) && !s.empty() &&
      (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' ||
       s[0] == '+' || s[0] == '.')) {
    return json(d);
  }
  bool b;
  if (YAML::convert<bool>::decode(node, b)) return json(b);
  return json(s);
}

absl::StatusOr<int64_t> IntField(const YAML::Node& node,
                                 absl::string_view field, int64_t lo,
                                 int64_t hi) {
  auto v = ScalarToJson(node, field);
  if (!v.ok()) return v.status();
  if (!v->is_number_integer()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": expected an integer, got ", Show(*v)));
  }
  const int64_t x = v->get<int64_t>();
  if (x < lo || x > hi) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": value ", x, " out of range [", lo, ", ", hi, "]"));
  }
  return x;
}

}  // namespace smoe::sweeps::internal
