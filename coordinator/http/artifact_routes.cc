// Copyright 2026 SMoE Lab authors.
#include "coordinator/http/artifact_routes.h"

#include <fcntl.h>
#include <httplib.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "coordinator/artifacts.h"

namespace smoe::coordinator {
namespace {

// An open file streamed by httplib's content provider.
struct OpenFile {
  int fd = -1;
  ~OpenFile() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

void RegisterArtifactRoutes(const AddHttpRoute& add,
                            store::ExperimentStore* store,
                            CheckpointStore* checkpoints) {
  add(api::Op::kListArtifacts, [store, checkpoints](const httplib::Request& req,
                                                    httplib::Response& res) {
    const std::string id = req.matches[1];
    auto list = ListArtifacts(store, checkpoints, id);
    if (!list.ok()) return ReplyError(res, list.status());
    nlohmann::json out = {{"trial_id", id},
                          {"artifacts", nlohmann::json::array()}};
    for (const ArtifactInfo& a : *list) {
      out["artifacts"].push_back(
          {{"name", a.name},
           {"kind", a.kind},
           {"bytes", a.bytes},
           {"sha256", a.sha256},
           {"step", a.step},
           {"created_ms", absl::ToUnixMillis(a.created_at)},
           {"url", absl::StrCat("/api/trials/", id, "/artifacts/", a.name)}});
    }
    res.set_content(DumpJson(out), kJsonContentType);
  });
  add(api::Op::kGetArtifact, [store, checkpoints](const httplib::Request& req,
                                                  httplib::Response& res) {
    const std::string id = req.matches[1];
    const std::string name = req.matches[2];
    res.set_header("Content-Disposition",
                   absl::StrCat("attachment; filename=\"", name, "\""));
    if (checkpoints != nullptr) {
      for (const store::CheckpointRecord& c : checkpoints->List(id)) {
        if (CheckpointArtifactName(c) != name) continue;
        auto file = std::make_shared<OpenFile>();
        file->fd =
            ::open(checkpoints->BlobPath(c).c_str(), O_RDONLY | O_CLOEXEC);
        if (file->fd < 0) {
          return ReplyError(res, absl::NotFoundError(absl::StrCat(
                                     "artifact '", name, "' is gone")));
        }
        res.set_header("X-Checksum-Sha256", c.sha256);
        res.set_header("ETag", absl::StrCat("\"", c.sha256, "\""));
        res.set_content_provider(
            static_cast<size_t>(c.bytes), "application/octet-stream",
            [file](size_t offset, size_t length, httplib::DataSink& sink) {
              char buf[1 << 16];
              const size_t want = std::min(length, sizeof(buf));
              const ssize_t n =
                  ::pread(file->fd, buf, want, static_cast<off_t>(offset));
              if (n <= 0) return false;
              return sink.write(buf, static_cast<size_t>(n));
            });
        return;
      }
    }
    std::string body;
    absl::Status st = ReadArtifact(
        store, checkpoints, id, name, [](const ArtifactInfo&) { return true; },
        [&body](absl::string_view data) {
          body.append(data.data(), data.size());
          return true;
        });
    if (!st.ok()) {
      res.set_header("Content-Disposition", "inline");
      return ReplyError(res, st);
    }
    res.set_content(body, "application/json; charset=utf-8");
  });
}

}  // namespace smoe::coordinator
