// Copyright 2026 SMoE Lab authors.
#include "tests/quality/gpu_branches.h"

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace smoe::quality {
namespace {

const char* const kScopes[] = {"kernels/", "worker/model/", "worker/trainer/"};

// Macros whose value differs between a CPU-only and a GPU build.
const char* const kDeviceMacros[] = {"SMOE_WITH_TORCH_CUDA", "SMOE_WITH_CUDA",
                                     "SMOE_WITH_NCCL", "SMOE_OPS_CUDA",
                                     "__CUDACC__"};

// System headers that only a CUDA build has.
const char* const kCudaHeaderPrefixes[] = {
    "cuda",      "cublas",     "nccl",       "cufft",   "curand", "cusparse",
    "c10/cuda/", "ATen/cuda/", "torch/cuda", "thrust/", "cub/"};

bool IsIdentChar(char c) { return absl::ascii_isalnum(c) || c == '_'; }

bool ContainsWord(absl::string_view s, absl::string_view word) {
  size_t pos = 0;
  while ((pos = s.find(word, pos)) != absl::string_view::npos) {
    const bool left = pos == 0 || !IsIdentChar(s[pos - 1]);
    const size_t end = pos + word.size();
    const bool right = end >= s.size() || !IsIdentChar(s[end]);
    if (left && right) return true;
    pos = end;
  }
  return false;
}

bool MentionsDeviceMacro(absl::string_view condition) {
  for (const char* m : kDeviceMacros) {
    if (ContainsWord(condition, m)) return true;
  }
  return false;
}

std::string Normalise(absl::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' ||
        c == '\v') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

// A runtime device test on a (comment-free, normalised) code line.
bool IsDeviceBranch(absl::string_view line) {
  if (absl::StrContains(line, "is_cuda()") || ContainsWord(line, "kCUDA") ||
      absl::StrContains(line, "torch::cuda::") ||
      absl::StrContains(line, "at::cuda::") ||
      absl::StrContains(line, "c10::cuda::") ||
      absl::StrContains(line, "MemorySpace::kCudaDevice")) {
    return true;
  }
  std::string compact;
  for (char c : line) {
    if (c != ' ') compact.push_back(c);
  }
  return absl::StrContains(compact, "==\"cuda\"") ||
         absl::StrContains(compact, "!=\"cuda\"") ||
         absl::StrContains(compact, "\"cuda\"==") ||
         absl::StrContains(compact, "\"cuda\"!=");
}

bool IsCudaSource(absl::string_view path) {
  return absl::EndsWith(path, ".cu") || absl::EndsWith(path, ".cuh");
}

bool IsCudaOnlyInclude(absl::string_view header, bool system,
                       const std::vector<std::string>& cuda_only_headers) {
  if (system) {
    for (const char* p : kCudaHeaderPrefixes) {
      if (absl::StartsWith(header, p)) return true;
    }
  }
  if (IsCudaSource(header)) return true;
  return std::find(cuda_only_headers.begin(), cuda_only_headers.end(),
                   header) != cuda_only_headers.end();
}

}  // namespace

bool InGpuInventoryScope(absl::string_view path) {
  bool in = false;
  for (const char* s : kScopes) {
    if (absl::StartsWith(path, s)) in = true;
  }
  if (!in) return false;
  const bool ext = absl::EndsWith(path, ".cc") || absl::EndsWith(path, ".h") ||
                   IsCudaSource(path);
  const absl::string_view name = path.substr(path.rfind('/') + 1);
  return ext && !absl::StrContains(name, "_test.") &&
         !absl::StrContains(name, "bench");
}

std::string StripComments(absl::string_view src) {
  std::string out(src);
  enum { kCode, kLine, kBlock, kString, kChar, kRaw } state = kCode;
  std::string raw_end;  // )delim" of the raw string being skipped
  for (size_t i = 0; i < src.size(); ++i) {
    const char c = src[i];
    const char next = i + 1 < src.size() ? src[i + 1] : '\0';
    switch (state) {
      case kCode:
        if (c == '/' && next == '/') {
          state = kLine;
          out[i] = ' ';
        } else if (c == '/' && next == '*') {
          state = kBlock;
          out[i] = out[i + 1] = ' ';
          ++i;
        } else if (c == '"') {
          if (i > 0 && src[i - 1] == 'R' &&
              (i < 2 || !IsIdentChar(src[i - 2]) || src[i - 2] == '8' ||
               src[i - 2] == 'u' || src[i - 2] == 'U' || src[i - 2] == 'L')) {
            const size_t paren = src.find('(', i + 1);
            if (paren != absl::string_view::npos) {
              raw_end =
                  absl::StrCat(")", src.substr(i + 1, paren - i - 1), "\"");
              state = kRaw;
              i = paren;
              break;
            }
          }
          state = kString;
        } else if (c == '\'') {
          // 1'000'000 is a digit separator, not a character literal.
          const bool separator = i > 0 && absl::ascii_isxdigit(src[i - 1]) &&
                                 absl::ascii_isxdigit(next);
          if (!separator) state = kChar;
        }
        break;
      case kLine:
        if (c == '\n') {
          state = kCode;
        } else {
          out[i] = ' ';
        }
        break;
      case kBlock:
        if (c == '*' && next == '/') {
          out[i] = out[i + 1] = ' ';
          ++i;
          state = kCode;
        } else if (c != '\n') {
          out[i] = ' ';
        }
        break;
      case kString:
      case kChar:
        if (c == '\\') {
          ++i;
        } else if ((state == kString && c == '"') ||
                   (state == kChar && c == '\'') || c == '\n') {
          state = kCode;
        }
        break;
      case kRaw:
        if (src.substr(i, raw_end.size()) == raw_end) {
          i += raw_end.size() - 1;
          state = kCode;
        }
        break;
    }
  }
  return out;
}

std::vector<DeviceSite> ScanFile(
    absl::string_view path, absl::string_view source,
    const std::vector<std::string>& cuda_only_headers) {
  std::vector<DeviceSite> out;
  if (IsCudaSource(path)) {
    out.push_back({std::string(path), 0, "file", "CUDA source"});
    return out;
  }
  const std::string code = StripComments(source);
  const std::vector<absl::string_view> lines = absl::StrSplit(code, '\n');
  // One entry per open #if: whether it (or one of its #elif) tests a device
  // macro.
  std::vector<bool> frames;
  auto guarded = [&frames] {
    return std::find(frames.begin(), frames.end(), true) != frames.end();
  };
  bool file_site = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const int line_no = static_cast<int>(i) + 1;
    absl::string_view line = absl::StripAsciiWhitespace(lines[i]);
    if (!absl::StartsWith(line, "#")) {
      if (!line.empty() && !guarded() && IsDeviceBranch(Normalise(line))) {
        out.push_back({std::string(path), line_no, "branch", Normalise(line)});
      }
      continue;
    }
    // A directive, with its continuation lines.
    std::string directive(line);
    while (absl::EndsWith(directive, "\\") && i + 1 < lines.size()) {
      directive.pop_back();
      absl::StrAppend(&directive, " ", lines[++i]);
    }
    absl::string_view d = directive;
    absl::ConsumePrefix(&d, "#");
    d = absl::StripLeadingAsciiWhitespace(d);
    const std::string text = Normalise(absl::StrCat("#", d));
    if (absl::ConsumePrefix(&d, "ifdef") || absl::ConsumePrefix(&d, "ifndef") ||
        absl::ConsumePrefix(&d, "if")) {
      const bool device = MentionsDeviceMacro(d);
      if (device && !guarded()) {
        out.push_back({std::string(path), line_no, "#if", text});
      }
      frames.push_back(device);
    } else if (absl::ConsumePrefix(&d, "elif")) {
      if (MentionsDeviceMacro(d) && !frames.empty()) {
        // A device #elif of a conditional that is not a site yet.
        if (!guarded()) {
          out.push_back({std::string(path), line_no, "#if", text});
        }
        frames.back() = true;
      }
    } else if (absl::ConsumePrefix(&d, "endif")) {
      if (!frames.empty()) frames.pop_back();
    } else if (absl::ConsumePrefix(&d, "include")) {
      d = absl::StripLeadingAsciiWhitespace(d);
      if (d.size() < 2 || (d[0] != '<' && d[0] != '"')) continue;
      const bool system = d[0] == '<';
      const size_t end = d.find(system ? '>' : '"', 1);
      if (end == absl::string_view::npos) continue;
      const absl::string_view header = d.substr(1, end - 1);
      if (!file_site && !guarded() &&
          IsCudaOnlyInclude(header, system, cuda_only_headers)) {
        out.push_back({std::string(path), line_no, "file", text});
        file_site = true;
      }
    }
  }
  return out;
}

