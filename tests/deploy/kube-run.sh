#!/usr/bin/env bash
# deploy_kube_run (label deploy-run): the single-node-cpu overlay under
# `podman kube play`, converted by deploy/podman/kube-convert.py, with the
# images of deploy_images_build. Through the coordinator's published port
# (127.0.0.1) and the admin token:
#   * /healthz answers; the dashboard serves; the API refuses no token;
#   * a tiny SRAVEN sweep (the demo's shape) completes on the two worker pods;
#   * worker pod smoe-worker-1 stopped mid-trial: its preStop hook (run with
#     podman exec; podman 4.3 does not run hooks) drains the daemon within
#     terminationGracePeriodSeconds, the attempt is preempted (exit 75), and
#     the trial resumes on smoe-worker-0 at its checkpoint;
#   * the coordinator's process killed (SIGKILL): podman restarts the
#     container, and nothing is lost (every trial finishes, no error budget
#     used, the sweep's trials are the same).
# Usage: kube-run.sh SMOE_BINARY   (root; podman, kubectl, python3-yaml, curl)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
smoe=$(readlink -f "${1:?smoe binary}")
for t in podman kubectl curl python3; do
  command -v "$t" >/dev/null || unavailable "$t not found (scripts/install-deps; kubectl comes with the machine image)"
done
python3 -c 'import yaml' 2>/dev/null || unavailable "python3-yaml missing (scripts/install-deps --only deploy)"
need_root "$0" "$@"
# shellcheck source=../../deploy/images/podman.sh
. "$root/deploy/images/podman.sh"
smoe_podman info >/dev/null 2>&1 || unavailable "podman does not start: $(smoe_podman info 2>&1 | tail -2)"
for i in coordinator worker-cpu; do
  smoe_podman image exists "localhost/smoe-$i:dev" ||
    unavailable "localhost/smoe-$i:dev missing: deploy_images_build builds it (see its output)"
done
t0=$SECONDS
tmp=$(mktemp -d "${TMPDIR:-/tmp}/smoe-kube-run.XXXXXX")
chmod 0755 "$tmp"
net=smoe-kube-run
pods=(smoe-coordinator-pod-0 smoe-worker-0 smoe-worker-1)
vols=(smoe-coordinator-data work-smoe-worker-0 work-smoe-worker-1)
teardown() {
  local p v
  for p in "${pods[@]}"; do smoe_podman pod rm -f -t 0 "$p" >/dev/null 2>&1 || true; done
  for v in "${vols[@]}"; do smoe_podman volume rm -f "$v" >/dev/null 2>&1 || true; done
  smoe_podman network rm -f "$net" >/dev/null 2>&1 || true
}
cleanup() {
  local rc=$?
  if ((rc != 0)); then
    echo "== diagnostics (exit $rc)"
    smoe_podman ps -a --format '{{.Names}} {{.Status}}' 2>/dev/null || true
    for c in smoe-coordinator-pod-0-coordinator smoe-worker-0-worker smoe-worker-1-worker; do
      echo "== $c"; smoe_podman logs --tail 25 "$c" 2>&1 || true
    done
  fi
  teardown
  rm -rf "$tmp"
}
trap cleanup EXIT
exec 9>"${TMPDIR:-/tmp}/smoe-kube-run.lock"
flock -w 600 9 || fail "another kube-run holds ${TMPDIR:-/tmp}/smoe-kube-run.lock"
teardown

# 1. Render the overlay as a user would: an admin token, the workers' token
#    and its hash list from `smoe token create`.
step_t=$SECONDS
cp -r "$root/deploy/k8s" "$tmp/k8s"
ov="$tmp/k8s/overlays/single-node-cpu"
(umask 077 && openssl rand -hex 32 | sed 's/^/smoe_/' >"$ov/token")
(umask 077 && "$smoe" token create --role worker --name k8s-workers --data-dir "$ov" >"$ov/worker-token")
kubectl kustomize "$ov" >"$tmp/rendered.yaml"
# A /24 no podman network uses yet.
used=$(smoe_podman network ls --format '{{range .Subnets}}{{.Subnet}} {{end}}')
for _ in $(seq 50); do
  subnet=10.89.$((200 + RANDOM % 50))
  [[ " $used " == *" $subnet.0/24 "* ]] || break
