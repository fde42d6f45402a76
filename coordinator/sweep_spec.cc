// Copyright 2026 SMoE Lab authors.
#include "coordinator/sweep_spec.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "trials/params.h"
#include "yaml-cpp/yaml.h"

namespace smoe::coordinator {
namespace {

using nlohmann::json;

std::string Show(const json& v) { return v.dump(); }

// Returns the offset of the first byte that is not well-formed UTF-8, or -1.
int64_t InvalidUtf8Offset(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return static_cast<int64_t>(i);
    }
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return static_cast<int64_t>(i);
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return static_cast<int64_t>(i);
      cp = (cp << 6) | (d & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are invalid.
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) ||
        (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return static_cast<int64_t>(i);
    }
    i += n + 1;
  }
  return -1;
}

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

bool ValidName(absl::string_view n) {
  if (n.empty() || n.size() > 64) return false;
  if (!absl::ascii_islower(n[0]) && !absl::ascii_isdigit(n[0])) return false;
  for (char c : n) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '.' ||
          c == '_' || c == '-')) {
      return false;
    }
  }
  return true;
}

// Every problem found in a sweep file, in file order. A field with a problem
// is left out of the spec, so later checks do not repeat it.
class Problems {
 public:
  void Add(std::string message) { list_.push_back(std::move(message)); }
  // Adds a non-OK status's message; returns whether `s` was OK.
  bool Ok(const absl::Status& s) {
    if (s.ok()) return true;
    Add(std::string(s.message()));
    return false;
  }
  bool empty() const { return list_.empty(); }
  // OK when there is none; one problem: its message; more: "N problems:"
  // and one per line.
  absl::Status ToStatus() const {
    if (list_.empty()) return absl::OkStatus();
    if (list_.size() == 1) return absl::InvalidArgumentError(list_[0]);
    return absl::InvalidArgumentError(absl::StrCat(
        list_.size(), " problems:\n  ", absl::StrJoin(list_, "\n  ")));
  }

 private:
  std::vector<std::string> list_;
};

// At most this many grid points are named when the rules between parameters
// fail; the rest are counted.
constexpr int kMaxPointProblems = 5;

// "seeds: 3": the count the user probably meant, as a list.
std::string SeedsHint(const YAML::Node& seeds) {
  int64_t n = 0;
  std::string hint = "seeds is a list";
  if (YAML::convert<int64_t>::decode(seeds, n) && n >= 1 && n <= 10) {
    std::vector<int64_t> list;
    for (int64_t i = 0; i < n; ++i) list.push_back(i);
    absl::StrAppend(&hint, "; did you mean seeds: [", absl::StrJoin(list, ", "),
                    "] (", n, n == 1 ? " seed" : " seeds", ") or seeds: [", n,
                    "] (only seed ", n, ")?");
  } else {
    absl::StrAppend(&hint, "; did you mean seeds: [", seeds.Scalar(), "]?");
  }
  return absl::StrCat("seeds: ", seeds.Scalar(), " is not a list: ", hint);
}

void ParseGrid(const YAML::Node& grid, SweepSpec* spec, Problems* problems) {
  if (!grid.IsMap()) {
    problems->Add("grid: expected a map of axis name -> list of values");
    return;
  }
  for (const auto& kv : grid) {
    Axis axis;
    axis.name = kv.first.as<std::string>();
    const std::string field = absl::StrCat("grid.", axis.name);
    const YAML::Node& vals = kv.second;
    bool ok = true;
    if (vals.IsScalar()) {
      auto v = ScalarToJson(vals, field);
      ok = problems->Ok(v.status());
      if (ok) axis.values.push_back(*v);
    } else if (vals.IsSequence()) {
      for (size_t i = 0; i < vals.size(); ++i) {
        auto v = ScalarToJson(vals[i], absl::StrCat(field, "[", i, "]"));
        if (!problems->Ok(v.status())) {
          ok = false;
          continue;
        }
        axis.values.push_back(*v);
      }
    } else {
      problems->Add(absl::StrCat(field, ": expected a list of values"));
      ok = false;
    }
    if (!ok) continue;
    if (axis.values.empty()) {
      problems->Add(
          absl::StrCat(field, ": empty axis (give at least one value)"));
      continue;
    }
    std::set<std::string> seen;
    for (const json& v : axis.values) {
      if (!seen.insert(v.dump()).second) {
        problems->Add(absl::StrCat(field, ": duplicate value ", Show(v)));
        ok = false;
      }
    }
    for (const Axis& other : spec->grid) {
      if (other.name == axis.name) {
        problems->Add(absl::StrCat(field, ": axis given twice"));
        ok = false;
      }
    }
    if (ok) spec->grid.push_back(std::move(axis));
  }
}

