// Copyright 2026 SMoE Lab authors.
#include "coordinator/http/http_auth.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <map>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/api_token.h"

namespace smoe::coordinator {
namespace {

std::string HmacHex(const std::string& key, absl::string_view msg) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), mac,
       &len);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(mac), len));
}

std::string SessionMac(const TokenRegistry& tokens, const Principal& who,
                       int64_t issued, absl::string_view nonce) {
  return HmacHex(tokens.session_key(),
                 absl::StrCat("smoe dashboard session v3\n", who.name, "\n",
                              RoleName(who.role), "\n", who.fingerprint, "\n",
                              issued, "\n", nonce));
}

// The parts of an "s3." cookie value.
struct SessionParts {
  absl::string_view name, role, nonce, mac;
  int64_t issued = 0;
};
std::optional<SessionParts> ParseSession(absl::string_view value) {
  if (!absl::ConsumePrefix(&value, "s3.")) return std::nullopt;
  // Names may hold '.' ([a-z0-9._-]): split the fixed fields from the right.
  SessionParts p;
  absl::string_view* fields[] = {&p.mac, &p.nonce};
  for (absl::string_view* f : fields) {
    const size_t dot = value.rfind('.');
    if (dot == absl::string_view::npos) return std::nullopt;
    *f = value.substr(dot + 1);
    value = value.substr(0, dot);
  }
  size_t dot = value.rfind('.');
  if (dot == absl::string_view::npos ||
      !absl::SimpleAtoi(value.substr(dot + 1), &p.issued)) {
    return std::nullopt;
  }
  value = value.substr(0, dot);
  dot = value.rfind('.');
  if (dot == absl::string_view::npos) return std::nullopt;
  p.role = value.substr(dot + 1);
  p.name = value.substr(0, dot);
  if (p.nonce.size() != 32 || p.name.empty()) return std::nullopt;
  return p;
}

// Sessions ended by POST /logout: nonce -> when the cookie expires anyway.
struct EndedSessions {
  absl::Mutex mu;
  std::map<std::string, absl::Time, std::less<>> ended ABSL_GUARDED_BY(mu);
};
EndedSessions& Ended() {
  static auto* e = new EndedSessions();
  return *e;
}

// The value of cookie `name` in a Cookie header, or "".
std::string CookieValue(const std::string& header, absl::string_view name) {
  for (absl::string_view c : absl::StrSplit(header, ';')) {
    c = absl::StripAsciiWhitespace(c);
    if (absl::ConsumePrefix(&c, name) && absl::ConsumePrefix(&c, "=")) {
      return std::string(c);
    }
  }
  return "";
}

bool Mutating(const std::string& method) {
  return method != "GET" && method != "HEAD" && method != "OPTIONS";
}

}  // namespace

std::string SessionCookieValue(const TokenRegistry& tokens,
                               const Principal& who, absl::Time issued,
                               absl::string_view nonce) {
  const int64_t t = absl::ToUnixSeconds(issued);
  return absl::StrCat("s3.", who.name, ".", RoleName(who.role), ".", t, ".",
                      nonce, ".", SessionMac(tokens, who, t, nonce));
}

absl::StatusOr<std::string> SessionCookieValue(const TokenRegistry& tokens,
                                               const Principal& who) {
  // 128 random bits from the same source as the API tokens.
  absl::StatusOr<std::string> random = GenerateApiToken();
  if (!random.ok()) return random.status();
  return SessionCookieValue(tokens, who, absl::Now(), random->substr(5, 32));
}

std::optional<Principal> PrincipalFromSession(TokenRegistry* tokens,
                                              absl::string_view value,
                                              absl::Time now) {
  const std::optional<SessionParts> p = ParseSession(value);
  if (!p.has_value()) return std::nullopt;
  const absl::Time issued = absl::FromUnixSeconds(p->issued);
  // Issued in the future (beyond a little clock skew) or expired.
  if (issued > now + absl::Minutes(5) || now - issued >= kSessionLifetime) {
    return std::nullopt;
  }
  std::optional<Principal> who = tokens->Find(p->name);
  if (!who.has_value() || p->role != RoleName(who->role)) return std::nullopt;
  if (!TokenEquals(p->mac, SessionMac(*tokens, *who, p->issued, p->nonce))) {
    return std::nullopt;
  }
  EndedSessions& e = Ended();
  absl::MutexLock lock(&e.mu);
  if (e.ended.count(p->nonce) != 0) return std::nullopt;
  return who;
}

void EndSession(absl::string_view value) {
  const std::optional<SessionParts> p = ParseSession(value);
  if (!p.has_value()) return;
  const absl::Time expires =
      absl::FromUnixSeconds(p->issued) + kSessionLifetime;
  const absl::Time now = absl::Now();
  EndedSessions& e = Ended();
  absl::MutexLock lock(&e.mu);
  // Forget the ones that have expired anyway.
  for (auto it = e.ended.begin(); it != e.ended.end();) {
    it = it->second <= now ? e.ended.erase(it) : std::next(it);
  }
  if (expires > now) e.ended.emplace(std::string(p->nonce), expires);
}

