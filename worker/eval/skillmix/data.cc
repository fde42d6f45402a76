// Copyright 2026 SMoE Lab authors.
#include "worker/eval/skillmix/data.h"

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "worker/eval/skillmix/python_random.h"

namespace smoe::skillmix {
namespace {

using Json = nlohmann::json;

bool StatusIsDropped(absl::string_view status) {
  return status == "remove" || status == "in review" || status == "maybe";
}

// RFC 4180: fields separated by ',', records by "\n" or "\r\n", fields may be
// quoted with '"' (a doubled quote is a literal quote; quoted fields may hold
// commas and newlines).
absl::StatusOr<std::vector<std::vector<std::string>>> ParseCsv(
    absl::string_view text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool in_quotes = false;
  bool field_started = false;  // the current record has any content
  int line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field.push_back('"');
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        if (c == '\n') ++line;
        field.push_back(c);
      }
      continue;
    }
    if (c == '"') {
      if (!field.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "csv line ", line, ": quote inside an unquoted field"));
      }
      in_quotes = true;
      field_started = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      field_started = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (field_started || !field.empty()) {
        row.push_back(std::move(field));
        rows.push_back(std::move(row));
      }
      row.clear();
      field.clear();
      field_started = false;
      ++line;
    } else {
      field.push_back(c);
      field_started = true;
    }
  }
  if (in_quotes) {
    return absl::InvalidArgumentError(
        absl::StrCat("csv line ", line, ": unterminated quoted field"));
  }
  if (field_started || !field.empty()) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

absl::StatusOr<SkillCatalog> MakeCatalog(std::vector<Skill> skills) {
  std::set<std::string> seen;
  for (size_t i = 0; i < skills.size(); ++i) {
    if (skills[i].name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("skills[", i, "].skill: empty name"));
    }
    if (!seen.insert(skills[i].name).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "skills[", i, "].skill: duplicate name '", skills[i].name, "'"));
    }
  }
  if (skills.empty()) return absl::InvalidArgumentError("skills: none loaded");
  return SkillCatalog(std::move(skills));
}

absl::StatusOr<Json> ParseJson(absl::string_view text, absl::string_view what) {
  Json j = Json::parse(text.begin(), text.end(), nullptr,
                       /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": not valid JSON"));
  }
  return j;
}

std::string Extension(const std::string& path) {
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos) return "";
  return absl::AsciiStrToLower(path.substr(dot + 1));
}

}  // namespace

SkillCatalog::SkillCatalog(std::vector<Skill> skills)
    : skills_(std::move(skills)) {}

std::vector<std::string> SkillCatalog::Names() const {
  std::vector<std::string> names;
  names.reserve(skills_.size());
  for (const Skill& s : skills_) names.push_back(s.name);
  return names;
}

const Skill* SkillCatalog::Find(absl::string_view name) const {
  for (const Skill& s : skills_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

absl::StatusOr<const Skill*> SkillCatalog::Get(absl::string_view name) const {
  const Skill* s = Find(name);
  if (s == nullptr) {
    return absl::NotFoundError(absl::StrCat("unknown skill '", name, "'"));
  }
  return s;
}

absl::StatusOr<SkillCatalog> ParseSkillsCsv(absl::string_view csv) {
  auto rows = ParseCsv(csv);
  if (!rows.ok()) return rows.status();
  if (rows->empty()) return absl::InvalidArgumentError("skills csv: empty");
  const std::vector<std::string>& header = rows->front();
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const char* required : {"skill", "definition", "example"}) {
    if (col.count(required) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("skills csv: missing column '", required, "'"));
    }
  }
  auto cell = [&](const std::vector<std::string>& row,
                  const char* name) -> std::string {
    auto it = col.find(name);
    if (it == col.end() || it->second >= row.size()) return "";
    return row[it->second];
  };
  std::vector<Skill> skills;
  for (size_t r = 1; r < rows->size(); ++r) {
    const std::vector<std::string>& row = (*rows)[r];
    if (StatusIsDropped(cell(row, "status"))) continue;
    Skill s;
    s.name = std::string(absl::StripAsciiWhitespace(cell(row, "skill")));
    s.category = cell(row, "category");
    s.definition = cell(row, "definition");
    s.example = cell(row, "example");
    skills.push_back(std::move(s));
  }
  return MakeCatalog(std::move(skills));
}

