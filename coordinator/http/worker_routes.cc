// Copyright 2026 SMoE Lab authors.
#include "coordinator/http/worker_routes.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "coordinator/http/http_auth.h"

namespace smoe::coordinator {

nlohmann::json WorkersTableJson(const WorkersTable& table) {
  nlohmann::json rows = nlohmann::json::array();
  for (const WorkerRow& row : table.rows) {
    const store::WorkerRecord& r = row.worker.record;
    rows.push_back(
        {{"worker_id", r.worker_id},
         {"hostname", r.hostname},
         {"state", WorkerStateName(row.state)},
         {"draining", r.draining},
         {"paused", row.worker.paused},
         {"cpus", r.cpus},
         {"gpus", r.gpus},
         {"gpus_used", row.worker.gpus_used},
         {"slots", r.slots},
         {"slots_used", row.worker.slots_used},
         {"labels", r.labels},
         {"kinds", r.kinds},
         {"registered_ms", absl::ToUnixMillis(r.registered_at)},
         {"last_heartbeat_ms", absl::ToUnixMillis(r.last_heartbeat_at)},
         {"heartbeat_age_s", absl::ToDoubleSeconds(row.heartbeat_age)},
         {"trial_ids", row.worker.trial_ids}});
  }
  return {{"workers", std::move(rows)},
          {"as_of_ms", absl::ToUnixMillis(table.as_of)},
          {"lost_after_s", absl::ToDoubleSeconds(table.lost_after)},
          {"hidden", table.hidden}};
}

void RegisterWorkerRoutes(const AddHttpRoute& add, Scheduler* scheduler,
                          TokenRegistry* tokens) {
  add(api::Op::kListWorkers, [scheduler](const httplib::Request& req,
                                         httplib::Response& res) {
    bool all = false;
    if (req.has_param("all")) {
      const std::string a = req.get_param_value("all");
      if (a != "0" && a != "1") {
        return ReplyError(res, absl::InvalidArgumentError(absl::StrCat(
                                   "all: must be 0 or 1, not '", a, "'")));
      }
      all = a == "1";
    }
    res.set_header("Cache-Control", "no-store");
    ReplyJson(res, 200, WorkersTableJson(ReadWorkersTable(*scheduler, all)));
  });
  add(api::Op::kDrainWorker,
      [scheduler, tokens](const httplib::Request& req, httplib::Response& res) {
        const std::string id = req.matches[1];
        absl::Status s = scheduler->DrainWorker(id);
        if (!s.ok()) return ReplyError(res, s);
        SMOE_LOG(INFO) << "dashboard: " << CallerName(tokens, req)
                       << " drained worker " << id;
        ReplyJson(res, 200, {{"worker_id", id}, {"draining", true}});
      });
}

}  // namespace smoe::coordinator
