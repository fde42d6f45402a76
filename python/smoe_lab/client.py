"""The coordinator's HTTP API from Python: submit, watch, analyse, manage.

Standard library only; ``results(..., frame=True)``, ``Analysis.frame()`` and
``Tuned.frame()`` / ``Tuned.curves_frame()`` use pandas when it is installed.
Reference: docs/python.md.
"""

import json
import os
import re
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from . import errors
from ._progress import Progress

DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_DASHBOARD_PORT = 8080
_SWEEP_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_TRIAL_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}/[0-9a-f]{16}$")
_ARTIFACT = re.compile(r"^[A-Za-z0-9._-]{1,200}$")
_ROLE = re.compile(r"needs role '([a-z]+)'")


def default_token_file(start_dir=None, home=None):
    """The token file the CLI reads when neither a file nor $SMOE_TOKEN is given.

    smoe-data/token in ``start_dir`` (default the working directory) or a
    parent, or ``token`` in a data directory (one holding smoe.db) on that
    path, else ~/.smoe/token.
    """
    d = os.path.abspath(start_dir or os.getcwd())
    while True:
        if os.path.isfile(os.path.join(d, "smoe-data", "token")):
            return os.path.join(d, "smoe-data", "token")
        if os.path.isfile(os.path.join(d, "token")) and os.path.isfile(
                os.path.join(d, "smoe.db")):
            return os.path.join(d, "token")
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    if home is None:
        home = os.environ.get("HOME", ".")
    return os.path.join(home, ".smoe", "token")


def resolve_token(token=None, token_file=None):
    """Returns (token, where it came from) the way the CLI finds it; (None, reason) if none."""
    if token:
        return token.strip(), "the token argument"
    if token_file:
        try:
            with open(token_file) as f:
                t = f.read().strip()
        except OSError:
            t = ""
        if not t:
            return None, ("no API token in token_file '%s' (missing, unreadable "
                          "or empty)" % token_file)
        return t, "token file '%s'" % token_file
    env = os.environ.get("SMOE_TOKEN", "").strip()
    if env:
        return env, "$SMOE_TOKEN"
    path = default_token_file()
    try:
        with open(path) as f:
            t = f.read().strip()
    except OSError:
        t = ""
    if t:
        return t, "token file '%s'" % path
    return None, ("no API token: set SMOE_TOKEN, pass token= or token_file=, or "
                  "create the token file '%s' (the coordinator prints the token "
                  "on first start)" % path)


def resolve_url(url=None):
    """The dashboard URL: ``url``, else $SMOE_DASHBOARD, else $SMOE_COORDINATOR.

    $SMOE_COORDINATOR is the CLI's gRPC address: an http(s):// URL there is
    used as is, a HOST[:PORT] gives http://HOST:8080 (the dashboard's default
    port). Without any: http://127.0.0.1:8080.
    """
    for v, grpc_address in ((url, False), (os.environ.get("SMOE_DASHBOARD"), False),
                            (os.environ.get("SMOE_COORDINATOR"), True)):
        v = (v or "").strip()
        if not v:
            continue
        if v.startswith("http://") or v.startswith("https://"):
            return v.rstrip("/")
        if not grpc_address:
            return "http://" + v.rstrip("/")
        host = v
        if host.startswith("["):  # [v6]:port
            host = host[:host.find("]") + 1]
        elif host.count(":") == 1:
            host = host.split(":")[0]
        return "http://%s:%d" % (host or "127.0.0.1", DEFAULT_DASHBOARD_PORT)
    return DEFAULT_URL


def _check(pattern, value, what):
    if not isinstance(value, str) or not pattern.match(value):
        raise errors.UsageError("%s: %r is not a valid %s (%s)" %
                                (what, value, what, pattern.pattern))
    return value


def _sweep_path(name):
    return "/api/sweeps/" + _check(_SWEEP_ID, name, "sweep name")


def _trial_path(trial):
    return "/api/trials/" + _check(_TRIAL_ID, trial, "trial id")


