"""A real coordinator (and workers) on 127.0.0.1 for the Python tests.

The `smoe` binary comes from $SMOE_BIN (ctest sets it to build/bin/smoe);
the source tree from $SMOE_SOURCE_DIR (default: two levels above this file).
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("SMOE_SOURCE_DIR") or os.path.normpath(
    os.path.join(HERE, "..", ".."))
PYTHON_DIR = os.path.join(SOURCE_DIR, "python")


def smoe_bin():
    b = os.environ.get("SMOE_BIN") or os.path.join(SOURCE_DIR, "build", "bin", "smoe")
    if not os.access(b, os.X_OK):
        raise RuntimeError("no smoe binary at %s (set SMOE_BIN)" % b)
    return b


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A coordinator with its dashboard, and workers started on demand.

    ``url`` is the dashboard, ``admin`` / ``viewer`` / ``worker`` tokens of
    those roles. stop() ends every process it started (also on exit of a
    `with` block)."""

    def __init__(self, name="py"):
        self.dir = tempfile.mkdtemp(prefix="smoe-%s-" % name)
        self.data = os.path.join(self.dir, "coord")
        self.procs = {}
        self.coordinator = None
        self.grpc_port = 0
        self.http_port = 0

    def __enter__(self):
        self.start_coordinator()
        return self

    def __exit__(self, *exc):
        self.stop()
        if exc[0] is None:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _start(self, key, argv, env=None):
        with open(os.path.join(self.dir, key + ".log"), "ab") as log:
            p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                 env=dict(os.environ, **(env or {})),
                                 start_new_session=True)
        self.procs[key] = p
        return p

    def start_coordinator(self):
        port_file = os.path.join(self.dir, "port")
        for _ in range(5):
            self.http_port = free_port()
            if os.path.exists(port_file):
                os.remove(port_file)
            self.coordinator = self._start("coordinator", [
                smoe_bin(), "coordinator", "--data-dir", self.data,
                "--listen", "127.0.0.1:0", "--http-listen",
                "127.0.0.1:%d" % self.http_port, "--port-file", port_file,
                "--lease-timeout", "3", "--heartbeat-interval", "0.5",
                "--restart-grace", "20"])
            end = time.monotonic() + 30
            while time.monotonic() < end and self.coordinator.poll() is None:
                if os.path.exists(port_file) and self._healthy():
                    with open(port_file) as f:
                        self.grpc_port = int(f.read().strip())
                    self.admin = self.read(os.path.join(self.data, "token"))
                    self.viewer = self.token("viewer", "vic")
                    self.worker = self.token("worker", "wendy")
                    return
                time.sleep(0.05)
            self.coordinator.kill()
            self.coordinator.wait()
        raise RuntimeError("the coordinator did not start: see %s/coordinator.log" % self.dir)

    def _healthy(self):
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.http_port

    @staticmethod
    def read(path):
        with open(path) as f:
            return f.read().strip()

    def token(self, role, name):
        out = subprocess.run([smoe_bin(), "token", "create", "--role", role,
                              "--name", name, "--data-dir", self.data],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()

    def start_worker(self, i, slots=2, allow_command=None, kinds="command"):
        """A worker for ``kinds``; kind: command sweeps' programs must lie in allow_command.

        Other kinds run build/bin/smoe-trainer (next to smoe)."""
        wdir = os.path.join(self.dir, "worker-%d" % i)
        os.makedirs(wdir, exist_ok=True)
        argv = [smoe_bin(), "worker", "--coordinator", "127.0.0.1:%d" % self.grpc_port,
                "--token-file", os.path.join(self.data, "token"), "--work-dir", wdir,
                "--slots", str(slots), "--worker-id", "py-%d" % i, "--grace", "10",
                "--kinds", kinds, "--allow-command",
                allow_command or os.path.join(SOURCE_DIR, "examples", "command")]
        return self._start("worker-%d" % i, argv,
                           {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})

    def stop_process(self, key, sig=signal.SIGTERM, timeout=30):
        p = self.procs.get(key)
        if p is None or p.poll() is not None:
            return p.returncode if p else None
        p.send_signal(sig)
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            return p.wait()

    def stop(self):
        for key in sorted(self.procs, key=lambda k: k == "coordinator"):
            self.stop_process(key, timeout=15)

    def log(self, key):
        try:
            with open(os.path.join(self.dir, key + ".log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""
