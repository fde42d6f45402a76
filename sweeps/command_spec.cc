// Copyright 2026 SMoE Lab authors.
#include "sweeps/command_spec.h"

#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "yaml-cpp/yaml.h"

namespace smoe::sweeps {
namespace {

using nlohmann::json;

constexpr size_t kMaxArgs = 1024;
constexpr size_t kMaxParams = 256;

bool ValidParamName(absl::string_view n) {
  if (n.empty() || n.size() > 64) return false;
  if (!absl::ascii_isalpha(n[0]) && n[0] != '_') return false;
  for (char c : n) {
    if (!absl::ascii_isalnum(c) && c != '_') return false;
  }
  return true;
}

// The {word} placeholders in `arg` that are not known.
std::vector<std::string> UnknownPlaceholders(const std::string& arg) {
  std::vector<std::string> out;
  size_t i = 0;
  while ((i = arg.find('{', i)) != std::string::npos) {
    size_t j = i + 1;
    while (j < arg.size() &&
           (absl::ascii_isalnum(arg[j]) || arg[j] == '_' || arg[j] == '.')) {
      ++j;
    }
    if (j < arg.size() && arg[j] == '}' && j > i + 1) {
      const std::string ph = arg.substr(i, j - i + 1);
      bool known = false;
      for (const char* k : kCommandPlaceholders) known |= ph == k;
      if (!known) out.push_back(ph);
    }
    i = j;
  }
  return out;
}

const char* TypeName(trials::ParamType t) {
  switch (t) {
    case trials::ParamType::kInt:
      return "int";
    case trials::ParamType::kNumber:
      return "number";
    case trials::ParamType::kString:
      return "string";
    case trials::ParamType::kBool:
      return "bool";
  }
  return "string";
}

bool HasMin(const trials::Param& p) {
  return p.type == trials::ParamType::kInt
             ? p.int_lo != std::numeric_limits<int64_t>::min()
             : std::isfinite(p.range.lo);
}
bool HasMax(const trials::Param& p) {
  return p.type == trials::ParamType::kInt
             ? p.int_hi != std::numeric_limits<int64_t>::max()
             : std::isfinite(p.range.hi);
}

// One `params.<name>: {...}` declaration. Returns false after a problem.
bool ParseDeclaration(const std::string& name, const YAML::Node& decl,
                      const ScalarReader& scalar, trials::Param* out,
                      std::vector<std::string>* problems) {
  const std::string field = absl::StrCat("params.", name);
  if (!decl.IsMap()) {
    problems->push_back(absl::StrCat(
        field,
        ": expected a map {type: int|number|string|bool, default, min, max, "
        "choices, doc}"));
    return false;
  }
  static const char* const kKeys[] = {"type", "default", "min",
                                      "max",  "choices", "doc"};
  bool ok = true;
  for (const auto& kv : decl) {
    const std::string key = kv.first.as<std::string>();
    bool known = false;
    for (const char* k : kKeys) known |= key == k;
    if (!known) {
      problems->push_back(
          absl::StrCat("unknown key '", field, ".", key,
                       "' (allowed: type, default, min, max, choices, doc)"));
      ok = false;
    }
  }
  trials::Param p;
  p.name = name;
  const YAML::Node type = decl["type"];
  if (!type || !type.IsScalar()) {
    problems->push_back(
        absl::StrCat(field, ".type: required (int, number, string or bool)"));
    return false;
  }
  const std::string t = type.Scalar();
  if (t == "int") {
    p.type = trials::ParamType::kInt;
  } else if (t == "number") {
    p.type = trials::ParamType::kNumber;
  } else if (t == "string") {
    p.type = trials::ParamType::kString;
  } else if (t == "bool") {
    p.type = trials::ParamType::kBool;
  } else {
    problems->push_back(absl::StrCat(field, ".type: '", t,
                                     "' is not one of {int, number, string, "
                                     "bool}"));
    return false;
  }
  const bool numeric =
      p.type == trials::ParamType::kInt || p.type == trials::ParamType::kNumber;
  // min / max: of the parameter's own type.
  for (const char* bound : {"min", "max"}) {
    const YAML::Node b = decl[bound];
    if (!b) continue;
    const std::string bfield = absl::StrCat(field, ".", bound);
    if (!numeric) {
      problems->push_back(absl::StrCat(bfield,
                                       ": only int and number parameters have ",
                                       bound, " (this one is ", t, ")"));
      ok = false;
      continue;
    }
    absl::StatusOr<json> v = scalar(b, bfield);
    if (!v.ok()) {
      problems->push_back(std::string(v.status().message()));
      ok = false;
      continue;
    }
    const bool is_min = std::string(bound) == "min";
    if (p.type == trials::ParamType::kInt) {
      if (!v->is_number_integer() || v->is_number_unsigned()) {
        problems->push_back(
            absl::StrCat(bfield, ": expected an integer, got ", v->dump()));
        ok = false;
        continue;
      }
      (is_min ? p.int_lo : p.int_hi) = v->get<int64_t>();
    } else {
      if (!v->is_number() || !std::isfinite(v->get<double>())) {
        problems->push_back(absl::StrCat(
            bfield, ": expected a finite number, got ", v->dump()));
        ok = false;
        continue;
      }
      (is_min ? p.range.lo : p.range.hi) = v->get<double>();
    }
  }
  if (p.type == trials::ParamType::kInt && p.int_lo > p.int_hi) {
    problems->push_back(absl::StrCat(field, ": min ", p.int_lo,
                                     " is larger than max ", p.int_hi));
    ok = false;
  }
  if (p.type == trials::ParamType::kNumber && p.range.lo > p.range.hi) {
    problems->push_back(absl::StrCat(field, ": min ", json(p.range.lo).dump(),
                                     " is larger than max ",
                                     json(p.range.hi).dump()));
    ok = false;
  }
  if (const YAML::Node c = decl["choices"]) {
    const std::string cfield = absl::StrCat(field, ".choices");
    if (p.type != trials::ParamType::kString) {
      problems->push_back(absl::StrCat(
          cfield, ": only string parameters have choices (this one is ", t,
          "; use min and max)"));
      ok = false;
    } else if (!c.IsSequence() || c.size() == 0) {
      problems->push_back(
          absl::StrCat(cfield, ": expected a non-empty list of strings"));
      ok = false;
    } else {
      std::set<std::string> seen;
      for (size_t i = 0; i < c.size(); ++i) {
        const std::string ifield = absl::StrCat(cfield, "[", i, "]");
        absl::StatusOr<json> v = scalar(c[i], ifield);
        if (!v.ok()) {
          problems->push_back(std::string(v.status().message()));
          ok = false;
          continue;
        }
        if (!v->is_string()) {
          problems->push_back(absl::StrCat(ifield, ": expected a string, got ",
                                           v->dump(), " (quote it)"));
          ok = false;
          continue;
        }
        if (!seen.insert(v->get<std::string>()).second) {
          problems->push_back(
              absl::StrCat(ifield, ": duplicate choice ", v->dump()));
          ok = false;
          continue;
        }
        p.choices.push_back(v->get<std::string>());
      }
    }
  }
  if (const YAML::Node d = decl["doc"]) {
    if (!d.IsScalar()) {
      problems->push_back(absl::StrCat(field, ".doc: expected a string"));
      ok = false;
    } else {
      p.doc = d.Scalar();
    }
  }
  if (const YAML::Node d = decl["default"]; d && ok) {
    const std::string dfield = absl::StrCat(field, ".default");
    absl::StatusOr<json> v = scalar(d, dfield);
    if (!v.ok()) {
      problems->push_back(std::string(v.status().message()));
      return false;
    }
    // The same check as a grid or fixed value; its message names
    // "params.<name>", which is this field plus ".default".
    absl::Status s = trials::CheckSweepValue(p, *v, "params");
    if (!s.ok()) {
      std::string m(s.message());
      const std::string prefix = field + ":";
      if (absl::StartsWith(m, prefix)) {
        m = absl::StrCat(dfield, ":", m.substr(prefix.size()));
      }
      problems->push_back(m);
      return false;
    }
    p.default_value = *v;
  }
  if (ok) *out = std::move(p);
  return ok;
}

// A value as the sweep file writes it: strings quoted, the rest as JSON.
void EmitValue(const json& v, YAML::Emitter* out) {
  if (v.is_string()) {
    *out << YAML::DoubleQuoted << v.get<std::string>();
  } else {
    *out << v.dump();
  }
}

}  // namespace

void ParseCommandBlock(const YAML::Node& node, CommandSpec* out,
                       std::vector<std::string>* problems) {
  if (!node.IsMap()) {
    problems->push_back(
        "command: expected a map {program: /absolute/path, args: [...]}");
    return;
  }
  CommandSpec c;
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    if (key != "program" && key != "args") {
      problems->push_back(absl::StrCat("unknown key 'command.", key,
                                       "' (allowed: program, args)"));
    }
  }
  const YAML::Node program = node["program"];
  if (!program || !program.IsScalar() || program.Scalar().empty()) {
    problems->push_back(
        "command.program: required (the absolute path of the program on the "
        "workers)");
  } else if (program.Scalar()[0] != '/') {
    problems->push_back(absl::StrCat("command.program: '", program.Scalar(),
                                     "' is not an absolute path"));
  } else {
    c.program = program.Scalar();
  }
  if (const YAML::Node args = node["args"]) {
    if (!args.IsSequence()) {
      problems->push_back("command.args: expected a list of strings");
    } else if (args.size() > kMaxArgs) {
      problems->push_back(absl::StrCat("command.args: ", args.size(),
                                       " arguments, more than ", kMaxArgs));
    } else {
      for (size_t i = 0; i < args.size(); ++i) {
        const std::string field = absl::StrCat("command.args[", i, "]");
        if (!args[i].IsScalar()) {
          problems->push_back(absl::StrCat(field, ": expected a string"));
          continue;
        }
        const std::string a = args[i].Scalar();
        for (const std::string& ph : UnknownPlaceholders(a)) {
          problems->push_back(absl::StrCat(
              field, ": unknown placeholder '", ph, "' in '", a,
              "' (known: {trial}, {workdir}, {params}; parameters reach the "
              "program as SMOE_PARAM_<NAME> and the {params} file)"));
        }
        c.args.push_back(a);
      }
    }
  }
  *out = std::move(c);
}