def _error_from(status, body, what):
    """The typed error for an HTTP error reply."""
    try:
        j = json.loads(body)
    except ValueError:
        j = None
    msg = body.strip() if isinstance(body, str) else ""
    problems = None
    if isinstance(j, dict) and isinstance(j.get("error"), str):
        msg = j["error"]
        problems = j.get("problems")
    msg = msg or ("HTTP %d" % status)
    if status in (401, 403):
        m = _ROLE.search(msg)
        return errors.Unauthorized("%s: %s" % (what, msg), status,
                                   m.group(1) if m else None)
    if problems is not None and status == 400:
        return errors.SweepInvalid("%s: %s" % (what, msg), status, problems)
    if status == 400 or status == 413:
        return errors.BadRequest("%s: %s" % (what, msg), status)
    if status == 404:
        return errors.NotFound("%s: %s" % (what, msg), status)
    if status == 409:
        return errors.Conflict("%s: %s" % (what, msg), status)
    if status == 503:
        return errors.CoordinatorUnavailable("%s: %s" % (what, msg), status)
    return errors.ServerError("%s: HTTP %d: %s" % (what, status, msg), status)


class Analysis:
    """The optimal-k analysis of a sweep, as ``smoe analyze`` prints it.

    ``raw`` is the coordinator's JSON (GET /api/sweeps/{sweep}/analysis);
    ``table`` one dict per line (facet, series, best x, mean, s.e.m., P, CI,
    1se, seeds); ``str(a)`` the text table; ``a.frame()`` the table as a
    pandas.DataFrame.
    """

    def __init__(self, raw, sweep_id="", kind=""):
        self.raw = raw
        self.sweep_id = sweep_id
        self.kind = kind
        self.metric = raw.get("metric", "")
        self.x = raw.get("x", "")
        self.series = raw.get("series", "")
        self.facet = raw.get("facet", "")
        self.table = []
        for o in raw.get("optimal", []):
            self.table.append({
                "facet": o.get("facet_label", ""),
                "series": o.get("series_label", ""),
                "best": o.get("best"),
                "mean": o.get("best_mean"),
                "sem": o.get("best_sem"),
                "P": o.get("best_freq"),
                "ci_lo": o.get("ci_lo"),
                "ci_hi": o.get("ci_hi"),
                "one_se": o.get("one_se"),
                "seeds": o.get("seeds", 2),
            })

    def frame(self):
        import pandas  # noqa: only here: pandas is optional
        return pandas.DataFrame(self.table)

    def __str__(self):
        head = "sweep %s (%s)\n" % (self.sweep_id, self.kind) if self.sweep_id else ""
        return head + format_analysis(self.raw)

    def __repr__(self):
        return "<Analysis %s: %d lines>" % (self.metric, len(self.table))

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


def _label(v):
    if isinstance(v, str):
        return v
    return json.dumps(v)


def _num_label(v):
    # As the CLI's NumberLabel: integers without a decimal point; null is NaN.
    if v is None:
        return "nan"
    if isinstance(v, (int, float)) and float(v).is_integer() and abs(v) < 1e15:
        return str(int(v))
    return "%g" % v if isinstance(v, (int, float)) else str(v)


def _f(v):
    return float(v) if isinstance(v, (int, float)) else float("nan")


def format_analysis(a):
    """The text `smoe analyze` prints for an analysis JSON (cli/analyze_cmd.cc)."""
    out = []
    metric, x, series, facet = (a.get("metric", ""), a.get("x", ""),
                                a.get("series", ""), a.get("facet", ""))
    curves = a.get("curves", {})
    out.append("metric %s: %d of %d trials have it (succeeded). Optimal %s per %s%s" %
               (metric, curves.get("trials_used", 0), curves.get("trials_total", 0),
                x, series, "" if not facet else " and " + facet))
    out.append("  (mean +- s.e.m. over seeds; P = bootstrap frequency of the best %s; "
               "CI = %d%% bootstrap CI of the argmax; 1se = smallest %s within one "
               "s.e.m. of the best)" % (x, int(curves.get("ci_level", 0.95) * 100), x))
    out.append("  %-12s %6s %6s %16s %6s %12s %6s" %
               (facet or "-", series, x, "mean +- sem", "P", "CI", "1se"))
    one_seed = False
    for o in a.get("optimal", []):
        seeds = o.get("seeds", 2)
        if seeds < 2:
            one_seed = True
            out.append("  %-12s %6s %6s %16s %6s %12s %6s" %
                       (o.get("facet_label", ""), o.get("series_label", ""),
                        _label(o.get("best")),
                        "%.4f (n = %d)" % (_f(o.get("best_mean")), seeds), "-", "-",
                        _label(o.get("one_se"))))
            continue
        out.append("  %-12s %6s %6s %7.4f +- %6.4f %6.2f %12s %6s" %
                   (o.get("facet_label", ""), o.get("series_label", ""),
                    _label(o.get("best")), _f(o.get("best_mean")),
                    _f(o.get("best_sem")), _f(o.get("best_freq")),
                    "[%s, %s]" % (_num_label(o.get("ci_lo")), _num_label(o.get("ci_hi"))),
                    _label(o.get("one_se"))))
    if not a.get("optimal"):
        out.append("  (no succeeded trials with this metric)")
    if one_seed:
        out.append("  n = 1: one seed per point, so no s.e.m., no CI and no P; run "
                   "more seeds to tell the noise from the effect")
    fits = a.get("fits") or []
    if fits:
        out.append("")
        out.append("theory fit: %s" % a.get("model", ""))
        for f in fits:
            if not f.get("ok", False):
                out.append("  %-12s not fitted: %s" % (f.get("facet_label", ""),
                                                       f.get("message", "")))
                continue
            out.append("  %-12s a = %.4g  b = %.4g  R^2 = %.3f  rss = %.4g  points = %d" %
                       (f.get("facet_label", ""), _f(f.get("a")), _f(f.get("b")),
                        _f(f.get("r2")), _f(f.get("rss")), len(f.get("points", []))))
            if not f.get("meaningful", True):
                out.append("  %-12s   not meaningful: R^2 < 0, the fit is worse than "
                           "a flat line through the mean" % "")
        for f in fits:
            if f.get("ok", False) and "k_star_note" in f:
                out.append("  note: " + f["k_star_note"])
                break
    return "\n".join(out) + "\n" + format_pruned_note(a.get("pruned"), x)


