// Copyright 2026 SMoE Lab authors.
//
// The dashboard API's artifact routes (coordinator/http/artifact_routes.h)
// through a real HttpServer, SqliteStore, Scheduler and CheckpointStore:
// listing, download of a checkpoint (bytes + SHA-256 header) and of
// result.json, the token check, and unknown names.
#include "coordinator/http/artifact_routes.h"

#include <httplib.h>

#include <memory>
#include <string>

#include "common/blob_file.h"
#include "coordinator/http/http_server.h"
#include "coordinator/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace smoe::coordinator {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr char kToken[] = "smoe_0123456789abcdef0123456789abcdef";

TEST(ArtifactRoutesTest, ListAndDownloadBehindTheToken) {
  store::testing::ScopedTempDir dir;
  auto st = store::SqliteStore::Open(dir.File("smoe.db"), {});
  ASSERT_TRUE(st.ok()) << st.status();
  auto sched = Scheduler::Create(st->get(), Clock::Real(), {});
  ASSERT_TRUE(sched.ok());
  ASSERT_TRUE((*sched)
                  ->SubmitSweep("name: a\nkind: sraven\ngrid:\n  M: [1, 2]\n"
                                "fixed: {steps: 10}\n",
                                false)
                  .ok());
  WorkerInfo w;
  w.hostname = "t";
  w.slots = 2;
  auto reg = (*sched)->Register(w);
  ASSERT_TRUE(reg.ok());
  auto leases = (*sched)->Lease(reg->worker_id, 2, 0);
  ASSERT_TRUE(leases.ok());
  ASSERT_EQ(leases->size(), 2u);
  CheckpointStoreOptions co;
  co.dir = dir.File("checkpoints");
  co.min_free_bytes = 0;
  auto cs = CheckpointStore::Open(st->get(), co);
  ASSERT_TRUE(cs.ok()) << cs.status();
  const std::string running = (*leases)[0].trial_id;
  const std::string done = (*leases)[1].trial_id;
  const std::string data = "checkpoint bytes\n";
  store::CheckpointRecord h;
  h.trial_id = running;
  h.step = 30;
  h.file_name = "checkpoint.smoeckpt";
  h.bytes = static_cast<int64_t>(data.size());
  h.sha256 = Sha256Hex(data);
  h.attempt = 1;
  h.worker_id = reg->worker_id;
  auto up = (*cs)->BeginUpload(h);
  ASSERT_TRUE(up.ok());
  ASSERT_TRUE((*up)->Append(data).ok());
  ASSERT_TRUE((*up)->Finish().ok());
  ASSERT_TRUE((*sched)
                  ->Complete(reg->worker_id, done, 1, {{"ood_acc", 0.5}}, 2.0)
                  .ok());

  HttpServerOptions o;
  o.listen = "127.0.0.1:0";
  o.checkpoints = cs->get();
  auto http = HttpServer::Start(sched->get(), st->get(), kToken, o);
  ASSERT_TRUE(http.ok()) << http.status();
  httplib::Client c("127.0.0.1", (*http)->port());
  const httplib::Headers auth = {
      {"Authorization", std::string("Bearer ") + kToken}};

  const std::string list = "/api/trials/" + running + "/artifacts";
  auto anon = c.Get(list);
  ASSERT_TRUE(anon);
  EXPECT_EQ(anon->status, 401);
  auto r = c.Get(list, auth);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  ASSERT_EQ(j["artifacts"].size(), 1u);
  const json a = j["artifacts"][0];
  EXPECT_EQ(a["name"], "checkpoint-30-checkpoint.smoeckpt");
  EXPECT_EQ(a["kind"], "checkpoint");
  EXPECT_EQ(a["bytes"], data.size());
  EXPECT_EQ(a["step"], 30);
  EXPECT_EQ(a["sha256"], Sha256Hex(data));
  const std::string url = a["url"];
  EXPECT_EQ(c.Get(url)->status, 401) << "downloads need the token too";
  auto d = c.Get(url, auth);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->status, 200);
  EXPECT_EQ(d->body, data);
  EXPECT_EQ(d->get_header_value("X-Checksum-Sha256"), Sha256Hex(data));
  EXPECT_THAT(d->get_header_value("Content-Disposition"),
              HasSubstr("checkpoint-30-checkpoint.smoeckpt"));

  // The succeeded trial: result.json.
  auto rl = c.Get("/api/trials/" + done + "/artifacts", auth);
  ASSERT_TRUE(rl);
  const json rj = json::parse(rl->body);
  ASSERT_EQ(rj["artifacts"].size(), 1u);
  EXPECT_EQ(rj["artifacts"][0]["name"], "result.json");
  auto rd = c.Get("/api/trials/" + done + "/artifacts/result.json", auth);
  ASSERT_TRUE(rd);
  ASSERT_EQ(rd->status, 200);
  const json result = json::parse(rd->body);
  EXPECT_EQ(result["results"]["ood_acc"], 0.5);
  EXPECT_EQ(result["trial_id"], done);
  EXPECT_EQ(result["duration_s"], 2.0);

  // Unknown names and trials: 404 with a message.
  auto nf = c.Get("/api/trials/" + running + "/artifacts/result.json", auth);
  ASSERT_TRUE(nf);
  EXPECT_EQ(nf->status, 404);
  EXPECT_THAT(nf->body, HasSubstr("no result.json"));
  auto nt = c.Get("/api/trials/a/0123456789abcdef/artifacts", auth);
  ASSERT_TRUE(nt);
  EXPECT_EQ(nt->status, 404);
  (*http)->Shutdown();
}

}  // namespace
}  // namespace smoe::coordinator