void ParseParamsBlock(const YAML::Node& node, const ScalarReader& scalar,
                      trials::TrialKind* out,
                      std::vector<std::string>* problems) {
  out->name = kCommandKind;
  out->summary = "the sweep's own program; parameters declared in the file";
  out->params.clear();
  if (node.IsNull()) return;  // `params:` with nothing: no parameters
  if (!node.IsMap()) {
    problems->push_back(
        "params: expected a map of parameter name -> {type, default, min, "
        "max, choices, doc}");
    return;
  }
  if (node.size() > kMaxParams) {
    problems->push_back(absl::StrCat("params: ", node.size(),
                                     " parameters, more than ", kMaxParams));
    return;
  }
  std::set<std::string> upper;
  for (const auto& kv : node) {
    const std::string name = kv.first.as<std::string>();
    if (!ValidParamName(name)) {
      problems->push_back(
          absl::StrCat("params.", name, ": invalid parameter name '", name,
                       "' (expected [A-Za-z_][A-Za-z0-9_]{0,63})"));
      continue;
    }
    // The worker passes SMOE_PARAM_<NAME upper-cased>: names must stay
    // distinct there.
    if (!upper.insert(absl::AsciiStrToUpper(name)).second) {
      problems->push_back(
          absl::StrCat("params.", name,
                       ": declared twice (names are compared ignoring "
                       "case: each is passed as SMOE_PARAM_",
                       absl::AsciiStrToUpper(name), ")"));
      continue;
    }
    trials::Param p;
    if (ParseDeclaration(name, kv.second, scalar, &p, problems)) {
      out->params.push_back(std::move(p));
    }
  }
}

