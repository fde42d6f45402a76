// Copyright 2026 SMoE Lab authors.
#include "worker/eval/skillmix/pipeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace smoe::skillmix {
namespace {

using Json = nlohmann::json;

std::string Dump(const Json& j) {
  // Replace invalid UTF-8 (a model can emit partial byte-fallback sequences)
  // instead of throwing.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// FNV-1a-64 (hex) of a checkpoint line's JSON without its "crc" field.
std::string LineCrc(const std::string& body) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : body) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(h));
  return buf;
}

// A combination line with its checksum: {"crc":"<hex>", ...}.
std::string CheckedLine(const Json& j) {
  Json out = j;
  out["crc"] = LineCrc(Dump(j));
  return Dump(out);
}

// True when `j` carries no "crc" (an older checkpoint) or a matching one.
bool CrcMatches(Json j) {
  if (!j.is_object() || !j.contains("crc")) return true;
  if (!j["crc"].is_string()) return false;
  const std::string crc = j["crc"].get<std::string>();
  j.erase("crc");
  return crc == LineCrc(Dump(j));
}

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat(what, " '", path, "': ", std::strerror(errno)));
}

Json HeaderJson(const SkillMixConfig& c) {
  return Json{{"skillmix_checkpoint", 1},
              {"k_skills", c.k_skills},
              {"num_combinations", c.num_combinations},
              {"num_generations", c.num_generations},
              {"num_gradings", c.num_gradings},
              {"combos_seed", c.combos_seed},
              {"exp_path", c.exp_path},
              {"generation_prompt", GenerationPromptName(c.generation_prompt)},
              {"grading_prompt", GradingPromptName(c.grading_prompt)},
              {"student_system_prompt", c.student_system_prompt},
              {"grader_system_prompt", c.grader_system_prompt},
              {"student_seed", c.student_sampling.seed},
              {"student_temperature", c.student_sampling.temperature},
              {"student_top_k", c.student_sampling.top_k},
              {"student_top_p", c.student_sampling.top_p},
              {"student_max_new_tokens", c.student_sampling.max_new_tokens},
              {"grader_seed", c.grader_sampling.seed},
              {"grader_temperature", c.grader_sampling.temperature},
              {"grader_max_new_tokens", c.grader_sampling.max_new_tokens}};
}

// Derives answer, points and votes of a generation from its replies and
// grader outputs.
void Derive(const SkillMixConfig& config, const Combination& combo,
            GenerationRecord& gen) {
  gen.answer = gen.replies.empty() ? "" : ExtractAnswer(gen.replies.back());
  gen.num_sentences = CountSentences(gen.answer);
  std::vector<std::vector<double>> all;
  for (GradingRecord& g : gen.gradings) {
    g.parsed = ParseGrade(config.grading_prompt, g.output);
    g.points = FinalPoints(g.parsed.points, config.k_skills, gen.answer,
                           combo.skills, config.filter_explicit_name);
    all.push_back(g.points);
  }
  gen.votes = MajorityVote(all);
}

Json CombinationJson(const CombinationResult& r) {
  Json gens = Json::array();
  for (const GenerationRecord& g : r.generations) {
    Json gradings = Json::array();
    for (const GradingRecord& gr : g.gradings) {
      gradings.push_back({{"output", gr.output}, {"points", gr.points}});
    }
    gens.push_back({{"replies", g.replies},
                    {"answer", g.answer},
                    {"num_sentences", g.num_sentences},
                    {"gradings", gradings},
                    {"votes", g.votes}});
  }
  return Json{{"index", r.index},
              {"topic", r.combo.topic},
              {"skills", r.combo.skills},
              {"generations", gens}};
}

// Parses one checkpoint line into `out`; false if malformed.
bool ParseCombinationLine(const Json& j, const SkillMixConfig& config,
                          CombinationResult& out) {
  if (!j.is_object() || !j.contains("index") ||
      !j["index"].is_number_integer() || !j.contains("topic") ||
      !j["topic"].is_string() || !j.contains("skills") ||
      !j["skills"].is_array() || !j.contains("generations") ||
      !j["generations"].is_array()) {
    return false;
  }
  out.index = j["index"].get<int>();
  out.combo.topic = j["topic"].get<std::string>();
  out.combo.skills.clear();
  for (const Json& s : j["skills"]) {
    if (!s.is_string()) return false;
    out.combo.skills.push_back(s.get<std::string>());
  }
  out.generations.clear();
  for (const Json& g : j["generations"]) {
    if (!g.contains("replies") || !g["replies"].is_array() ||
        !g.contains("gradings") || !g["gradings"].is_array()) {
      return false;
    }
    GenerationRecord gen;
    for (const Json& r : g["replies"]) {
      if (!r.is_string()) return false;
      gen.replies.push_back(r.get<std::string>());
    }
    for (const Json& gr : g["gradings"]) {
      if (!gr.contains("output") || !gr["output"].is_string()) return false;
      GradingRecord rec;
      rec.output = gr["output"].get<std::string>();
      gen.gradings.push_back(std::move(rec));
    }
    if (static_cast<int>(gen.gradings.size()) != config.num_gradings) {
      return false;
    }
    Derive(config, out.combo, gen);
    out.generations.push_back(std::move(gen));
  }
  return static_cast<int>(out.generations.size()) == config.num_generations;
}

