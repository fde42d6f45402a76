// Copyright 2026 SMoE Lab authors.
//
// The HTTP server's routes against the table of operations
// (coordinator/api/operations.h): every route it registers has a row in the
// access table and every row a route; the OpenAPI description
// (coordinator/api/openapi.h) against the actual routes: every route is
// described and every described path is served, each operation's x-smoe-role
// is the role the access table requires, the document is generated from the
// table, and it is served without a token.
#include "coordinator/api/openapi.h"

#include <httplib.h>

#include <set>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "coordinator/api/access.h"
#include "coordinator/api/operations.h"
#include "coordinator/http/http_server.h"
#include "gtest/gtest.h"
#include "store/in_memory_store.h"

namespace smoe::coordinator {
namespace {

using nlohmann::json;

constexpr char kAdmin[] = "smoe_0123456789abcdef0123456789abcdef";

struct Served {
  store::InMemoryStore store;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<HttpServer> http;
};

std::unique_ptr<Served> Serve() {
  auto s = std::make_unique<Served>();
  auto sched = Scheduler::Create(&s->store, Clock::Real(), {});
  EXPECT_TRUE(sched.ok()) << sched.status();
  s->scheduler = std::move(*sched);
  HttpServerOptions o;
  o.listen = "127.0.0.1:0";
  auto http = HttpServer::Start(s->scheduler.get(), &s->store, kAdmin, o);
  EXPECT_TRUE(http.ok()) << http.status();
  s->http = std::move(*http);
  return s;
}

// Every (METHOD, path template) the document describes.
std::set<std::pair<std::string, std::string>> Described() {
  std::set<std::pair<std::string, std::string>> out;
  for (const auto& [path, ops] : OpenApiSpec()["paths"].items()) {
    for (const auto& [method, op] : ops.items()) {
      out.insert({absl::AsciiStrToUpper(method), path});
    }
  }
  return out;
}

TEST(AccessTableTest, EveryHttpRouteHasARule) {
  auto s = Serve();
  std::set<std::pair<std::string, std::string>> routes;
  for (const auto& r : s->http->routes()) {
    EXPECT_TRUE(routes.insert(r).second) << r.first << " " << r.second;
  }
  std::set<std::pair<std::string, std::string>> rules;
  for (const HttpRule& r : HttpAccessTable()) {
    rules.insert({r.method, r.pattern});
  }
  EXPECT_EQ(routes, rules)
      << "add the new route to coordinator/api/operations.cc";
  s->http->Shutdown();
}

TEST(OpenApiTest, IsAnOpenApi3DocumentWithARolePerOperation) {
  const json& spec = OpenApiSpec();
  ASSERT_FALSE(spec.is_discarded()) << "openapi.cc holds invalid JSON";
  EXPECT_EQ(spec.value("openapi", "").substr(0, 2), "3.");
  ASSERT_TRUE(spec["paths"].is_object());
  for (const auto& [path, ops] : spec["paths"].items()) {
    for (const auto& [method, op] : ops.items()) {
      const std::string role = op.value("x-smoe-role", "");
      EXPECT_TRUE(role == "public" || role == "viewer" || role == "admin")
          << method << " " << path << ": x-smoe-role '" << role << "'";
      EXPECT_FALSE(op.value("summary", "").empty()) << method << " " << path;
      EXPECT_TRUE(op["responses"].is_object()) << method << " " << path;
      // Public operations need no security scheme, the rest one.
      EXPECT_EQ(op["security"].empty(), role == "public")
          << method << " " << path;
      // Every {param} of the path is declared.
      for (const char* p : {"{sweep}", "{trial}", "{name}"}) {
        if (path.find(p) == std::string::npos) continue;
        const std::string ref =
            absl::StrCat("#/components/parameters/",
                         std::string(p).substr(1, std::string(p).size() - 2));
        bool declared = false;
        for (const json& param : op.value("parameters", json::array())) {
          declared = declared || param.value("$ref", "") == ref;
        }
        EXPECT_TRUE(declared) << method << " " << path << " lacks " << ref;
      }
    }
  }
}

TEST(OpenApiTest, EveryRouteIsDescribedAndEveryDescribedPathIsServed) {
  auto s = Serve();
  std::set<std::pair<std::string, std::string>> served;
  for (const auto& [method, pattern] : s->http->routes()) {
    // The catch-alls: 404 for unknown API routes, the web app's files.
    if (pattern == "/api/.*" || pattern == "/.*") continue;
    served.insert({method, api::OpenApiPathOf(pattern)});
  }
  const auto described = Described();
  for (const auto& r : served) {
    EXPECT_TRUE(described.count(r))
        << r.first << " " << r.second
        << " is served but not in coordinator/api/openapi.cc";
  }
  for (const auto& d : described) {
    EXPECT_TRUE(served.count(d))
        << d.first << " " << d.second
        << " is described in coordinator/api/openapi.cc but not served";
  }
  s->http->Shutdown();
}

TEST(OpenApiTest, RolesAgreeWithTheAccessTable) {
  for (const auto& [path, ops] : OpenApiSpec()["paths"].items()) {
    const std::string example =
        absl::StrReplaceAll(path, {{"{sweep}", "demo-1"},
                                   {"{trial}", "0123456789abcdef"},
                                   {"{name}", "result.json"},
                                   {"{worker}", "pool/w-1"}});
    for (const auto& [method, op] : ops.items()) {
      const auto access = HttpAccess(absl::AsciiStrToUpper(method), example);
      ASSERT_TRUE(access.has_value()) << method << " " << example;
      EXPECT_EQ(op.value("x-smoe-role", ""), AccessName(*access))
          << method << " " << path;
    }
  }
}

TEST(OpenApiTest, PathTemplatesOfRoutePatterns) {
  EXPECT_EQ(
      api::OpenApiPathOf("/api/sweeps/([a-z0-9][a-z0-9._-]{0,63})/curves"),
      "/api/sweeps/{sweep}/curves");
  EXPECT_EQ(
      api::OpenApiPathOf("/api/trials/([a-z0-9][a-z0-9._-]{0,63}/"
                         "[0-9a-f]{16})/artifacts/([A-Za-z0-9._-]{1,200})"),
      "/api/trials/{sweep}/{trial}/artifacts/{name}");
  EXPECT_EQ(api::OpenApiPathOf("/healthz"), "/healthz");
}

TEST(OpenApiTest, GeneratedFromTheTableOfOperations) {
  // Every HTTP operation with a tag is described under its path template,
  // with the table's summary and role; every hand-written entry names one.
  std::set<std::string> documented;
  for (const api::Operation& op : api::Operations()) {
    if (op.http_method == nullptr || op.tag == nullptr) continue;
    documented.insert(op.name);
    const json& o = OpenApiSpec()["paths"][op.http_path]
                                 [absl::AsciiStrToLower(op.http_method)];
    EXPECT_EQ(o.value("summary", ""), op.summary) << op.name;
    EXPECT_EQ(o.value("x-smoe-role", ""), AccessName(op.access)) << op.name;
    EXPECT_TRUE(o.contains("responses")) << op.name;
    EXPECT_TRUE(OpenApiOperationDetails().contains(op.name))
        << op.name
        << " has no hand-written schema in coordinator/api/openapi.cc";
  }
  for (const auto& [name, details] : OpenApiOperationDetails().items()) {
    EXPECT_TRUE(documented.count(name))
        << name << " in coordinator/api/openapi.cc is no described operation";
  }
  // The id patterns are the table's.
  EXPECT_EQ(
      OpenApiSpec()["components"]["parameters"]["sweep"]["schema"]["pattern"],
      absl::StrCat("^", api::kSweepIdRegex, "$"));
}

// Collects every "$ref" under `j`.
void Refs(const json& j, std::set<std::string>* out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (k == "$ref" && v.is_string()) out->insert(v.get<std::string>());
      Refs(v, out);
    }
  } else if (j.is_array()) {
    for (const json& v : j) Refs(v, out);
  }
}

