# Sourced by the deploy-run tests (tests/deploy/*-run.sh).
# A test that cannot start its engine says why and fails in CI (CI=true);
# elsewhere it skips (exit 77), so a laptop without podman or Slurm passes.
unavailable() {
  if [[ "${CI:-}" == true ]]; then
    echo "FAIL (CI=true): $*" >&2
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}

fail() { echo "FAIL: $*" >&2; exit 1; }

# need_root SCRIPT ARGS...: the engines run as root here (rootful podman,
# slurmd, debootstrap). Not root: re-run under passwordless sudo (CI's
# .ci/run installs with sudo), else unavailable.
need_root() {
  [[ $(id -u) -eq 0 ]] && return 0
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    exec sudo -n --preserve-env=CI,TMPDIR,SMOE_IMAGES_PREBUILT,SMOE_BUILD_DIR,SMOE_KEEP_TMP,PATH "$@"
  fi
  unavailable "needs root or passwordless sudo (rootful podman, slurmd, debootstrap)"
}
log() { echo "[$(date -u +%H:%M:%S)] $*"; }

# wait_for SECONDS WHAT CMD...: runs CMD every second until it succeeds;
# fails naming WHAT after SECONDS.
wait_for() {
  local limit=$1 what=$2 deadline=$((SECONDS + $1))
  shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail "$what: not within $limit s"
    sleep 1
  done
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# api PATH: GET from the coordinator's HTTP API ($API_BASE) with $API_TOKEN.
api() {
  curl -fsS --max-time 10 -H "Authorization: Bearer $API_TOKEN" "$API_BASE$1"
}

# jq-like field access with python3: json_get EXPR (python over `d`) < JSON
json_get() {
  python3 -c 'import json,sys; d=json.load(sys.stdin); r=eval(sys.argv[1]); print(r if not isinstance(r,(dict,list)) else json.dumps(r))' "$1"
}

# attempts TRIAL: "attempt worker outcome exit_code" lines.
attempts() {
  api "/api/trials/$1/metrics" | python3 -c '
import json,sys
for a in json.load(sys.stdin)["attempts"]:
    print(a["attempt"], a.get("worker",""), a.get("outcome",""), a.get("exit_code",""))'
}

# sweep_states SWEEP: "trial state worker" lines (the first 100 trials).
sweep_states() {
  api "/api/sweeps/$1" | python3 -c '
import json,sys
d=json.load(sys.stdin)
for t in d["rows"]:
    print(t["trial_id"], t["state"], t.get("worker", "-"))'
}

# sweep_done SWEEP N: N trials, all succeeded.
sweep_done() {
  local s
  s=$(sweep_states "$1") || return 1
  [[ $(awk '$2 == "succeeded"' <<<"$s" | wc -l) -eq $2 ]]
}
