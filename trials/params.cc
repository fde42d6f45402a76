// Copyright 2026 SMoE Lab authors.
#include "trials/params.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/suggest.h"

namespace smoe::trials {
namespace {

using json = nlohmann::json;

// Why a value is refused; kNone when it is allowed.
enum class Problem { kNone, kType, kRange, kChoice, kMultiple, kEmpty };

// Integers: any JSON integer; with `integral_floats` also a float with an
// integral value below 9e15 in magnitude. A JSON integer above INT64_MAX is
// out of every range.
Problem CheckInt(const Param& p, const json& v, bool integral_floats) {
  int64_t x = 0;
  if (v.is_number_unsigned()) {  // NOTE: is_number_integer() is true too.
    if (v.get<uint64_t>() >
        static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Problem::kRange;
    }
    x = static_cast<int64_t>(v.get<uint64_t>());
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (integral_floats && v.is_number_float() &&
             std::isfinite(v.get<double>()) &&
             v.get<double>() == std::floor(v.get<double>()) &&
             std::fabs(v.get<double>()) < 9e15) {
    x = static_cast<int64_t>(v.get<double>());
  } else {
    return Problem::kType;
  }
  return x >= p.int_lo && x <= p.int_hi ? Problem::kNone : Problem::kRange;
}

Problem CheckNumber(const Param& p, const json& v) {
  if (!v.is_number()) return Problem::kType;
  const double x = v.get<double>();
  const Range& r = p.range;
  const bool lo_ok = r.lo_open ? x > r.lo : x >= r.lo;
  const bool hi_ok = r.hi_open ? x < r.hi : x <= r.hi;
  if (!(lo_ok && hi_ok)) return Problem::kRange;
  if (p.multiple_of > 0) {
    const double n = x / p.multiple_of;
    if (std::fabs(n - std::round(n)) > 1e-9) return Problem::kMultiple;
  }
  return Problem::kNone;
}

Problem CheckString(const Param& p, const json& v) {
  if (!v.is_string()) return Problem::kType;
  const std::string& s = v.get_ref<const std::string&>();
  if (!p.choices.empty() &&
      std::find(p.choices.begin(), p.choices.end(), s) == p.choices.end()) {
    return Problem::kChoice;
  }
  if (p.non_empty && s.empty()) return Problem::kEmpty;
  return Problem::kNone;
}

Problem Check(const Param& p, const json& v, bool integral_floats) {
  switch (p.type) {
    case ParamType::kInt:
      return CheckInt(p, v, integral_floats);
    case ParamType::kNumber:
      return CheckNumber(p, v);
    case ParamType::kString:
      return CheckString(p, v);
    case ParamType::kBool:
      return v.is_boolean() ? Problem::kNone : Problem::kType;
  }
  return Problem::kType;
}

// The value's extra rule (Param::check for strings, Param::number_check
// for numbers), after the table's own checks.
absl::Status CheckExtra(const Param& p, const json& v) {
  if (p.type == ParamType::kNumber && p.number_check != nullptr) {
    return p.number_check(v.get<double>());
  }
  if (p.type != ParamType::kString || p.check == nullptr) {
    return absl::OkStatus();
  }
  return p.check(v.get_ref<const std::string&>());
}

// Numbers as a person writes them: integral values without a fraction.
std::string Num(double x) {
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  if (x == std::floor(x) && std::fabs(x) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(x));
  }
  return absl::StrCat(x);
}

bool Bounded(const Range& r) {
  return std::isfinite(r.lo) && std::isfinite(r.hi);
}

// "[0, 1)", "(0, 1]", ">= 0", "> 0", "<= 1", "any number".
std::string Interval(const Range& r) {
  const bool lo = std::isfinite(r.lo);
  const bool hi = std::isfinite(r.hi);
  if (lo && hi) {
    return absl::StrCat(r.lo_open ? "(" : "[", Num(r.lo), ", ", Num(r.hi),
                        r.hi_open ? ")" : "]");
  }
  if (lo) return absl::StrCat(r.lo_open ? "> " : ">= ", Num(r.lo));
  if (hi) return absl::StrCat(r.hi_open ? "< " : "<= ", Num(r.hi));
  return "any number";
}

// Per ParamType, in enum order: the name the tables show, and the noun
// phrase of the messages ("expected an integer", "must be true or false").
struct TypeWords {
  const char* name;
  const char* phrase;
};
constexpr TypeWords kTypeWords[] = {{"int", "an integer"},
                                    {"number", "a number"},
                                    {"string", "a string"},
                                    {"bool", "true or false"}};
static_assert(static_cast<int>(ParamType::kBool) + 1 ==
                  sizeof(kTypeWords) / sizeof(kTypeWords[0]),
              "one TypeWords per ParamType, in enum order");
std::string TypeName(ParamType t) {
  return kTypeWords[static_cast<int>(t)].name;
}
std::string TypePhrase(ParamType t) {
  return kTypeWords[static_cast<int>(t)].phrase;
}

// An integer range open on one side or both (a sweep file's declared
// params): ">= 1", "<= 9", "any integer"; "" when bounded on both sides.
std::string IntOneSided(const Param& p) {
  const bool lo = p.int_lo != std::numeric_limits<int64_t>::min();
  const bool hi = p.int_hi != std::numeric_limits<int64_t>::max();
  if (lo && hi) return "";
  if (lo) return absl::StrCat(">= ", p.int_lo);
  if (hi) return absl::StrCat("<= ", p.int_hi);
  return "any integer";
}

// What a refused value must be, to follow "must be " or "expected ":
// "an integer", "in 1..8" (`dotted`) or "in [1, 8]", "in [0, 1)", ">= 0",
// "one of {cpu, cuda}", "a multiple of 0.0625", "a non-empty string".
std::string Expected(Problem problem, const Param& p, bool dotted) {
  switch (problem) {
    case Problem::kNone:
    case Problem::kType:
      return TypePhrase(p.type);
    case Problem::kRange:
      if (p.type == ParamType::kInt) {
        if (const std::string one = IntOneSided(p); !one.empty()) return one;
        return dotted ? absl::StrCat("in ", p.int_lo, "..", p.int_hi)
                      : absl::StrCat("in [", p.int_lo, ", ", p.int_hi, "]");
      }
      return absl::StrCat(Bounded(p.range) ? "in " : "", Interval(p.range));
    case Problem::kChoice:
      return absl::StrCat("one of {", absl::StrJoin(p.choices, ", "), "}");
    case Problem::kMultiple:
      return absl::StrCat("a multiple of ", Num(p.multiple_of));
    case Problem::kEmpty:
      return "a non-empty string";
  }
  return "?";
}

std::string DefaultText(const Param& p) {
  if (p.default_value.is_null()) return "(required)";
  if (p.default_value.is_string()) {
    const std::string& s = p.default_value.get_ref<const std::string&>();
    return s.empty() ? "\"\"" : s;
  }
  if (p.default_value.is_number_float()) {
    return Num(p.default_value.get<double>());
  }
  return p.default_value.dump();
}

Param Make(std::string name, ParamType type, json def, std::string doc) {
  Param p;
  p.name = std::move(name);
  p.type = type;
  p.default_value = std::move(def);
  p.doc = std::move(doc);
  return p;
}

}  // namespace

Range Closed(double lo, double hi) { return Range{lo, hi, false, false}; }
Range OpenClosed(double lo, double hi) { return Range{lo, hi, true, false}; }
Range ClosedOpen(double lo, double hi) { return Range{lo, hi, false, true}; }
Range AnyNumber() { return Range{}; }

Param Param::MultipleOf(double step) && {
  multiple_of = step;
  return std::move(*this);
}

Param Param::NonEmpty() && {
  non_empty = true;
  return std::move(*this);
}

Param Param::Checked(absl::Status (*fn)(absl::string_view)) && {
  check = fn;
  return std::move(*this);
}

Param Param::CheckedNumber(absl::Status (*fn)(double)) && {
  number_check = fn;
  return std::move(*this);
}

Param Int(std::string name, int64_t def, int64_t lo, int64_t hi,
          std::string doc) {
  Param p = Make(std::move(name), ParamType::kInt, def, std::move(doc));
  p.int_lo = lo;
  p.int_hi = hi;
  return p;
}

Param Number(std::string name, double def, Range range, std::string doc) {
  Param p = Make(std::move(name), ParamType::kNumber, def, std::move(doc));
  p.range = range;
  return p;
}

Param Bool(std::string name, bool def, std::string doc) {
  return Make(std::move(name), ParamType::kBool, def, std::move(doc));
}

Param Choice(std::string name, std::string def,
             std::vector<std::string> choices, std::string doc) {
  Param p =
      Make(std::move(name), ParamType::kString, std::move(def), std::move(doc));
  p.choices = std::move(choices);
  return p;
}

Param String(std::string name, std::string def, std::string doc) {
  return Make(std::move(name), ParamType::kString, std::move(def),
              std::move(doc));
}

Param RequiredString(std::string name, std::string doc) {
  return Make(std::move(name), ParamType::kString, json(), std::move(doc))
      .NonEmpty();
}

const Param* TrialKind::Find(absl::string_view n) const {
  for (const Param& p : params) {
    if (p.name == n) return &p;
  }
  return nullptr;
}

const std::vector<const TrialKind*>& AllKinds() {
  static const auto* kinds =
      new std::vector<const TrialKind*>{&SravenKind(), &SkillMixKind()};
  return *kinds;
}

const TrialKind* FindKind(absl::string_view name) {
  for (const TrialKind* k : AllKinds()) {
    if (k->name == name) return k;
  }
  return nullptr;
}

json Defaults(const TrialKind& kind) {
  json out = json::object();
  for (const Param& p : kind.params) {
    if (!p.default_value.is_null()) out[p.name] = p.default_value;
  }
  return out;
}

absl::Status CheckSweepValue(const Param& p, const json& v,
                             absl::string_view where) {
  const Problem problem = Check(p, v, /*integral_floats=*/false);
  if (problem == Problem::kNone) return CheckExtra(p, v);
  return absl::InvalidArgumentError(
      absl::StrCat(where, ".", p.name, ": expected ",
                   problem == Problem::kRange ? "a value " : "",
                   Expected(problem, p, /*dotted=*/false), ", got ", v.dump()));
}

absl::Status CheckTrialValue(const TrialKind& kind, const Param& p,
                             const json& v) {
  const Problem problem = Check(p, v, kind.integral_floats);
  if (problem == Problem::kNone) return CheckExtra(p, v);
  return JsonParamError(
      p.name, v,
      absl::StrCat("must be ", Expected(problem, p, kind.dotted_ranges)));
}

std::string TrialKind::Suggest(absl::string_view name) const {
  std::vector<std::string> names;
  for (const Param& p : params) names.push_back(p.name);
  return DidYouMean(name, names);
}

absl::Status CheckTrialParam(const TrialKind& kind, absl::string_view key,
                             const json& v) {
  const Param* p = kind.Find(key);
  if (p == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown parameter \"", key,
                                                   "\" (value ", v.dump(), ")",
                                                   kind.Suggest(key)));
  }
  return CheckTrialValue(kind, *p, v);
}

