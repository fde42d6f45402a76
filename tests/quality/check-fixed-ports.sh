#!/usr/bin/env bash
# Tests and benchmarks listen on port 0 (any free port), never on a fixed one:
# a fixed port collides with a real coordinator on the machine (:50051 gRPC,
# :8080 dashboard) or with a concurrent test run (issue 20). Scans tests/,
# bench/ and every *_test.cc for
#   1. a host:port string literal with a non-zero port ("127.0.0.1:8080",
#      ":9000", "http://localhost:8080/"),
#   2. a fixed port handed to a listening call or flag (bind_to_port(h, 8080),
#      htons(8080), "--http-port", "8080"),
#   3. a server started on its defaults: a coordinator ServerOptions without
#      both .listen and .http_listen set, an HttpServerOptions without .listen,
#      a `smoe coordinator` command line without both --listen and
#      --http-listen, a `smoe up` without --listen and --http-port.
# A line that only parses or connects to an address may say so with the marker
# `fixed-port-ok` in a comment on that line.
#
# Usage: tests/quality/check-fixed-ports.sh [--selftest]
set -euo pipefail
cd "$(dirname "$0")/../.."

marker='fixed-port-ok'
# The host part, when present, is localhost, an IPv4 or [IPv6] address or a
# dotted name ("12:30" and "rsa:2048" are not addresses).
host_re='(localhost|[0-9]+(\.[0-9]+){3}|\[[0-9A-Fa-f:.]*\]|[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+)'
literal_re='["'"'"'](https?://)?'"$host_re"'?:[1-9][0-9]{1,4}["'"'"'/]'
call_re='(bind_to_port\([^,]*, *[1-9][0-9]{1,4}\b|htons\( *[1-9][0-9]{1,4}\b|["'"'"']--(http-)?port["'"'"'], *["'"'"'][1-9][0-9]*["'"'"']|AddListeningPort\(["'"'"'][^"'"'"']*:[1-9])'

# Prints one line per violation in the given files; returns 1 if any.
scan() {
  local bad=0 f
  for f in "$@"; do
    [[ -f $f ]] || continue
    while IFS= read -r hit; do
      echo "$f:$hit: fixed port (use port 0, or mark a parse-only line '$marker')"
      bad=1
    done < <(grep -nE "$literal_re|$call_re" "$f" | grep -v "$marker" | cut -d: -f1)
    # Servers started on their defaults (file-level check).
    if grep -qE '(^|[^A-Za-z_])(coordinator::)?ServerOptions +[a-z_]+( *=[^=]|;)' "$f"; then
      if ! grep -qE '\.listen *=' "$f" || ! grep -qE '\.http_listen *=' "$f"; then
        echo "$f: a coordinator ServerOptions must set .listen and .http_listen (port 0 or \"\")"
        bad=1
      fi
    fi
    if grep -qE 'HttpServerOptions +[a-z_]+;' "$f" && ! grep -qE '\.listen *=' "$f"; then
      echo "$f: an HttpServerOptions must set .listen (port 0)"
      bad=1
    fi
    if grep -qE '["'"'"']coordinator["'"'"'], *["'"'"']--' "$f" ||
      grep -qE '["'"'"']coordinator["'"'"'],? *$' "$f"; then
      if ! grep -qE '["'"'"']--listen["'"'"']' "$f" || ! grep -qE '["'"'"']--http-listen["'"'"']' "$f"; then
        echo "$f: a 'smoe coordinator' command line must pass --listen and --http-listen (port 0)"
        bad=1
      fi
    fi
    if grep -qE '["'"'"']up["'"'"'], *["'"'"']--' "$f"; then
      if ! grep -qE '["'"'"']--listen["'"'"']' "$f" || ! grep -qE '["'"'"']--http-port["'"'"']' "$f"; then
        echo "$f: a 'smoe up' command line must pass --listen and --http-port"
        bad=1
      fi
    fi
  done
  return $bad
}

selftest() {
  local dir
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' RETURN
  cat >"$dir/bad1_test.cc" <<'EOF'
  o.listen = "127.0.0.1:8080";
EOF
  cat >"$dir/bad2_test.cc" <<'EOF'
  server.bind_to_port("127.0.0.1", 8080);
EOF
  cat >"$dir/bad3_test.cc" <<'EOF'
  coordinator::ServerOptions so;
  so.listen = "127.0.0.1:0";
EOF
  cat >"$dir/bad4_test.cc" <<'EOF'
  Process::Start({smoe(), "coordinator", "--data-dir", d, "--listen", "127.0.0.1:0"});
EOF
  cat >"$dir/bad5.mjs" <<'EOF'
  fetch('http://localhost:8080/api/sweeps');
EOF
  cat >"$dir/bad7_test.cc" <<'EOF'
  c.Connect("[::1]:50051");
EOF
  cat >"$dir/bad8_test.cc" <<'EOF'
  args = {"--listen", "localhost:7000"};
EOF
  cat >"$dir/bad6_test.cc" <<'EOF'
  HttpServerOptions o;
  o.threads = 4;
EOF
  cat >"$dir/good_test.cc" <<'EOF'
  coordinator::ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.http_listen = "";
  Process::Start({smoe(), "coordinator", "--listen", "127.0.0.1:0",
                  "--http-listen", "127.0.0.1:0"});
  auto a = ParseListenAddress("127.0.0.1:8080");  // fixed-port-ok: parsed
  const std::string url = absl::StrCat("http://127.0.0.1:", port, "/");
  EXPECT_EQ(FormatTime(t), "12:30");
  RunCommand({"openssl", "req", "-newkey", "rsa:2048"});
EOF
  local f
  for f in "$dir"/bad*; do
    if scan "$f" >/dev/null; then
      echo "selftest: $(basename "$f") was not flagged"
      return 1
    fi
  done
  if ! scan "$dir/good_test.cc"; then
    echo "selftest: good_test.cc was flagged"
    return 1
  fi
  echo "check-fixed-ports selftest: OK"
}

if [[ "${1:-}" == "--selftest" ]]; then
  selftest
  exit $?
fi

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard \
    'tests/*' 'bench/*' '*_test.cc' | grep -E '\.(cc|h|mjs|js|sh|py)$' |
    grep -v 'node_modules' | grep -v '^tests/quality/check-fixed-ports.sh$')
else
  mapfile -t files < <(find . -path './build*' -prune -o \
    -path '*/node_modules' -prune -o -type f \
    \( -path './tests/*' -o -path './bench/*' -o -name '*_test.cc' \) \
    \( -name '*.cc' -o -name '*.h' -o -name '*.mjs' -o -name '*.js' \
    -o -name '*.sh' -o -name '*.py' \) -print | grep -v 'check-fixed-ports.sh$')
fi
if ! scan "${files[@]}"; then
  echo "check-fixed-ports: tests and benchmarks must listen on port 0"
  exit 1
fi
echo "check-fixed-ports: ${#files[@]} files OK"