done
coord_ip=$subnet.10
grpc_port=$(free_port)
http_port=$(free_port)
python3 "$root/deploy/podman/kube-convert.py" "$tmp/rendered.yaml" "$tmp/play" \
  --coordinator-ip "$coord_ip" --grpc-port "$grpc_port" --http-port "$http_port" \
  --image registry.example.com/smoe-lab/smoe-coordinator=localhost/smoe-coordinator:dev \
  --image registry.example.com/smoe-lab/smoe-worker-cpu=localhost/smoe-worker-cpu:dev >"$tmp/convert.log"
smoe_podman network create --subnet "$subnet.0/24" "$net" >/dev/null
log "rendered + converted in $((SECONDS - step_t)) s"

# 2. The coordinator, then the two workers.
step_t=$SECONDS
smoe_podman kube play --network "$net" --ip "$coord_ip" "$tmp/play/coordinator.yaml" >/dev/null
export API_BASE="http://127.0.0.1:$http_port" API_TOKEN
API_TOKEN=$(cat "$ov/token")
wait_for 60 "the coordinator's /healthz on 127.0.0.1:$http_port" curl -fsS --max-time 2 "$API_BASE/healthz"
log "coordinator healthy in $((SECONDS - step_t)) s"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$API_BASE/api/sweeps")
[[ "$code" == 401 ]] || fail "GET /api/sweeps without a token: HTTP $code, expected 401"
page=$(curl -fsS --max-time 5 "$API_BASE/")
grep -qi '<script' <<<"$page" || fail "the dashboard page has no script: $(head -c 300 <<<"$page")"
grep -qi 'npm not found\|how to build' <<<"$page" && fail "the image embeds the placeholder page, not the dashboard"
asset=$(grep -o 'src="/assets/[^"]*\.js"' <<<"$page" | head -1 | cut -d'"' -f2)
[[ -n "$asset" ]] || fail "the dashboard page names no script asset"
curl -fsS --max-time 5 -o /dev/null "$API_BASE$asset" || fail "the dashboard's $asset does not load"
api /api/sweeps >/dev/null || fail "GET /api/sweeps with the admin token failed"
step_t=$SECONDS
for w in 0 1; do
  smoe_podman kube play --network "$net" "$tmp/play/smoe-worker-$w.yaml" >/dev/null
done
registered() { smoe_podman logs "smoe-worker-$1-worker" 2>&1 | grep -qi "registered\|leasing\|worker id"; }
wait_for 60 "smoe-worker-0 registered" registered 0
wait_for 60 "smoe-worker-1 registered" registered 1
log "workers up in $((SECONDS - step_t)) s"

# 3. The sweep: the demo's shape, small (4 trials of 3,000 steps: ~20 s each
#    on an idle machine, so that a trial found running at its first
#    checkpoint is still running when the preStop hook stops its worker; at
#    600 steps one finished within the ~3 s between the two).
export SMOE_TOKEN=$API_TOKEN
client=(--coordinator "127.0.0.1:$grpc_port")
sed -e 's/^name: sraven-demo/name: kube-demo/' -e 's/^  M: \[1, 2\]/  M: [1]/' \
    -e 's/^  top_k: \[1, 2, 4, 8\]/  top_k: [1, 2]/' -e 's/^  steps: 1500/  steps: 3000/' \
    -e 's/^  eval_every: 500/  eval_every: 1000/' -e 's/^  num_eval: 1024/  num_eval: 256/' \
    -e 's/^  checkpoint_every: 500/  checkpoint_every: 100/' -e 's/^retries: 2/retries: 0/' \
    "$root/examples/sraven-demo.yaml" >"$tmp/kube-demo.yaml"
step_t=$SECONDS
"$smoe" sweep submit "$tmp/kube-demo.yaml" "${client[@]}" >/dev/null
n=$(sweep_states kube-demo | wc -l)
[[ $n -eq 4 ]] || fail "kube-demo has $n trials, expected 4"

