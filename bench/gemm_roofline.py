#!/usr/bin/python3
# Copyright 2026 SMoE Lab authors.
"""GEMM roofline of the SRAVEN training step (issue 19).

Measures single-process fp32 GEMM rates (torch.mm: the same OpenBLAS
LibTorch's C++ API uses) at the step's own shapes, per second of process
CPU time (robust to other load on a shared machine), and prints per k the
step's GEMM FLOPs (every forward product counted 3x: forward, input
gradient, weight gradient; the [T, T] attention products are not GEMMs and
are left out: 0.7 % of the FLOPs) and the GEMM-only time at those rates:
the roofline. Spec model: N = 4608 tokens, D = 128, qk = v = 64, mlp = 256,
E = 8 experts, L = 4; each expert's slice is N k / E rows (uniform routing).

  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 bench/gemm_roofline.py --k 1,2,8
"""
import argparse
import os
import time

import torch


def rate(m, k, n):
    a, b = torch.randn(m, k), torch.randn(k, n)
    c = torch.empty(m, n)
    torch.mm(a, b, out=c)
    iters = max(1, int(2e8 / (2 * m * k * n)))
    best = 1e9
    for _ in range(5):
        t0 = time.process_time()
        for _ in range(iters):
            torch.mm(a, b, out=c)
        best = min(best, (time.process_time() - t0) / iters)
    return 2 * m * k * n / best / 1e9


def copy_bandwidth():
    """Bytes/s (read + write) of a 512 MiB copy per second of CPU time."""
    a, b = torch.ones(128 << 20), torch.empty(128 << 20)
    b.copy_(a)
    best = 1e9
    for _ in range(5):
        t0 = time.process_time()
        b.copy_(a)
        best = min(best, time.process_time() - t0)
    return 2 * a.numel() * 4 / best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", default="1,2,8")
    ap.add_argument("--copy", action="store_true",
                    help="print the copy bandwidth (CPU time) and exit")
    a = ap.parse_args()
    if a.copy:
        print(f"copy bandwidth (512 MiB, read + write, per CPU second): "
              f"{copy_bandwidth() / 1e9:.1f} GB/s")
        return
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    n, d, qk, f, e, layers = 4608, 128, 64, 256, 8, 4
    print("| k | GEMM GFLOP/step | GEMM GFLOP/s at the step's shapes (CPU "
          "time) | roofline CPU ms/step | roofline steps/s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for k in [int(v) for v in a.k.split(",")]:
        rows = n * k // e
        gemms = [(2.0 * n * d * 3 * qk, rate(n, d, 3 * qk)),
                 (2.0 * n * qk * d, rate(n, qk, d)),
                 (2.0 * n * d * e, rate(n, d, e)),
                 (2.0 * n * k * d * f, rate(rows, d, f)),
                 (2.0 * n * k * f * d, rate(rows, f, d))]
        flop = sum(3 * layers * g for g, _ in gemms)
        secs = sum(3 * layers * g / (r * 1e9) for g, r in gemms)
        print(f"| {k} | {flop / 1e9:.2f} | {flop / secs / 1e9:.1f} | "
              f"{1000 * secs:.0f} | {1 / secs:.2f} |", flush=True)


if __name__ == "__main__":
    main()
