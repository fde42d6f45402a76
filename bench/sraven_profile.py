#!/usr/bin/python3
# Copyright 2026 SMoE Lab authors.
"""Aggregates profiles of the SRAVEN step per op class (issue 19).

Two inputs, either or both:

  --perf FILE    `perf report --no-children --sort dso,sym --stdio` output
                 (cpu-clock samples of `sraven_train_bench`): self time per
                 symbol, classified by library and symbol name.
  --trace FILE   the chrome trace of `sraven_train_bench --profile FILE`
                 (LibTorch's autograd profiler): op count and self time per
                 op name, classified; --steps N divides counts per step.

Prints Markdown tables.
"""
import argparse
import collections
import json
import re

PERF_CLASSES = [
    ("GEMM (OpenBLAS kernels + packing)", lambda d, s: "openblas" in d),
    ("GELU tanh (libsleef tanhf, u10)", lambda d, s: "tanh" in s),
    ("exp (softmax, libsleef expf, u10)", lambda d, s: "Sleef" in s
     and "exp" in s),
    ("erf etc. (libm)", lambda d, s: d.startswith("libm")),
    ("LibTorch CPU kernels, stripped (elementwise, bmm batch loop, "
     "softmax, layer norm, reductions)",
     lambda d, s: d.startswith("libtorch_cpu") and s.startswith("0x")),
    ("softmax fwd/bwd", lambda d, s: "softmax" in s.lower()),
    ("layer norm fwd/bwd", lambda d, s: "layer_norm" in s.lower()
     or "LayerNorm" in s),
    ("GELU fwd/bwd", lambda d, s: "gelu" in s.lower()),
    ("index_select / index_add / gather / scatter",
     lambda d, s: re.search(r"index|gather|scatter", s) is not None),
    ("bmm/matmul glue (small batched products outside BLAS)",
     lambda d, s: re.search(r"bmm|baddbmm|matmul", s) is not None),
    ("reductions (sum, mean, max)",
     lambda d, s: re.search(r"reduce|Reduce|sum_kernel|mean_kernel|"
                            r"binary_kernel_reduce", s) is not None),
    ("copies / layout (copy_, cat, contiguous, permute)",
     lambda d, s: re.search(r"copy|Copy|cat_|_cat|contiguous|transpose|"
                            r"permute", s) is not None),
    ("elementwise (add, mul, div, fill, bernoulli, AdamW math)",
     lambda d, s: re.search(r"vectorized_loop|cpu_kernel|VectorizedLoop|"
                            r"basic_loop|Vectorized|fill|bernoulli|"
                            r"addcmul|addcdiv|sqrt|unary|binary|loop2d",
                            s) is not None),
    ("memory (malloc/free/memset/memcpy, page faults)",
     lambda d, s: d in ("libc.so.6", "[kernel.kallsyms]", "libc-2.36.so")
     or re.search(r"malloc|free|memset|memcpy|memmove|alloc", s)
     is not None),
    ("our C++ (SRAVEN data, permute/combine/router refs, fused attention)",
     lambda d, s: "smoe" in s or "sraven" in s.lower()
     or "kernels::" in s),
    ("OpenMP runtime (libgomp)", lambda d, s: "gomp" in d),
    ("dispatcher / autograd engine / tensor bookkeeping",
     lambda d, s: re.search(r"c10::|torch::autograd|at::TensorIterator|"
                            r"TensorIteratorBase|Dispatch|intrusive_ptr|"
                            r"TensorImpl|Variable|Node|Engine|"
                            r"at::_ops|at::Tensor|at::native::|"
                            r"at::detail|std::", s) is not None),
]