def format_pruned_note(pruned, x):
    """The CLI's note under a table when the search pruned trials (FormatPrunedNote)."""
    if not pruned or not pruned.get("trials"):
        return ""
    note = ("  note: %d trial(s) were pruned by the search (early-stopped at a rung; "
            "`smoe results` shows the rung and value): they are not in the means "
            "above, so the best %s is the best among the trials the search let "
            "finish" % (pruned["trials"], x))
    if pruned.get("x_values_all_pruned"):
        note += "; every trial was pruned at %s = %s" % (
            x, ", ".join(pruned["x_values_all_pruned"]))
    return note + "\n"


class Tuned:
    """The tuned analysis of a sweep (issue 33), as ``smoe analyze --tune`` prints it.

    Every x gets its own best configuration of the tuned parameters, selected
    on ``select_by`` (per seed, or with select_per="point" per x), and the
    metric is reported there; the untuned comparison is each fixed
    configuration on its own.

    ``raw`` is the coordinator's JSON (GET /api/sweeps/{sweep}/analysis/tuned);
    ``configs`` the configuration labels ("lr=0.001"); ``table`` one dict per
    (facet, series): the tuned optimal x (best, mean, sem, P, ci_lo, ci_hi,
    one_se, seeds), ``chosen`` ({x: {configuration: seeds choosing it}}, by
    x), ``chosen_at_best`` (that dict at the best x) and ``untuned``
    ({configuration: its own optimal x, as the same keys}); ``curves`` one
    dict per (facet, series, x): the tuned mean, sem, ci_lo, ci_hi and seeds
    (n), ``chosen`` and ``configs`` (how many configurations had a value
    there), then each configuration's own mean under its label (None where it
    has none). ``str(t)`` is the text; ``frame()`` / ``curves_frame()`` the
    two as pandas.DataFrames.
    """

    def __init__(self, raw, sweep_id="", kind=""):
        self.raw = raw
        self.sweep_id = sweep_id
        self.kind = kind
        self.metric = raw.get("metric", "")
        self.x = raw.get("x", "")
        self.series = raw.get("series", "")
        self.facet = raw.get("facet", "")
        self.tune = list(raw.get("tune", []))
        self.select_by = raw.get("select_by", "")
        self.select_per = raw.get("select_per", "")
        self.configs = [_label(c) for c in raw.get("configs", [])]
        self.notes = list(raw.get("notes", []))
        untuned_opt = {}   # (facet, series) -> {config: row}
        untuned_mean = {}  # (config, facet, series, x label) -> mean
        for u in raw.get("untuned", []):
            cfg = u.get("config", "")
            for o in u.get("optimal", []):
                untuned_opt.setdefault((o.get("facet_label", ""), o.get("series_label", "")),
                                       {})[cfg] = _optimal_row(o)
            for f in u.get("curves", {}).get("facets", []):
                for sr in f.get("series", []):
                    for pt in sr.get("points", []):
                        untuned_mean[(cfg, f.get("label", ""), sr.get("label", ""),
                                      pt.get("x_label", ""))] = pt.get("mean")
        self.table = []
        self.curves = []
        for s in raw.get("tuned", []):
            fl, sl = s.get("facet_label", ""), s.get("series_label", "")
            row = {"facet": fl, "series": sl}
            row.update(_optimal_row(s.get("optimal", {})))
            chosen = {}
            for p in s.get("points", []):
                counts = dict(p.get("chosen_count", {}))
                chosen[p.get("x")] = counts
                c = {"facet": fl, "series": sl, "x": p.get("x"), "mean": p.get("mean"),
                     "sem": p.get("sem"), "ci_lo": p.get("ci_lo"), "ci_hi": p.get("ci_hi"),
                     "seeds": p.get("n", 0), "chosen": counts,
                     "configs": p.get("configs", 0)}
                for cfg in self.configs:
                    c[cfg] = untuned_mean.get((cfg, fl, sl, p.get("x_label", "")))
                self.curves.append(c)
            row["chosen"] = chosen
            row["chosen_at_best"] = chosen.get(row["best"], {})
            row["untuned"] = untuned_opt.get((fl, sl), {})
            self.table.append(row)

    def frame(self):
        """``table`` as a pandas.DataFrame (pandas is needed only here)."""
        import pandas  # noqa: only here: pandas is optional
        return pandas.DataFrame(self.table)

    def curves_frame(self):
        """``curves`` as a pandas.DataFrame: a row per (facet, series, x)."""
        import pandas  # noqa: only here: pandas is optional
        return pandas.DataFrame(self.curves)

    def __str__(self):
        head = "sweep %s (%s)\n" % (self.sweep_id, self.kind) if self.sweep_id else ""
        return head + format_tuned(self.raw)

    def __repr__(self):
        return "<Tuned %s by %s over %s: %d lines>" % (
            self.metric, self.select_by, ", ".join(self.tune), len(self.table))

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