void EmitCommandBlocks(const CommandSpec& command,
                       const trials::TrialKind& schema, YAML::Emitter* out) {
  *out << YAML::Key << "command" << YAML::Value << YAML::BeginMap;
  *out << YAML::Key << "program" << YAML::Value << YAML::DoubleQuoted
       << command.program;
  *out << YAML::Key << "args" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const std::string& a : command.args) *out << YAML::DoubleQuoted << a;
  *out << YAML::EndSeq;
  *out << YAML::EndMap;
  *out << YAML::Key << "params" << YAML::Value << YAML::BeginMap;
  for (const trials::Param& p : schema.params) {
    *out << YAML::Key << p.name << YAML::Value << YAML::Flow << YAML::BeginMap;
    *out << YAML::Key << "type" << YAML::Value << TypeName(p.type);
    if (!p.default_value.is_null()) {
      *out << YAML::Key << "default" << YAML::Value;
      EmitValue(p.default_value, out);
    }
    if (p.type == trials::ParamType::kInt) {
      if (HasMin(p)) *out << YAML::Key << "min" << YAML::Value << p.int_lo;
      if (HasMax(p)) *out << YAML::Key << "max" << YAML::Value << p.int_hi;
    } else if (p.type == trials::ParamType::kNumber) {
      // json's dump keeps a fraction (1.0), so the value reads back as a
      // number, never as an integer.
      if (HasMin(p)) {
        *out << YAML::Key << "min" << YAML::Value << json(p.range.lo).dump();
      }
      if (HasMax(p)) {
        *out << YAML::Key << "max" << YAML::Value << json(p.range.hi).dump();
      }
    }
    if (!p.choices.empty()) {
      *out << YAML::Key << "choices" << YAML::Value << YAML::Flow
           << YAML::BeginSeq;
      for (const std::string& c : p.choices) *out << YAML::DoubleQuoted << c;
      *out << YAML::EndSeq;
    }
    if (!p.doc.empty()) {
      *out << YAML::Key << "doc" << YAML::Value << YAML::DoubleQuoted << p.doc;
    }
    *out << YAML::EndMap;
  }
  *out << YAML::EndMap;
}

bool SameSchema(const trials::TrialKind& a, const trials::TrialKind& b) {
  if (a.params.size() != b.params.size()) return false;
  for (size_t i = 0; i < a.params.size(); ++i) {
    const trials::Param& x = a.params[i];
    const trials::Param& y = b.params[i];
    if (x.name != y.name || x.type != y.type ||
        x.default_value != y.default_value || x.int_lo != y.int_lo ||
        x.int_hi != y.int_hi || x.range.lo != y.range.lo ||
        x.range.hi != y.range.hi || x.choices != y.choices || x.doc != y.doc) {
      return false;
    }
  }
  return true;
}

}  // namespace smoe::sweeps