void ParseFixed(const YAML::Node& fixed, SweepSpec* spec, Problems* problems) {
  if (!fixed.IsMap()) {
    problems->Add("fixed: expected a map of params");
    return;
  }
  for (const auto& kv : fixed) {
    const std::string key = kv.first.as<std::string>();
    auto v = ScalarToJson(kv.second, absl::StrCat("fixed.", key));
    if (!problems->Ok(v.status())) continue;
    bool ok = true;
    for (const Axis& a : spec->grid) {
      if (a.name == key) {
        problems->Add(absl::StrCat("fixed.", key,
                                   ": also a grid axis; give it in one place"));
        ok = false;
      }
    }
    if (ok) spec->fixed[key] = *v;
  }
}

void ParseSeeds(const YAML::Node& seeds, const ParseOptions& options,
                SweepSpec* spec, Problems* problems) {
  spec->seeds.clear();
  if (seeds.IsScalar() && !options.allow_scalar_seeds) {
    problems->Add(SeedsHint(seeds));
  } else if (seeds.IsScalar()) {
    auto s = IntField(seeds, "seeds", 0, std::numeric_limits<int32_t>::max());
    if (problems->Ok(s.status())) spec->seeds.push_back(*s);
  } else if (seeds.IsSequence()) {
    for (size_t i = 0; i < seeds.size(); ++i) {
      auto s = IntField(seeds[i], absl::StrCat("seeds[", i, "]"), 0,
                        std::numeric_limits<int32_t>::max());
      if (!problems->Ok(s.status())) continue;
      if (std::find(spec->seeds.begin(), spec->seeds.end(), *s) !=
          spec->seeds.end()) {
        problems->Add(absl::StrCat("seeds[", i, "]: duplicate seed ", *s));
        continue;
      }
      spec->seeds.push_back(*s);
    }
    if (seeds.size() == 0) problems->Add("seeds: empty list");
  } else {
    problems->Add("seeds: expected a list of integers, e.g. [0, 1, 2]");
  }
  if (spec->seeds.empty()) spec->seeds = {0};  // checked above; keeps counts
}

