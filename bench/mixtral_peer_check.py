#!/usr/bin/env python3
# Copyright 2026 SMoE Lab authors.
"""Peer check of the C++ Mixtral runtime against Hugging Face transformers.

Runs on the GPU machine (PyTorch + transformers installed; no network needed:
everything is loaded from a local directory, and HF_HUB_OFFLINE /
TRANSFORMERS_OFFLINE are set below so nothing tries the Hub).

  # 1. a tiny random checkpoint (classic per-expert layout, fp32):
  smoe-trainer make-random-model --out /tmp/tiny --shape tiny --seed 1
  # 2. compare logits at EPT 1, 2 and 8:
  python3 bench/mixtral_peer_check.py --model /tmp/tiny \
      --trainer build/worker/trainer/smoe-trainer [--device cuda --dtype bf16]

Our side: `smoe-trainer mixtral-logits` writes logits_ept{K} [T, V] F32 to a
safetensors file (read here with a 20-line parser, no safetensors package
needed). Their side: MixtralForCausalLM.from_pretrained(DIR,
num_experts_per_tok=K) for each K (the config route works in transformers
4.x and 5.x; 5.x converts the classic layout to its packed experts on load),
eager attention, the same dtype/device. Prints max |diff| per EPT and whether
the argmax token agrees at every position; exits 1 when a diff exceeds the
tolerance (fp32: 1e-4 + 1e-4 * max|logit|; bf16/f16: 5e-2 * max|logit|,
since both sides round every matmul to 8 or 11 mantissa bits but in different
orders).
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402


def read_safetensors(path):
    """Returns {name: np.ndarray} for F32 tensors (all our logits file holds)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        assert e["dtype"] == "F32", (name, e["dtype"])
        b, end = e["data_offsets"]
        out[name] = np.frombuffer(data[base + b:base + end],
                                  dtype="<f4").reshape(e["shape"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--trainer", default="build/worker/trainer/smoe-trainer")
    ap.add_argument("--tokens", default="1,15,27,99,200,3,42,7,311,5,64,128")
    ap.add_argument("--ept", default="1,2,8")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16", "f16"])
    args = ap.parse_args()

    import transformers
    from transformers import MixtralForCausalLM

    epts = [int(k) for k in args.ept.split(",")]
    tokens = [int(t) for t in args.tokens.split(",")]
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16,
             "f16": torch.float16}[args.dtype]

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "logits.safetensors")
        subprocess.run([args.trainer, "mixtral-logits", "--model", args.model,
                        "--tokens", args.tokens, "--ept", args.ept,
                        "--device", args.device, "--dtype", args.dtype,
                        "--out", out], check=True)
        ours = read_safetensors(out)

    print(f"transformers {transformers.__version__}, torch {torch.__version__}, "
          f"device {args.device}, dtype {args.dtype}, T={len(tokens)}")
    print("| EPT | max abs diff | max |logit| | tolerance | argmax agree |")
    print("| --- | --- | --- | --- | --- |")
    ok = True
    ids = torch.tensor([tokens], device=args.device)
    for k in epts:
        model = MixtralForCausalLM.from_pretrained(
            args.model, num_experts_per_tok=k, torch_dtype=dtype,
            attn_implementation="eager").to(args.device).eval()
        with torch.no_grad():
            theirs = model(ids).logits[0].float().cpu().numpy()
        mine = ours[f"logits_ept{k}"]
        diff = float(np.abs(theirs - mine).max())
        scale = float(np.abs(theirs).max())
        tol = 1e-4 + 1e-4 * scale if args.dtype == "f32" else 5e-2 * scale
        agree = bool((theirs.argmax(-1) == mine.argmax(-1)).all())
        ok = ok and diff <= tol
        print(f"| {k} | {diff:.3e} | {scale:.3f} | {tol:.3e} | {agree} |")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
