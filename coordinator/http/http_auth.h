// Copyright 2026 SMoE Lab authors.
//
// File: coordinator/http/http_auth.h
//
// The dashboard's authentication, roles and CSRF protection (docs/roles.md).
//
// Who is calling: `Authorization: Bearer <token>` (scripts, the CLI), or the
// session cookie `smoe_session` set by POST /login (browsers). The cookie is
//
//   s3.<token name>.<role>.<issued, unix s>.<nonce, 32 hex>.
//      <hex HMAC-SHA256(admin token, name, role, sha256(token), issued,
//                       nonce)>
//
// so it carries the role, is never the token, dies with the token (revoked,
// or re-created under the same name), with the admin token (the MAC key),
// kSessionLifetime after sign-in, and at POST /logout (its nonce goes on a
// list of ended sessions, kept in memory until the cookie would expire: a
// coordinator restart forgets it). Each sign-in gets its own nonce, so its
// own CSRF token.
//
// What they may do: the access table (coordinator/api/access.h) by method and
// path; a route missing from it is refused (fail closed). Refusals: 401
// without a valid token or session, 403 naming the role needed.
//
// CSRF: every request that is not GET/HEAD must not come from a foreign page:
//   - a present `Origin` must be the request's own (scheme-less host:port
//     equal to `Host`; `null`, which browsers send for form posts from a page
//     with `Referrer-Policy: no-referrer`, only with `Sec-Fetch-Site:
//     same-origin`), and `Sec-Fetch-Site: cross-site` or `same-site` is
//     refused;
//   - a cookie-authenticated request must carry `X-CSRF-Token`, an HMAC of
//     the session cookie that GET /api/session returns (a page of another
//     site can neither read it nor set the header without a CORS preflight,
//     which the server never grants).
// Bearer requests need no CSRF token: a browser never adds the header by
// itself. The cookie is also SameSite=Strict and HttpOnly.
//
// Thread safety: the functions are safe for concurrent use (TokenRegistry
// is).
#ifndef SMOE_COORDINATOR_HTTP_HTTP_AUTH_H_
#define SMOE_COORDINATOR_HTTP_HTTP_AUTH_H_

#include <httplib.h>

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "coordinator/api/access.h"
#include "coordinator/tokens.h"

namespace smoe::coordinator {

inline constexpr char kSessionCookieName[] = "smoe_session";
inline constexpr char kCsrfHeader[] = "X-CSRF-Token";

// How long a session lasts after sign-in.
inline constexpr absl::Duration kSessionLifetime = absl::Hours(7 * 24);

// A new session cookie value for `who`: issued now, a fresh random nonce
// (an error only when the system's random source fails).
absl::StatusOr<std::string> SessionCookieValue(const TokenRegistry& tokens,
                                               const Principal& who);
// The same, issued at `issued` with `nonce` (32 hex digits; tests).
std::string SessionCookieValue(const TokenRegistry& tokens,
                               const Principal& who, absl::Time issued,
                               absl::string_view nonce);
// The principal a session cookie value belongs to, or nullopt (malformed,
// forged, expired at `now`, ended by POST /logout, or its token revoked or
// replaced).
std::optional<Principal> PrincipalFromSession(TokenRegistry* tokens,
                                              absl::string_view value,
                                              absl::Time now = absl::Now());
// Ends a session (POST /logout): its cookie is refused from now on, in this
// process. A malformed value is ignored.
void EndSession(absl::string_view value);
// The CSRF token of a session (cookie value): 32 hex digits.
std::string CsrfTokenFor(const TokenRegistry& tokens,
                         absl::string_view session);

struct HttpCaller {
  std::optional<Principal> who;
  bool bearer = false;  // authenticated by the Authorization header
  std::string session;  // the session cookie value, when by cookie
};
// Who sent `req` (an Authorization header wins over a cookie).
HttpCaller ResolveCaller(TokenRegistry* tokens, const httplib::Request& req);
// The caller's token name for an action's log line ("?" when unknown).
std::string CallerName(TokenRegistry* tokens, const httplib::Request& req);

// The largest body a request may carry before the caller is known (POST
// /login: a token in a form or JSON is well under 1 KiB). Larger ones are
// refused with 413 before they are read, chunked ones with 411.
inline constexpr uint64_t kMaxPublicBodyBytes = 4096;

// Why a request is refused.
struct HttpRefusal {
  int status;           // 401, 403, 404, 411 or 413
  std::string message;  // names the role needed; never a token
};
// The gate every request passes before routing: the access table, the caller
// and its role, and for state-changing requests the Origin and CSRF checks.
// nullopt = go on.
std::optional<HttpRefusal> CheckHttpRequest(TokenRegistry* tokens,
                                            const httplib::Request& req);

// Whether `req` comes from a page of its own origin as far as the browser
// says (Origin, Sec-Fetch-Site); true when neither header is present.
bool SameOriginRequest(const httplib::Request& req);

}  // namespace smoe::coordinator

#endif  // SMOE_COORDINATOR_HTTP_HTTP_AUTH_H_
