// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/openapi.h
//
// The OpenAPI 3 description of the coordinator's HTTP API, served at
// GET /api/openapi.json (public: it describes the routes and the role each
// needs, and holds no data; the web app's public files name the same routes).
// Every operation carries `x-smoe-role` (public | viewer | admin), the role
// the access table (coordinator/access.h) requires. openapi_test checks that
// every route the server registers is described, that every described path
// is served, and that the roles agree with the access table.
//
// Thread safety: the document is immutable.
#ifndef SMOE_COORDINATOR_OPENAPI_H_
#define SMOE_COORDINATOR_OPENAPI_H_

#include <string>

#include "nlohmann/json.hpp"

namespace smoe::coordinator {

// The parsed document (built once).
const nlohmann::json& OpenApiSpec();

// A registered route's regex pattern as an OpenAPI path template: the sweep
// id group becomes {sweep}, a trial id {sweep}/{trial} and an artifact name
// {name}. Patterns without groups come back unchanged.
std::string OpenApiPathOf(const std::string& pattern);

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_OPENAPI_H_
