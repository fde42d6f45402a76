// Copyright 2026 SMoE Lab authors.
#include "cli/analyze_cmd.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "analysis/analyze.h"
#include "analysis/skillmix_tables.h"
#include "analysis/tuned.h"
#include "common/status_macros.h"
#include "common/suggest.h"
#include "proto/rpc_status.h"
#include "proto/smoe.pb.h"
#include "sweeps/sweep_spec.h"
#include "trials/command_kind.h"
#include "trials/params.h"

namespace smoe::cli {

namespace pb = smoe::v1;
namespace an = smoe::analysis;

using an::BestRowPerColumn;
using an::CellStats;
using an::GroupKey;
using an::NumberLabel;
using an::SkillMixBest;
using an::SkillMixTable;
using nlohmann::json;

namespace {
// Reads a number without throwing (NaN when absent or not a number).
double Num(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_number()
             ? it->get<double>()
             : std::numeric_limits<double>::quiet_NaN();
}
std::string Str(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}
}  // namespace

std::string FormatSkillMixTables(const std::vector<SkillMixTable>& tables,
                                 const std::string& row_param,
                                 const std::string& col_param,
                                 const std::string& metric) {
  std::ostringstream out;
  auto cell = [](const CellStats& s) {
    if (s.n == 0) return std::string("-");
    return std::isfinite(s.sem) && s.sem > 0
               ? absl::StrFormat("%.3f +- %.3f", s.mean, s.sem)
               : absl::StrFormat("%.3f", s.mean);
  };
  bool any = false;
  for (const SkillMixTable& t : tables) {
    if (!metric.empty() && t.metric != metric) continue;
    any = true;
    out << t.metric << " (mean +- s.e. over combinations): rows " << row_param
        << ", columns " << col_param << "\n";
    out << absl::StrFormat("  %8s", row_param);
    for (const GroupKey& c : t.cols) out << absl::StrFormat(" %16s", c.label);
    out << "\n";
    for (size_t r = 0; r < t.rows.size(); ++r) {
      out << absl::StrFormat("  %8s", t.rows[r].label);
      for (size_t c = 0; c < t.cols.size(); ++c) {
        out << absl::StrFormat(" %16s", cell(t.cells[r][c]));
      }
      out << "\n";
    }
    out << "  best " << row_param << " per " << col_param
        << " (argmax of the mean; runner-up after the slash):\n";
    for (const SkillMixBest& b : BestRowPerColumn(t)) {
      out << absl::StrFormat("  %8s = %-6s", col_param, t.cols[b.col].label);
      if (b.best < 0) {
        out << " no finished trial\n";
        continue;
      }
      out << absl::StrFormat(" %s = %-4s %s", row_param, t.rows[b.best].label,
                             cell(t.cells[b.best][b.col]));
      if (b.runner_up >= 0) {
        out << absl::StrFormat("  /  %s = %-4s %s", row_param,
                               t.rows[b.runner_up].label,
                               cell(t.cells[b.runner_up][b.col]));
      }
      out << "\n";
    }
    out << "\n";
  }
  if (!any) {
    out << (metric.empty() ? std::string("no succeeded trials with results")
                           : "no succeeded trials with metric " + metric)
        << "\n";
  }
  return out.str();
}

std::string FormatAnalysisTable(const json& a) {
  std::ostringstream out;
  const std::string metric = Str(a, "metric");
  const std::string x = Str(a, "x");
  const std::string series = Str(a, "series");
  const std::string facet = Str(a, "facet");
  auto label = [](const json& v) {
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  const json& curves = a["curves"];
  out << "metric " << metric << ": " << curves.value("trials_used", 0) << " of "
      << curves.value("trials_total", 0)
      << " trials have it (succeeded). Optimal " << x << " per " << series
      << (facet.empty() ? "" : " and " + facet) << "\n";
  out << "  (mean +- s.e.m. over seeds; P = bootstrap frequency of the best "
      << x
      << "; CI = " << static_cast<int>(curves.value("ci_level", 0.95) * 100)
      << "% bootstrap CI of the argmax; 1se = smallest " << x
      << " within one s.e.m. of the best)\n";
  out << absl::StrFormat("  %-12s %6s %6s %16s %6s %12s %6s\n",
                         facet.empty() ? "-" : facet, series, x, "mean +- sem",
                         "P", "CI", "1se");
  bool one_seed = false;
  for (const json& o : a["optimal"]) {
    // One seed: no s.e.m., and nothing for the bootstrap to resample.
    const int seeds = o.value("seeds", 2);
    if (seeds < 2) {
      one_seed = true;
      out << absl::StrFormat(
          "  %-12s %6s %6s %16s %6s %12s %6s\n", Str(o, "facet_label"),
          Str(o, "series_label"), label(o["best"]),
          absl::StrFormat("%.4f (n = %d)", Num(o, "best_mean"), seeds), "-",
          "-", label(o["one_se"]));
      continue;
    }
    out << absl::StrFormat("  %-12s %6s %6s %7.4f +- %6.4f %6.2f %12s %6s\n",
                           Str(o, "facet_label"), Str(o, "series_label"),
                           label(o["best"]), Num(o, "best_mean"),
                           Num(o, "best_sem"), Num(o, "best_freq"),
                           absl::StrCat("[", NumberLabel(Num(o, "ci_lo")), ", ",
                                        NumberLabel(Num(o, "ci_hi")), "]"),
                           label(o["one_se"]));
  }
  if (a["optimal"].empty()) out << "  (no succeeded trials with this metric)\n";
  if (one_seed) {
    out << "  n = 1: one seed per point, so no s.e.m., no CI and no P; run "
           "more seeds to tell the noise from the effect\n";
  }
  if (!a["fits"].empty()) {
    out << "\ntheory fit: " << Str(a, "model") << "\n";
    for (const json& f : a["fits"]) {
      if (!f.value("ok", false)) {
        out << absl::StrFormat("  %-12s not fitted: %s\n",
                               Str(f, "facet_label"), Str(f, "message"));
        continue;
      }
      out << absl::StrFormat(
          "  %-12s a = %.4g  b = %.4g  R^2 = %.3f  rss = %.4g  points = %d\n",
          Str(f, "facet_label"), Num(f, "a"), Num(f, "b"), Num(f, "r2"),
          Num(f, "rss"), static_cast<int>(f["points"].size()));
      if (!f.value("meaningful", true)) {
        out << absl::StrFormat(
            "  %-12s   not meaningful: R^2 < 0, the fit is worse than a flat "
            "line through the mean\n",
            "");
      }
    }
    // No per-N "predicted k*": the model's argmin is T whatever the fit.
    for (const json& f : a["fits"]) {
      if (f.value("ok", false) && f.contains("k_star_note")) {
        out << "  note: " << Str(f, "k_star_note") << "\n";
        break;
      }
    }
  }
  return out.str();
}

PrunedSummary SummarizePruned(const pb::GetSweepResponse& resp,
                              const std::string& x) {
  PrunedSummary p;
  // x value -> (trials, pruned trials)
  std::map<std::string, std::pair<int, int>> by_x;
  for (const pb::Trial& t : resp.trials()) {
    const bool pruned = t.state() == pb::TRIAL_STATE_PRUNED;
    if (pruned) ++p.trials;
    const json params = json::parse(t.params_json(), nullptr, false);
    if (x.empty() || !params.is_object() || !params.contains(x)) continue;
    const json& v = params[x];
    auto& [n, np] = by_x[v.is_string() ? v.get<std::string>() : v.dump()];
    ++n;
    if (pruned) ++np;
  }
  for (const auto& [v, counts] : by_x) {
    if (counts.first > 0 && counts.first == counts.second) {
      p.all_pruned.push_back(v);
    }
  }
  return p;
}

std::string FormatPrunedNote(const PrunedSummary& p, const std::string& x) {
  if (p.trials == 0) return "";
  std::string note = absl::StrCat(
      "  note: ", p.trials,
      " trial(s) were pruned by the search (early-stopped at a rung; "
      "`smoe results` shows the rung and value): they are not in the "
      "means above, so the best ",
      x, " is the best among the trials the search let finish");
  if (!p.all_pruned.empty()) {
    absl::StrAppend(&note, "; every trial was pruned at ", x, " = ",
                    absl::StrJoin(p.all_pruned, ", "));
  }
  return note + "\n";
}

std::vector<std::string> SweptParams(
    const std::vector<an::TrialPoint>& trials) {
  std::map<std::string, std::set<std::string>> values;
  for (const an::TrialPoint& t : trials) {
    for (const auto& [k, v] : t.params.items()) values[k].insert(v.dump());
  }
  std::vector<std::string> swept;
  for (const auto& [k, vs] : values) {
    if (vs.size() >= 2) swept.push_back(k);
  }
  return swept;
}

absl::Status CheckAnalysisAxes(const std::vector<an::TrialPoint>& trials,
                               const AnalyzeFlags& flags,
                               absl::string_view sweep_id) {
  if (trials.empty()) return absl::OkStatus();
  const std::vector<std::string> swept = SweptParams(trials);
  for (const auto& [flag, value] :
       {std::pair<const char*, const std::string*>{"--x", &flags.x},
        {"--series", &flags.series},
        {"--facet", &flags.facet}}) {
    if (value->empty() ||
        std::find(swept.begin(), swept.end(), *value) != swept.end()) {
      continue;
    }
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": '", *value, "' is not a swept parameter of sweep ", sweep_id,
        DidYouMean(*value, swept), "; its swept parameters: ",
        swept.empty() ? "none (every trial has the same parameters)"
                      : absl::StrJoin(swept, ", ")));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ParseTuneList(const std::string& csv) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(csv, ',')) {
    if (part.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--tune: '", csv,
          "' has an empty entry (want parameters separated by commas, e.g. "
          "lr,weight_decay)"));
    }
    out.emplace_back(part);
  }
  return out;
}