def perf_table(path):
    rows = collections.Counter()
    syms = collections.defaultdict(collections.Counter)
    total = 0.0
    for line in open(path, errors="replace"):
        m = re.match(r"\s*([0-9.]+)%\s+(\S+)\s+\[.\]\s+(.*)$", line)
        if not m:
            continue
        pct, dso, sym = float(m.group(1)), m.group(2), m.group(3).strip()
        total += pct
        for name, pred in PERF_CLASSES:
            if pred(dso, sym):
                rows[name] += pct
                syms[name][sym[:70]] += pct
                break
        else:
            rows["other"] += pct
            syms["other"][sym[:70]] += pct
    print("| op class (perf, self time) | % of samples | top symbols |")
    print("| --- | ---: | --- |")
    for name, pct in rows.most_common():
        top = ", ".join(f"`{s}` {p:.1f}" for s, p in syms[name].most_common(3))
        print(f"| {name} | {pct:.1f} | {top} |")
    print(f"\n(total {total:.1f}% of samples listed)\n")


TRACE_CLASSES = [
    ("GEMM (mm, addmm, bmm, matmul)", r"^aten::(mm|addmm|bmm|baddbmm|mv|addmv"
     r"|matmul|linear)$"),
    ("softmax fwd/bwd", r"softmax"),
    ("layer norm", r"layer_norm"),
    ("GELU", r"gelu"),
    ("index / gather / scatter / sort", r"index|gather|scatter|sort|topk"),
    ("copies / layout", r"copy_|clone|contiguous|cat|stack|permute|transpose"
     r"|view|reshape|expand|as_strided|narrow|slice|select|unsqueeze|squeeze"
     r"|_unsafe_view|t$|split|unbind|alias|detach"),
    ("allocation / fill", r"empty|zeros|ones|full|fill_|zero_|resize|to$"
     r"|_to_copy"),
    ("custom autograd Functions (our ops)", r"CppNode|Fn|smoe"),
    ("autograd backward nodes", r"Backward"),
    ("elementwise", r"add|mul|div|sub|neg|pow|rsqrt|sqrt|exp|log|relu|where"
     r"|bernoulli|addcmul|addcdiv|lerp|clamp|sum|mean|max|min|eq|ne|lt|gt"),
]


def trace_table(path, steps):
    data = json.load(open(path))
    events = data["traceEvents"] if isinstance(data, dict) else data
    ev = [e for e in events if e.get("ph") == "X" and "dur" in e]
    by_tid = collections.defaultdict(list)
    for e in ev:
        by_tid[e.get("tid")].append(e)
    self_us = collections.Counter()
    count = collections.Counter()
    for lst in by_tid.values():
        lst.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in lst:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if stack:
                self_us[stack[-1]["name"]] -= e["dur"]
            self_us[e["name"]] += e["dur"]
            count[e["name"]] += 1
            stack.append(e)
    cls_us = collections.Counter()
    cls_n = collections.Counter()
    for name in count:
        for cname, pat in TRACE_CLASSES:
            if re.search(pat, name):
                break
        else:
            cname = "other"
        cls_us[cname] += self_us[name]
        cls_n[cname] += count[name]
    tot = sum(cls_us.values())
    print(f"| op class (autograd profiler, self time) | ops/step | ms/step "
          f"| % |")
    print("| --- | ---: | ---: | ---: |")
    for cname, us in cls_us.most_common():
        print(f"| {cname} | {cls_n[cname] / steps:.0f} | "
              f"{us / 1000 / steps:.1f} | {100 * us / tot:.1f} |")
    print(f"| **all ops** | {sum(cls_n.values()) / steps:.0f} | "
          f"{tot / 1000 / steps:.1f} | 100 |\n")
    print("| top op names | calls/step | self ms/step |")
    print("| --- | ---: | ---: |")
    for name, us in self_us.most_common(25):
        print(f"| `{name}` | {count[name] / steps:.0f} | "
              f"{us / 1000 / steps:.1f} |")
    print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--perf")
    ap.add_argument("--trace")
    ap.add_argument("--steps", type=float, default=1.0)
    a = ap.parse_args()
    if a.perf:
        perf_table(a.perf)
    if a.trace:
        trace_table(a.trace, a.steps)


if __name__ == "__main__":
    main()
