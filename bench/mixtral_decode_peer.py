#!/usr/bin/python3
# Copyright 2026 SMoE Lab authors.
"""PyTorch eager peer of Mixtral batch-1 decode (issue 19).

An independent PyTorch eager Mixtral decoder with a preallocated KV cache
(HF-style modules: RMSNorm, q/k/v/o nn.Linear without bias, rotary
embeddings, grouped-query attention over the cache, router nn.Linear, top-k
with renormalised softmax, a loop over the chosen experts each
silu(w1 x) * (w3 x) -> w2, LM head), float32, random weights of the
"small" shape of bench/mixtral_decode_bench.cc (4 layers, hidden 512, 8
heads / 2 KV heads of 64, 8 experts x 1536, vocab 8000; 0.086 B params).

  python3 bench/mixtral_decode_peer.py --ept 1,2,8 [--threads N]   (default: $OMP_NUM_THREADS, else 1)

--dtype bf16 converts the model (weights, activations and the KV cache) to
bfloat16, as HF's `torch_dtype=torch.bfloat16` does on the CPU.

Per EPT: prefill --prompt tokens, 2 warm-up decode steps, --steps timed
decode steps (greedy). Prints `peer ept=K tokens/s=X ms/token=Y`.
"""
import argparse
import math
import os
import time

import torch
import torch.nn.functional as F

V, H, F_, L, NH, NKV, D = 8000, 512, 1536, 4, 8, 2, 64
E = 8


class RMSNorm(torch.nn.Module):
    def __init__(s, h, eps=1e-5):
        super().__init__()
        s.w = torch.nn.Parameter(torch.ones(h))
        s.eps = eps

    def forward(s, x):
        # HF: normalise in float32, cast back (a no-op for f32).
        xf = x.float()
        v = xf.pow(2).mean(-1, keepdim=True)
        return s.w * (xf * torch.rsqrt(v + s.eps)).to(x.dtype)


def rope(x, pos, theta=1e6):
    d = x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, d, 2).float() / d)
    f = pos.float()[:, None] * inv[None]
    emb = torch.cat([f, f], -1)
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class Layer(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.ln1, s.ln2 = RMSNorm(H), RMSNorm(H)
        s.q = torch.nn.Linear(H, NH * D, bias=False)
        s.k = torch.nn.Linear(H, NKV * D, bias=False)
        s.v = torch.nn.Linear(H, NKV * D, bias=False)
        s.o = torch.nn.Linear(NH * D, H, bias=False)
        s.gate = torch.nn.Linear(H, E, bias=False)
        s.w1 = torch.nn.ModuleList(
            [torch.nn.Linear(H, F_, bias=False) for _ in range(E)])
        s.w3 = torch.nn.ModuleList(
            [torch.nn.Linear(H, F_, bias=False) for _ in range(E)])
        s.w2 = torch.nn.ModuleList(
            [torch.nn.Linear(F_, H, bias=False) for _ in range(E)])

    def forward(s, x, pos, kc, vc, n, ept):
        t = x.shape[0]
        h = s.ln1(x)
        q = s.q(h).view(t, NH, D).transpose(0, 1)
        k = s.k(h).view(t, NKV, D).transpose(0, 1)
        v = s.v(h).view(t, NKV, D).transpose(0, 1)
        q, k = rope(q, pos), rope(k, pos)
        kc[:, n:n + t] = k
        vc[:, n:n + t] = v
        keys = kc[:, :n + t].repeat_interleave(NH // NKV, 0)
        vals = vc[:, :n + t].repeat_interleave(NH // NKV, 0)
        sc = q @ keys.transpose(-1, -2) / math.sqrt(D)
        mask = torch.full((t, n + t), float("-inf"), dtype=sc.dtype).triu(n + 1)
        a = (sc + mask).softmax(-1, dtype=torch.float32).to(sc.dtype)
        o = (a @ vals).transpose(0, 1).reshape(t, NH * D)
        x = x + s.o(o)
        h = s.ln2(x)
        logits = s.gate(h)
        w, idx = logits.softmax(-1, dtype=torch.float32).topk(ept, -1)
        w = w / w.sum(-1, keepdim=True)
        out = torch.zeros_like(h)
        for e in range(E):
            tok, slot = (idx == e).nonzero(as_tuple=True)
            if tok.numel() == 0:
                continue
            xe = h[tok]
            ye = s.w2[e](F.silu(s.w1[e](xe)) * s.w3[e](xe))
            out.index_add_(0, tok, ye * w[tok, slot, None].to(ye.dtype))
        return x + out


class Model(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.embed = torch.nn.Embedding(V, H)
        s.layers = torch.nn.ModuleList([Layer() for _ in range(L)])
        s.norm = RMSNorm(H)
        s.head = torch.nn.Linear(H, V, bias=False)

    def forward(s, ids, caches, n, ept):
        x = s.embed(ids)
        pos = torch.arange(n, n + ids.shape[0])
        for layer, (kc, vc) in zip(s.layers, caches):
            x = layer(x, pos, kc, vc, n, ept)
        return s.head(s.norm(x))


@torch.no_grad()
def run(model, ept, prompt, steps, dtype):
    cap = prompt + steps + 2
    caches = [(torch.zeros(NKV, cap, D, dtype=dtype),
               torch.zeros(NKV, cap, D, dtype=dtype)) for _ in range(L)]
    ids = torch.randint(0, V, (prompt,))
    logits = model(ids, caches, 0, ept)
    n = prompt
    nxt = logits[-1].argmax().view(1)
    for _ in range(2):
        nxt = model(nxt, caches, n, ept)[-1].argmax().view(1)
        n += 1
    c0 = time.process_time()
    t0 = time.perf_counter()
    for _ in range(steps):
        nxt = model(nxt, caches, n, ept)[-1].argmax().view(1)
        n += 1
    return (steps / (time.perf_counter() - t0),
            1000 * (time.process_time() - c0) / steps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ept", default="1,2,8")
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    ap.add_argument("--threads", type=int,
                    default=int(os.environ.get("OMP_NUM_THREADS", "1")),
                    help="torch threads (default: $OMP_NUM_THREADS, else 1)")
    a = ap.parse_args()
    if a.threads < 1:
        ap.error(f"--threads must be >= 1, got {a.threads}")
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = Model().eval().to(dtype)
    for k in [int(v) for v in a.ept.split(",")]:
        tps, cpu_ms = run(model, k, a.prompt, a.steps, dtype)
        # cpu_ms: this process's CPU time (all threads) per timed token.
        print(f"peer dtype={a.dtype} ept={k} tokens/s={tps:.1f} ms/token={1000 / tps:.2f} "
              f"cpu_ms/token={cpu_ms:.2f}", flush=True)


if __name__ == "__main__":
    main()