def _optimal_row(o):
    return {"best": o.get("best"), "mean": o.get("best_mean"), "sem": o.get("best_sem"),
            "P": o.get("best_freq"), "ci_lo": o.get("ci_lo"), "ci_hi": o.get("ci_hi"),
            "one_se": o.get("one_se"), "seeds": o.get("seeds", 2)}


def format_tuned(t):
    """The text `smoe analyze --tune` prints for a tuned analysis JSON
    (FormatTunedTable in cli/analyze_cmd.cc, then the pruned note)."""
    out = []
    metric, x, series, facet = (t.get("metric", ""), t.get("x", ""),
                                t.get("series", ""), t.get("facet", ""))
    select_by = t.get("select_by", "")
    per_point = t.get("select_per", "") == "point"
    tune = [_label(n) for n in t.get("tune", [])]
    configs = [_label(c) for c in t.get("configs", [])]
    out.append("tuned: %s at each %s%s best %s by %s (%d configuration%s; %d of %d "
               "trials have both %s and %s)" %
               (metric, x, "'s" if per_point else " and seed's", ", ".join(tune),
                select_by, len(configs), "" if len(configs) == 1 else "s",
                t.get("trials_used", 0), t.get("trials_total", 0), metric, select_by))
    for n in t.get("notes", []):
        out.append("  note: " + _label(n))
    out.append("Optimal %s per %s%s: tuned, and at each fixed configuration (untuned)" %
               (x, series, "" if not facet else " and " + facet))
    out.append("  (mean +- s.e.m. over seeds; P = bootstrap frequency of the best %s; "
               "CI = %d%% bootstrap CI of the argmax, the tuned rows re-selecting the "
               "configuration in every resample; 1se = smallest %s within one s.e.m. "
               "of the best)" % (x, int(t.get("ci_level", 0.95) * 100), x))
    width = max([8] + [len(c) for c in configs])
    line = "  %-12s %6s %-*s %6s %16s %6s %12s %6s"
    out.append(line % (facet or "-", series, width, "setting", x, "mean +- sem", "P",
                       "CI", "1se"))

    def row(o, setting):
        seeds = o.get("seeds", 2)
        if seeds < 2:
            mean = "%.4f (n = %d)" % (_f(o.get("best_mean")), seeds)
            p, ci = "-", "-"
        else:
            mean = "%7.4f +- %6.4f" % (_f(o.get("best_mean")), _f(o.get("best_sem")))
            p = "%.2f" % _f(o.get("best_freq"))
            ci = "[%s, %s]" % (_num_label(o.get("ci_lo")), _num_label(o.get("ci_hi")))
        out.append(line % (o.get("facet_label", ""), o.get("series_label", ""), width,
                           setting, _label(o.get("best")), mean, p, ci,
                           _label(o.get("one_se"))))

    untuned_rows = {}  # (facet, series) -> [(config, optimal row)]
    untuned_mean = {}  # (config, facet, series, x label) -> mean
    for u in t.get("untuned", []):
        cfg = u.get("config", "")
        for o in u.get("optimal", []):
            untuned_rows.setdefault((o.get("facet_label", ""), o.get("series_label", "")),
                                    []).append((cfg, o))
        for f in u.get("curves", {}).get("facets", []):
            for sr in f.get("series", []):
                for pt in sr.get("points", []):
                    untuned_mean[(cfg, f.get("label", ""), sr.get("label", ""),
                                  pt.get("x_label", ""))] = _f(pt.get("mean"))
    tuned = t.get("tuned", [])
    for s in tuned:
        row(s.get("optimal", {}), "tuned")
        for cfg, o in untuned_rows.get((s.get("facet_label", ""), s.get("series_label", "")),
                                       []):
            row(o, cfg)
    if not tuned:
        out.append("  (no succeeded trials with both %s and %s)" % (metric, select_by))
    for s in tuned:
        fl, sl = s.get("facet_label", ""), s.get("series_label", "")
        out.append("")
        out.append("%s (mean over seeds) at %s%s=%s: tuned, each fixed configuration, and "
                   "what the tuned selection chose (seeds)" %
                   (metric, "" if not facet else "%s=%s " % (facet, fl), series, sl))
        out.append("  %6s %8s" % (x, "tuned") +
                   "".join(" %*s" % (max(8, len(c)), c) for c in configs) + "  chosen")
        for p in s.get("points", []):
            xl = p.get("x_label", "")
            text = "  %6s %8.4f" % (xl, _f(p.get("mean")))
            for c in configs:
                m = untuned_mean.get((c, fl, sl, xl))
                text += " %*s" % (max(8, len(c)), "-" if m is None else "%.4f" % m)
            chosen = "; ".join("%s x%d" % (cfg, n)
                               for cfg, n in p.get("chosen_count", {}).items())
            have = p.get("configs", 0)
            partial = ""
            if have < len(configs):
                partial = "  (among %d of %d configurations)" % (have, len(configs))
            out.append(text + "  " + chosen + partial)
    return "\n".join(out) + "\n" + format_pruned_note(t.get("pruned"), x)


