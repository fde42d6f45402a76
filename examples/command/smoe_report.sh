# Report to the SMoE Lab worker from a shell program (kind: command).
# Source it: . /path/to/smoe_report.sh
# The trainer contract (docs/trainer-protocol.md): JSON lines on stdout, logs
# on stderr; exit 0 after one result, 75 after SIGTERM (checkpoint first), 64
# for bad parameters. Parameters arrive as $SMOE_PARAM_<NAME> (and the JSON
# file $SMOE_PARAMS); the trial's directory is $SMOE_WORKDIR.

SMOE_STOPPING=0
trap 'SMOE_STOPPING=1' TERM   # check smoe_stopping between steps

smoe_stopping()   { [ "$SMOE_STOPPING" = 1 ]; }
smoe_progress()   { printf '{"event":"progress","step":%d,"total":%d}\n' "$1" "$2"; }
smoe_metric()     { printf '{"event":"metric","step":%d,"name":"%s","value":%s}\n' "$1" "$2" "$3"; }
# smoe_checkpoint STEP [FILE]: FILE is the checkpoint's name in WORKDIR
# (default checkpoint.smoeckpt), which the daemon uploads for other workers.
smoe_checkpoint() {
  if [ -n "${2:-}" ]; then printf '{"event":"checkpoint","step":%d,"file":"%s"}\n' "$1" "$2"
  else printf '{"event":"checkpoint","step":%d}\n' "$1"; fi
}
# smoe_result loss=0.25 acc=0.9: numeric values only.
smoe_result() {
  sep=''; body=''
  for kv in "$@"; do
    body="$body$sep\"${kv%%=*}\":${kv#*=}"; sep=','
  done
  printf '{"event":"result","metrics":{%s}}\n' "$body"
}
smoe_preempted()  { exit 75; }
smoe_bad_params() { echo "$*" >&2; exit 64; }