# 4. smoe-worker-1 stopped mid-trial, through its preStop hook.
running_on() {  # worker -> a trial running there with a checkpoint in its dir
  local t
  for t in $(sweep_states kube-demo | awk -v w="$1" '$2 == "running" && $3 == w {print $1}'); do
    smoe_podman exec "$1-worker" sh -c "ls /var/lib/smoe-worker/trials/${t/\//_}/ 2>/dev/null" |
      grep -q 'checkpoint' || continue
    echo "$t"; return 0
  done
  return 1
}
wait_for 240 "a trial with a checkpoint on smoe-worker-1" running_on smoe-worker-1
trial=$(running_on smoe-worker-1)
before=$(attempts "$trial" | wc -l)
grace=$(python3 -c 'import json,sys; print([p for p in json.load(open(sys.argv[1]))["pods"] if p["pod"]=="smoe-worker-1"][0]["grace"])' "$tmp/play/plan.json")
hook=$(python3 -c 'import json,sys; print(json.dumps([p for p in json.load(open(sys.argv[1]))["pods"] if p["pod"]=="smoe-worker-1"][0]["preStop"]["command"]))' "$tmp/play/plan.json")
log "smoe-worker-1 runs $trial: its preStop hook $hook (grace $grace s)"
mapfile -t hook_argv < <(python3 -c 'import json,sys; print("\n".join(json.loads(sys.argv[1])))' "$hook")
hook_t=$SECONDS
timeout "$grace" podman --runtime runc --cgroup-manager cgroupfs exec smoe-worker-1-worker "${hook_argv[@]}" >/dev/null 2>&1 || true
# The hook returns when PID 1 has exited (or podman exec ends with it).
wait_for "$grace" "smoe-worker-1's worker container exited after the preStop hook" \
  bash -c "[[ \$(podman --runtime runc --cgroup-manager cgroupfs inspect --format '{{.State.Status}}' smoe-worker-1-worker) == exited ]]"
ec=$(smoe_podman inspect --format '{{.State.ExitCode}}' smoe-worker-1-worker)
log "smoe-worker-1 drained in $((SECONDS - hook_t)) s, exit $ec"
[[ "$ec" == 0 ]] || fail "smoe-worker-1 exited $ec after its drain, expected 0"
smoe_podman logs smoe-worker-1-worker 2>&1 | grep -q "drain complete; every report acknowledged" ||
  fail "smoe-worker-1 did not log a complete drain"
smoe_podman pod stop -t "$grace" smoe-worker-1 >/dev/null
attempts "$trial" | sed -n "${before}p" | grep -q " smoe-worker-1 preempted 75$" ||
  fail "$trial: attempt $before on smoe-worker-1 was not preempted with exit 75: $(attempts "$trial" | tr '\n' ';')"

# 5. The coordinator killed (SIGKILL to `smoe coordinator`, tini's child: a
#    crash or an OOM kill): podman restarts the container, nothing is lost.
cc=smoe-coordinator-pod-0-coordinator
restarts0=$(smoe_podman inspect --format '{{.RestartCount}}' "$cc")
tini=$(smoe_podman inspect --format '{{.State.Pid}}' "$cc")
pid=$(pgrep -P "$tini" -x smoe) || fail "no smoe process under the coordinator container's tini ($tini)"
kill -9 "$pid"
log "coordinator (host pid $pid) killed"
restarted() { [[ $(smoe_podman inspect --format '{{.RestartCount}}' "$cc") -gt $restarts0 ]]; }
wait_for 60 "the coordinator container restarted" restarted
wait_for 60 "the restarted coordinator's /healthz" curl -fsS --max-time 2 "$API_BASE/healthz"
log "coordinator restarted and healthy"
n=$(sweep_states kube-demo | wc -l)
[[ $n -eq 4 ]] || fail "after the restart kube-demo has $n trials, expected 4"

# 6. The sweep completes on smoe-worker-0; the stopped trial resumed there.
wait_for 600 "sweep kube-demo: 4 trials succeeded" sweep_done kube-demo 4
log "sweep done in $((SECONDS - step_t)) s"
attempts "$trial"
last=$(attempts "$trial" | tail -1)
[[ "$last" == *" smoe-worker-0 succeeded 0" ]] || fail "$trial: last attempt '$last', expected success on smoe-worker-0"
resume=$(api "/api/trials/$trial/logs" | json_get 'd["text"]' | sed -n 's/.*resumed from .* at step \([0-9]*\).*/\1/p' | head -1)
[[ -n "$resume" && "$resume" -gt 0 ]] || fail "$trial: the last attempt did not resume from a checkpoint"
for t in $(sweep_states kube-demo | cut -d' ' -f1); do
  attempts "$t" | awk '$3 != "succeeded" && $3 != "preempted" {exit 1}' ||
    fail "$t: an attempt neither succeeded nor was preempted: $(attempts "$t" | tr '\n' ';')"
done
ran_on=$(for t in $(sweep_states kube-demo | cut -d' ' -f1); do attempts "$t"; done | awk '{print $2}' | sort -u | tr '\n' ' ')
[[ "$ran_on" == *smoe-worker-0* && "$ran_on" == *smoe-worker-1* ]] || fail "the trials ran on '$ran_on', expected both worker pods"
log "deploy_kube_run: PASS in $((SECONDS - t0)) s ($trial resumed at step $resume on smoe-worker-0)"
