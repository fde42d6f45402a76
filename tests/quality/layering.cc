// Copyright 2026 SMoE Lab authors.
#include "tests/quality/layering.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace smoe::quality {
namespace {

// Project folders, most specific first; a file belongs to the first prefix that
// matches its path.
struct Layer {
  const char* prefix;
  // Project folders this layer may include ("" entries are ignored).
  std::vector<const char*> may_include;
  // Within those, the folders it must not include (a sibling transport, a
  // layer above).
  std::vector<const char*> must_not_include = {};
};

const std::vector<Layer>& Layers() {
  static const auto* layers = new std::vector<Layer>{
      {"common/", {"common/"}},
      // The trial-parameter tables: plain C++ over common/, shared by the
      // coordinator, the CLI, the daemon and the trainer.
      {"trials/", {"common/", "trials/"}},
      {"proto/", {"common/", "proto/"}},
      {"store/", {"common/", "proto/", "store/"}},
      {"kernels/", {"common/", "kernels/"}},
      {"worker/data/", {"common/", "worker/data/"}},
      // The rank launcher: POSIX over common/, below the daemon and the CLI.
      {"worker/launch/", {"common/", "worker/launch/"}},
      {"worker/eval/", {"common/", "worker/eval/"}},
      {"worker/model/", {"common/", "kernels/", "worker/model/"}},
      {"worker/trainer/",
       {"common/", "kernels/", "worker/model/", "worker/data/", "worker/eval/",
        "worker/trainer/", "proto/", "trials/"}},
      {"worker/daemon/",
       {"common/", "proto/", "worker/daemon/", "worker/launch/", "trials/"}},
      // Sweep statistics, optimal k, theory fit, Skill-Mix tables: plain C++
      // over store types and the parameter table; used by the coordinator's
      // HTTP API and by `smoe analyze`.
      // Adaptive-sweep policies: pure functions of recorded metrics (no
      // store, proto or trials), reusing analysis/'s statistics.
      {"analysis/search/", {"common/", "analysis/"}},
      {"analysis/", {"common/", "store/", "trials/", "analysis/"}},
      // Sweep files (smoe_sweeps): parse, validate against trials/'s tables,
      // expand. Plain C++ over common/ and trials/, below the coordinator
      // (which schedules them) and the CLI (`smoe sweep validate`).
      {"sweeps/", {"common/", "trials/", "sweeps/"}},
      // The coordinator (issue 34): the domain at its root, api/ (the table
      // of operations) and views/ (the read layer) under both transports;
      // http/ and grpc/ never include each other; only the composition root
      // (server.*) includes both.
      {"coordinator/api/",
       {"common/", "store/", "proto/", "coordinator/", "trials/", "analysis/",
        "sweeps/"},
       {"coordinator/http/", "coordinator/grpc/", "coordinator/views/"}},
      {"coordinator/views/",
       {"common/", "store/", "proto/", "coordinator/", "trials/", "analysis/",
        "sweeps/"},
       {"coordinator/http/", "coordinator/grpc/"}},
      {"coordinator/http/",
       {"common/", "store/", "proto/", "coordinator/", "trials/", "analysis/",
        "sweeps/"},
       {"coordinator/grpc/"}},
      {"coordinator/grpc/",
       {"common/", "store/", "proto/", "coordinator/", "trials/", "analysis/",
        "sweeps/"},
       {"coordinator/http/"}},
      {"coordinator/server.",
       {"common/", "store/", "proto/", "coordinator/", "trials/", "analysis/",
        "sweeps/"}},
      {"coordinator/",
       {"common/", "store/", "proto/", "coordinator/", "trials/", "analysis/",
        "sweeps/"},
       {"coordinator/http/", "coordinator/grpc/"}},
      // Only `smoe up` / `smoe coordinator` (and a test starting a server)
      // embed the coordinator; the client commands reach it over gRPC.
      {"cli/up.",
       {"common/", "proto/", "cli/", "coordinator/", "store/", "trials/",
        "sweeps/"}},
      {"cli/main.",
       {"common/", "proto/", "cli/", "coordinator/", "worker/daemon/",
        "worker/launch/", "trials/", "sweeps/"}},
      {"cli/client_test.", {"common/", "proto/", "cli/", "coordinator/"}},
      {"cli/logs_cmd_test.", {"common/", "proto/", "cli/", "coordinator/"}},
      {"cli/workers_cmd_test.", {"common/", "proto/", "cli/", "coordinator/"}},
      {"cli/sampled_cmd_test.", {"common/", "proto/", "cli/", "coordinator/"}},
      {"cli/local_coordinator_for_test.",
       {"common/", "proto/", "cli/", "coordinator/"}},
      // `smoe sweep validate` parses sweep files offline (sweeps/), and
      // `smoe token` / `smoe deploy render` write the role-tokens file
      // offline (docs/roles.md): of the coordinator only its client-side
      // library smoe_tokens.
      {"cli/",
       {"common/", "proto/", "cli/", "worker/daemon/", "worker/launch/",
        "worker/data/", "store/", "trials/", "analysis/", "sweeps/",
        "coordinator/tokens."}},
  };
  return *layers;
}

const char* const kProjectFolders[] = {
    "common/",      "proto/",  "store/",    "kernels/", "worker/",
    "coordinator/", "cli/",    "tests/",    "bench/",   "web/",
    "deploy/",      "trials/", "analysis/", "sweeps/"};

bool IsProjectHeader(absl::string_view header) {
  for (const char* f : kProjectFolders) {
    if (absl::StartsWith(header, f)) return true;
  }
  return false;
}

// Third-party headers restricted to some folders.
struct Restricted {
  const char* header_prefix;
  std::vector<const char*> allowed_in;  // path prefixes
  const char* why;
};

const std::vector<Restricted>& RestrictedHeaders() {
  static const auto* r = new std::vector<Restricted>{
      {"sqlite3.h", {"store/"}, "sqlite3.h appears only in store/"},
      {"torch/",
       {"worker/model/", "worker/trainer/", "bench/", "tests/"},
       "LibTorch only in worker/model and the trainer"},
      {"ATen/",
       {"worker/model/", "worker/trainer/", "bench/", "tests/"},
       "LibTorch only in worker/model and the trainer"},
      {"c10/",
       {"worker/model/", "worker/trainer/", "bench/", "tests/"},
       "LibTorch only in worker/model and the trainer"},
      {"cuda",  // cuda.h, cuda_runtime*.h, cuda_bf16.h ...
       {"kernels/", "worker/model/", "worker/trainer/", "bench/", "tests/"},
       "CUDA only in kernels/ and what links it"},
      {"cublas", {"kernels/", "bench/", "tests/"}, "cuBLAS only in kernels/"},
      {"nccl", {"kernels/", "bench/", "tests/"}, "NCCL only in kernels/"},
      // Debian's libsentencepiece bundles protobuf 3.14 (clashes with
      // LibTorch's libprotobuf) and declares absl::string_view (clashes with
      // Abseil): only the dlopen'ed module may include it.
      {"sentencepiece",
       {"worker/model/mixtral/sentencepiece_module.cc", "tests/", "bench/"},
       "sentencepiece headers only in worker/model/mixtral/"
       "sentencepiece_module.cc (see sentencepiece_module.h)"},
      {"grpcpp/",
       {"proto/", "coordinator/grpc/", "coordinator/server.", "worker/daemon/",
        "cli/", "tests/", "bench/"},
       "gRPC is a thin adapter: only proto/, coordinator/grpc/ and the "
       "composition root (coordinator/server.*), the daemon, the CLI and "
       "tests"},
      {"grpc/",
       {"proto/", "coordinator/grpc/", "coordinator/server.", "worker/daemon/",
        "cli/", "tests/", "bench/"},
       "gRPC is a thin adapter"},
      // The coordinator's HTTP transport (issue 34); elsewhere the race-free
      // listener and the Skill-Mix grader's tests (a fake OpenAI server).
      {"httplib.h",
       {"coordinator/http/", "common/http_listener", "worker/eval/skillmix/",
        "worker/trainer/skillmix_trial_test.", "tests/", "bench/"},
       "cpp-httplib only in coordinator/http/ (the dashboard's transport), "
       "common/http_listener and tests"},
      {"curl/",
       {"worker/eval/skillmix/openai_grader", "tests/", "bench/"},
       "libcurl only in the Skill-Mix grader client (smoe_skillmix_http)"},
  };
  return *r;
}

bool StartsWithAny(absl::string_view s, const std::vector<const char*>& p) {
  for (const char* x : p) {
    if (absl::StartsWith(s, x)) return true;
  }
  return false;
}

}  // namespace