// Writes `content` to `path` atomically (tmp + fsync + rename).
absl::Status WriteFileAtomic(const std::string& path,
                             const std::string& content) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return ErrnoError("cannot create", tmp);
  size_t off = 0;
  while (off < content.size()) {
    const ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return ErrnoError("cannot write", tmp);
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0)
    return ErrnoError("cannot sync", tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return ErrnoError("cannot rename to", path);
  }
  return absl::OkStatus();
}

// Appends one line and fsyncs.
absl::Status AppendLine(const std::string& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return ErrnoError("cannot open", path);
  const std::string data = line + "\n";
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return ErrnoError("cannot append to", path);
    }
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0)
    return ErrnoError("cannot sync", path);
  return absl::OkStatus();
}

// Loads the finished combinations of a checkpoint (if any) into `done`, and
// rewrites the file to its valid lines (header first). A torn last line
// (a crash mid-append) is dropped. A line that fails its checksum, or that
// cannot be read but is followed by more lines, is corruption: the file is
// set aside as PATH.corrupt-<unix seconds> (kept for inspection), the valid
// lines are kept (only the bad combinations are redone) and `set_aside`
// says what happened.
absl::Status LoadCheckpoint(const SkillMixConfig& config,
                            const std::vector<Combination>& combos,
                            std::vector<std::optional<CombinationResult>>& done,
                            std::string* set_aside) {
  const std::string& path = config.checkpoint_path;
  const Json header = HeaderJson(config);
  auto text = ReadFileToString(path);
  std::vector<std::string> keep = {Dump(header)};
  int bad_lines = 0;
  if (text.ok() && !text->empty()) {
    std::vector<absl::string_view> lines;
    for (absl::string_view line : absl::StrSplit(*text, '\n')) {
      if (!line.empty()) lines.push_back(line);
    }
    for (size_t n = 0; n < lines.size(); ++n) {
      const absl::string_view line = lines[n];
      const bool last = n + 1 == lines.size();
      Json j = Json::parse(line.begin(), line.end(), nullptr, false);
      if (n == 0) {
        if (j.is_discarded()) break;  // torn header: start over
        if (j != header) {
          std::string diff;
          for (auto it = header.begin(); it != header.end(); ++it) {
            if (!j.contains(it.key()) || j[it.key()] != it.value()) {
              diff =
                  absl::StrCat(it.key(), " (checkpoint ",
                               j.contains(it.key()) ? Dump(j[it.key()]) : "-",
                               ", now ", Dump(it.value()), ")");
              break;
            }
          }
          return absl::FailedPreconditionError(absl::StrCat(
              "skillmix checkpoint '", path,
              "' was written for a different configuration: ", diff,
              "; use a fresh work dir or delete the file"));
        }
        continue;
      }
      if (j.is_discarded() && last) break;  // a torn (last) line
      CombinationResult r;
      if (j.is_discarded() || !CrcMatches(j)) {
        ++bad_lines;  // corrupt: set aside below, the combination redone
        continue;
      }
      j.erase("crc");
      if (!ParseCombinationLine(j, config, r)) {
        if (last) break;
        ++bad_lines;
        continue;
      }
      if (r.index < 0 || r.index >= static_cast<int>(combos.size()) ||
          !(r.combo == combos[r.index])) {
        return absl::FailedPreconditionError(absl::StrCat(
            "skillmix checkpoint '", path, "': combination ", r.index,
            " does not match this run's combination list"));
      }
      keep.push_back(CheckedLine(j));
      done[r.index] = std::move(r);
    }
  }
  if (bad_lines > 0) {
    std::string aside =
        absl::StrCat(path, ".corrupt-", absl::ToUnixSeconds(absl::Now()));
    for (int i = 1; ::access(aside.c_str(), F_OK) == 0; ++i) {
      aside = absl::StrCat(path, ".corrupt-", absl::ToUnixSeconds(absl::Now()),
                           "-", i);
    }
    if (::rename(path.c_str(), aside.c_str()) != 0) {
      return ErrnoError("cannot set aside", path);
    }
    if (set_aside != nullptr) {
      *set_aside = absl::StrCat(
          "skillmix checkpoint '", path, "' is corrupt (", bad_lines,
          " line(s) failed verification): set aside as '", aside,
          "'; the other finished combinations are kept");
    }
  }
  std::string content;
  for (const std::string& l : keep) absl::StrAppend(&content, l, "\n");
  return WriteFileAtomic(path, content);
}

