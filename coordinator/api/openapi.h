// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/api/openapi.h
//
// The OpenAPI 3 description of the coordinator's HTTP API, served at
// GET /api/openapi.json (public: it describes the routes and the role each
// needs, and holds no data; the web app's public files name the same routes).
// Its paths, summaries, tags and roles (`x-smoe-role`: public | viewer |
// admin) are generated from the table of operations
// (coordinator/api/operations.h); each operation's description, parameters,
// body and responses are hand-written in openapi.cc, keyed by the
// operation's name. openapi_test checks that every route the server
// registers is described, that every described path is served, that the
// roles agree with the access table, and that every hand-written entry names
// a described operation.
//
// Thread safety: the document is immutable.
#ifndef SMOE_COORDINATOR_API_OPENAPI_H_
#define SMOE_COORDINATOR_API_OPENAPI_H_

#include "nlohmann/json.hpp"

namespace smoe::coordinator {

// The document (built once).
const nlohmann::json& OpenApiSpec();

// The hand-written part: operation name -> {description, parameters,
// requestBody, responses}.
const nlohmann::json& OpenApiOperationDetails();

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_API_OPENAPI_H_