std::vector<std::pair<int, std::string>> ExtractIncludes(
    absl::string_view source) {
  std::vector<std::pair<int, std::string>> out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(source, '\n')) {
    ++line_no;
    line = absl::StripLeadingAsciiWhitespace(line);
    if (!absl::ConsumePrefix(&line, "#")) continue;
    line = absl::StripLeadingAsciiWhitespace(line);
    if (!absl::ConsumePrefix(&line, "include")) continue;
    line = absl::StripLeadingAsciiWhitespace(line);
    if (line.empty()) continue;
    const char close = line[0] == '<' ? '>' : '"';
    if (line[0] != '<' && line[0] != '"') continue;
    const size_t end = line.find(close, 1);
    if (end == absl::string_view::npos) continue;
    out.emplace_back(line_no, std::string(line.substr(1, end - 1)));
  }
  return out;
}

std::vector<Violation> CheckFile(absl::string_view path,
                                 absl::string_view source) {
  std::vector<Violation> out;
  const Layer* layer = nullptr;
  for (const Layer& l : Layers()) {
    if (absl::StartsWith(path, l.prefix)) {
      layer = &l;
      break;
    }
  }
  const bool is_test = absl::StrContains(path, "_test.") ||
                       absl::StartsWith(path, "tests/") ||
                       absl::StartsWith(path, "bench/");
  for (const auto& [line, header] : ExtractIncludes(source)) {
    // Generated protobuf/gRPC types stay out of kernels, model and task code.
    if (absl::EndsWith(header, ".pb.h") &&
        (absl::StartsWith(path, "kernels/") ||
         absl::StartsWith(path, "worker/model/") ||
         absl::StartsWith(path, "worker/data/") ||
         absl::StartsWith(path, "worker/eval/") ||
         absl::StartsWith(path, "store/") ||
         absl::StartsWith(path, "common/"))) {
      out.push_back({std::string(path), line, header,
                     "generated proto types stay out of kernels, model, "
                     "task, store and common code"});
      continue;
    }
    for (const Restricted& r : RestrictedHeaders()) {
      if (absl::StartsWith(header, r.header_prefix) &&
          !StartsWithAny(path, r.allowed_in)) {
        out.push_back({std::string(path), line, header, r.why});
      }
    }
    // Upward or sideways project includes. Tests of a folder may include test
    // helpers from tests/.
    if (layer != nullptr && IsProjectHeader(header) &&
        !StartsWithAny(header, layer->may_include) &&
        !(is_test && absl::StartsWith(header, "tests/"))) {
      out.push_back(
          {std::string(path), line, header,
           std::string(layer->prefix) + " may not include " + header});
    } else if (layer != nullptr &&
               StartsWithAny(header, layer->must_not_include)) {
      out.push_back(
          {std::string(path), line, header,
           std::string(layer->prefix) + " may not include " + header});
    }
  }
  return out;
}

}  // namespace smoe::quality