std::map<ScoreMethod, MeanSe> MetricsOf(
    const SkillMixConfig& config,
    const std::vector<std::optional<CombinationResult>>& done) {
  PointsTensor points;
  for (const auto& r : done) {
    if (!r.has_value()) continue;
    std::vector<std::vector<std::vector<double>>> gens;
    for (const GenerationRecord& g : r->generations) {
      std::vector<std::vector<double>> gradings;
      for (const GradingRecord& gr : g.gradings) gradings.push_back(gr.points);
      gens.push_back(std::move(gradings));
    }
    points.push_back(std::move(gens));
  }
  auto m =
      AggregateMetrics(points, config.k_skills, config.generation_aggregation);
  return m.ok() ? *m : std::map<ScoreMethod, MeanSe>{};
}

absl::StatusOr<std::vector<std::string>> CompleteChecked(
    ChatModel& model, const std::vector<Conversation>& convs,
    const SamplingParams& params, absl::string_view who) {
  auto replies = model.Complete(convs, params);
  if (!replies.ok() && absl::IsCancelled(replies.status())) {
    return absl::AbortedError(absl::StrCat("skillmix: preempted (", who,
                                           " call cancelled; finished "
                                           "combinations are checkpointed)"));
  }
  if (!replies.ok()) {
    return absl::Status(replies.status().code(),
                        absl::StrCat(who, ": ", replies.status().message()));
  }
  if (replies->size() != convs.size()) {
    return absl::InternalError(absl::StrCat(who, " returned ", replies->size(),
                                            " replies for ", convs.size(),
                                            " conversations"));
  }
  return replies;
}

absl::StatusOr<CombinationResult> RunCombination(
    const SkillMixConfig& config, const SkillCatalog& catalog, int index,
    const Combination& combo, ChatModel& student, ChatModel& grader) {
  SMOE_ASSIGN_OR_RETURN(
      std::vector<std::string> turns,
      RenderGenerationTurns(catalog, combo, config.generation_prompt));
  std::vector<Conversation> convs(config.num_generations);
  if (!config.student_system_prompt.empty()) {
    for (Conversation& c : convs) {
      c.push_back({"system", config.student_system_prompt});
    }
  }
  CombinationResult result;
  result.index = index;
  result.combo = combo;
  result.generations.resize(config.num_generations);
  for (size_t t = 0; t < turns.size(); ++t) {
    for (Conversation& c : convs) c.push_back({"user", turns[t]});
    SamplingParams params = config.student_sampling;
    params.seed =
        MixSeed(config.student_sampling.seed, static_cast<uint64_t>(index), t);
    SMOE_ASSIGN_OR_RETURN(std::vector<std::string> replies,
                          CompleteChecked(student, convs, params, "student"));
    for (int g = 0; g < config.num_generations; ++g) {
      convs[g].push_back({"assistant", replies[g]});
      result.generations[g].replies.push_back(std::move(replies[g]));
    }
  }
  std::vector<Conversation> grading_convs;
  for (GenerationRecord& gen : result.generations) {
    gen.answer = ExtractAnswer(gen.replies.back());
    SMOE_ASSIGN_OR_RETURN(
        std::string prompt,
        RenderGradingPrompt(catalog, combo, gen.answer, config.grading_prompt));
    Conversation conv;
    if (!config.grader_system_prompt.empty()) {
      conv.push_back({"system", config.grader_system_prompt});
    }
    conv.push_back({"user", prompt});
    for (int r = 0; r < config.num_gradings; ++r) grading_convs.push_back(conv);
  }
  SamplingParams gparams = config.grader_sampling;
  gparams.seed =
      MixSeed(config.grader_sampling.seed, static_cast<uint64_t>(index));
  SMOE_ASSIGN_OR_RETURN(
      std::vector<std::string> outputs,
      CompleteChecked(grader, grading_convs, gparams, "grader"));
  for (int g = 0; g < config.num_generations; ++g) {
    GenerationRecord& gen = result.generations[g];
    for (int r = 0; r < config.num_gradings; ++r) {
      GradingRecord rec;
      rec.output = std::move(outputs[g * config.num_gradings + r]);
      gen.gradings.push_back(std::move(rec));
    }
    Derive(config, combo, gen);
  }
  return result;
}

}  // namespace