absl::Status JsonParamError(absl::string_view key, const json& value,
                            absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(key, "=", value.dump(), ": ", why));
}

std::string Allowed(const Param& p) {
  switch (p.type) {
    case ParamType::kInt:
      if (const std::string one = IntOneSided(p); !one.empty()) return one;
      return absl::StrCat(p.int_lo, "..", p.int_hi);
    case ParamType::kNumber:
      return p.multiple_of > 0
                 ? absl::StrCat(Interval(p.range), ", multiple of ",
                                Num(p.multiple_of))
                 : Interval(p.range);
    case ParamType::kString:
      if (!p.choices.empty()) return absl::StrJoin(p.choices, ", ");
      return p.non_empty ? "non-empty string" : "any string";
    case ParamType::kBool:
      return "true, false";
  }
  return "?";
}

std::string FormatText(const TrialKind& kind) {
  // A long list of choices wraps after a comma, under its column.
  constexpr size_t kAllowedWidth = 36;
  auto wrap = [](const std::string& text) {
    std::vector<std::string> lines(1);
    for (absl::string_view part : absl::StrSplit(text, ", ")) {
      std::string& line = lines.back();
      if (!line.empty() && line.size() + 2 + part.size() > kAllowedWidth) {
        line += ",";
        lines.emplace_back();
      }
      absl::StrAppend(&lines.back(), lines.back().empty() ? "" : ", ", part);
    }
    return lines;
  };
  size_t w_name = 4, w_type = 4, w_allowed = 7, w_default = 7;
  for (const Param& p : kind.params) {
    w_name = std::max(w_name, p.name.size());
    w_type = std::max(w_type, TypeName(p.type).size());
    for (const std::string& l : wrap(Allowed(p))) {
      w_allowed = std::max(w_allowed, l.size());
    }
    w_default = std::max(w_default, DefaultText(p).size());
  }
  auto row = [&](const std::string& a, const std::string& b,
                 const std::string& c, const std::string& d,
                 const std::string& e) {
    std::string line =
        absl::StrCat(a, std::string(w_name - a.size() + 2, ' '), b,
                     std::string(w_type - b.size() + 2, ' '), c,
                     std::string(w_allowed - c.size() + 2, ' '), d,
                     std::string(w_default - d.size() + 2, ' '), e);
    line.erase(line.find_last_not_of(' ') + 1);
    return line + "\n";
  };
  std::string out = absl::StrCat(kind.name, ": ", kind.summary, "\n\n");
  out += row("name", "type", "allowed", "default", "meaning");
  for (const Param& p : kind.params) {
    const std::vector<std::string> allowed = wrap(Allowed(p));
    out += row(p.name, TypeName(p.type), allowed[0], DefaultText(p), p.doc);
    for (size_t i = 1; i < allowed.size(); ++i) {
      out += row("", "", allowed[i], "", "");
    }
  }
  return out;
}

std::string FormatMarkdown(const TrialKind& kind) {
  std::string out =
      "| param | type | allowed | default | meaning |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const Param& p : kind.params) {
    absl::StrAppend(&out, "| `", p.name, "` | ", TypeName(p.type), " | ",
                    Allowed(p), " | ", DefaultText(p), " | ", p.doc, " |\n");
  }
  return out;
}

KindView DefaultViewOf(const TrialKind& kind,
                       const std::vector<std::string>& axes,
                       const std::vector<std::string>& metrics) {
  if (!kind.view.x.empty()) return kind.view;
  KindView v;
  if (!axes.empty()) v.x = axes[0];
  if (axes.size() > 1) v.series = axes[1];
  if (axes.size() > 2) v.facet = axes[2];
  if (!metrics.empty()) v.metric = metrics[0];
  return v;
}

}  // namespace smoe::trials
