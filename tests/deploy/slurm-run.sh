#!/usr/bin/env bash
# deploy_slurm_run (label deploy-run): SMoE Lab workers as a Slurm job array
# on a real one-node Slurm (slurm-cluster.sh), from deploy/slurm/smoe-slurm-submit.
#   1. a sweep (kind command, examples/command/train_toy.py) runs through two
#      array tasks, workers slurm-<job>-0 and -1;
#   2. `scancel` of task 1 while its trial runs: the worker drains within
#      KillWait (the trial is checkpointed, exit 75, preempted) and the trial
#      resumes on task 0 from that checkpoint; the sweep completes with no
#      error budget used;
#   3. a time limit: a task with --time 2 (minutes) and --drain-before 60 gets
#      SIGUSR1, drains (attempt preempted, exit 75), requeues itself, and the
#      requeued task resumes the trial from its checkpoint.
# Usage: slurm-run.sh SMOE_BINARY   (root; slurm-wlm, munge, python3, curl)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
smoe=$(readlink -f "${1:?smoe binary}")
export PATH=$PATH:/usr/sbin
for t in slurmctld slurmd munged sbatch curl python3; do
  command -v "$t" >/dev/null || unavailable "$t not found: scripts/install-deps --only deploy installs slurm-wlm and munge"
done
need_root "$0" "$@"
t0=$SECONDS
tmp=$(mktemp -d "${TMPDIR:-/tmp}/smoe-slurm-run.XXXXXX")
chmod 0755 "$tmp"
coord_pid=""
cleanup() {
  local rc=$?
  if ((rc != 0)); then
    echo "== diagnostics (exit $rc)"
    squeue -a 2>/dev/null || true
    for f in "$tmp"/work/*.out "$tmp/coordinator.log"; do
      [[ -f "$f" ]] && { echo "== $f"; tail -25 "$f"; }
    done
    [[ -n "${job:-}" ]] && scontrol show job "$job" 2>/dev/null | grep -E "JobId|JobState|Restarts|StartTime" || true
    tail -15 "$tmp/cluster/slurmctld.log" 2>/dev/null || true
  fi
  [[ -n "${SLURM_CONF:-}" ]] && scancel --full -u root >/dev/null 2>&1 || true
  sleep 1
  [[ -n "$coord_pid" ]] && kill "$coord_pid" 2>/dev/null && wait "$coord_pid" 2>/dev/null || true
  "$here/slurm-cluster.sh" stop "$tmp/cluster" || true
  if ((rc == 0)) || [[ -z "${SMOE_KEEP_TMP:-}" ]]; then rm -rf "$tmp"; fi
}
trap cleanup EXIT

SLURM_CONF=$("$here/slurm-cluster.sh" start "$tmp/cluster") || unavailable "the one-node Slurm cluster did not start (output above)"
export SLURM_CONF
log "slurm cluster up in $((SECONDS - t0)) s"

# The coordinator: anywhere the compute nodes reach (here the login node is
# the compute node: loopback).
grpc_port=$(free_port)
http_port=$(free_port)
mkdir -p "$tmp/coord"
(umask 077 && openssl rand -hex 32 | sed 's/^/smoe_/' >"$tmp/coord/token")
"$smoe" token create --role worker --name slurm-workers --data-dir "$tmp/coord" >"$tmp/worker-token"
chmod 0600 "$tmp/worker-token"
"$smoe" coordinator --listen "127.0.0.1:$grpc_port" --http-listen "127.0.0.1:$http_port" \
  --data-dir "$tmp/coord" --lease-timeout 20 --heartbeat-interval 2 >"$tmp/coordinator.log" 2>&1 &
coord_pid=$!
export API_BASE="http://127.0.0.1:$http_port" API_TOKEN
API_TOKEN=$(cat "$tmp/coord/token")
wait_for 30 "the coordinator's /healthz" curl -fsS --max-time 2 "$API_BASE/healthz"
export SMOE_TOKEN=$API_TOKEN
client=(--coordinator "127.0.0.1:$grpc_port")

submit_workers() {  # workers time drain grace -> prints the array job id
  "$root/deploy/slurm/smoe-slurm-submit" --coordinator "127.0.0.1:$grpc_port" \
    --token-file "$tmp/worker-token" --smoe "$smoe" --workers "$1" --cpus-per-task 1 \
    --time "$2" --drain-before "$3" --grace "$4" --work-root "$tmp/work" \
    --worker-arg="--allow-command=$root/examples/command" \
    --output "$tmp/workers-$1.sbatch" | sed -n 's/^submitted array job \([0-9]*\) .*/\1/p'
}
toy_sweep() {  # name steps step_ms n (4 trials, or 1)
  local lrs="[0.01, 0.03]" seeds="[0, 1]"
  [[ $4 == 1 ]] && lrs="[0.02]" seeds="[0]"
  sed -e "s|/srv/smoe|$root|" -e "s|^name: toy-sgd|name: $1|" \
      -e "s|^  lr: \[.*\]|  lr: $lrs|" -e 's|^  optimizer: \[.*\]|  optimizer: [sgd]|' \
      -e "s|^fixed: .*|fixed: {steps: $2, step_ms: $3, checkpoint_every: 20, log_every: 20}|" \
      -e "s|^seeds: .*|seeds: $seeds|" -e 's|^retries: .*|retries: 0|' \
      "$root/examples/command-sweep.yaml" >"$tmp/$1.yaml"
  "$smoe" sweep submit "$tmp/$1.yaml" "${client[@]}" >/dev/null
}
# A trial of SWEEP running on WORKER with a checkpoint in its work dir:
# "trial step".
checkpoint_in() {  # sweep worker work-dir
  local t f
  for t in $(sweep_states "$1" | awk -v w="$2" '$2 == "running" && $3 == w {print $1}'); do
    f="$3/trials/${t/\//_}/toy_checkpoint.json"
    [[ -f "$f" ]] || continue
    echo "$t $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step"])' "$f")"
    return 0
  done
  return 1
}
succeeded_on() {  # sweep worker
  sweep_states "$1" | awk -v w="$2" '$2 == "succeeded" && $3 == w' | grep -q .
}
resumed_step() {  # trial attempt -> the step the toy resumed from
  api "/api/trials/$1/logs?attempt=$2" | json_get 'd["text"]' | sed -n 's/^resuming from step \([0-9]*\).*/\1/p' | head -1
}

