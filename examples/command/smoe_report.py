"""Report to the SMoE Lab worker from your own program (kind: command).

The trainer contract (docs/trainer-protocol.md): JSON lines on stdout, logs on
stderr; exit 0 after one result, 75 after SIGTERM (checkpoint first), 64 for
bad parameters, anything else is an error (retried within `retries`).
"""
import json, math, os, signal, sys

_stop = False
def _on_sigterm(signum, frame):
    global _stop
    _stop = True
signal.signal(signal.SIGTERM, _on_sigterm)

def _emit(**event):
    sys.stdout.write(json.dumps(event, allow_nan=False) + "\n")
    sys.stdout.flush()

def _num(v):  # NaN and infinities are written as null
    return v if math.isfinite(v) else None

def params():     return json.load(open(os.environ["SMOE_PARAMS"]))
def workdir():    return os.environ.get("SMOE_WORKDIR", ".")
def stopping():   return _stop  # SIGTERM arrived: checkpoint, then exit 75
def progress(step, total): _emit(event="progress", step=step, total=total)
def metric(step, name, value): _emit(event="metric", step=step, name=name, value=_num(value))
# `file`: the checkpoint's name in WORKDIR (default checkpoint.smoeckpt); the
# daemon uploads that file so another worker can resume from it.
def checkpoint(step, file=None):
    if file is None: _emit(event="checkpoint", step=step)
    else: _emit(event="checkpoint", step=step, file=file)
def result(**metrics): _emit(event="result", metrics={k: _num(v) for k, v in metrics.items()})
# os._exit, not sys.exit: Python's shutdown restores the default SIGTERM
# action, and a second SIGTERM then (a cluster engine signals every process
# of a job, and the daemon forwards its own: Slurm's scancel does both) would
# turn "checkpointed, exit 75" into "killed by signal 15".
def preempted():
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(75)
def bad_params(message):
    print(message, file=sys.stderr)
    sys.exit(64)