void ParseResources(const YAML::Node& res, SweepSpec* spec,
                    Problems* problems) {
  if (!res.IsMap()) {
    problems->Add("resources: expected a map");
    return;
  }
  for (const auto& kv : res) {
    const std::string key = kv.first.as<std::string>();
    const std::string field = absl::StrCat("resources.", key);
    if (key == "gpus_per_trial" || key == "ep_size" || key == "slots") {
      auto r = IntField(kv.second, field, key == "gpus_per_trial" ? 0 : 1, 64);
      if (!problems->Ok(r.status())) continue;
      (key == "gpus_per_trial" ? spec->resources.gpus_per_trial
       : key == "ep_size"      ? spec->resources.ep_size
                               : spec->resources.slots) = static_cast<int>(*r);
    } else if (key == "progress_timeout_s") {
      auto r = IntField(kv.second, field, 1, 604800);
      if (!problems->Ok(r.status())) continue;
      spec->resources.progress_timeout_s = static_cast<int>(*r);
    } else if (key == "labels") {
      if (!kv.second.IsMap()) {
        problems->Add("resources.labels: expected a map of label -> value");
        continue;
      }
      for (const auto& l : kv.second) {
        const std::string name = l.first.as<std::string>();
        auto v = ScalarToJson(l.second, absl::StrCat(field, ".", name));
        if (!problems->Ok(v.status())) continue;
        if (name.empty() || InvalidUtf8Offset(name) >= 0) {
          problems->Add(absl::StrCat(field, ": invalid label name"));
          continue;
        }
        spec->resources.labels[name] =
            v->is_string() ? v->get<std::string>() : v->dump();
      }
    } else {
      problems->Add(
          absl::StrCat("unknown key '", field,
                       "' (allowed: gpus_per_trial, ep_size, slots, labels, "
                       "progress_timeout_s)"));
    }
  }
  if (spec->resources.ep_size > 1 && spec->resources.gpus_per_trial > 0 &&
      spec->resources.gpus_per_trial != spec->resources.ep_size) {
    problems->Add(absl::StrCat(
        "resources.gpus_per_trial: ", spec->resources.gpus_per_trial,
        " must equal resources.ep_size (", spec->resources.ep_size,
        ") for expert-parallel GPU trials"));
  }
  // kind skillmix with ep_size > 1: the student's (and a local grader's)
  // experts are split over the ranks (worker/trainer/skillmix_models.h);
  // whether ep_size <= num_local_experts is known only where the model
  // lives, so smoe-trainer checks it (exit 64 naming both).
}

// Checks the grid and fixed params against the kind's table, then (when all
// values are valid) every point against the rules between parameters.
void CheckParams(const SweepSpec& spec, int64_t points, Problems* problems) {
  const trials::TrialKind& schema = *trials::FindKind(spec.kind);
  std::vector<std::string> names;
  for (const auto& p : schema.params) names.push_back(p.name);
  bool values_ok = true;
  auto check = [&](const std::string& name, const json& v,
                   absl::string_view where) {
    const trials::Param* p = schema.Find(name);
    if (p == nullptr) return;  // reported once per key below
    values_ok &= problems->Ok(trials::CheckSweepValue(*p, v, where));
  };
  auto known = [&](const std::string& name, const std::string& field) {
    if (schema.Find(name) != nullptr) return;
    problems->Add(absl::StrCat(field, ": unknown parameter '", name,
                               "' for kind ", spec.kind,
                               " (known: ", absl::StrJoin(names, ", "), ")"));
    values_ok = false;
  };
  for (const Axis& a : spec.grid) {
    known(a.name, absl::StrCat("grid.", a.name));
    for (const json& v : a.values) check(a.name, v, "grid");
  }
  for (const auto& [k, v] : spec.fixed.items()) {
    known(k, absl::StrCat("fixed.", k));
    check(k, v, "fixed");
  }
  if (!values_ok || points <= 0 || !problems->empty()) return;
  int bad_points = 0;
  for (const ExpandedTrial& t : ExpandGrid(spec)) {
    absl::Status s = ValidateTrialParams(spec.kind, t.params);
    // The daemon starts resources.ep_size rank processes; a trial asking
    // for another world size would fail at run time (exit 64).
    if (auto ep = t.params.find("ep_size");
        s.ok() && ep != t.params.end() && ep->is_number_integer() &&
        ep->get<int64_t>() != spec.resources.ep_size) {
      s = absl::InvalidArgumentError(
          absl::StrCat("params: ep_size=", ep->get<int64_t>(),
                       " must equal resources.ep_size=", spec.resources.ep_size,
                       " (the worker starts one process per rank; point ",
                       t.params.dump(), ")"));
    }
    // Without a params.ep_size the trainer takes its world size from the
    // ranks the daemon starts (resources.ep_size): check that one.
    if (s.ok() && spec.kind == "sraven" && spec.resources.ep_size > 1 &&
        !t.params.contains("ep_size")) {
      json with_ep = t.params;
      with_ep["ep_size"] = spec.resources.ep_size;
      if (absl::Status e = ValidateTrialParams(spec.kind, with_ep); !e.ok()) {
        s = absl::InvalidArgumentError(
            absl::StrCat(e.message(), " (ep_size from resources.ep_size)"));
      }
    }
    // A trial on `device: cuda` gets its GPUs from resources.gpus_per_trial;
    // with 0 it would be leased to any worker and fail there at run time.
    const trials::Param* device = schema.Find("device");
    if (s.ok() && device != nullptr && spec.resources.gpus_per_trial < 1 &&
        t.params.value("device", device->default_value) == "cuda") {
      s = absl::InvalidArgumentError(absl::StrCat(
          "resources.gpus_per_trial: 0, but the point ", t.params.dump(),
          " trains on device: cuda",
          t.params.contains("device") ? "" : " (the default for this kind)",
          "; set resources.gpus_per_trial >= 1, or device: cpu"));
    }
    if (s.ok()) continue;
    if (++bad_points <= kMaxPointProblems) problems->Ok(s);
  }
  if (bad_points > kMaxPointProblems) {
    problems->Add(absl::StrCat("params: ", bad_points - kMaxPointProblems,
                               " more grid points break the same rules"));
  }
}

