// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/http/http_server_assets.h
//
// The dashboard's static files (web/dist), embedded in the binary. The
// implementation is generated at build time by web/embed_assets.cmake from the
// Vite build output; when the web app was not built (no npm), the generated
// table holds one page that says how to build it.
#ifndef SMOE_COORDINATOR_HTTP_HTTP_SERVER_ASSETS_H_
#define SMOE_COORDINATOR_HTTP_HTTP_SERVER_ASSETS_H_

#include <cstddef>

namespace smoe::coordinator {

struct EmbeddedAsset {
  const char* path;  // "/index.html", "/assets/index-abc123.js", ...
  const char* mime;  // Content-Type
  const unsigned char* data;
  std::size_t size;
};

// Returns the asset at `path` (starting with '/'), or nullptr.
const EmbeddedAsset* FindEmbeddedAsset(const char* path);

// True when the web app was not built and only the fallback page is embedded.
bool EmbeddedAssetsAreFallback();

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_HTTP_HTTP_SERVER_ASSETS_H_