std::vector<DeviceSite> ScanFiles(
    const std::map<std::string, std::string>& files) {
  std::vector<std::string> cuda_only;
  std::vector<DeviceSite> all;
  // Each round can only add headers; stop when a round adds none.
  for (;;) {
    all.clear();
    std::vector<std::string> found;
    for (const auto& [path, source] : files) {
      for (DeviceSite& s : ScanFile(path, source, cuda_only)) {
        if (s.kind == "file" &&
            (absl::EndsWith(path, ".h") || absl::EndsWith(path, ".cuh"))) {
          found.push_back(path);
        }
        all.push_back(std::move(s));
      }
    }
    std::sort(found.begin(), found.end());
    if (found == cuda_only) break;
    cuda_only = std::move(found);
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const DeviceSite& a, const DeviceSite& b) {
                     return std::tie(a.file, a.line) < std::tie(b.file, b.line);
                   });
  return all;
}

std::string FormatSite(const DeviceSite& site) {
  return absl::StrCat(site.file, " | ", site.kind, " | ", site.text);
}

std::vector<std::string> ParseInventoryBlock(absl::string_view doc) {
  std::vector<std::string> out;
  size_t begin = doc.find(kInventoryBegin);
  if (begin == absl::string_view::npos) return out;
  begin = doc.find('\n', begin);
  const size_t end = doc.find(kInventoryEnd);
  if (begin == absl::string_view::npos || end == absl::string_view::npos ||
      end < begin) {
    return out;
  }
  for (absl::string_view line :
       absl::StrSplit(doc.substr(begin + 1, end - begin - 1), '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || absl::StartsWith(line, "```")) continue;
    out.emplace_back(line);
  }
  return out;
}

std::string RenderInventoryBlock(const std::vector<DeviceSite>& sites) {
  std::string out = absl::StrCat(
      kInventoryBegin,
      " (tests/quality/gpu_branches_test checks this block against the "
      "sources; when it fails, paste the block it prints) -->\n```text\n");
  for (const DeviceSite& s : sites) absl::StrAppend(&out, FormatSite(s), "\n");
  absl::StrAppend(&out, "```\n", kInventoryEnd, " -->\n");
  return out;
}

}  // namespace smoe::quality
