#!/usr/bin/python3
# Copyright 2026 SMoE Lab authors.
"""PyTorch eager peer of the SRAVEN training step (issue 19).

An independent PyTorch eager implementation of the spec model of
docs/sraven.md as worker/model implements it (w = 1: L = 4, D = 128, 16 heads
of width 4, 8 experts of 128 -> 256 -> 128, T5 relative bias with T buckets,
softmax attention, attention dropout 0.1 with one T x T mask, top-k router
with renormalised gates, plain per-expert loop, pre-LN, final LN, readout,
cross-entropy on the last M positions, AdamW), batch 128, M = 4 (T = 36).

The data are random one-hot inputs and random targets, drawn once (the C++
bench includes SRAVEN batch generation in its step; see the profile in
bench/results/sraven-profile-2026-11-24.md for its share, < 2 %).

  python3 bench/sraven_peer.py --k 1,2,8 --steps 5 [--threads N]

--threads (torch.set_num_threads) defaults to $OMP_NUM_THREADS, else 1;
OpenBLAS's own threads follow $OPENBLAS_NUM_THREADS.

Prints one line per k: `peer k=K steps/s=X ms/step=Y` (time of `steps` steps
after 1 warm-up step).
"""
import argparse
import math
import os
import time

import torch
import torch.nn.functional as F


def bucket(q, k, nb, maxd):
    n = q - k if q > k else 0
    me = nb // 2
    if n < me:
        return n
    eps = torch.finfo(torch.float32).eps
    v = math.log(n / me + eps) / math.log(maxd / me) * (nb - me)
    return min(me + int(v), nb - 1)


class Attn(torch.nn.Module):
    def __init__(s, d, h, dk, t):
        super().__init__()
        s.h, s.dk, s.t = h, dk, t
        s.q = torch.nn.Linear(d, h * dk)
        s.k = torch.nn.Linear(d, h * dk)
        s.v = torch.nn.Linear(d, h * dk)
        s.o = torch.nn.Linear(h * dk, d)
        s.rel = torch.nn.Parameter(torch.randn(h, t) / math.sqrt(t))
        s.register_buffer("bucket", torch.tensor(
            [[bucket(i, j, t, t) for j in range(t)] for i in range(t)]))

    def forward(s, x):
        b, t, _ = x.shape
        q = s.q(x).view(b, t, s.h, s.dk).transpose(1, 2)
        k = s.k(x).view(b, t, s.h, s.dk).transpose(1, 2)
        v = s.v(x).view(b, t, s.h, s.dk).transpose(1, 2)
        sc = q @ k.transpose(-1, -2) / math.sqrt(s.dk) + s.rel[:, s.bucket]
        a = sc.softmax(-1)
        if s.training:
            keep = torch.bernoulli(torch.full((t, t), 0.9))
            a = a * keep / 0.9
        y = (a @ v).transpose(1, 2).reshape(b, t, -1)
        return s.o(y)


class Moe(torch.nn.Module):
    def __init__(s, d, f, e, k):
        super().__init__()
        s.e, s.k = e, k
        s.router = torch.nn.Linear(d, e, bias=False)
        s.w1 = torch.nn.Parameter(torch.randn(e, d, f) / math.sqrt(d))
        s.b1 = torch.nn.Parameter(torch.zeros(e, f))
        s.w2 = torch.nn.Parameter(torch.randn(e, f, d) / math.sqrt(f))
        s.b2 = torch.nn.Parameter(torch.zeros(e, d))

    def forward(s, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        logits = s.router(x)
        top, idx = logits.topk(s.k, dim=-1)
        gate = top.softmax(-1)
        out = torch.zeros_like(x)
        for e in range(s.e):
            tok, slot = (idx == e).nonzero(as_tuple=True)
            if tok.numel() == 0:
                continue
            h = F.gelu(x[tok] @ s.w1[e] + s.b1[e], approximate="tanh")
            y = (h @ s.w2[e] + s.b2[e]) * gate[tok, slot].unsqueeze(1)
            out.index_add_(0, tok, y)
        return out.view(shape)


class Model(torch.nn.Module):
    def __init__(s, k, fv=8, d=128, h=16, dk=4, f=256, e=8, depth=4, t=36):
        super().__init__()
        s.embed = torch.nn.Linear(fv, d)
        s.blocks = torch.nn.ModuleList()
        for _ in range(depth):
            blk = torch.nn.Module()
            blk.ln1 = torch.nn.LayerNorm(d, eps=1e-6)
            blk.attn = Attn(d, h, dk, t)
            blk.ln2 = torch.nn.LayerNorm(d, eps=1e-6)
            blk.moe = Moe(d, f, e, k)
            s.blocks.append(blk)
        s.ln = torch.nn.LayerNorm(d, eps=1e-6)
        s.out = torch.nn.Linear(d, fv)

    def forward(s, x):
        h = s.embed(x)
        for blk in s.blocks:
            h = h + blk.attn(blk.ln1(h))
            h = h + blk.moe(blk.ln2(h))
        return s.out(s.ln(h))


def run(k, steps, batch=128, m=4, fv=8):
    torch.manual_seed(0)
    t = 9 * m
    model = Model(k, fv=fv, t=t)
    decay = [p for n, p in model.named_parameters() if p.dim() != 1
             and not n.endswith(("b1", "b2"))]
    rest = [p for n, p in model.named_parameters() if p.dim() == 1
            or n.endswith(("b1", "b2"))]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": rest, "weight_decay": 0.0}], lr=1e-3)
    x = F.one_hot(torch.randint(0, fv, (batch, t)), fv).float()
    y = torch.randint(0, fv, (batch, m))

    def step():
        logits = model(x)
        loss = F.cross_entropy(logits[:, t - m:].reshape(-1, fv),
                               y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    step()
    c0 = time.process_time()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    secs = time.perf_counter() - t0
    return steps / secs, 1000 * (time.process_time() - c0) / steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", default="1,2,8")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--threads", type=int,
                    default=int(os.environ.get("OMP_NUM_THREADS", "1")),
                    help="torch threads (default: $OMP_NUM_THREADS, else 1)")
    a = ap.parse_args()
    if a.threads < 1:
        ap.error(f"--threads must be >= 1, got {a.threads}")
    torch.set_num_threads(a.threads)
    for k in [int(v) for v in a.k.split(",")]:
        sps, cpu_ms = run(k, a.steps)
        # cpu_ms: this process's CPU time (all threads) per timed step.
        print(f"peer k={k} steps/s={sps:.3f} ms/step={1000 / sps:.1f} "
              f"cpu_ms/step={cpu_ms:.1f}", flush=True)


if __name__ == "__main__":
    main()
