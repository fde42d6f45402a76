"""smoe_lab.Client against a live coordinator (started here): submit, validate,
extend, cancel, retry, delete, annotate, reads, roles, bad input, a
coordinator that is down, how the URL and the token are found, and the
tuned analysis (Client.tuned) on sweeps smoe-dashboard-fixture fills,
against `smoe analyze --tune`.

Run: SMOE_BIN=build/bin/smoe /usr/bin/python3 -m unittest discover -s python/tests
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import smoe_lab  # noqa: E402
from smoe_lab import client as client_mod  # noqa: E402
from cluster import Cluster, SOURCE_DIR, free_port, smoe_bin  # noqa: E402

SWEEP = """name: py-sweep
kind: sraven
grid:
  M: [1, 2]
  top_k: [1, 2]
fixed: {steps: 10}
seeds: [0, 1]
"""


class ResolveTest(unittest.TestCase):
    """Where the URL and the token come from (no coordinator needed)."""

    def setUp(self):
        self.saved = {k: os.environ.pop(k, None) for k in
                      ("SMOE_TOKEN", "SMOE_DASHBOARD", "SMOE_COORDINATOR", "HOME")}
        self.cwd = os.getcwd()
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        os.chdir(self.cwd)
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def test_url_argument_then_dashboard_then_coordinator(self):
        self.assertEqual(smoe_lab.resolve_url(), "http://127.0.0.1:8080")
        os.environ["SMOE_COORDINATOR"] = "gpu-head:50051"
        self.assertEqual(smoe_lab.resolve_url(), "http://gpu-head:8080")
        os.environ["SMOE_COORDINATOR"] = "https://smoe.example/"
        self.assertEqual(smoe_lab.resolve_url(), "https://smoe.example")
        os.environ["SMOE_DASHBOARD"] = "10.0.0.2:9000"
        self.assertEqual(smoe_lab.resolve_url(), "http://10.0.0.2:9000")
        os.environ["SMOE_DASHBOARD"] = "https://10.0.0.2:9000/"
        self.assertEqual(smoe_lab.resolve_url(), "https://10.0.0.2:9000")
        self.assertEqual(smoe_lab.resolve_url("127.0.0.1:1234"), "http://127.0.0.1:1234")

    def test_token_argument_env_data_dir_then_home(self):
        home = os.path.join(self.tmp, "home")
        os.makedirs(os.path.join(home, ".smoe"))
        with open(os.path.join(home, ".smoe", "token"), "w") as f:
            f.write("smoe_home\n")
        os.environ["HOME"] = home
        work = os.path.join(self.tmp, "proj", "sub")
        os.makedirs(work)
        os.chdir(work)
        self.assertEqual(smoe_lab.resolve_token()[0], "smoe_home")
        os.makedirs(os.path.join(self.tmp, "proj", "smoe-data"))
        path = os.path.join(self.tmp, "proj", "smoe-data", "token")
        with open(path, "w") as f:
            f.write("smoe_data\n")
        tok, where = smoe_lab.resolve_token()
        self.assertEqual(tok, "smoe_data")
        self.assertIn("smoe-data/token", where)
        os.environ["SMOE_TOKEN"] = "smoe_env"
        self.assertEqual(smoe_lab.resolve_token(), ("smoe_env", "$SMOE_TOKEN"))
        self.assertEqual(smoe_lab.resolve_token("smoe_arg")[0], "smoe_arg")
        self.assertEqual(smoe_lab.resolve_token(token_file=path)[0], "smoe_data")
        tok, why = smoe_lab.resolve_token(token_file=os.path.join(self.tmp, "none"))
        self.assertIsNone(tok)
        self.assertIn("no API token in token_file", why)

    def test_no_token_says_where_it_looked(self):
        os.environ["HOME"] = self.tmp
        os.chdir(self.tmp)
        c = smoe_lab.Client("http://127.0.0.1:1")
        with self.assertRaises(smoe_lab.Unauthorized) as e:
            c.sweeps()
        self.assertIn("no API token", str(e.exception))
        self.assertIn(".smoe/token", str(e.exception))
        self.assertEqual(e.exception.exit_code, 77)


class InstallTest(unittest.TestCase):
    """pip install ./python gives an importable package (Debian's pip, offline)."""

    def test_pip_install_then_import_outside_the_tree(self):
        import subprocess
        if subprocess.run([sys.executable, "-m", "pip", "--version"],
                          capture_output=True).returncode != 0:
            self.skipTest("no pip for " + sys.executable)
        target = tempfile.mkdtemp()
        r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet",
                            "--no-build-isolation", "--no-index", "--target", target,
                            os.path.join(SOURCE_DIR, "python")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run([sys.executable, "-c",
                            "import smoe_lab, smoe_lab.trial; print(smoe_lab.__file__)"],
                           cwd=target, env=dict(os.environ, PYTHONPATH=target),
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith(target), r.stdout)


class TrialHelpersTest(unittest.TestCase):
    """smoe_lab.trial's events, byte for byte, in a child process (no worker)."""

    def run_program(self, body, params=None):
        import subprocess
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "params.json"), "w") as f:
            json.dump(params or {"steps": 3}, f)
        with open(os.path.join(d, "trial.json"), "w") as f:
            json.dump({"trial_id": "t/0123456789abcdef", "seed": 7}, f)
        prog = ("import sys; sys.path.insert(0, %r)\nfrom smoe_lab import trial\n" %
                os.path.join(SOURCE_DIR, "python")) + body
        return subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                              env=dict(os.environ, SMOE_PARAMS=os.path.join(d, "params.json"),
                                       SMOE_TRIAL=os.path.join(d, "trial.json"),
                                       SMOE_WORKDIR=d), timeout=60)

    def test_events_as_the_protocol_writes_them(self):
        r = self.run_program(
            "p = trial.params()\n"
            "trial.report(1, {'train/loss': 0.5}, total=p['steps'], acc=float('nan'))\n"
            "trial.checkpoint(1, file='ck.json')\n"
            "trial.checkpoint(2)\n"
            "print(trial.seed(), trial.checkpoint_dir() != '', file=sys.stderr)\n"
            "trial.final(loss=0.25, w=float('inf'))\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([json.loads(line) for line in r.stdout.splitlines()], [
            {"event": "progress", "step": 1, "total": 3},
            {"event": "metric", "step": 1, "name": "train/loss", "value": 0.5},
            {"event": "metric", "step": 1, "name": "acc", "value": None},
            {"event": "checkpoint", "step": 1, "file": "ck.json"},
            {"event": "checkpoint", "step": 2},
            {"event": "result", "metrics": {"loss": 0.25, "w": None}},
        ])
        self.assertEqual(r.stderr.strip(), "7 True")

    def test_bad_calls_name_the_argument(self):
        r = self.run_program("trial.report(1, loss='low')\n")
        self.assertIn("metric loss: 'low' is not a number", r.stderr)
        r = self.run_program("trial.checkpoint(1, file='../x')\n")
        self.assertIn("file: '../x' must be a name in checkpoint_dir()", r.stderr)
        r = self.run_program("trial.report(-1, loss=1.0)\n")
        self.assertIn("step: must be an integer >= 0, not -1", r.stderr)
        r = self.run_program("trial.report(3)\n")
        self.assertIn("give total= or some metrics", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_sigterm_sets_should_stop_and_exit_codes(self):
        r = self.run_program(
            "import os, signal\n"
            "assert not trial.should_stop()\n"
            "os.kill(os.getpid(), signal.SIGTERM)\n"
            "assert trial.should_stop()\n"
            "os.kill(os.getpid(), signal.SIGTERM)\n"
            "trial.exit_preempted()\n")
        self.assertEqual(r.returncode, 75, r.stderr)
        r = self.run_program("trial.bad_params('lr=2: too high')\n")
        self.assertEqual(r.returncode, 64)
        self.assertIn("lr=2: too high", r.stderr)


class DownTest(unittest.TestCase):
    def test_coordinator_down_is_unavailable(self):
        c = smoe_lab.Client("http://127.0.0.1:%d" % free_port(), token="smoe_x")
        with self.assertRaises(smoe_lab.CoordinatorUnavailable) as e:
            c.sweeps()
        self.assertEqual(e.exception.exit_code, 69)
        self.assertIn("is the coordinator running", str(e.exception))
        self.assertNotIn("smoe_x", str(e.exception))


class LiveTest(unittest.TestCase):
    """One coordinator for every test of the class (no workers: trials stay pending)."""

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster("client").__enter__()
        cls.admin = smoe_lab.Client(cls.cluster.url, token=cls.cluster.admin)
        cls.viewer = smoe_lab.Client(cls.cluster.url, token=cls.cluster.viewer)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.__exit__(None, None, None)

    def test_openapi_describes_the_write_routes(self):
        doc = self.admin.openapi()
        post = doc["paths"]["/api/sweeps"]["post"]
        self.assertEqual(post["x-smoe-role"], "admin")
        self.assertIn("spec_yaml", post["requestBody"]["content"]["application/json"]
                      ["schema"]["properties"])
        self.assertIn("post", doc["paths"]["/api/sweeps/{sweep}/extend"])

    def test_dry_run_counts_and_stores_nothing(self):
        r = self.admin.submit(SWEEP.replace("py-sweep", "py-dry"), dry_run=True)
        self.assertEqual(r["new_trials"], 8)
        self.assertTrue(r["dry_run"])
        with self.assertRaises(smoe_lab.NotFound) as e:
            self.admin.sweep("py-dry")
        self.assertEqual(e.exception.exit_code, 66)
        self.assertEqual(self.admin.validate(SWEEP.replace("py-sweep", "py-dry"))
                         ["total_trials"], 8)

    def test_an_invalid_file_gives_every_problem(self):
        bad = "name: py-bad\nkind: sraven\ngrid:\n  M: [0, 2]\n  top_k: [1]\ncolour: red\n"
        with self.assertRaises(smoe_lab.SweepInvalid) as e:
            self.admin.submit(bad, dry_run=True)
        self.assertEqual(len(e.exception.problems), 2, e.exception.problems)
        self.assertIn("grid.M: expected a value in [1, 8], got 0", e.exception.problems)
        self.assertTrue(any("unknown key 'colour'" in p for p in e.exception.problems))
        self.assertEqual(e.exception.exit_code, 65)
        self.assertEqual(e.exception.status, 400)
        with self.assertRaises(smoe_lab.UsageError) as e:
            self.admin.submit("no/such/file.yaml")
        self.assertIn("no/such/file.yaml", str(e.exception))
        with self.assertRaises(smoe_lab.UsageError):
            self.admin.submit(SWEEP, dry_run="yes")

    def test_submit_a_path_or_a_dict_extend_and_resubmit(self):
        path = os.path.join(self.cluster.dir, "s.yaml")
        with open(path, "w") as f:
            f.write(SWEEP.replace("py-sweep", "py-path"))
        self.assertEqual(self.admin.submit(path)["new_trials"], 8)
        again = self.admin.submit(path)
        self.assertEqual((again["new_trials"], again["existing_trials"]), (0, 8))
        self.assertEqual(self.admin.extend("py-path", "M", [3, 4])["new_trials"], 8)
        self.assertEqual(self.admin.extend("py-path", "M", [3.0])["new_trials"], 0)
        self.assertEqual(self.admin.extend("py-path", "seeds", [9])["new_trials"], 8)
        self.assertEqual(len(self.admin.trials("py-path")), 24)
        self.assertEqual(len(self.admin.trials("py-path", M=[1, 2], top_k=2)), 6)
        with self.assertRaises(smoe_lab.SmoeError) as e:
            self.admin.extend("py-path", "M", [99])
        self.assertIn("99", str(e.exception))
        self.assertEqual(e.exception.status, 400)
        with self.assertRaises(smoe_lab.NotFound):
            self.admin.extend("py-nope", "M", [1])
        with self.assertRaises(smoe_lab.UsageError):
            self.admin.extend("py-path", "M", [])
        d = {"name": "py-dict", "kind": "sraven", "grid": {"M": [1]},
             "fixed": {"steps": 10}, "seeds": [0, 1]}
        self.assertEqual(self.admin.submit(d)["new_trials"], 2)
        # A one-line JSON text is a sweep file too (JSON is YAML).
        self.assertEqual(self.admin.submit(json.dumps(d), dry_run=True)["existing_trials"], 2)

    def test_sampled_axes_extend_by_samples(self):
        sampled = ("name: py-sampled\nkind: sraven\ngrid: {M: [1, 2]}\n"
                   "sample: {lr: {loguniform: [0.0001, 0.01]}}\nsamples: 3\n"
                   "sample_seed: 5\nfixed: {steps: 10}\nseeds: [0, 1]\n")
        self.assertEqual(self.admin.submit(sampled)["new_trials"], 12)
        self.assertEqual(self.admin.submit(sampled)["new_trials"], 0)
        self.assertEqual(self.admin.extend("py-sampled", samples=2)["new_trials"], 8)
        trials = self.admin.trials("py-sampled")
        self.assertEqual(len(trials), 20)
        lrs = {t["params"]["lr"] for t in trials}
        self.assertEqual(len(lrs), 5)
        self.assertTrue(all(0.0001 <= lr <= 0.01 for lr in lrs), lrs)
        sweep = self.admin.sweep("py-sampled")
        self.assertEqual(sweep["samples"], 5)
        lr_axis = [a for a in sweep["axes"] if a["name"] == "lr"][0]
        self.assertTrue(lr_axis["log"])
        self.assertEqual(sorted(lr_axis["values"]), sorted(lrs))
        for bad in (0, -1, 1.5, True):
            with self.assertRaises(smoe_lab.UsageError):
                self.admin.extend("py-sampled", samples=bad)
        with self.assertRaises(smoe_lab.UsageError):
            self.admin.extend("py-sampled", "M", [3], samples=2)
        with self.assertRaises(smoe_lab.NotFound):
            self.admin.extend("py-nope", samples=2)
        # samples_total: up to T draws in all; a retry adds nothing.
        self.assertEqual(self.admin.extend("py-sampled", samples_total=6)["new_trials"], 4)
        self.assertEqual(self.admin.extend("py-sampled", samples_total=6)["new_trials"], 0)
        self.assertEqual(self.admin.extend("py-sampled", samples_total=4)["new_trials"], 0)
        self.assertEqual(self.admin.sweep("py-sampled")["samples"], 6)
        for bad in (0, 1.5, True):
            with self.assertRaises(smoe_lab.UsageError):
                self.admin.extend("py-sampled", samples_total=bad)
        with self.assertRaises(smoe_lab.UsageError):
            self.admin.extend("py-sampled", samples=1, samples_total=7)

    def test_manage_cancel_annotate_retry_delete(self):
        self.admin.submit(SWEEP.replace("py-sweep", "py-manage"))
        with self.assertRaises(smoe_lab.Conflict) as e:
            self.admin.delete("py-manage")
        self.assertIn("live trials", str(e.exception))
        self.assertEqual(e.exception.exit_code, 65)
        a = self.admin.annotate("py-manage", notes="k=2 wins", tags=["py"])
        self.assertEqual(a["tags"], ["py"])
        self.assertEqual(self.admin.cancel("py-manage")["cancelled"], 8)
        s = self.admin.sweep("py-manage")
        self.assertEqual(s["counts"]["cancelled"], 8)
        self.assertEqual(s["notes"], "k=2 wins")
        self.assertEqual(self.admin.retry("py-manage")["requeued"], 0)
        self.assertEqual(self.admin.retry("py-manage", include_cancelled=True)["requeued"], 8)
        trial = self.admin.trials("py-manage")[0]["trial_id"]
        self.assertEqual(self.admin.cancel_trial(trial)["state"], "cancelled")
        self.assertEqual(self.admin.retry_trial(trial)["state"], "pending")
        self.admin.archive("py-manage")
        self.assertNotIn("py-manage", [x["sweep_id"] for x in self.admin.sweeps()])
        self.assertIn("py-manage", [x["sweep_id"] for x in
                                    self.admin.sweeps(include_archived=True)])
        self.admin.cancel("py-manage")
        self.assertEqual(self.admin.delete("py-manage")["deleted_trials"], 8)
        with self.assertRaises(smoe_lab.NotFound):
            self.admin.sweep("py-manage")

    def test_roles(self):
        self.admin.submit(SWEEP.replace("py-sweep", "py-roles"))
        self.assertIn("py-roles", [s["sweep_id"] for s in self.viewer.sweeps()])
        self.assertEqual(self.viewer.session()["role"], "viewer")
        for call in (lambda: self.viewer.submit(SWEEP, dry_run=True),
                     lambda: self.viewer.cancel("py-roles"),
                     lambda: self.viewer.extend("py-roles", "M", [3]),
                     lambda: self.viewer.delete("py-roles")):
            with self.assertRaises(smoe_lab.Unauthorized) as e:
                call()
            self.assertEqual(e.exception.role_needed, "admin")
            self.assertEqual(e.exception.status, 403)
            self.assertEqual(e.exception.exit_code, 77)
            self.assertIn("the token came from the token argument", str(e.exception))
            self.assertNotIn(self.cluster.viewer, str(e.exception))
        w = smoe_lab.Client(self.cluster.url, token=self.cluster.worker)
        with self.assertRaises(smoe_lab.Unauthorized) as e:
            w.sweeps()
        self.assertEqual(e.exception.role_needed, "viewer")
        bad = smoe_lab.Client(self.cluster.url, token="smoe_" + "0" * 32)
        with self.assertRaises(smoe_lab.Unauthorized) as e:
            bad.sweeps()
        self.assertEqual(e.exception.status, 401)
        self.assertNotIn("0" * 32, str(e.exception))
        self.assertNotIn(self.cluster.viewer, repr(self.viewer))

    def test_bad_names_are_refused_before_sending(self):
        with self.assertRaises(smoe_lab.UsageError) as e:
            self.admin.sweep("Bad Name")
        self.assertIn("'Bad Name'", str(e.exception))
        with self.assertRaises(smoe_lab.UsageError):
            self.admin.logs("py-sweep/xyz")
        with self.assertRaises(smoe_lab.UsageError):
            self.admin.logs("py-sweep/0123456789abcdef", attempt=-1)
        with self.assertRaises(smoe_lab.NotFound):
            self.admin.logs("py-sweep/0123456789abcdef")

    def test_results_and_analysis_of_a_sweep_without_results(self):
        self.admin.submit(SWEEP.replace("py-sweep", "py-empty"))
        self.assertEqual(self.admin.results("py-empty", frame=False), [])
        rows = self.admin.results("py-empty", state=None, frame=False)
        self.assertEqual(len(rows), 8)
        self.assertEqual(set(rows[0]) >= {"trial_id", "state", "seed", "M", "top_k"}, True)
        a = self.admin.analyze("py-empty")
        self.assertEqual(a.table, [])
        self.assertIn("(no succeeded trials with this metric)", str(a))


def fixture_bin():
    """smoe-dashboard-fixture (next to smoe in build/bin): fills a sweep with known results."""
    return os.path.join(os.path.dirname(smoe_bin()), "smoe-dashboard-fixture")


class TunedTest(unittest.TestCase):
    """Client.tuned against a coordinator whose sweeps over lr the fixture
    program seeds (tests/browser/fixture.cc: the best lr is 0.01 at top_k 1
    and 0.001 above; val_acc = ood_acc + 0.02), compared with `smoe analyze
    --tune` on the same sweeps."""

    @classmethod
    def setUpClass(cls):
        if not os.access(fixture_bin(), os.X_OK):
            raise RuntimeError("no %s (build the smoe-dashboard-fixture target)"
                               % fixture_bin())
        cls.cluster = Cluster("tuned").__enter__()
        cls.c = smoe_lab.Client(cls.cluster.url, token=cls.cluster.viewer)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.__exit__(None, None, None)

    def seed(self, text, name, *extra):
        path = os.path.join(self.cluster.dir, name + ".yaml")
        with open(path, "w") as f:
            f.write(text)
        r = subprocess.run([fixture_bin(), "seed", "--coordinator",
                            "127.0.0.1:%d" % self.cluster.grpc_port, "--token-file",
                            os.path.join(self.cluster.data, "token"), "--sweep", path,
                            "--points", "10"] + list(extra),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)

    def cli(self, *args):
        r = subprocess.run([smoe_bin(), "analyze"] + list(args) + [
            "--coordinator", "127.0.0.1:%d" % self.cluster.grpc_port,
            "--token-file", os.path.join(self.cluster.data, "token")],
            capture_output=True, text=True, timeout=60)
        return r

    def test_1_chosen_lr_per_top_k_and_the_cli_text(self):
        with open(os.path.join(SOURCE_DIR, "tests", "browser", "sraven-tuned.yaml")) as f:
            text = f.read().replace("name: fixture-tuned", "name: py-tuned")
        self.seed(text, "py-tuned")
        t = self.c.tuned("py-tuned", "lr")
        self.assertEqual((t.metric, t.x, t.series, t.facet, t.tune, t.select_by,
                          t.select_per), ("ood_acc", "top_k", "M", "attention", ["lr"],
                                          "val_acc", "seed"))
        self.assertEqual(t.configs, ["lr=0.001", "lr=0.01"])
        self.assertEqual([(r["facet"], r["series"]) for r in t.table],
                         [("hyla", "1"), ("hyla", "2")])
        for r in t.table:
            # Every seed picks lr 0.01 at top_k 1 and 0.001 at top_k 2.
            self.assertEqual(r["chosen"], {1: {"lr=0.01": 2}, 2: {"lr=0.001": 2}})
            self.assertEqual(r["best"], 2)
            self.assertEqual(r["chosen_at_best"], {"lr=0.001": 2})
            self.assertEqual(r["seeds"], 2)
            self.assertLessEqual(r["ci_lo"], r["best"])
            self.assertGreaterEqual(r["ci_hi"], r["best"])
            self.assertEqual(sorted(r["untuned"]), ["lr=0.001", "lr=0.01"])
            # Untuned: lr 0.01 alone is best at top_k 1, lr 0.001 alone at 2.
            self.assertEqual(r["untuned"]["lr=0.01"]["best"], 1)
            self.assertEqual(r["untuned"]["lr=0.001"]["best"], 2)
        self.assertEqual(len(t.curves), 4)
        for c in t.curves:
            self.assertEqual(c["seeds"], 2)
            self.assertEqual(c["configs"], 2)
            fixed = max(c["lr=0.001"], c["lr=0.01"])
            self.assertAlmostEqual(c["mean"], fixed)  # the tuned curve is the best lr's
            self.assertEqual(c["chosen"], {"lr=0.01": 2} if c["x"] == 1 else {"lr=0.001": 2})
        # The same text as `smoe analyze --tune lr`, byte for byte, and the same JSON.
        cli = self.cli("py-tuned", "--tune", "lr")
        self.assertEqual(cli.returncode, 0, cli.stderr)
        self.assertEqual(str(t), cli.stdout)
        self.assertIn("lr=0.01 x2", str(t))
        cli = self.cli("py-tuned", "--tune", "lr", "--format", "json")
        self.assertEqual(cli.returncode, 0, cli.stderr)
        raw = dict(t.raw)
        raw.pop("version")
        self.assertEqual(raw, json.loads(cli.stdout))
        # Other options: one configuration per point, a list of names, the
        # reported metric itself (a note), bootstrap.
        p = self.c.tuned("py-tuned", ["lr"], select_per="point", metric="test_acc",
                         select_by="test_acc", bootstrap=50)
        self.assertEqual(p.table[0]["chosen"][1], {"lr=0.01": 2})
        self.assertEqual(p.raw["bootstrap_samples"], 50)
        self.assertEqual(len(p.notes), 1)
        cli = self.cli("py-tuned", "--tune", "lr", "--select-per", "point", "--metric",
                       "test_acc", "--select-by", "test_acc", "--bootstrap", "50")
        self.assertEqual(cli.returncode, 0, cli.stderr)
        self.assertEqual(str(p), cli.stdout)
        self.assertIn("note: selected and reported on the same metric", str(p))
        try:
            import pandas  # noqa: F401
        except ImportError:
            return
        self.assertEqual(list(t.frame()["best"]), [2, 2])
        df = t.curves_frame()
        self.assertEqual(len(df), 4)
        self.assertEqual(list(df.columns[:3]), ["facet", "series", "x"])
        self.assertIn("lr=0.01", df.columns)

    def test_2_bad_arguments_raise_naming_them(self):
        with self.assertRaises(smoe_lab.UsageError) as e:
            self.c.tuned("py-tuned", "weight_decay")
        # The coordinator's 400, naming the parameter and the swept ones.
        self.assertIn("'weight_decay' is not a swept parameter of sweep py-tuned",
                      str(e.exception))
        self.assertIn("M, lr, top_k", str(e.exception))
        self.assertEqual((e.exception.status, e.exception.exit_code), (400, 64))
        cli = self.cli("py-tuned", "--tune", "weight_decay")
        self.assertEqual(cli.returncode, 64)
        with self.assertRaises(smoe_lab.UsageError) as e:
            self.c.tuned("py-tuned", "lr", select_by="nope")
        self.assertIn("select_by: 'nope'", str(e.exception))
        with self.assertRaises(smoe_lab.UsageError) as e:
            self.c.tuned("py-tuned", "top_k")
        self.assertIn("'top_k' is the x axis", str(e.exception))
        with self.assertRaises(smoe_lab.UsageError) as e:
            self.c.tuned("py-tuned", "lr", metric="nope")
        self.assertIn("ood_acc", str(e.exception))
        for bad in ("", [], ["lr", ""], "lr,", ["lr,M"], 3):
            with self.assertRaises(smoe_lab.UsageError):
                self.c.tuned("py-tuned", bad)
        with self.assertRaises(smoe_lab.UsageError) as e:
            self.c.tuned("py-tuned", "lr", select_per="sweep")
        self.assertIn("select_per: 'sweep'", str(e.exception))
        with self.assertRaises(smoe_lab.NotFound):
            self.c.tuned("py-nope", "lr")

    def test_3_pruned_trials_add_the_cli_note(self):
        # An ASHA sweep over lr as well, run stepwise: the search prunes some
        # trials, and both tables say so as `smoe analyze` does.
        self.seed("name: py-asha\nkind: sraven\ngrid:\n  top_k: [1, 2, 4, 8]\n"
                  "  lr: [0.001, 0.01]\nfixed: {M: 2, steps: 500}\nseeds: [0, 1]\n"
                  "search: {strategy: asha, metric: ood_acc, min_steps: 100, "
                  "reduction: 2}\n", "py-asha", "--stepwise", "1", "--points", "50")
        self.assertGreater(self.c.sweep("py-asha")["counts"]["pruned"], 0)
        t = self.c.tuned("py-asha", "lr")
        self.assertIn("trial(s) were pruned by the search", str(t))
        cli = self.cli("py-asha", "--tune", "lr")
        self.assertEqual(cli.returncode, 0, cli.stderr)
        self.assertEqual(str(t), cli.stdout)
        a = self.c.analyze("py-asha")
        cli = self.cli("py-asha")
        self.assertEqual(cli.returncode, 0, cli.stderr)
        self.assertEqual(str(a), cli.stdout)
        self.assertIn("trial(s) were pruned by the search", str(a))
        # An x every trial of which was pruned is named (cli/analyze_cmd.cc
        # FormatPrunedNote).
        self.assertTrue(smoe_lab.client.format_pruned_note(
            {"trials": 3, "x_values_all_pruned": ["1", "8"]}, "top_k").endswith(
                "finish; every trial was pruned at top_k = 1, 8\n"))


if __name__ == "__main__":
    unittest.main()