void ParseDocument(const YAML::Node& root, const ParseOptions& options,
                   SweepSpec* spec, Problems* problems) {
  if (!root.IsMap()) {
    problems->Add("sweep file: expected a YAML map at the top level");
    return;
  }
  static const std::set<std::string> kKeys = {"name",    "kind",    "grid",
                                              "fixed",   "seeds",   "resources",
                                              "retries", "priority"};
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (!kKeys.count(key)) {
      problems->Add(absl::StrCat("unknown key '", key, "' (allowed: ",
                                 absl::StrJoin(kKeys, ", "), ")"));
    }
  }
  if (!root["name"] || !root["name"].IsScalar()) {
    problems->Add("name: required (a string)");
  } else {
    spec->name = root["name"].Scalar();
    if (!ValidName(spec->name)) {
      problems->Add(absl::StrCat("name: '", spec->name,
                                 "' must match [a-z0-9][a-z0-9._-]{0,63}"));
    }
  }
  bool kind_ok = false;
  if (!root["kind"] || !root["kind"].IsScalar()) {
    problems->Add("kind: required (sraven | skillmix)");
  } else {
    spec->kind = root["kind"].Scalar();
    kind_ok = trials::FindKind(spec->kind) != nullptr;
    if (!kind_ok) {
      problems->Add(absl::StrCat("kind: '", spec->kind,
                                 "' is not one of {sraven, skillmix}"));
    }
  }
  if (const YAML::Node grid = root["grid"]) ParseGrid(grid, spec, problems);
  if (const YAML::Node fixed = root["fixed"]) {
    ParseFixed(fixed, spec, problems);
  }
  if (const YAML::Node seeds = root["seeds"]) {
    ParseSeeds(seeds, options, spec, problems);
  }
  if (const YAML::Node res = root["resources"]) {
    ParseResources(res, spec, problems);
  }
  if (const YAML::Node r = root["retries"]) {
    auto v = IntField(r, "retries", 0, 1000);
    if (problems->Ok(v.status())) spec->retries = static_cast<int>(*v);
  }
  if (const YAML::Node p = root["priority"]) {
    auto v = IntField(p, "priority", -1000000, 1000000);
    if (problems->Ok(v.status())) spec->priority = static_cast<int>(*v);
  }
  const int64_t points = CountPoints(*spec);
  if (points > options.max_points) {
    problems->Add(absl::StrCat("grid: expands to ", points,
                               " points, more than max ", options.max_points,
                               " (axes x seeds)"));
  }
  if (kind_ok && points <= options.max_points) {
    CheckParams(*spec, points, problems);
  }
}

}  // namespace

