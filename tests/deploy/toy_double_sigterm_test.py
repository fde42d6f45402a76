#!/usr/bin/env python3
"""deploy_toy_double_sigterm (labels deploy, deploy-run): on Slurm's scancel
every process of the job gets SIGTERM, and the worker daemon forwards its own
a moment later, so a trainer sees two. examples/command/train_toy.py (through
smoe_lab.trial) must still checkpoint and exit 75, never die of the second
signal (it did 19 times in 20 while Python's shutdown had restored SIGTERM's
default action: the trial then ended "killed by signal 15")."""
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOY = os.path.join(HERE, "..", "..", "examples", "command", "train_toy.py")


def main():
    d = tempfile.mkdtemp()
    with open(os.path.join(d, "params.json"), "w") as f:
        json.dump({"steps": 100000, "lr": 0.05, "optimizer": "sgd", "noise": 0.1,
                   "log_every": 20, "checkpoint_every": 50, "step_ms": 5}, f)
    with open(os.path.join(d, "TRIAL.json"), "w") as f:
        json.dump({"seed": 1}, f)
    env = dict(os.environ, SMOE_PARAMS=os.path.join(d, "params.json"),
               SMOE_TRIAL=os.path.join(d, "TRIAL.json"), SMOE_WORKDIR=d)
    bad = []
    for i in range(10):
        p = subprocess.Popen([sys.executable, TOY], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
        # Signal a running trainer: after its first progress event (it has
        # installed its SIGTERM handler by then), within 60 s.
        out = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready, _, _ = select.select([p.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            line = p.stdout.readline()
            if not line:
                break
            out.append(line)
            if '"progress"' in line:
                break
        if not any('"progress"' in l for l in out):
            p.kill()
            print(f"FAIL: run {i}: no progress event within 60 s")
            return 1
        p.send_signal(signal.SIGTERM)
        # The second SIGTERM, repeatedly, until the process is gone.
        for k in range(60):
            time.sleep(0.001 * k)
            if p.poll() is not None:
                break
            p.send_signal(signal.SIGTERM)
        rest, _ = p.communicate(timeout=30)
        ckpt = [json.loads(l) for l in "".join(out).splitlines() + rest.splitlines() if '"checkpoint"' in l]
        if p.returncode != 75 or not ckpt or ckpt[-1].get("file") != "toy_checkpoint.json":
            bad.append((p.returncode, ckpt[-1:] if ckpt else None))
        if os.path.exists(os.path.join(d, "toy_checkpoint.json")):
            os.remove(os.path.join(d, "toy_checkpoint.json"))
    if bad:
        print(f"FAIL: {len(bad)} of 10 runs did not checkpoint and exit 75: {bad}")
        return 1
    print("deploy_toy_double_sigterm: 10 of 10 runs checkpointed (file named) and exited 75")
    return 0


if __name__ == "__main__":
    sys.exit(main())