class Client:
    """A SMoE Lab coordinator, through its HTTP API (the dashboard's port).

    ``Client(url=None, token=None, token_file=None, timeout=30)``: the URL and
    the token are found as the CLI finds them (see resolve_url and
    resolve_token). Reads need a viewer (or admin) token, actions an admin
    one. The token is sent only in the Authorization header and never shown
    by ``repr`` or in errors.

    Thread safety: a Client holds no connection; calls may run concurrently.
    """

    def __init__(self, url=None, token=None, token_file=None, timeout=30.0):
        self.url = resolve_url(url)
        self._token, self.token_source = resolve_token(token, token_file)
        self.timeout = timeout

    def __repr__(self):
        return "Client(url=%r, token from %s)" % (
            self.url, self.token_source if self._token else "nowhere")

    # ---- transport ---------------------------------------------------------

    def _request(self, method, path, body=None, query=None, raw=False,
                 timeout=None, auth=True, sink=None):
        what = "%s %s" % (method, path)
        url = self.url + path
        if query:
            q = {k: v for k, v in query.items() if v is not None}
            if q:
                url += "?" + urllib.parse.urlencode(q)
        headers = {"Accept": "application/json"}
        if auth:
            if not self._token:
                raise errors.Unauthorized(self.token_source, 0)
            headers["Authorization"] = "Bearer " + self._token
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        elif method != "GET":
            data = b""
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as r:
                if sink is not None:  # streamed: checkpoints can be large
                    shutil.copyfileobj(r, sink, 1 << 20)
                    return None
                payload = r.read()
        except urllib.error.HTTPError as e:
            text = e.read().decode("utf-8", "replace")
            err = _error_from(e.code, text, what)
            if isinstance(err, errors.Unauthorized) and self._token:
                err.args = (err.message + " (the token came from %s)" %
                            self.token_source,)
                err.message = err.args[0]
            raise err from None
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise errors.CoordinatorUnavailable(
                "%s: no answer from %s (%s); is the coordinator running with "
                "its dashboard? (url=, $SMOE_DASHBOARD)" % (what, self.url, reason),
                0) from None
        if raw:
            return payload
        return json.loads(payload.decode("utf-8")) if payload else {}

    def openapi(self):
        """The API's description (GET /api/openapi.json; needs no token)."""
        return self._request("GET", "/api/openapi.json", auth=False)

    def session(self):
        """The token's name and role: {"name", "role", "admin", ...}."""
        return self._request("GET", "/api/session")

    # ---- sweeps --------------------------------------------------------------

    def submit(self, spec, dry_run=False):
        """Submits a sweep (or, with dry_run, only validates and counts it).

        ``spec``: a path to a sweep file, the file's YAML text, or a dict
        (sent as JSON, which is YAML). Returns {"sweep_id", "kind", "dry_run",
        "new_trials", "existing_trials", "total_trials"}; resubmitting an
        equal file adds nothing. Raises SweepInvalid with every problem.
        """
        if isinstance(spec, dict):
            text = json.dumps(spec)
        elif isinstance(spec, os.PathLike) or (
                isinstance(spec, str) and "\n" not in spec and os.path.isfile(spec)):
            with open(spec) as f:
                text = f.read()
        elif isinstance(spec, str) and ("\n" in spec or spec.lstrip().startswith("{")):
            text = spec
        else:
            raise errors.UsageError(
                "spec: %r is neither a sweep file's path, its YAML text nor a dict"
                % (spec if not isinstance(spec, str) else spec[:200]))
        if not isinstance(dry_run, bool):
            raise errors.UsageError("dry_run: must be True or False, not %r" % (dry_run,))
        return self._request("POST", "/api/sweeps",
                             {"spec_yaml": text, "dry_run": dry_run})

    def validate(self, spec):
        """submit(spec, dry_run=True): every problem (SweepInvalid), or the counts."""
        return self.submit(spec, dry_run=True)

    def extend(self, name, axis=None, values=None, samples=None, samples_total=None):
        """Adds ``values`` to axis ``axis`` ("seeds" for seeds), or with ``samples=N``
        draws N more configurations of the sweep's sampled axes, or with
        ``samples_total=T`` draws up to T in all (idempotent: a retried call adds
        nothing) (docs/sampled-axes.md); returns {"sweep_id", "new_trials"}."""
        for key, n in (("samples", samples), ("samples_total", samples_total)):
            if n is None:
                continue
            if axis is not None or values is not None or (samples is not None and samples_total is not None):
                raise errors.UsageError("extend: give axis= and values=, samples= or samples_total=, "
                                        "only one of them")
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise errors.UsageError("%s: must be a positive integer, not %r" % (key, n))
            axis, values = key, [n]
        if axis is None:
            raise errors.UsageError("extend: give axis= and values=, samples=N or samples_total=T")
        if not isinstance(values, (list, tuple)) or not values:
            raise errors.UsageError("values: must be a non-empty list, not %r" % (values,))
        return self._request("POST", _sweep_path(name) + "/extend",
                             {"axis": axis, "values": list(values)})

    def cancel(self, name):
        """Cancels every pending and running trial: {"sweep_id", "cancelled"}."""
        return self._request("POST", _sweep_path(name) + "/cancel")

    def retry(self, name, include_cancelled=False):
        """Re-queues failed (and with include_cancelled, cancelled) trials: {"sweep_id", "requeued"}."""
        return self._request("POST", _sweep_path(name) + "/retry",
                             {"include_cancelled": bool(include_cancelled)})

    def delete(self, name):
        """Deletes a finished sweep and all its data: {"sweep_id", "deleted_trials"}.

        Conflict while trials are pending or running (cancel first)."""
        return self._request("DELETE", _sweep_path(name))

    def annotate(self, name, notes=None, tags=None):
        """Sets the notes and/or tags of a sweep."""
        body = {}
        if notes is not None:
            body["notes"] = notes
        if tags is not None:
            body["tags"] = list(tags)
        if not body:
            raise errors.UsageError("annotate: give notes=, tags= or both")
        return self._request("PUT", _sweep_path(name) + "/annotations", body)

    def archive(self, name, archived=True):
        """Archives (or with archived=False, unarchives) a sweep."""
        return self._request("POST", _sweep_path(name) + "/archive",
                             {"archived": bool(archived)})

    def cancel_trial(self, trial):
        return self._request("POST", _trial_path(trial) + "/cancel")

    def retry_trial(self, trial):
        return self._request("POST", _trial_path(trial) + "/retry")

    def sweeps(self, include_archived=False):
        """Every sweep (archived ones only with include_archived) as dicts: sweep_id, kind, state, counts, axes, ..."""
        out = self._request("GET", "/api/sweeps")["sweeps"]
        return [s for s in out if include_archived or not s.get("archived")]

    def sweep(self, name):
        """One sweep: state, counts, axes, fixed, seeds, notes, tags, spec_yaml."""
        page = self._request("GET", _sweep_path(name), query={"limit": 0})
        s = page["sweep"]
        s["columns"] = page.get("columns", {})
        return s

    def trials(self, name, state=None, q=None, sort=None, **filters):
        """The sweep's trials as the API's rows (trial_id, state, attempt, worker, params, results, ...).

        ``state``: a state or list of states; ``q``: the dashboard's filter
        language; ``filters``: parameter or result equality (a list means
        any of), e.g. trials("s", state="failed", M=2, top_k=[2, 4]).
        """
        terms = [q] if q else []
        for k, v in filters.items():
            vals = v if isinstance(v, (list, tuple, set)) else [v]
            labels = []
            for x in vals:
                if isinstance(x, bool):
                    labels.append("true" if x else "false")
                else:
                    labels.append(str(x))
            if not labels or any(" " in s or "|" in s for s in labels):
                raise errors.UsageError("%s: %r cannot be filtered on (no spaces or '|')" % (k, v))
            terms.append("%s=%s" % (k, "|".join(labels)))
        if isinstance(state, (list, tuple, set)):
            state = ",".join(state)
        rows, offset = [], 0
        while True:
            page = self._request("GET", _sweep_path(name), query={
                "state": state, "q": " ".join(terms) or None, "sort": sort,
                "offset": offset, "limit": 5000})
            rows.extend(page["rows"])
            offset += len(page["rows"])
            if not page["rows"] or offset >= page["matched"]:
                return rows

    def results(self, name, state="succeeded", frame=None):
        """One flat row per trial: trial_id, state, seed, the parameters, the results.

        ``state``: only trials in this state (default succeeded; None: all).
        ``frame``: True a pandas.DataFrame, False a list of dicts, None a
        DataFrame when pandas is installed, else the list.
        """
        rows = []
        for r in self.trials(name, state=state):
            row = {"trial_id": r["trial_id"], "state": r["state"], "seed": r["seed"]}
            row.update(r.get("params", {}))
            row.update(r.get("results", {}))
            rows.append(row)
        if frame is False:
            return rows
        try:
            import pandas
        except ImportError:
            if frame:
                raise errors.UsageError("results(frame=True) needs pandas "
                                        "(apt-get install python3-pandas)") from None
            return rows
        return pandas.DataFrame(rows)

    def analyze(self, name, metric=None, x=None, series=None, facet=None,
                bootstrap=None):
        """The optimal-k table `smoe analyze` prints, as an Analysis (str() is the text).

        Defaults as the CLI's: metric ood_acc, x top_k, series M, facet
        attention (SRAVEN). An unknown metric raises UsageError listing the
        sweep's metrics.
        """
        s = self.sweep(name)
        if metric is not None:
            known = s.get("columns", {}).get("results", [])
            if known and metric not in known:
                raise errors.UsageError("metric: unknown '%s' for sweep %s (metrics: %s)" %
                                        (metric, name, ", ".join(known)))
        raw = self._request("GET", _sweep_path(name) + "/analysis", query={
            "metric": metric, "x": x, "series": series, "facet": facet,
            "bootstrap": bootstrap})
        self._add_pruned(raw, name, s)
        return Analysis(raw, s["sweep_id"], s.get("kind", ""))

    def tuned(self, name, tune, metric=None, select_by=None, select_per=None, x=None,
              series=None, facet=None, bootstrap=None):
        """The tuned analysis `smoe analyze --tune` prints, as a Tuned (str() is the text).

        ``tune``: the tuned parameter's name or a list of names (parameters
        the sweep varies, e.g. "lr" or ["lr", "weight_decay"]). For every
        (facet, series, x) and seed the configuration with the best
        ``select_by`` (default val_acc) is selected and ``metric`` reported
        there; ``select_per="point"`` selects one configuration per x on the
        mean over seeds instead. Other defaults as analyze(). UsageError for
        an unknown metric (listing the sweep's metrics), and with the
        coordinator's message (status 400, exit code 64 as the CLI's) for a
        tune parameter the sweep does not vary, a select_by no trial
        reported, or a tuned parameter that is also the x, series or facet.
        """
        if isinstance(tune, str):
            names = tune.split(",")
        elif isinstance(tune, (list, tuple)):
            names = list(tune)
        else:
            raise errors.UsageError("tune: %r is neither a parameter name nor a list of "
                                    "them" % (tune,))
        if not names or any(not isinstance(n, str) or not n or "," in n for n in names):
            raise errors.UsageError("tune: %r names no parameter (e.g. tune=\"lr\" or "
                                    "tune=[\"lr\", \"weight_decay\"])" % (tune,))
        if select_per is not None and select_per not in ("seed", "point"):
            raise errors.UsageError("select_per: %r is not a selection unit (seed or point)"
                                    % (select_per,))
        s = self.sweep(name)
        if metric is not None:
            known = s.get("columns", {}).get("results", [])
            if known and metric not in known:
                raise errors.UsageError("metric: unknown '%s' for sweep %s (metrics: %s)" %
                                        (metric, name, ", ".join(known)))
        try:
            raw = self._request("GET", _sweep_path(name) + "/analysis/tuned", query={
                "tune": ",".join(names), "metric": metric, "select_by": select_by,
                "select_per": select_per, "x": x, "series": series, "facet": facet,
                "bootstrap": bootstrap})
        except errors.BadRequest as e:
            # The CLI refuses the same (an unswept tune parameter, ...) as a
            # usage error (exit 64): the coordinator's message, status 400.
            raise errors.UsageError(e.message, e.status) from None
        self._add_pruned(raw, name, s)
        return Tuned(raw, s["sweep_id"], s.get("kind", ""))

    def _add_pruned(self, raw, name, s):
        """Adds "pruned" as `smoe analyze` does when the search pruned trials:
        {"trials": N, "x_values_all_pruned": [x labels where every trial was]}."""
        if not s.get("counts", {}).get("pruned"):
            return
        x = raw.get("x", "")
        total, by_x = 0, {}
        for r in self.trials(name):
            pruned = r.get("state") == "pruned"
            total += pruned
            params = r.get("params") or {}
            if not x or x not in params:
                continue
            n = by_x.setdefault(_label(params[x]), [0, 0])
            n[0] += 1
            n[1] += pruned
        if total:
            raw["pruned"] = {"trials": total, "x_values_all_pruned": sorted(
                v for v, (n, np_) in by_x.items() if n > 0 and n == np_)}

    def watch(self, name, interval=1.0, timeout=None, progress=True, file=None):
        """Waits until the sweep is no longer active, showing a progress bar.

        The bar is drawn on ``file`` (default stderr) in a terminal and as
        an updating line in Jupyter; progress=False draws nothing. Returns
        the sweep (as sweep(name)). TimeoutError after ``timeout`` seconds.
        """
        bar = Progress(name, file=file or sys.stderr) if progress else None
        end = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                s = self.sweep(name)
                if bar:
                    bar.update(s)
                if s["state"] != "active":
                    return s
                if end is not None and time.monotonic() >= end:
                    raise TimeoutError("sweep %s still active after %gs" % (name, timeout))
                time.sleep(interval)
        finally:
            if bar:
                bar.close()

    # ---- trials ---------------------------------------------------------------

    def metrics(self, trial, name=None, max_points=None):
        """A trial's metric series, attempts and parameters."""
        return self._request("GET", _trial_path(trial) + "/metrics",
                             query={"name": name, "max_points": max_points})

    def logs(self, trial, attempt=0):
        """An attempt's log text (the latest with attempt=0): the trainer's stderr and non-event stdout."""
        if not isinstance(attempt, int) or attempt < 0:
            raise errors.UsageError("attempt: must be an integer >= 0, not %r" % (attempt,))
        return self._request("GET", _trial_path(trial) + "/logs",
                             query={"attempt": attempt})["text"]

    def artifacts(self, trial):
        """A trial's stored checkpoints and result files: [{"name", "kind", "bytes", "sha256", "step", ...}]."""
        return self._request("GET", _trial_path(trial) + "/artifacts")["artifacts"]

    def download(self, trial, artifact, path=None):
        """Writes one artifact to ``path`` (default: its name in the working directory); returns the path."""
        _check(_ARTIFACT, artifact, "artifact name")
        path = os.fspath(path) if path is not None else artifact
        if os.path.isdir(path):
            path = os.path.join(path, artifact)
        tmp = path + ".part"
        try:
            with open(tmp, "wb") as f:
                self._request("GET", _trial_path(trial) + "/artifacts/" + artifact,
                              timeout=max(self.timeout, 300), sink=f)
        except BaseException:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise
        os.replace(tmp, path)
        return path