absl::StatusOr<SkillCatalog> ParseSkillsJson(absl::string_view json) {
  auto j = ParseJson(json, "skills json");
  if (!j.ok()) return j.status();
  if (!j->is_object() || !j->contains("skills") || !(*j)["skills"].is_array()) {
    return absl::InvalidArgumentError("skills json: missing array 'skills'");
  }
  std::vector<Skill> skills;
  const Json& arr = (*j)["skills"];
  for (size_t i = 0; i < arr.size(); ++i) {
    const Json& e = arr[i];
    for (const char* f : {"skill", "definition", "example"}) {
      if (!e.is_object() || !e.contains(f) || !e[f].is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat("skills json: skills[", i, "].", f, " missing"));
      }
    }
    if (e.contains("status") && e["status"].is_string() &&
        StatusIsDropped(e["status"].get<std::string>())) {
      continue;
    }
    Skill s;
    s.name =
        std::string(absl::StripAsciiWhitespace(e["skill"].get<std::string>()));
    s.category = e.value("category", "");
    s.definition = e["definition"].get<std::string>();
    s.example = e["example"].get<std::string>();
    skills.push_back(std::move(s));
  }
  return MakeCatalog(std::move(skills));
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read '", path, "'"));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::StatusOr<SkillCatalog> LoadSkills(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  const std::string ext = Extension(path);
  if (ext == "csv") return ParseSkillsCsv(*text);
  if (ext == "json") return ParseSkillsJson(*text);
  return absl::InvalidArgumentError(absl::StrCat(
      "skills file '", path, "': expected a .csv or .json extension"));
}

std::vector<std::string> ParseTopicsTxt(absl::string_view text) {
  std::vector<std::string> topics;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty()) topics.emplace_back(line);
  }
  return topics;
}

absl::StatusOr<std::vector<std::string>> ParseTopicsJson(
    absl::string_view json) {
  auto j = ParseJson(json, "topics json");
  if (!j.ok()) return j.status();
  if (!j->is_object() || !j->contains("topics") || !(*j)["topics"].is_array()) {
    return absl::InvalidArgumentError("topics json: missing array 'topics'");
  }
  std::vector<std::string> topics;
  for (const Json& t : (*j)["topics"]) {
    if (!t.is_string()) {
      return absl::InvalidArgumentError("topics json: non-string topic");
    }
    topics.push_back(t.get<std::string>());
  }
  if (topics.empty()) return absl::InvalidArgumentError("topics: none loaded");
  return topics;
}

absl::StatusOr<std::vector<std::string>> LoadTopics(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  const std::string ext = Extension(path);
  if (ext == "json") return ParseTopicsJson(*text);
  if (ext == "txt") {
    std::vector<std::string> topics = ParseTopicsTxt(*text);
    if (topics.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("topics file '", path, "': no topics"));
    }
    return topics;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "topics file '", path, "': expected a .txt or .json extension"));
}

absl::StatusOr<std::vector<Combination>> DrawCombinations(
    const std::vector<std::string>& skill_names,
    const std::vector<std::string>& topics, int k, int n, int64_t seed,
    absl::string_view exp_path) {
  if (k < 1 || k > static_cast<int>(skill_names.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "k_skills: ", k, " is not in [1, ", skill_names.size(), "]"));
  }
  if (n < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_combinations: ", n, " must be >= 1"));
  }
  if (topics.empty()) return absl::InvalidArgumentError("topics: empty");
  PyRandom rng;
  rng.SeedInt(seed);
  std::vector<std::string> skills = skill_names;
  std::vector<Combination> out(static_cast<size_t>(n));
  for (Combination& c : out) {
    rng.Shuffle(skills);
    c.skills.assign(skills.begin(), skills.begin() + k);
  }
  std::vector<std::string> tops = topics;
  for (Combination& c : out) {
    rng.Shuffle(tops);
    c.topic = tops.front();
  }
  rng.SeedString(exp_path);
  for (Combination& c : out) rng.Shuffle(c.skills);
  return out;
}

absl::StatusOr<std::vector<Combination>> ParseCombosJson(absl::string_view json,
                                                         int n, int k) {
  auto j = ParseJson(json, "combos json");
  if (!j.ok()) return j.status();
  const std::string ns = absl::StrCat(n), ks = absl::StrCat(k);
  if (!j->contains("combos") || !(*j)["combos"].contains(ns) ||
      !(*j)["combos"][ns].contains(ks)) {
    return absl::NotFoundError(
        absl::StrCat("combos json: no list for n=", n, " k=", k));
  }
  std::vector<Combination> out;
  for (const Json& e : (*j)["combos"][ns][ks]) {
    if (!e.contains("topic") || !e.contains("skills") ||
        !e["topic"].is_string() || !e["skills"].is_array()) {
      return absl::InvalidArgumentError("combos json: malformed entry");
    }
    Combination c;
    c.topic = e["topic"].get<std::string>();
    for (const Json& s : e["skills"]) {
      if (!s.is_string()) {
        return absl::InvalidArgumentError("combos json: non-string skill");
      }
      c.skills.push_back(s.get<std::string>());
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace smoe::skillmix
