"""smoe_lab.trial inside real kind: command sweeps on real workers, driven
through smoe_lab.Client: examples/command/train_toy.py reports metrics,
checkpoints, refuses bad parameters (a sweep with failures), and after
SIGTERM (its worker drained) checkpoints, exits 75 and resumes on another
worker. Also the pandas path when pandas is installed.

Run: SMOE_BIN=build/bin/smoe /usr/bin/python3 -m unittest discover -s python/tests
"""

import io
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import smoe_lab  # noqa: E402
from cluster import Cluster, SOURCE_DIR, smoe_bin  # noqa: E402


def toy_sweep(name, grid, fixed, seeds=(0,)):
    """examples/command-sweep.yaml under this checkout, renamed, with `grid` and `fixed`."""
    with open(os.path.join(SOURCE_DIR, "examples", "command-sweep.yaml")) as f:
        text = f.read().replace("/srv/smoe", SOURCE_DIR)
    text = text.replace("name: toy-sgd", "name: " + name)
    head = text[:text.index("grid:")]
    return head + "grid: %s\nfixed: %s\nseeds: %s\nresources: {progress_timeout_s: 60}\nretries: 1\n" % (
        json.dumps(grid), json.dumps(fixed), json.dumps(list(seeds)))


def wait_for(pred, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting for " + what)


class TrialOnWorkersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster("trial").__enter__()
        cls.c = smoe_lab.Client(cls.cluster.url, token=cls.cluster.admin)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.__exit__(None, None, None)

    def test_1_a_sweep_with_failures_results_analysis_logs(self):
        self.cluster.start_worker(0, slots=2)
        spec = toy_sweep("py-toy", {"lr": [0.01, 0.03, 0.3],
                                    "optimizer": ["sgd", "momentum"]}, {"steps": 200},
                         seeds=(0, 1, 2))
        self.assertEqual(self.c.submit(spec)["new_trials"], 18)
        bar = io.StringIO()
        s = self.c.watch("py-toy", interval=0.3, timeout=120, file=bar)
        self.assertEqual(s["state"], "completed")
        self.assertEqual(s["counts"]["succeeded"], 15, s)
        self.assertEqual(s["counts"]["failed"], 3, s)
        self.assertIn("py-toy [", bar.getvalue())
        self.assertIn("18/18 done (15 ok, 3 failed)", bar.getvalue())
        # The failed trial: momentum at lr 0.3, refused with exit 64, its log says why.
        failed = self.c.trials("py-toy", state="failed")
        self.assertEqual(len(failed), 3)
        self.assertEqual(failed[0]["params"], {"lr": 0.3, "optimizer": "momentum"})
        self.assertEqual(failed[0]["exit_code"], 64)
        self.assertIn("momentum diverges above 0.1", self.c.logs(failed[0]["trial_id"]))
        # Results: succeeded trials only by default, every trial with state=None.
        rows = self.c.results("py-toy", frame=False)
        self.assertEqual(len(rows), 15)
        for r in rows:
            self.assertEqual(r["state"], "succeeded")
            self.assertLess(r["loss"], 2.0)
            self.assertIn("w", r)
        self.assertEqual(len(self.c.results("py-toy", state=None, frame=False)), 18)
        # report(): train/loss every log_every (20) steps, to the last step.
        m = self.c.metrics(rows[0]["trial_id"])
        self.assertEqual(m["metrics"]["train/loss"]["steps"], list(range(20, 201, 20)))
        # The optimal-x table of `smoe analyze`, here of the loss over lr.
        a = self.c.analyze("py-toy", metric="loss", x="lr", series="optimizer")
        self.assertEqual(sorted(r["series"] for r in a.table), ["momentum", "sgd"])
        self.assertIn("metric loss: 15 of 18 trials have it", str(a))
        cli = subprocess.run(
            [smoe_bin(), "analyze", "py-toy", "--metric", "loss", "--x", "lr",
             "--series", "optimizer", "--coordinator", "127.0.0.1:%d" % self.cluster.grpc_port,
             "--token-file", os.path.join(self.cluster.data, "token")],
            capture_output=True, text=True)
        self.assertEqual(cli.returncode, 0, cli.stderr)
        # The same text as `smoe analyze` (bootstrap P and CI included).
        self.assertEqual(str(a), cli.stdout)
        with self.assertRaises(smoe_lab.UsageError) as e:
            self.c.analyze("py-toy", metric="nope")
        self.assertIn("loss", str(e.exception))
        # A result artifact downloads byte for byte.
        arts = self.c.artifacts(rows[0]["trial_id"])
        self.assertTrue(arts)
        path = self.c.download(rows[0]["trial_id"], arts[0]["name"], self.cluster.dir)
        self.assertEqual(os.path.getsize(path), arts[0]["bytes"])
        with self.assertRaises(smoe_lab.NotFound):
            self.c.download(rows[0]["trial_id"], "nope.bin", self.cluster.dir)
        self.assertFalse(os.path.exists(os.path.join(self.cluster.dir, "nope.bin.part")))
        self.assertFalse(os.path.exists(os.path.join(self.cluster.dir, "nope.bin")))
        # Retry re-runs the failed trial, which fails again the same way.
        self.assertEqual(self.c.retry("py-toy")["requeued"], 3)
        s = self.c.watch("py-toy", interval=0.3, timeout=120, progress=False)
        self.assertEqual(s["counts"]["failed"], 3)
        try:
            import pandas  # noqa: F401
        except ImportError:
            return
        df = self.c.results("py-toy")
        self.assertEqual(len(df), 15)
        self.assertTrue({"lr", "optimizer", "loss", "trial_id"} <= set(df.columns))
        self.assertEqual(len(a.frame()), 2)

    def test_2_sigterm_checkpoints_and_resumes_on_another_worker(self):
        spec = toy_sweep("py-resume", {"lr": [0.01, 0.03]},
                         {"steps": 400, "step_ms": 20, "checkpoint_every": 50})
        self.assertEqual(self.c.submit(spec)["new_trials"], 2)
        if "worker-0" not in self.cluster.procs:
            self.cluster.start_worker(0, slots=2)
        ids = [t["trial_id"] for t in self.c.trials("py-resume")]

        def checkpointed():
            for t in ids:
                series = self.c.metrics(t)["metrics"].get("train/loss", {})
                if not series.get("steps") or series["steps"][-1] < 120:
                    return False
            return True
        wait_for(checkpointed, 60, "both trials past step 100")
        # Drain worker 0: its trainers get SIGTERM, checkpoint and exit 75.
        self.assertEqual(self.cluster.stop_process("worker-0", timeout=30), 0,
                         self.cluster.log("worker-0")[-3000:])
        wait_for(lambda: self.c.sweep("py-resume")["counts"]["pending"] == 2, 30,
                 "both trials pending again")
        self.cluster.start_worker(1, slots=2)
        s = self.c.watch("py-resume", interval=0.3, timeout=120, progress=False)
        self.assertEqual(s["counts"]["succeeded"], 2, s)
        for t in ids:
            m = self.c.metrics(t)
            self.assertGreaterEqual(len(m["attempts"]), 2, m["attempts"])
            self.assertEqual(m["attempts"][0]["exit_code"], 75, m["attempts"])
            log = self.c.logs(t)
            self.assertIn("resuming from step", log)
            self.assertGreaterEqual(int(log.split("resuming from step ")[1].split()[0]), 50)
            self.assertEqual(m["metrics"]["train/loss"]["steps"][-1], 400)
        # The resumed runs end where uninterrupted ones do (the toy is deterministic).
        spec2 = toy_sweep("py-straight", {"lr": [0.01, 0.03]}, {"steps": 400})
        self.c.submit(spec2)
        self.c.watch("py-straight", interval=0.3, timeout=120, progress=False)
        resumed = {r["lr"]: r["loss"] for r in self.c.results("py-resume", frame=False)}
        straight = {r["lr"]: r["loss"] for r in self.c.results("py-straight", frame=False)}
        for lr in resumed:
            self.assertAlmostEqual(resumed[lr], straight[lr], places=9)


if __name__ == "__main__":
    unittest.main()
