#!/usr/bin/env python3
"""Executes examples/notebooks/sparsity-study.ipynb with nbconvert (Debian's
python3-nbconvert + python3-ipykernel) against a coordinator and a SRAVEN
worker started here, on a shortened copy of the demo sweep (same grid,
150 training steps: well under a minute of training on 2 cores), and checks
what it printed: the dry run's count, the watched sweep's end, the DataFrame,
the plot (a PNG) and the optimal-k table.

Exit 0 ok, 1 failed, 77 skipped (nbconvert, ipykernel or matplotlib missing:
scripts/install-deps installs them).
"""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import Cluster, SOURCE_DIR  # noqa: E402

NOTEBOOK = os.path.join(SOURCE_DIR, "examples", "notebooks", "sparsity-study.ipynb")


def tiny_demo_sweep():
    """examples/sraven-demo.yaml renamed, at 150 steps, evaluated on 256 problems."""
    with open(os.path.join(SOURCE_DIR, "examples", "sraven-demo.yaml")) as f:
        text = f.read()
    for old, new in (("name: sraven-demo", "name: sraven-notebook"),
                     ("steps: 1500", "steps: 150"), ("batch_size: 64", "batch_size: 32"),
                     ("warmup: 100", "warmup: 15"), ("eval_every: 500", "eval_every: 150"),
                     ("num_eval: 1024", "num_eval: 256"),
                     ("checkpoint_every: 500", "checkpoint_every: 150")):
        if old not in text:
            raise SystemExit("run_notebook: '%s' is no longer in examples/sraven-demo.yaml" % old)
        text = text.replace(old, new)
    return text


def outputs(cell):
    """The text, the HTML and the MIME types of a code cell's outputs."""
    text, html, mimes = [], [], set()
    for o in cell.get("outputs", []):
        if o["output_type"] == "error":
            raise AssertionError("cell raised %s: %s" % (o["ename"], o["evalue"]))
        if o["output_type"] == "stream":
            text.append(o["text"] if isinstance(o["text"], str) else "".join(o["text"]))
        for mime, value in o.get("data", {}).items():
            mimes.add(mime)
            if mime in ("text/plain", "text/html"):
                (text if mime == "text/plain" else html).append(
                    value if isinstance(value, str) else "".join(value))
    return "".join(text), "".join(html), mimes


def main():
    for m in ("nbconvert", "ipykernel", "matplotlib", "pandas"):
        if subprocess.run([sys.executable, "-c", "import " + m]).returncode != 0:
            print("run_notebook: skipped: no %s for %s (scripts/install-deps)" %
                  (m, sys.executable))
            return 77
    with Cluster("notebook") as c:
        c.start_worker(0, slots=2, kinds="sraven")
        sweep = os.path.join(c.dir, "sraven-notebook.yaml")
        with open(sweep, "w") as f:
            f.write(tiny_demo_sweep())
        out_dir = os.path.join(c.dir, "out")
        env = dict(os.environ, SMOE_DASHBOARD=c.url, SMOE_TOKEN=c.admin,
                   SMOE_STUDY_SWEEP=sweep, MPLCONFIGDIR=os.path.join(c.dir, "mpl"),
                   JUPYTER_PLATFORM_DIRS="1", HOME=c.dir)
        start = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute",
                            "--ExecutePreprocessor.timeout=240",
                            "--ExecutePreprocessor.kernel_name=python3",
                            "--output-dir", out_dir, "--output", "executed.ipynb", NOTEBOOK],
                           env=env, capture_output=True, text=True, timeout=280)
        took = time.monotonic() - start
        if r.returncode != 0:
            print(r.stdout[-4000:], r.stderr[-8000:])
            print("coordinator log:", c.log("coordinator")[-3000:])
            print("worker log:", c.log("worker-0")[-3000:])
            return 1
        with open(os.path.join(out_dir, "executed.ipynb")) as f:
            nb = json.load(f)
        cells = [cell for cell in nb["cells"] if cell["cell_type"] == "code"]
        texts, htmls = [], []
        images = 0
        for cell in cells:
            t, h, mimes = outputs(cell)
            texts.append(t)
            htmls.append(h)
            images += "image/png" in mimes
        allt = "\n".join(texts)
        checks = [
            ("the dry run counted 16 trials", "'new_trials': 16" in texts[1]),
            ("16 new trials submitted", "sraven-notebook: 16 new trials" in texts[2]),
            ("the sweep completed", "'completed'" in texts[3] and "'succeeded': 16" in texts[3]),
            ("watch's progress bar, updated in place in Jupyter",
             "sraven-notebook [" in texts[3] and "16/16 done (16 ok, 0 failed)" in texts[3]
             and 'value="16" max="16"' in htmls[3]),
            ("the DataFrame shows test_acc", "test_acc" in texts[4]),
            ("one plot", images == 1),
            ("the optimal-k table", re.search(r"Optimal top_k per M and attention", allt)
             is not None and re.search(r"softmax\s+1\s+\d", allt) is not None
             and re.search(r"softmax\s+2\s+\d", allt) is not None),
            ("the annotation", "['notebook']" in texts[-1]),
        ]
        failed = [what for what, ok in checks if not ok]
        for what, ok in checks:
            print("%s %s" % ("ok  " if ok else "FAIL", what))
        print("run_notebook: executed in %.0f s; the analysis cell printed:\n%s" %
              (took, texts[-2][:3000]))
        keep = os.environ.get("SMOE_NOTEBOOK_OUT")
        if keep:  # the executed notebook, for a look at the plot
            os.makedirs(keep, exist_ok=True)
            with open(os.path.join(keep, "sparsity-study.executed.ipynb"), "w") as f:
                json.dump(nb, f)
        if failed:
            for i, t in enumerate(texts):
                print("--- code cell %d ---\n%s" % (i, t[-2000:]))
            return 1
        return 0


if __name__ == "__main__":
    sys.exit(main())
