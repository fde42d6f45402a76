#!/usr/bin/env bash
# deploy_slurm_submit (labels deploy, deploy-run): deploy/slurm/smoe-slurm-submit
# without a cluster (--no-submit): the sbatch file it writes from its flags,
# the worker command each array task runs from Slurm's environment (GPUs
# from CUDA_VISIBLE_DEVICES), and every bad flag refused naming its value.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
sub="$root/deploy/slurm/smoe-slurm-submit"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(umask 077 && echo smoe_worker_token_for_the_test >"$tmp/tok")
printf '#!/bin/sh\n' >"$tmp/smoe" && chmod +x "$tmp/smoe"
common=(--coordinator login1:50051 --token-file "$tmp/tok" --smoe "$tmp/smoe" --work-root "$tmp/w" --no-submit)

"$sub" "${common[@]}" --workers 4 --gpus-per-task 8 --cpus-per-task 32 --mem 400G \
  --time 1-00:00:00 --partition gpu --drain-before 600 --grace 300 --job-name ep8 \
  --worker-arg=--kinds=sraven,skillmix --worker-arg=--labels=pool=ep8 \
  --sbatch-arg=--account=lab --output "$tmp/a.sbatch" >/dev/null
f="$tmp/a.sbatch"
for want in "#SBATCH --job-name=ep8" "#SBATCH --array=0-3" "#SBATCH --ntasks=1" \
  "#SBATCH --cpus-per-task=32" "#SBATCH --gres=gpu:8" "#SBATCH --mem=400G" \
  "#SBATCH --partition=gpu" "#SBATCH --time=1-00:00:00" "#SBATCH --signal=B:USR1@600" \
  "#SBATCH --requeue" "#SBATCH --account=lab" "GRACE=300" "WANT_GPUS=8"; do
  grep -qxF -- "$want" "$f" || fail "$f lacks the line '$want'"
done
grep -q smoe_worker_token_for_the_test "$f" && fail "the sbatch file holds the token itself"
bash -n "$f" || fail "$f is not valid bash"

# The worker command of array task 2 of job 77, with Slurm's GPUs.
cmd=$(SMOE_SLURM_DRY_RUN=1 SLURM_JOB_ID=79 SLURM_ARRAY_JOB_ID=77 SLURM_ARRAY_TASK_ID=2 \
  CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 bash "$f")
for want in "worker --coordinator login1:50051 --token-file $tmp/tok" "--worker-id slurm-77-2" \
  "--work-dir $tmp/w/77_2" "--grace 300" "--gpu-ids 0\\,1\\,2\\,3\\,4\\,5\\,6\\,7" \
  "--kinds=sraven\\,skillmix" "--labels=pool=ep8"; do
  [[ "$cmd" == *"$want"* ]] || fail "task command '$cmd' lacks '$want'"
done
# Too few or no GPUs from Slurm: the task refuses, naming what it got.
if out=$(SMOE_SLURM_DRY_RUN=1 CUDA_VISIBLE_DEVICES=0,1 bash "$f" 2>&1); then fail "2 of 8 GPUs accepted"; fi
[[ "$out" == *"asked for 8 GPUs but CUDA_VISIBLE_DEVICES='0,1' names 2"* ]] || fail "2 of 8 GPUs: '$out'"
if out=$(env -u CUDA_VISIBLE_DEVICES SMOE_SLURM_DRY_RUN=1 SLURM_GPUS_ON_NODE=8 bash "$f" 2>&1); then fail "no GPUs accepted"; fi
[[ "$out" == *"asked for 8 GPUs but CUDA_VISIBLE_DEVICES=''"* ]] || fail "no GPUs: '$out'"
# A CPU pool: --gpus 0, no --gres line.
"$sub" "${common[@]}" --output "$tmp/cpu.sbatch" >/dev/null
grep -q "^#SBATCH --gres" "$tmp/cpu.sbatch" && fail "a CPU pool asks for --gres"
cmd=$(SMOE_SLURM_DRY_RUN=1 CUDA_VISIBLE_DEVICES=3 bash "$tmp/cpu.sbatch")
[[ "$cmd" == *"--gpus 0"* ]] || fail "CPU task command '$cmd' lacks --gpus 0"

# Bad input: refused (exit 64), naming the flag and the value.
expect_refused() {  # message args...
  local msg=$1 out
  shift
  if out=$("$sub" "$@" 2>&1); then fail "accepted: $*"; fi
  [[ "$out" == *"$msg"* ]] || fail "'$*': message '$out' lacks '$msg'"
}
expect_refused "--coordinator HOST:PORT is required" --token-file "$tmp/tok" --no-submit
expect_refused "--coordinator 'login1' is not HOST:PORT" "${common[@]}" --coordinator login1
expect_refused "--workers 'four' is not a whole number" "${common[@]}" --workers four
expect_refused "--workers 0 is out of range" "${common[@]}" --workers 0
expect_refused "--gpus-per-task '-1' is not a whole number" "${common[@]}" --gpus-per-task -1
expect_refused "--time '1 day' is not a Slurm time" "${common[@]}" --time "1 day"
expect_refused "--time 5 (300 s) must be longer than --drain-before 300" "${common[@]}" --time 5
expect_refused "--drain-before 100 must exceed --grace 120 + 10 s" "${common[@]}" --drain-before 100
expect_refused "--mem '64 GB' is not a size" "${common[@]}" --mem "64 GB"
expect_refused "--token-file '$tmp/nope' does not exist" "${common[@]}" --token-file "$tmp/nope"
chmod 0644 "$tmp/tok"
expect_refused "has mode 644; group and others must not read it" "${common[@]}"
chmod 0600 "$tmp/tok"
expect_refused "--sbatch-arg '--time=5' is set by this script" "${common[@]}" --sbatch-arg=--time=5
expect_refused "--worker-arg '--gpus=2' is set by this script" "${common[@]}" --worker-arg=--gpus=2
expect_refused "unknown flag '--nodes'" "${common[@]}" --nodes 2
expect_refused "--partition needs a value" "${common[@]}" --partition
log "deploy_slurm_submit: PASS"