absl::Status ValidateTrialParams(absl::string_view kind, const json& params) {
  const trials::TrialKind* schema = trials::FindKind(kind);
  if (schema == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown kind '", kind, "'"));
  }
  for (const auto& [k, v] : params.items()) {
    const trials::Param* p = schema->Find(k);
    if (p == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("params: unknown parameter '", k, "' for kind ", kind));
    }
    if (auto s = trials::CheckSweepValue(*p, v, "params"); !s.ok()) return s;
  }
  if (kind == "sraven") {
    // The value of an integer param, else its default.
    auto get = [&](const char* name) {
      return params.value(name,
                          schema->Find(name)->default_value.get<int64_t>());
    };
    const int64_t e = get("num_experts");
    const int64_t k = get("top_k");
    if (k > e) {
      return absl::InvalidArgumentError(
          absl::StrCat("params: top_k=", k, " is larger than num_experts=", e,
                       " (point ", params.dump(), ")"));
    }
    const int64_t ep = get("ep_size");
    if (ep > 1 && e % ep != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "params: ep_size=", ep, " does not divide num_experts=", e,
          " (point ", params.dump(), ")"));
    }
    const int64_t batch = get("batch_size");
    if (ep > 1 && batch % ep != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "params: ep_size=", ep, " does not divide batch_size=", batch,
          " (point ", params.dump(), ")"));
    }
    const std::string router =
        params.value("router", schema->Find("router")->default_value)
            .get<std::string>();
    if (ep > 1 && router != "topk") {
      return absl::InvalidArgumentError(absl::StrCat(
          "params: ep_size=", ep, " needs router: topk (got router: ", router,
          "; point ", params.dump(), ")"));
    }
  }
  return absl::OkStatus();
}

int64_t CountPoints(const SweepSpec& spec) {
  int64_t n = static_cast<int64_t>(spec.seeds.size());
  for (const Axis& a : spec.grid) {
    const int64_t m = static_cast<int64_t>(a.values.size());
    if (m != 0 && n > std::numeric_limits<int64_t>::max() / m) {
      return std::numeric_limits<int64_t>::max();
    }
    n *= m;
  }
  return n;
}

std::string TrialId(absl::string_view sweep, absl::string_view kind,
                    const json& params, int64_t seed) {
  // nlohmann::json objects are std::map-backed: dump() sorts keys, so the
  // text is canonical.
  const std::string canonical = json{
      {"kind", std::string(kind)},
      {"params", params},
      {"seed", seed}}.dump();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(canonical.data(), canonical.size(), digest, &len, EVP_sha256(),
             nullptr);
  return absl::StrCat(sweep, "/",
                      absl::BytesToHexString(absl::string_view(
                          reinterpret_cast<const char*>(digest), 8)));
}

std::vector<ExpandedTrial> ExpandGrid(const SweepSpec& spec) {
  std::vector<ExpandedTrial> out;
  const int64_t total = CountPoints(spec);
  if (total <= 0) return out;
  out.reserve(static_cast<size_t>(total));
  std::vector<size_t> idx(spec.grid.size(), 0);
  while (true) {
    json params = spec.fixed;
    for (size_t a = 0; a < spec.grid.size(); ++a) {
      params[spec.grid[a].name] = spec.grid[a].values[idx[a]];
    }
    for (int64_t seed : spec.seeds) {
      ExpandedTrial t;
      t.params = params;
      t.seed = seed;
      t.trial_id = TrialId(spec.name, spec.kind, params, seed);
      out.push_back(std::move(t));
    }
    // Odometer increment, last axis fastest.
    int a = static_cast<int>(spec.grid.size()) - 1;
    for (; a >= 0; --a) {
      if (++idx[static_cast<size_t>(a)] <
          spec.grid[static_cast<size_t>(a)].values.size()) {
        break;
      }
      idx[static_cast<size_t>(a)] = 0;
    }
    if (a < 0) break;
  }
  return out;
}

