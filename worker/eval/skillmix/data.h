// Copyright 2026 SMoE Lab authors.
//
// File: worker/eval/skillmix/data.h
//
// Skill-Mix data (docs/skillmix.md sections 1.1 and 1.2): the skills and
// topics, loaded from the reference release's formats (skills.csv,
// topics.txt) or from JSON copies like testdata/ (skills.json, topics.json,
// combos_seed10.json), and the reference combination sampler.
//
// Strings are kept byte for byte (UTF-8): skill names are whitespace-stripped
// like the reference's row['skill'].strip(); definitions and examples are not
// touched (one definition ends with a space that reaches the prompts).
//
// Thread-safety: plain values and free functions; thread-compatible.
#ifndef SMOE_WORKER_EVAL_SKILLMIX_DATA_H_
#define SMOE_WORKER_EVAL_SKILLMIX_DATA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace smoe::skillmix {

struct Skill {
  std::string name;
  std::string category;
  std::string definition;
  std::string example;
};

// The released skills in file order (the sampler depends on the order), with
// lookup by exact name.
class SkillCatalog {
 public:
  SkillCatalog() = default;
  // REQUIRES: names are unique (the loaders check this).
  explicit SkillCatalog(std::vector<Skill> skills);

  const std::vector<Skill>& skills() const { return skills_; }
  std::vector<std::string> Names() const;
  // nullptr if no skill has exactly this name.
  const Skill* Find(absl::string_view name) const;
  // NotFound naming the skill if absent.
  absl::StatusOr<const Skill*> Get(absl::string_view name) const;

 private:
  std::vector<Skill> skills_;
};

// One Skill-Mix item: k distinct skills (in prompt order) and a topic.
struct Combination {
  std::string topic;
  std::vector<std::string> skills;

  friend bool operator==(const Combination& a, const Combination& b) {
    return a.topic == b.topic && a.skills == b.skills;
  }
};

// skills.csv of github.com/LeoYu/skill-mix: a header row with at least the
// columns skill, definition, example (category, status optional); RFC 4180
// quoting. Rows whose status is "remove", "in review" or "maybe" are dropped,
// as in the reference's get_skills_dict. Errors: InvalidArgument naming the
// line for malformed CSV, a missing column, an empty or duplicate skill.
absl::StatusOr<SkillCatalog> ParseSkillsCsv(absl::string_view csv);
// testdata/skills.json: {"skills": [{skill, category, definition,
// example, status?}, ...]} (same status filter).
absl::StatusOr<SkillCatalog> ParseSkillsJson(absl::string_view json);
// Dispatches on the file extension (.csv or .json); NotFound if unreadable.
absl::StatusOr<SkillCatalog> LoadSkills(const std::string& path);

// topics.txt: one topic per line (lines stripped; empty lines skipped).
std::vector<std::string> ParseTopicsTxt(absl::string_view text);
// testdata/topics.json: {"topics": ["Sewing", ...]}.
absl::StatusOr<std::vector<std::string>> ParseTopicsJson(
    absl::string_view json);
// Dispatches on the extension (.txt or .json).
absl::StatusOr<std::vector<std::string>> LoadTopics(const std::string& path);

// The reference sampler (query_random.py with num_topics = 1), bit-exact with
// CPython's `random`:
//   random.seed(seed); for each of n draws: shuffle(skills), take the first k;
//   then for each draw: shuffle(topics), take the first;
//   random.seed(exp_path); for each draw: shuffle(its k skills).
// Draws are independent (repeats possible) and the list depends on n.
// Errors: InvalidArgument if k < 1, k > #skills, n < 1 or no topics.
absl::StatusOr<std::vector<Combination>> DrawCombinations(
    const std::vector<std::string>& skill_names,
    const std::vector<std::string>& topics, int k, int n, int64_t seed,
    absl::string_view exp_path = "test");

// testdata/combos_seed10.json: combos[n][k] = [{topic, skills}, ...].
// NotFound if the file has no list for (n, k).
absl::StatusOr<std::vector<Combination>> ParseCombosJson(absl::string_view json,
                                                         int n, int k);

// The released 10 skills and 10 topics (testdata/skills.json, topics.json),
// compiled into the library so workers need no data files.
absl::string_view ReleasedSkillsJson();
absl::string_view ReleasedTopicsJson();

// Reads a whole file; NotFound naming the path on failure.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace smoe::skillmix

#endif  // SMOE_WORKER_EVAL_SKILLMIX_DATA_H_
