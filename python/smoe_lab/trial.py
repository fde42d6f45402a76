"""Helpers for a kind: command program: read the trial, report, checkpoint, stop.

The trainer contract (docs/trainer-protocol.md), unchanged: events as JSON
lines on stdout, logs on stderr; exit 0 after one result, 75 after SIGTERM
(checkpoint first), 64 for bad parameters, anything else is an error
(retried within the sweep's `retries`).

    from smoe_lab import trial
    p = trial.params()                      # the trial's parameters (dict)
    for step in range(start, p["steps"]):
        if trial.should_stop():             # SIGTERM: preemption or a worker drain
            save(...); trial.checkpoint(step, file="ckpt.json"); trial.exit_preempted()
        ...
        trial.report(step + 1, total=p["steps"], loss=loss)
    trial.final(loss=loss)

Importing this module installs a SIGTERM handler that only sets the flag
should_stop() returns, so the program decides when to stop.
"""

import json
import math
import os
import signal
import sys

_stop = False
_params = None


def _on_sigterm(signum, frame):
    global _stop
    _stop = True


signal.signal(signal.SIGTERM, _on_sigterm)


def _emit(**event):
    sys.stdout.write(json.dumps(event, allow_nan=False) + "\n")
    sys.stdout.flush()


def _num(name, v):
    # NaN and infinities are written as null.
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError("metric %s: %r is not a number" % (name, v))
    return v if math.isfinite(v) else None


def params():
    """The trial's parameters ($SMOE_PARAMS: the sweep's grid point with defaults)."""
    global _params
    if _params is None:
        path = os.environ.get("SMOE_PARAMS")
        if not path:
            raise RuntimeError("$SMOE_PARAMS is not set: run this program as a "
                               "kind: command trial (smoe worker --allow-command)")
        with open(path) as f:
            _params = json.load(f)
    return _params


def info():
    """The trial's description ($SMOE_TRIAL): trial_id, seed, params, ..."""
    with open(os.environ["SMOE_TRIAL"]) as f:
        return json.load(f)


def seed():
    """The trial's seed."""
    return info()["seed"]


def checkpoint_dir():
    """The trial's work directory ($SMOE_WORKDIR): write checkpoints here.

    A new attempt of the trial (after a preemption, on any worker) finds the
    last checkpoint it reported here again."""
    return os.environ.get("SMOE_WORKDIR", ".")


def should_stop():
    """True once SIGTERM arrived (preemption, cancel, worker drain): checkpoint, then exit_preempted()."""
    return _stop


def report(step, metrics=None, total=None, **kw):
    """Reports progress and metrics at ``step``.

    ``total``: the steps in all (a progress event, which also keeps the trial
    alive against the sweep's progress_timeout_s). Metrics as keywords
    (report(10, loss=0.3)) or a dict for names that are no identifiers
    (report(10, {"train/loss": 0.3})).
    """
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise ValueError("step: must be an integer >= 0, not %r" % (step,))
    if total is None and not metrics and not kw:
        raise ValueError("report(%d): give total= or some metrics" % step)
    if total is not None:
        _emit(event="progress", step=step, total=int(total))
    all_metrics = dict(metrics or {})
    all_metrics.update(kw)
    for name, value in all_metrics.items():
        _emit(event="metric", step=step, name=name, value=_num(name, value))


def checkpoint(step, file=None):
    """Says a checkpoint of ``step`` is complete in checkpoint_dir().

    ``file``: its name there (default checkpoint.smoeckpt); the worker
    uploads that file so another worker can resume from it. Write it
    atomically (a temporary file, then os.replace) before calling this.
    """
    if file is None:
        _emit(event="checkpoint", step=step)
    else:
        if os.sep in file or file in (".", ".."):
            raise ValueError("file: %r must be a name in checkpoint_dir()" % (file,))
        _emit(event="checkpoint", step=step, file=file)


def final(metrics=None, **kw):
    """Reports the trial's result metrics (once, at the end; then exit 0)."""
    all_metrics = dict(metrics or {})
    all_metrics.update(kw)
    _emit(event="result", metrics={k: _num(k, v) for k, v in all_metrics.items()})


def exit_preempted():
    """Exits 75: stopped on request after a checkpoint; the trial resumes later.

    os._exit, not sys.exit: Python's shutdown restores the default SIGTERM
    action, and a second SIGTERM then (a cluster engine signals every
    process of a job, and the daemon forwards its own) would turn
    "checkpointed, exit 75" into "killed by signal 15".
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(75)


def bad_params(message):
    """Exits 64 with ``message`` on stderr: parameters this program refuses (not retried)."""
    print(message, file=sys.stderr)
    sys.stdout.flush()
    sys.exit(64)