// Every operation says what it answers: a JSON 200 response has a schema
// that names its fields (or a $ref to one); every action with a body says
// what it takes; every $ref resolves.
TEST(OpenApiTest, EveryOperationDescribesItsRequestAndResponseSchemas) {
  const json& spec = OpenApiSpec();
  int checked = 0;
  for (const auto& [path, ops] : spec["paths"].items()) {
    for (const auto& [method, o] : ops.items()) {
      const json ok = o.value("responses", json::object())
                          .value("200", json::object())
                          .value("content", json::object());
      for (const auto& [mime, content] : ok.items()) {
        if (mime.rfind("application/json", 0) != 0) continue;
        const json schema = content.value("schema", json::object());
        ++checked;
        EXPECT_TRUE(schema.contains("properties") || schema.contains("$ref"))
            << method << " " << path
            << ": the 200 response has no schema with fields";
      }
    }
  }
  EXPECT_GE(checked, 20);
  for (const char* name : {"SubmitSweep", "ExtendSweep"}) {
    const json& d = OpenApiOperationDetails()[name];
    const json& body =
        d["requestBody"]["content"]["application/json"]["schema"];
    EXPECT_TRUE(d["requestBody"].value("required", false)) << name;
    EXPECT_FALSE(body["required"].empty()) << name;
    EXPECT_EQ(
        d["responses"]["400"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/SweepFileError")
        << name;
  }
  std::set<std::string> refs;
  Refs(spec, &refs);
  for (const std::string& ref : refs) {
    const std::string prefix = "#/components/";
    ASSERT_EQ(ref.rfind(prefix, 0), 0u) << ref;
    const std::string rest = ref.substr(prefix.size());
    const size_t slash = rest.find('/');
    ASSERT_NE(slash, std::string::npos) << ref;
    const json group =
        spec["components"].value(rest.substr(0, slash), json::object());
    EXPECT_TRUE(group.contains(rest.substr(slash + 1)))
        << ref << " does not resolve";
  }
}

TEST(OpenApiTest, ServedWithoutAToken) {
  auto s = Serve();
  httplib::Client c("127.0.0.1", s->http->port());
  auto r = c.Get("/api/openapi.json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body, nullptr, false), OpenApiSpec());
  // The data it describes still needs one.
  EXPECT_EQ(c.Get("/api/sweeps")->status, 401);
  s->http->Shutdown();
}

}  // namespace
}  // namespace smoe::coordinator