uint64_t MixSeed(uint64_t base, uint64_t a, uint64_t b) {
  auto mix = [](uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  return mix(mix(mix(base) ^ a) ^ (b * 0x2545f4914f6cdd1dULL));
}

absl::Status ValidateConfig(const SkillMixConfig& c) {
  auto bad = [](absl::string_view field, auto value, absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", value, " ", why));
  };
  if (c.k_skills < 1) return bad("k_skills", c.k_skills, "must be >= 1");
  if (c.num_combinations < 1) {
    return bad("num_combinations", c.num_combinations, "must be >= 1");
  }
  if (c.num_generations < 1) {
    return bad("num_generations", c.num_generations, "must be >= 1");
  }
  if (c.num_gradings < 1) {
    return bad("num_gradings", c.num_gradings, "must be >= 1");
  }
  if (c.student_sampling.max_new_tokens < 1) {
    return bad("max_new_tokens", c.student_sampling.max_new_tokens,
               "must be >= 1");
  }
  if (c.grader_sampling.max_new_tokens < 1) {
    return bad("grader_max_new_tokens", c.grader_sampling.max_new_tokens,
               "must be >= 1");
  }
  if (c.student_sampling.temperature < 0) {
    return bad("temperature", c.student_sampling.temperature, "must be >= 0");
  }
  if (!(c.student_sampling.top_p > 0 && c.student_sampling.top_p <= 1)) {
    return bad("top_p", c.student_sampling.top_p, "must be in (0, 1]");
  }
  if (c.student_sampling.top_k < 0) {
    return bad("top_k", c.student_sampling.top_k, "must be >= 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<SkillMixResult> RunSkillMix(
    const SkillMixConfig& config, const SkillCatalog& catalog,
    const std::vector<Combination>& combos, ChatModel& student,
    ChatModel& grader, const ProgressCallback& progress,
    const std::function<bool()>& should_stop) {
  SMOE_RETURN_IF_ERROR(ValidateConfig(config));
  if (static_cast<int>(combos.size()) != config.num_combinations) {
    return absl::InvalidArgumentError(
        absl::StrCat("combinations: ", combos.size(),
                     " given, num_combinations is ", config.num_combinations));
  }
  for (size_t i = 0; i < combos.size(); ++i) {
    if (static_cast<int>(combos[i].skills.size()) != config.k_skills) {
      return absl::InvalidArgumentError(
          absl::StrCat("combinations[", i, "]: ", combos[i].skills.size(),
                       " skills, k_skills is ", config.k_skills));
    }
    for (const std::string& s : combos[i].skills) {
      SMOE_RETURN_IF_ERROR(catalog.Get(s).status());
    }
  }
  std::vector<std::optional<CombinationResult>> done(combos.size());
  std::string set_aside_detail;
  if (!config.checkpoint_path.empty()) {
    SMOE_RETURN_IF_ERROR(
        LoadCheckpoint(config, combos, done, &set_aside_detail));
  }
  SkillMixProgress p;
  p.total = config.num_combinations;
  for (const auto& r : done) p.resumed += r.has_value() ? 1 : 0;
  p.done = p.resumed;
  p.checkpoint_set_aside = set_aside_detail;
  if (progress) {
    p.running = MetricsOf(config, done);
    progress(p);
  }
  for (size_t i = 0; i < combos.size(); ++i) {
    if (done[i].has_value()) continue;
    if (should_stop && should_stop()) {
      return absl::AbortedError(absl::StrCat("skillmix: preempted after ",
                                             p.done, " of ", p.total,
                                             " combinations (checkpointed)"));
    }
    SMOE_ASSIGN_OR_RETURN(CombinationResult r,
                          RunCombination(config, catalog, static_cast<int>(i),
                                         combos[i], student, grader));
    if (!config.checkpoint_path.empty()) {
      SMOE_RETURN_IF_ERROR(
          AppendLine(config.checkpoint_path, CheckedLine(CombinationJson(r))));
    }
    done[i] = std::move(r);
    ++p.done;
    if (progress) {
      p.running = MetricsOf(config, done);
      progress(p);
    }
  }
  SkillMixResult result;
  result.k = config.k_skills;
  result.num_combinations = config.num_combinations;
  result.resumed = p.resumed;
  result.checkpoint_set_aside = set_aside_detail;
  result.metrics = MetricsOf(config, done);
  for (auto& r : done) result.combinations.push_back(std::move(*r));
  return result;
}

}  // namespace smoe::skillmix