# ---- 1 + 2: a sweep through two array tasks; scancel of task 1 mid-trial.
step_t=$SECONDS
job=$(submit_workers 2 10 60 20)
[[ -n "$job" ]] || fail "smoe-slurm-submit printed no job id"
wait_for 60 "both array tasks of job $job running" \
  bash -c "[[ \$(squeue -h -j $job -t R | wc -l) -eq 2 ]]"
toy_sweep slurm-toy 160 60 2
log "job $job: 2 tasks running; sweep slurm-toy (4 trials) submitted"
# Task 1 finishes a trial, then is cancelled in the middle of its next one.
wait_for 90 "a trial succeeded on task 1" succeeded_on slurm-toy "slurm-$job-1"
wait_for 60 "a checkpoint of a running trial on task 1" checkpoint_in slurm-toy "slurm-$job-1" "$tmp/work/${job}_1"
read -r trial ck_step < <(checkpoint_in slurm-toy "slurm-$job-1" "$tmp/work/${job}_1")
log "task 1 runs $trial (checkpoint at step $ck_step): scancel ${job}_1"
scancel "${job}_1"
preempted() { attempts "$trial" | grep -q "^1 slurm-$job-1 preempted 75$"; }
wait_for 45 "attempt 1 of $trial preempted (exit 75) on slurm-$job-1" preempted
wait_for 120 "sweep slurm-toy: 4 trials succeeded" sweep_done slurm-toy 4
attempts "$trial"
attempts "$trial" | grep -q "^2 slurm-$job-0 succeeded 0$" ||
  fail "$trial: attempt 2 did not succeed on slurm-$job-0: $(attempts "$trial" | tr '\n' ';')"
r=$(resumed_step "$trial" 2)
[[ -n "$r" && "$r" -ge "$ck_step" && "$r" -gt 0 ]] ||
  fail "$trial: attempt 2 resumed from step '${r}', expected >= $ck_step (the checkpoint task 1 left)"
