// Copyright 2026 SMoE Lab authors.
#include "cli/analyze_cmd.h"

#include <iostream>
#include <set>
#include <vector>

#include "absl/strings/str_join.h"
#include "coordinator/analysis.h"
#include "proto/rpc_status.h"
#include "proto/smoe.pb.h"

namespace smoe::cli {

namespace pb = smoe::v1;
namespace an = smoe::coordinator::analysis;

int AnalyzeCmd(CoordinatorClient& client, const std::string& sweep_id,
               const AnalyzeFlags& flags, std::ostream& out) {
  if (flags.format != "table" && flags.format != "json") {
    std::cerr << "smoe: --format: '" << flags.format
              << "' is not one of table, json\n";
    return kExitUsage;
  }
  pb::GetSweepRequest req;
  req.set_sweep_id(sweep_id);
  req.set_include_trials(true);
  pb::GetSweepResponse resp;
  grpc::ClientContext ctx;
  client.Prepare(&ctx, absl::Minutes(2));
  const grpc::Status st = client.stub()->GetSweep(&ctx, req, &resp);
  if (!st.ok()) return ReportError(proto::FromGrpcStatus(st));
  std::vector<an::TrialPoint> trials;
  trials.reserve(resp.trials_size());
  for (const pb::Trial& t : resp.trials()) {
    an::TrialPoint p;
    p.trial_id = t.trial_id();
    p.params = nlohmann::json::parse(t.params_json(), nullptr, false);
    if (!p.params.is_object()) p.params = nlohmann::json::object();
    p.seed = t.seed();
    p.state = t.state() == pb::TRIAL_STATE_SUCCEEDED
                  ? store::TrialState::kSucceeded
                  : store::TrialState::kPending;  // only "succeeded" matters
    p.results.insert(t.results().begin(), t.results().end());
    trials.push_back(std::move(p));
  }
  // A metric no trial reported is a typo (or the other kind's name): list
  // the ones there are. Before any result arrives nothing can be checked.
  std::set<std::string> metrics;
  for (const an::TrialPoint& p : trials) {
    for (const auto& [name, value] : p.results) metrics.insert(name);
  }
  if (!flags.metric.empty() && !metrics.empty() &&
      metrics.count(flags.metric) == 0) {
    std::cerr << "smoe: --metric: '" << flags.metric
              << "' is not a result of sweep " << sweep_id
              << "; its metrics: " << absl::StrJoin(metrics, ", ") << "\n";
    return kExitUsage;
  }
  auto or_default = [](const std::string& v, const char* d) {
    return v.empty() ? std::string(d) : v;
  };
  if (resp.sweep().kind() == "skillmix") {
    const std::string rows = or_default(flags.x, "ept");
    const std::string cols = or_default(flags.series, "k_skills");
    const std::vector<an::SkillMixTable> tables =
        an::SkillMixTables(trials, rows, cols);
    if (flags.format == "json") {
      nlohmann::json j = {{"kind", "skillmix"},
                          {"tables", nlohmann::json::array()}};
      for (const an::SkillMixTable& t : tables) {
        if (flags.metric.empty() || t.metric == flags.metric) {
          j["tables"].push_back(an::ToJson(t));
        }
      }
      out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
          << "\n";
    } else {
      out << "sweep " << sweep_id << " (skillmix)\n"
          << an::FormatSkillMixTables(tables, rows, cols, flags.metric);
    }
    return kExitOk;
  }
  an::AggregateOptions o;
  o.kind = resp.sweep().kind();
  o.metric = or_default(flags.metric, "ood_acc");
  o.x = or_default(flags.x, "top_k");
  o.series = or_default(flags.series, "M");
  o.facet = flags.facet;
  o.bootstrap_samples = flags.bootstrap;
  o.seed = flags.seed;
  const nlohmann::json a = an::AnalyzeSweep(trials, o);
  if (flags.format == "json") {
    out << a.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
        << "\n";
  } else {
    out << "sweep " << sweep_id << " (" << resp.sweep().kind() << ")\n"
        << an::FormatAnalysisTable(a);
  }
  return kExitOk;
}

}  // namespace smoe::cli