absl::Status CheckTuneFlags(const std::vector<an::TrialPoint>& trials,
                            const AnalyzeFlags& flags,
                            absl::string_view sweep_id) {
  if (flags.tune.empty()) {
    if (!flags.select_by.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--select-by: '", flags.select_by,
          "' needs --tune (the parameters whose values it selects)"));
    }
    if (flags.select_per != "seed") {
      return absl::InvalidArgumentError(
          absl::StrCat("--select-per: '", flags.select_per,
                       "' needs --tune (the parameters to tune)"));
    }
    return absl::OkStatus();
  }
  if (absl::StatusOr<an::SelectUnit> u = an::ParseSelectUnit(flags.select_per);
      !u.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--select-per: ", u.status().message()));
  }
  SMOE_ASSIGN_OR_RETURN(const std::vector<std::string> names,
                        ParseTuneList(flags.tune));
  if (trials.empty()) return absl::OkStatus();
  const std::vector<std::string> swept = SweptParams(trials);
  for (const std::string& name : names) {
    if (std::find(swept.begin(), swept.end(), name) != swept.end()) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "--tune: '", name, "' is not a swept parameter of sweep ", sweep_id,
        DidYouMean(name, swept), "; its swept parameters: ",
        swept.empty() ? "none (every trial has the same parameters)"
                      : absl::StrJoin(swept, ", ")));
  }
  std::set<std::string> metrics;
  for (const an::TrialPoint& p : trials) {
    for (const auto& [name, value] : p.results) metrics.insert(name);
  }
  const std::string select_by =
      flags.select_by.empty() ? "val_acc" : flags.select_by;
  if (!metrics.empty() && metrics.count(select_by) == 0) {
    const std::vector<std::string> names_list(metrics.begin(), metrics.end());
    return absl::InvalidArgumentError(absl::StrCat(
        "--select-by: '", select_by, "' is not a result of sweep ", sweep_id,
        DidYouMean(select_by, names_list),
        select_by == "val_acc"
            ? " (trials trained before the validation split existed have no "
              "val_acc)"
            : "",
        "; its metrics: ", absl::StrJoin(metrics, ", ")));
  }
  return absl::OkStatus();
}

