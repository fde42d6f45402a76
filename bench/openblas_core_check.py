#!/usr/bin/python3
# Copyright 2026 SMoE Lab authors.
"""Which OpenBLAS kernels run here, and are the others correct? (issue 19)

For OpenBLAS's own choice and each forced OPENBLAS_CORETYPE, in a child
process: the core OpenBLAS reports (openblas_get_corename), single-thread
SGEMM GFLOP/s at the SRAVEN expert shape (4608 x 128 x 256, through
PyTorch's mm, i.e. the same libopenblas LibTorch uses), and the worst
element-wise error of SGEMM against a float64 reference at three shapes and
all transpose combinations, divided by the float32 rounding bound of a
k-term dot product (k * eps * sum|a||b|): <= 1 is correct.

  bench/openblas_core_check.py [CORE ...]    (default: auto Haswell SkylakeX
                                              Cooperlake Zen Prescott)
"""
import ctypes
import ctypes.util
import os
import subprocess
import sys
import time

CHILD = r'''
import ctypes, time, torch
lib = None
for name in ("libopenblas.so.0", "libblas.so.3"):
    try:
        lib = ctypes.CDLL(name)
        lib.openblas_get_corename.restype = ctypes.c_char_p
        break
    except (OSError, AttributeError):
        lib = None
core = lib.openblas_get_corename().decode() if lib else "?"
torch.set_num_threads(1)
torch.manual_seed(0)
worst = 0.0
eps = 2.0 ** -24
for m, k, n in ((4608, 128, 256), (37, 129, 65), (576, 256, 128)):
    for ta in (False, True):
        for tb in (False, True):
            a = torch.randn(k, m).t() if ta else torch.randn(m, k)
            b = torch.randn(n, k).t() if tb else torch.randn(k, n)
            c = a @ b
            ref = a.double() @ b.double()
            bound = k * eps * (a.double().abs() @ b.double().abs())
            worst = max(worst, ((c.double() - ref).abs() / bound).max().item())
a, b = torch.randn(4608, 128), torch.randn(128, 256)
c = torch.empty(4608, 256)
torch.mm(a, b, out=c)
best = 1e9
for _ in range(5):
    t0 = time.perf_counter()
    for _ in range(20):
        torch.mm(a, b, out=c)
    best = min(best, (time.perf_counter() - t0) / 20)
print(f"{core}|{2 * 4608 * 128 * 256 / best / 1e9:.1f}|{worst:.3f}")
'''


def main():
    cores = sys.argv[1:] or ["auto", "Haswell", "SkylakeX", "Cooperlake",
                             "Zen", "Prescott"]
    print("| OPENBLAS_CORETYPE | core OpenBLAS runs | SGEMM GFLOP/s "
          "(4608x128x256, 1 thread) | worst error / fp32 bound |")
    print("| --- | --- | ---: | ---: |")
    for c in cores:
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        env.pop("OPENBLAS_CORETYPE", None)
        if c != "auto":
            env["OPENBLAS_CORETYPE"] = c
        out = subprocess.run([sys.executable, "-c", CHILD], env=env,
                             capture_output=True, text=True)
        if out.returncode != 0:
            print(f"| {c} | failed (rc {out.returncode}) | | |")
            continue
        core, rate, err = out.stdout.strip().split("|")
        print(f"| {c} | {core} | {rate} | {err} |")


if __name__ == "__main__":
    main()