absl::StatusOr<SweepSpec> ParseSweepYaml(absl::string_view text,
                                         const ParseOptions& options) {
  SweepSpec spec;
  if (const int64_t bad = InvalidUtf8Offset(text); bad >= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sweep file: not valid UTF-8 at byte ", bad, " (0x",
        absl::Hex(static_cast<unsigned char>(text[static_cast<size_t>(bad)])),
        ")"));
  }
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) {
      return absl::InvalidArgumentError(
          absl::StrCat("sweep file: control character 0x", absl::Hex(c),
                       " at byte ", i, " (YAML allows only tab, LF and CR)"));
    }
  }
  // yaml-cpp reports errors by throwing; this is the boundary where they are
  // caught and turned into a Status.
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    if (!root || root.IsNull()) {
      return absl::InvalidArgumentError("sweep file: empty document");
    }
    Problems problems;
    ParseDocument(root, options, &spec, &problems);
    if (absl::Status s = problems.ToStatus(); !s.ok()) return s;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("sweep file: YAML error at line ", e.mark.line + 1,
                     ", column ", e.mark.column + 1, ": ", e.msg));
  }
  return spec;
}

std::string SweepSpecToYaml(const SweepSpec& spec) {
  YAML::Emitter out;
  auto emit_value = [&out](const json& v) {
    if (v.is_string()) {
      out << YAML::DoubleQuoted << v.get<std::string>();
    } else {
      out << v.dump();
    }
  };
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << spec.name;
  out << YAML::Key << "kind" << YAML::Value << spec.kind;
  out << YAML::Key << "grid" << YAML::Value << YAML::BeginMap;
  for (const Axis& a : spec.grid) {
    out << YAML::Key << a.name << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const json& v : a.values) emit_value(v);
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
  out << YAML::Key << "fixed" << YAML::Value << YAML::BeginMap;
  for (const auto& [k, v] : spec.fixed.items()) {
    out << YAML::Key << k << YAML::Value;
    emit_value(v);
  }
  out << YAML::EndMap;
  out << YAML::Key << "seeds" << YAML::Value << YAML::Flow << spec.seeds;
  out << YAML::Key << "resources" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "gpus_per_trial" << YAML::Value
      << spec.resources.gpus_per_trial;
  out << YAML::Key << "ep_size" << YAML::Value << spec.resources.ep_size;
  out << YAML::Key << "slots" << YAML::Value << spec.resources.slots;
  if (!spec.resources.labels.empty()) {
    out << YAML::Key << "labels" << YAML::Value << YAML::BeginMap;
    for (const auto& [k, v] : spec.resources.labels) {
      out << YAML::Key << k << YAML::Value << YAML::DoubleQuoted << v;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  out << YAML::Key << "retries" << YAML::Value << spec.retries;
  out << YAML::Key << "priority" << YAML::Value << spec.priority;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

absl::Status ExtendAxis(SweepSpec* spec, absl::string_view axis,
                        const std::vector<json>& values,
                        const ParseOptions& options) {
  SweepSpec next = *spec;
  if (axis == "seeds") {
    for (const json& v : values) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "seeds: expected a non-negative integer, got ", v.dump()));
      }
      const int64_t s = v.get<int64_t>();
      if (std::find(next.seeds.begin(), next.seeds.end(), s) ==
          next.seeds.end()) {
        next.seeds.push_back(s);
      }
    }
  } else {
    Axis* a = nullptr;
    for (Axis& x : next.grid) {
      if (x.name == axis) a = &x;
    }
    if (a == nullptr) {
      return absl::NotFoundError(
          absl::StrCat("axis '", axis, "' is not in sweep ", spec->name,
                       " (extend an existing axis or 'seeds')"));
    }
    for (const json& v : values) {
      if (std::find(a->values.begin(), a->values.end(), v) == a->values.end()) {
        a->values.push_back(v);
      }
    }
  }
  // Round-trip through the parser: the same validation as a submitted file.
  auto reparsed = ParseSweepYaml(SweepSpecToYaml(next), options);
  if (!reparsed.ok()) return reparsed.status();
  *spec = std::move(*reparsed);
  return absl::OkStatus();
}

}  // namespace smoe::coordinator