std::string CsrfTokenFor(const TokenRegistry& tokens,
                         absl::string_view session) {
  return HmacHex(tokens.session_key(), absl::StrCat("smoe csrf v1\n", session))
      .substr(0, 32);
}

std::string CallerName(TokenRegistry* tokens, const httplib::Request& req) {
  const HttpCaller c = ResolveCaller(tokens, req);
  return c.who.has_value() ? c.who->name : "?";
}

HttpCaller ResolveCaller(TokenRegistry* tokens, const httplib::Request& req) {
  HttpCaller caller;
  const std::string auth = req.get_header_value("Authorization");
  absl::string_view a(auth);
  if (absl::ConsumePrefix(&a, "Bearer ")) {
    caller.bearer = true;
    caller.who = tokens->Authenticate(absl::StripAsciiWhitespace(a));
    return caller;
  }
  caller.session =
      CookieValue(req.get_header_value("Cookie"), kSessionCookieName);
  if (!caller.session.empty()) {
    caller.who = PrincipalFromSession(tokens, caller.session);
  }
  return caller;
}

bool SameOriginRequest(const httplib::Request& req) {
  // What the browser says about where the request comes from: same-origin,
  // same-site (another port or subdomain: not us), cross-site, or none (typed
  // in by the user).
  const std::string site =
      absl::AsciiStrToLower(req.get_header_value("Sec-Fetch-Site"));
  if (site == "cross-site" || site == "same-site") return false;
  if (!req.has_header("Origin")) return true;
  // get_header_value returns a copy: keep it alive.
  const std::string origin_header = req.get_header_value("Origin");
  absl::string_view origin = origin_header;
  // The dashboard sends `Referrer-Policy: no-referrer`, with which browsers
  // send `Origin: null` for form posts; the browser's Sec-Fetch-Site then
  // says whether it was our own page.
  if (origin == "null") return site == "same-origin";
  if (!absl::ConsumePrefix(&origin, "http://") &&
      !absl::ConsumePrefix(&origin, "https://")) {
    return false;
  }
  const std::string host = req.get_header_value("Host");
  return !host.empty() && absl::EqualsIgnoreCase(origin, host);
}

std::optional<HttpRefusal> CheckHttpRequest(TokenRegistry* tokens,
                                            const httplib::Request& req) {
  const std::optional<Access> required = HttpAccess(req.method, req.path);
  if (!required.has_value()) {
    return HttpRefusal{404, absl::StrCat("no route ", req.method, " ",
                                         req.path.substr(0, 200))};
  }
  const bool mutating = Mutating(req.method);
  if (mutating && !SameOriginRequest(req)) {
    return HttpRefusal{403,
                       "cross-origin request refused (Origin or "
                       "Sec-Fetch-Site is not this dashboard)"};
  }
  if (*required == Access::kPublic) {
    // A body sent before any credential (POST /login) is read whole into
    // memory by the library: bounded here, before it is read (issue 36
    // item 5: 512 held-open 1 MiB login bodies took 880 MB).
    if (!mutating) return std::nullopt;
    if (req.has_header("Transfer-Encoding")) {
      return HttpRefusal{411, absl::StrCat(req.method, " ", req.path,
                                           ": send the body with a "
                                           "Content-Length, not chunked")};
    }
    uint64_t length = 0;
    const std::string declared = req.get_header_value("Content-Length");
    if (!declared.empty() && (!absl::SimpleAtoi(declared, &length) ||
                              length > kMaxPublicBodyBytes)) {
      return HttpRefusal{
          413, absl::StrCat(req.method, " ", req.path, ": body of ",
                            declared.substr(0, 32), " bytes, more than ",
                            kMaxPublicBodyBytes, " (before signing in)")};
    }
    return std::nullopt;
  }
  const HttpCaller caller = ResolveCaller(tokens, req);
  const absl::Status allowed =
      Authorize(caller.who, *required, absl::StrCat(req.method, " ", req.path));
  if (absl::IsUnauthenticated(allowed)) {
    return HttpRefusal{401, "missing or wrong API token (see /login)"};
  }
  if (!allowed.ok()) return HttpRefusal{403, std::string(allowed.message())};
  if (mutating && !caller.bearer) {
    const std::string given = req.get_header_value(kCsrfHeader);
    if (given.empty() ||
        !TokenEquals(given, CsrfTokenFor(*tokens, caller.session))) {
      return HttpRefusal{
          403,
          absl::StrCat(given.empty() ? "missing" : "wrong", " ", kCsrfHeader,
                       " header (GET /api/session returns it)")};
    }
  }
  return std::nullopt;
}

}  // namespace smoe::coordinator