std::string FormatTunedTable(const json& t) {
  std::ostringstream out;
  const std::string metric = Str(t, "metric");
  const std::string x = Str(t, "x");
  const std::string series = Str(t, "series");
  const std::string facet = Str(t, "facet");
  const std::string select_by = Str(t, "select_by");
  const bool per_point = Str(t, "select_per") == "point";
  std::vector<std::string> tune;
  for (const json& n : t.value("tune", json::array())) {
    tune.push_back(n.is_string() ? n.get<std::string>() : n.dump());
  }
  auto label = [](const json& v) {
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  const json& configs = t["configs"];
  out << "tuned: " << metric << " at each " << x
      << (per_point ? "'s" : " and seed's") << " best "
      << absl::StrJoin(tune, ", ") << " by " << select_by << " ("
      << configs.size() << " configuration" << (configs.size() == 1 ? "" : "s")
      << "; " << t.value("trials_used", 0) << " of "
      << t.value("trials_total", 0) << " trials have both " << metric << " and "
      << select_by << ")\n";
  for (const json& n : t.value("notes", json::array())) {
    out << "  note: " << label(n) << "\n";
  }
  out << "Optimal " << x << " per " << series
      << (facet.empty() ? "" : " and " + facet)
      << ": tuned, and at each fixed configuration (untuned)\n";
  out << "  (mean +- s.e.m. over seeds; P = bootstrap frequency of the best "
      << x << "; CI = " << static_cast<int>(t.value("ci_level", 0.95) * 100)
      << "% bootstrap CI of the argmax, the tuned rows re-selecting the "
         "configuration in every resample; 1se = smallest "
      << x << " within one s.e.m. of the best)\n";
  int width = 8;
  for (const json& c : configs) {
    width = std::max(width, static_cast<int>(label(c).size()));
  }
  out << absl::StrFormat("  %-12s %6s %-*s %6s %16s %6s %12s %6s\n",
                         facet.empty() ? "-" : facet, series, width, "setting",
                         x, "mean +- sem", "P", "CI", "1se");
  auto row = [&](const json& o, const std::string& setting) {
    // One seed: no s.e.m., and nothing for the bootstrap to resample.
    const int seeds = o.value("seeds", 2);
    const std::string mean =
        seeds < 2 ? absl::StrFormat("%.4f (n = %d)", Num(o, "best_mean"), seeds)
                  : absl::StrFormat("%7.4f +- %6.4f", Num(o, "best_mean"),
                                    Num(o, "best_sem"));
    const std::string p = seeds < 2
                              ? std::string("-")
                              : absl::StrFormat("%.2f", Num(o, "best_freq"));
    const std::string ci =
        seeds < 2 ? std::string("-")
                  : absl::StrCat("[", NumberLabel(Num(o, "ci_lo")), ", ",
                                 NumberLabel(Num(o, "ci_hi")), "]");
    out << absl::StrFormat("  %-12s %6s %-*s %6s %16s %6s %12s %6s\n",
                           Str(o, "facet_label"), Str(o, "series_label"), width,
                           setting, label(o["best"]), mean, p, ci,
                           label(o["one_se"]));
  };
  // (facet, series) labels -> (configuration, its untuned optimal row).
  std::map<std::pair<std::string, std::string>,
           std::vector<std::pair<std::string, const json*>>>
      untuned_rows;
  // (config, facet, series, x) labels -> mean of the untuned curve.
  std::map<std::vector<std::string>, double> untuned_mean;
  for (const json& u : t["untuned"]) {
    const std::string cfg = Str(u, "config");
    for (const json& o : u["optimal"]) {
      untuned_rows[{Str(o, "facet_label"), Str(o, "series_label")}]
          .emplace_back(cfg, &o);
    }
    for (const json& f : u["curves"]["facets"]) {
      for (const json& sr : f["series"]) {
        for (const json& pt : sr["points"]) {
          untuned_mean[{cfg, Str(f, "label"), Str(sr, "label"),
                        Str(pt, "x_label")}] = Num(pt, "mean");
        }
      }
    }
  }
  for (const json& s : t["tuned"]) {
    row(s["optimal"], "tuned");
    for (const auto& [cfg, o] :
         untuned_rows[{Str(s, "facet_label"), Str(s, "series_label")}]) {
      row(*o, cfg);
    }
  }
  if (t["tuned"].empty()) {
    out << "  (no succeeded trials with both " << metric << " and " << select_by
        << ")\n";
  }
  // Curves side by side, with the configuration each x chose.
  for (const json& s : t["tuned"]) {
    out << "\n"
        << metric << " (mean over seeds) at "
        << (facet.empty() ? "" : facet + "=" + Str(s, "facet_label") + " ")
        << series << "=" << Str(s, "series_label")
        << ": tuned, each fixed configuration, and what the tuned "
           "selection chose (seeds)\n";
    out << absl::StrFormat("  %6s %8s", x, "tuned");
    for (const json& c : configs) {
      out << absl::StrFormat(
          " %*s", static_cast<int>(std::max<size_t>(8, label(c).size())),
          label(c));
    }
    out << "  chosen\n";
    for (const json& p : s["points"]) {
      out << absl::StrFormat("  %6s %8.4f", Str(p, "x_label"), Num(p, "mean"));
      for (const json& c : configs) {
        auto it =
            untuned_mean.find({label(c), Str(s, "facet_label"),
                               Str(s, "series_label"), Str(p, "x_label")});
        const std::string v = it == untuned_mean.end()
                                  ? std::string("-")
                                  : absl::StrFormat("%.4f", it->second);
        out << absl::StrFormat(
            " %*s", static_cast<int>(std::max<size_t>(8, label(c).size())), v);
      }
      std::vector<std::string> chosen;
      for (const auto& [cfg, n] : p["chosen_count"].items()) {
        chosen.push_back(absl::StrCat(cfg, " x", n.dump()));
      }
      // Selected among fewer configurations than the sweep has (trials
      // missing, failed or still running): say so.
      const int have = p.value("configs", 0);
      std::string partial;
      if (have < static_cast<int>(configs.size())) {
        partial = absl::StrCat("  (among ", have, " of ", configs.size(),
                               " configurations)");
      }
      out << "  " << absl::StrJoin(chosen, "; ") << partial << "\n";
    }
  }
  return out.str();
}

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
  // Issue 31 item 6: an axis the sweep does not vary is refused, naming the
  // ones it does (exit 64), instead of printing rows of one value.
  if (absl::Status s = CheckAnalysisAxes(trials, flags, sweep_id); !s.ok()) {
    std::cerr << "smoe: " << s.message() << "\n";
    return kExitUsage;
  }
  if (absl::Status s = CheckTuneFlags(trials, flags, sweep_id); !s.ok()) {
    std::cerr << "smoe: " << s.message() << "\n";
    return kExitUsage;
  }
  auto or_default = [](const std::string& v, const char* d) {
    return v.empty() ? std::string(d) : v;
  };
  // A kind whose view is its own tables (skillmix: EPT x k_skills).
  if (const trials::TrialKind* tk = trials::FindKind(resp.sweep().kind());
      tk != nullptr && tk->view.layout == "tables") {
    if (!flags.tune.empty()) {
      std::cerr << "smoe: --tune: the tuned analysis is for training sweeps "
                   "(sraven, command); sweep "
                << sweep_id << " is a " << tk->name << " sweep\n";
      return kExitUsage;
    }
    const trials::KindView& view = tk->view;
    const std::string rows = or_default(flags.x, view.x.c_str());
    const std::string cols = or_default(flags.series, view.series.c_str());
    const std::vector<an::SkillMixTable> tables =
        an::SkillMixTables(trials, rows, cols);
    if (flags.format == "json") {
      nlohmann::json j = {{"kind", tk->name},
                          {"tables", nlohmann::json::array()}};
      for (const an::SkillMixTable& t : tables) {
        if (flags.metric.empty() || t.metric == flags.metric) {
          j["tables"].push_back(an::ToJson(t));
        }
      }
      out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
          << "\n";
    } else {
      out << "sweep " << sweep_id << " (" << tk->name << ")\n"
          << FormatSkillMixTables(tables, rows, cols, flags.metric);
    }
    return kExitOk;
  }
  an::AggregateOptions o;
  o.kind = resp.sweep().kind();
  // The kind's view (trials::DefaultViewOf, as the dashboard opens it):
  // sraven's is top_k / M / attention / ood_acc; a command sweep's is its
  // first metric against its first grid axes, with its declared defaults.
  const trials::TrialKind* kind = trials::FindKind(o.kind);
  std::vector<std::string> grid_axes;
  std::optional<sweeps::SweepSpec> spec;
  if (o.kind == trials::kCommandKind) {
    const sweeps::ParseOptions po = sweeps::ParseOptions::Stored();
    auto parsed = sweeps::ParseSweepYaml(resp.sweep().spec_yaml(), po);
    if (parsed.ok()) {
      spec = std::move(*parsed);
      o.defaults = trials::Defaults(spec->command_kind);
      for (const sweeps::Axis& a : spec->grid) grid_axes.push_back(a.name);
      kind = &spec->command_kind;
    }
  }
  const trials::KindView view =
      kind == nullptr ? trials::KindView{}
                      : trials::DefaultViewOf(*kind, grid_axes,
                                              {metrics.begin(), metrics.end()});
  o.metric = or_default(flags.metric, view.metric.c_str());
  o.x = or_default(flags.x, view.x.c_str());
  o.series = or_default(flags.series, view.series.c_str());
  o.facet = or_default(flags.facet, view.facet.c_str());
  o.bootstrap_samples = flags.bootstrap;
  o.seed = flags.seed;
  if (!flags.tune.empty()) {
    an::TuneOptions tune;
    tune.tune = *ParseTuneList(flags.tune);  // checked by CheckTuneFlags
    if (!flags.select_by.empty()) tune.select_by = flags.select_by;
    tune.unit = *an::ParseSelectUnit(flags.select_per);
    absl::StatusOr<an::TunedAnalysis> tuned = an::AnalyzeTuned(trials, o, tune);
    if (!tuned.ok()) {
      std::cerr << "smoe: --tune: " << tuned.status().message() << "\n";
      return kExitUsage;
    }
    nlohmann::json t = an::ToJson(*tuned);
    const PrunedSummary pruned = SummarizePruned(resp, o.x);
    if (pruned.trials > 0) {
      t["pruned"] = {{"trials", pruned.trials},
                     {"x_values_all_pruned", pruned.all_pruned}};
    }
    if (flags.format == "json") {
      out << t.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
          << "\n";
    } else {
      out << "sweep " << sweep_id << " (" << resp.sweep().kind() << ")\n"
          << FormatTunedTable(t) << FormatPrunedNote(pruned, o.x);
    }
    return kExitOk;
  }
  nlohmann::json a = an::AnalyzeSweep(trials, o);
  const PrunedSummary pruned = SummarizePruned(resp, o.x);
  if (pruned.trials > 0) {
    a["pruned"] = {{"trials", pruned.trials},
                   {"x_values_all_pruned", pruned.all_pruned}};
  }
  if (flags.format == "json") {
    out << a.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
        << "\n";
  } else {
    out << "sweep " << sweep_id << " (" << resp.sweep().kind() << ")\n"
        << FormatAnalysisTable(a) << FormatPrunedNote(pruned, o.x);
  }
  return kExitOk;
}

}  // namespace smoe::cli
