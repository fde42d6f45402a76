#!/usr/bin/python3
# Copyright 2026 SMoE Lab authors.
"""CPU time and wall time per step of any benchmark command (issue 19).

Runs COMMAND twice, with {steps} replaced by N1 and by N2, and reports
(cost(N2) - cost(N1)) / (N2 - N1) for the children's CPU time (user + sys,
all threads) and for wall time: start-up, model construction and warm-up
cancel out. CPU time is robust to other load on a shared machine (it counts
only the time this process ran); with one thread it is the step time an idle
core would give.

  bench/cpu_time_per_step.py --n1 1 --n2 4 -- build/bench/sraven_train_bench \\
      --steps {steps} --k 2 --attention softmax --dispatch ops

Prints `cpu_ms_per_step=X wall_ms_per_step=Y`.
"""
import argparse
import resource
import subprocess
import sys
import time


def cost(cmd, steps):
    argv = [a.replace("{steps}", str(steps)) for a in cmd]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime -
                                                before.ru_stime)
    return cpu, wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n1", type=int, default=1)
    ap.add_argument("--n2", type=int, default=4)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    c1, w1 = cost(cmd, a.n1)
    c2, w2 = cost(cmd, a.n2)
    n = a.n2 - a.n1
    print(f"cpu_ms_per_step={1000 * (c2 - c1) / n:.1f} "
          f"wall_ms_per_step={1000 * (w2 - w1) / n:.1f}")


if __name__ == "__main__":
    sys.exit(main())