# No error budget used (retries: 0), and both workers ran trials.
workers=$(for t in $(sweep_states slurm-toy | cut -d' ' -f1); do attempts "$t"; done | awk '$3 == "succeeded" {print $2}' | sort -u | tr '\n' ' ')
log "succeeded on: $workers"
[[ "$workers" == *"slurm-$job-0"* && "$workers" == *"slurm-$job-1"* ]] ||
  fail "trials succeeded on '$workers', expected both array tasks"
grep -q "drain complete; every report acknowledged" "$tmp/work/smoe-workers-${job}_1.out" &&
  grep -q "worker exited with 0" "$tmp/work/smoe-workers-${job}_1.out" ||
  fail "task 1 did not drain cleanly within KillWait: $(tail -5 "$tmp/work/smoe-workers-${job}_1.out")"
log "PASS sweep + scancel in $((SECONDS - step_t)) s (trial resumed at step $r, checkpoint $ck_step)"
scancel "$job"
wait_for 45 "job $job gone" bash -c "[[ -z \$(squeue -h -j $job 2>/dev/null) ]]"

# ---- 3: the time limit: drained, requeued, resumed.
step_t=$SECONDS
job=$(submit_workers 1 2 60 20)
[[ -n "$job" ]] || fail "smoe-slurm-submit printed no job id"
toy_sweep slurm-limit 4000 50 1
trial=$(sweep_states slurm-limit | awk '{print $1}')
log "job $job (--time 2, drain 60 s before): trial $trial"
limit_drained() { attempts "$trial" | grep -q "^1 slurm-$job-0 preempted 75$"; }
wait_for 150 "attempt 1 of $trial preempted (exit 75) at the time limit" limit_drained
out="$tmp/work/smoe-workers-${job}_0.out"
grep -q "time limit near: draining" "$out" || fail "no drain message in $out"
grep -q "requeueing array task 0" "$out" || fail "no requeue in $out"
log "drained at the time limit after $((SECONDS - step_t)) s"
# Slurm holds a requeued job for 120 s (BeginTime); an admin may start it at
# once, as here. Restarts=1 shows while the task is still COMPLETING, and the
# end of that completion sets BeginTime to now + 121 s again: an update made
# before it is lost (CI failed so once). So the update is repeated for as long
# as the task is pending and attempt 2 has not begun.
# Started within a second or so of its last run's end, the task is refused
# for good ("Killing non-startable batch JobId=3: Job credential revoked":
# slurmd rejects a launch credential that is not newer than the job's
# revocation, which has 1 s granularity; CI failed so once, the update 0.2 s
# after the requeue): so the update waits until the node is done with the
# last run (no COMPLETING) and 3 s have passed since the requeue showed.
requeued() { scontrol show job "${job}_0" | grep -q "Restarts=1"; }
wait_for 30 "task ${job}_0 requeued (Restarts=1)" requeued
requeued_at=$SECONDS
resumed() {
  attempts "$trial" | grep -q "^2 slurm-$job-0 " && return 0
  if ((SECONDS - requeued_at >= 3)) &&
    ! scontrol show node | grep -q "COMPLETING" &&
    scontrol show job "${job}_0" | grep -q "JobState=PENDING"; then
    scontrol update JobId="${job}_0" StartTime=now 2>/dev/null || true
  fi
  return 1
}
wait_for 90 "attempt 2 of $trial on the requeued task" resumed
resume_logged() { [[ -n "$(resumed_step "$trial" 2)" ]]; }
wait_for 60 "attempt 2's 'resuming from step' line" resume_logged
r=$(resumed_step "$trial" 2)
[[ "$r" -gt 0 ]] || fail "$trial: attempt 2 resumed from step '$r'"
scontrol show job "$job" | grep -o "Restarts=[0-9]*"
log "PASS time limit in $((SECONDS - step_t)) s (requeued; trial resumed at step $r)"
"$smoe" sweep cancel slurm-limit "${client[@]}" >/dev/null || true
log "deploy_slurm_run: PASS in $((SECONDS - t0)) s"
