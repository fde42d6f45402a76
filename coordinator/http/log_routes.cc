// Copyright 2026 SMoE Lab authors.
#include "coordinator/http/log_routes.h"

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace smoe::coordinator {

void RegisterLogRoutes(const AddHttpRoute& add, TrialLogs* logs) {
  add(api::Op::kGetTrialLogs,
      [logs](const httplib::Request& req, httplib::Response& res) {
        if (logs == nullptr) {
          return ReplyError(
              res, absl::NotFoundError("this coordinator keeps no trial logs"));
        }
        int attempt = 0;
        if (req.has_param("attempt")) {
          const std::string a = req.get_param_value("attempt");
          if (!absl::SimpleAtoi(a, &attempt)) {
            return ReplyError(res, absl::InvalidArgumentError(absl::StrCat(
                                       "attempt: not an integer: '", a, "'")));
          }
        }
        absl::StatusOr<TrialLogView> v = logs->Read(req.matches[1], attempt);
        if (!v.ok()) return ReplyError(res, v.status());
        nlohmann::json out = {{"trial_id", v->trial_id},
                              {"attempt", v->attempt},
                              {"attempts", v->attempts},
                              {"running", v->running},
                              {"as_of_ms", v->as_of == absl::UnixEpoch()
                                               ? int64_t{0}
                                               : absl::ToUnixMillis(v->as_of)},
                              {"total_bytes", v->total_bytes},
                              {"text", v->text}};
        // Logs may hold bytes that are not UTF-8: replaced, never refused.
        res.set_content(DumpJson(out), kJsonContentType);
      });
}

}  // namespace smoe::coordinator
