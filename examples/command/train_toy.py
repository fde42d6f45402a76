#!/usr/bin/env python3
"""A toy trainer for `kind: command` (examples/command-sweep.yaml).

Fits y = 3x - 1 with SGD on noisy points, Python stdlib only: `steps` steps
at learning rate `lr`, a train/loss metric every `log_every` steps, a
checkpoint every `checkpoint_every` steps (WORKDIR/toy_checkpoint.json,
written atomically) from which a new attempt resumes, and SIGTERM ->
checkpoint -> exit 75. `step_ms` slows each step down (for demos and tests).
It reports through smoe_lab.trial (python/smoe_lab; `pip install ./python`,
else it is found in this checkout).
"""
import json, os, random, sys, time

try:
    from smoe_lab import trial
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)),
                                    "..", "..", "python"))
    from smoe_lab import trial

p = trial.params()
steps, lr = int(p["steps"]), float(p["lr"])
if p["optimizer"] == "momentum" and lr > 0.1:
    trial.bad_params(f"lr={lr}: momentum diverges above 0.1")
seed = trial.seed()
ckpt = os.path.join(trial.checkpoint_dir(), "toy_checkpoint.json")

def save(step, w, b, v):
    tmp = ckpt + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"step": step, "w": w, "b": b, "v": v}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, ckpt)
    # Named, so the daemon uploads it and another worker can resume from it.
    trial.checkpoint(step, file="toy_checkpoint.json")

start, w, b, v = 0, 0.0, 0.0, [0.0, 0.0]
if os.path.exists(ckpt):
    c = json.load(open(ckpt))
    start, w, b, v = c["step"], c["w"], c["b"], c["v"]
    print(f"resuming from step {start}", file=sys.stderr)

rng = random.Random(seed)
data = [(x, 3 * x - 1 + rng.gauss(0, p["noise"]))
        for x in (rng.uniform(-1, 1) for _ in range(256))]
beta = 0.9 if p["optimizer"] == "momentum" else 0.0

def loss(w, b):
    return sum((w * x + b - y) ** 2 for x, y in data) / len(data)

for step in range(start, steps):
    if trial.should_stop():
        save(step, w, b, v)
        trial.exit_preempted()
    x, y = data[(seed + step) % len(data)]
    err = w * x + b - y
    v = [beta * v[0] + 2 * err * x, beta * v[1] + 2 * err]
    w, b = w - lr * v[0], b - lr * v[1]
    time.sleep(p["step_ms"] / 1000)
    done = step + 1
    if done % p["log_every"] == 0 or done == steps:
        trial.report(done, {"train/loss": loss(w, b)}, total=steps)
    if done % p["checkpoint_every"] == 0 and done < steps:
        save(done, w, b, v)

trial.final(loss=loss(w, b), w=w, b=b)
