// Copyright 2026 SMoE Lab authors.
#include "cli/artifacts_cmd.h"

#include <cstdio>
#include <fstream>
#include <iomanip>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "common/blob_file.h"
#include "proto/rpc_status.h"

namespace smoe::cli {
namespace {

namespace pb = smoe::v1;

int List(CoordinatorClient& client, const std::string& trial_id,
         std::ostream& out) {
  pb::ListArtifactsRequest req;
  req.set_trial_id(trial_id);
  pb::ListArtifactsResponse resp;
  if (int rc =
          Call(client, &pb::Coordinator::Stub::ListArtifacts, req, &resp)) {
    return rc;
  }
  if (resp.artifacts().empty()) {
    out << "trial " << trial_id << " has no artifacts\n";
    return kExitOk;
  }
  out << absl::StrFormat("%-44s %-10s %12s %8s  %s\n", "NAME", "KIND", "BYTES",
                         "STEP", "SHA256");
  for (const pb::Artifact& a : resp.artifacts()) {
    out << absl::StrFormat(
        "%-44s %-10s %12d %8s  %s\n", a.name(), a.kind(), a.bytes(),
        a.kind() == "checkpoint" ? absl::StrCat(a.step()) : "-",
        a.sha256().empty() ? "-" : a.sha256());
  }
  return kExitOk;
}

}  // namespace

int ArtifactsCmd(CoordinatorClient& client, const std::string& trial_id,
                 const std::string& download, const std::string& out_path,
                 std::ostream& out) {
  if (download.empty()) return List(client, trial_id, out);
  if (absl::Status st = ValidateBlobFileName(download, "--download");
      !st.ok()) {
    return ReportError(st);
  }
  const bool to_stdout = out_path == "-";
  const std::string path = out_path.empty() ? download : out_path;
  const std::string part = path + ".part";
  grpc::ClientContext ctx;
  client.Prepare(&ctx, absl::Hours(1));  // checkpoints may be large
  pb::GetArtifactRequest req;
  req.set_trial_id(trial_id);
  req.set_name(download);
  std::unique_ptr<grpc::ClientReader<pb::ArtifactChunk>> reader(
      client.stub()->GetArtifact(&ctx, req));
  std::ofstream file;
  if (!to_stdout) {
    file.open(part, std::ios::binary | std::ios::trunc);
    if (!file) {
      ctx.TryCancel();
      reader->Finish().ok();
      return ReportError(
          absl::InternalError(absl::StrCat("cannot create '", part, "'")));
    }
  }
  pb::ArtifactChunk chunk;
  pb::Artifact info;
  Sha256 sha;
  int64_t bytes = 0;
  while (reader->Read(&chunk)) {
    if (chunk.has_artifact()) info = chunk.artifact();
    if (chunk.data().empty()) continue;
    sha.Update(chunk.data());
    bytes += static_cast<int64_t>(chunk.data().size());
    if (to_stdout) {
      out.write(chunk.data().data(),
                static_cast<std::streamsize>(chunk.data().size()));
    } else {
      file.write(chunk.data().data(),
                 static_cast<std::streamsize>(chunk.data().size()));
    }
  }
  grpc::Status s = reader->Finish();
  if (!to_stdout) file.close();
  if (!s.ok()) {
    if (!to_stdout) std::remove(part.c_str());
    return ReportError(proto::FromGrpcStatus(s));
  }
  const std::string digest = sha.HexDigest();
  if (bytes != info.bytes() ||
      (!info.sha256().empty() && digest != info.sha256())) {
    if (!to_stdout) std::remove(part.c_str());
    return ReportError(absl::DataLossError(
        absl::StrCat("download of '", download, "' failed verification: got ",
                     bytes, " bytes, sha256 ", digest, "; expected ",
                     info.bytes(), " bytes, sha256 ", info.sha256())));
  }
  if (to_stdout) return kExitOk;
  if (std::rename(part.c_str(), path.c_str()) != 0) {
    return ReportError(absl::InternalError(
        absl::StrCat("cannot rename '", part, "' to '", path, "'")));
  }
  std::cerr << "smoe: wrote " << path << " (" << bytes << " bytes, sha256 "
            << digest << ")\n";
  return kExitOk;
}

}  // namespace smoe::cli
