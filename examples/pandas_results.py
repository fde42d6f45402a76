#!/usr/bin/env python3
"""Load a sweep's trials from the coordinator's HTTP API into pandas.

    python3 examples/pandas_results.py SWEEP [--url http://127.0.0.1:8080]
        [--token-file smoe-data/token] [--csv OUT] [--no-pandas]

The token (any role but worker; a viewer token is enough) comes from
$SMOE_TOKEN or --token-file and goes in the Authorization header. The routes
are described at /api/openapi.json. Without pandas (or with --no-pandas) the
rows are written as CSV with the standard library only.
"""
import argparse
import csv
import json
import os
import sys
import urllib.parse
import urllib.request


def get(base, path, token, **query):
    url = base.rstrip("/") + path + ("?" + urllib.parse.urlencode(query) if query else "")
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def trials(base, token, sweep):
    """Every trial of the sweep as a flat dict: id, state, seed, params, results."""
    offset, out = 0, []
    while True:
        page = get(base, "/api/sweeps/" + urllib.parse.quote(sweep), token, offset=offset, limit=5000)
        for r in page["rows"]:
            row = {"trial_id": r["trial_id"], "state": r["state"], "seed": r["seed"]}
            row.update(r["params"])
            row.update(r["results"])
            out.append(row)
        offset += len(page["rows"])
        if not page["rows"] or offset >= page["matched"]:
            return page, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep")
    ap.add_argument("--url", default=os.environ.get("SMOE_DASHBOARD", "http://127.0.0.1:8080"))
    ap.add_argument("--token-file", default="smoe-data/token")
    ap.add_argument("--csv", help="also write the rows to this CSV file ('-' = stdout)")
    ap.add_argument("--no-pandas", action="store_true", help="use the standard library only")
    a = ap.parse_args()
    token = os.environ.get("SMOE_TOKEN") or open(a.token_file).read().strip()

    spec = get(a.url, "/api/openapi.json", token)
    assert "/api/sweeps/{sweep}" in spec["paths"], "not a SMoE Lab coordinator?"
    page, rows = trials(a.url, token, a.sweep)
    axes = [x["name"] for x in page["sweep"]["axes"]]
    metrics = [m for m in page["columns"]["results"] if not m.endswith("_per_feature")]
    print(f"{a.sweep}: {len(rows)} trials, axes {axes}, metrics {metrics}", file=sys.stderr)

    pd = None
    if not a.no_pandas:
        try:
            import pandas as pd
        except ImportError:
            print("pandas is not installed: standard library only", file=sys.stderr)
    cols = ["trial_id", "state", "seed"] + axes + metrics
    if pd is not None:
        df = pd.DataFrame(rows, columns=cols)
        done = df[df.state == "succeeded"]
        if axes and metrics:
            # Mean and s.e.m. over seeds of the first metric per first axis.
            print(done.groupby(axes[0])[metrics[0]].agg(["mean", "sem", "count"]).to_string())
        if a.csv:
            df.to_csv(sys.stdout if a.csv == "-" else a.csv, index=False)
        return 0
    if a.csv:
        f = sys.stdout if a.csv == "-" else open(a.csv, "w", newline="")
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
