#!/usr/bin/env python3
"""deploy_kube_convert (labels deploy, deploy-run): deploy/podman/kube-convert.py
on a hand-made manifest and on the rendered single-node-cpu overlay: what it
keeps, what it converts (Secrets as files with their modes, a StatefulSet as
its pods with their PVCs, $(VAR) expansion, grpc probes, the Service name as a
host alias, published ports) and the errors it names.
Usage: kube_convert_test.py [RENDERED_SINGLE_NODE_CPU.yaml]"""
import base64
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "deploy", "podman", "kube-convert.py")
RENDERED = None

BASE = """
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-w, namespace: smoe}
data: {SMOE_GPUS: "0", SMOE_COORDINATOR: "smoe-coordinator:50051", GREETING: "hi"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-c, namespace: smoe}
data: {SMOE_LEASE_TIMEOUT: "30"}
---
apiVersion: v1
kind: Secret
metadata: {name: tok, namespace: smoe}
data: {token: %(tok)s, other: %(tok)s}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: smoe}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Service
metadata: {name: smoe-coordinator, namespace: smoe}
spec: {ports: [{port: 50051}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pdb, namespace: smoe}
spec: {maxUnavailable: 1}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: smoe-coordinator, namespace: smoe}
spec:
  replicas: 1
  strategy: {type: Recreate}
  selector: {matchLabels: {app: c}}
  template:
    metadata: {labels: {app: c}}
    spec:
      securityContext: {runAsUser: 10001, fsGroup: 10001}
      initContainers:
        - {name: init, image: registry.example.com/x/smoe-coordinator:1, command: ["true"]}
      containers:
        - name: coordinator
          image: registry.example.com/x/smoe-coordinator:1
          args: ["--lease-timeout=$(SMOE_LEASE_TIMEOUT)", "--literal=$$(SMOE_LEASE_TIMEOUT)", "--unknown=$(NOPE)"]
          envFrom: [{configMapRef: {name: cm-c}}]
          ports: [{name: grpc, containerPort: 50051}, {name: http, containerPort: 8080}]
          readinessProbe: {grpc: {port: 50051}}
          livenessProbe: {grpc: {port: 50051}}
          volumeMounts: [{name: t, mountPath: /t}, {name: d, mountPath: /d}]
      volumes:
        - {name: t, secret: {secretName: tok, defaultMode: 0440}}
        - {name: d, persistentVolumeClaim: {claimName: data}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: smoe-worker, namespace: smoe}
spec:
  replicas: 3
  serviceName: smoe-worker
  selector: {matchLabels: {app: w}}
  template:
    metadata: {labels: {app: w}}
    spec:
      terminationGracePeriodSeconds: 90
      securityContext: {runAsUser: 10001, fsGroup: 10001}
      containers:
        - name: worker
          image: registry.example.com/x/smoe-worker-cpu:1
          args: ["--worker-id=$(POD_NAME)", "--gpus=$(SMOE_GPUS)", "--c=$(SMOE_COORDINATOR)", "--g=$(G2)"]
          envFrom: [{configMapRef: {name: cm-w}}]
          env:
            - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
            - {name: G2, value: "$(GREETING)-there"}
          lifecycle: {preStop: {exec: {command: ["/bin/sh", "-c", "kill -TERM 1"]}}}
          volumeMounts: [{name: t, mountPath: /t}, {name: work, mountPath: /w}]
      volumes:
        - {name: t, secret: {secretName: tok, defaultMode: 0400, items: [{key: token, path: token, mode: 0440}]}}
  volumeClaimTemplates:
    - metadata: {name: work}
      spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 5Gi}}}
"""


def run(args):
    return subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True)


def docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


class KubeConvertTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.manifest = os.path.join(self.dir, "in.yaml")
        with open(self.manifest, "w") as f:
            f.write(BASE % {"tok": base64.b64encode(b"smoe_secret").decode()})
        self.out = os.path.join(self.dir, "out")

    def tearDown(self):
        self.tmp.cleanup()

    def convert(self, *extra, manifest=None):
        return run([manifest or self.manifest, self.out, "--coordinator-ip", "10.89.3.10",
                    "--grpc-port", "15051", "--http-port", "18080",  # fixed-port-ok: rendered only
                    "--image", "registry.example.com/x/smoe-worker-cpu=localhost/w:dev", *extra])

    def test_statefulset_becomes_its_pods_with_their_pvcs(self):
        r = self.convert()
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(self.out, "plan.json")) as f:
            plan = json.load(f)
        self.assertEqual([p["pod"] for p in plan["pods"]],
                         ["smoe-coordinator-pod-0", "smoe-worker-0", "smoe-worker-1", "smoe-worker-2"])
        for i in range(3):
            d = docs(os.path.join(self.out, f"smoe-worker-{i}.yaml"))
            kinds = [x["kind"] for x in d]
            self.assertEqual(kinds, ["ConfigMap", "PersistentVolumeClaim", "Pod"])
            pvc, pod = d[1], d[2]
            self.assertEqual(pvc["metadata"]["name"], f"work-smoe-worker-{i}")
            self.assertEqual(pvc["spec"]["resources"]["requests"]["storage"], "5Gi")
            self.assertEqual(pod["metadata"]["name"], f"smoe-worker-{i}")
            vols = {v["name"]: v for v in pod["spec"]["volumes"]}
            self.assertEqual(vols["work"]["persistentVolumeClaim"]["claimName"], f"work-smoe-worker-{i}")
            c = pod["spec"]["containers"][0]
            self.assertEqual(c["image"], "localhost/w:dev")
            self.assertEqual(c["args"], [f"--worker-id=smoe-worker-{i}", "--gpus=0",
                                         "--c=smoe-coordinator:50051", "--g=hi-there"])
            self.assertEqual(pod["spec"]["hostAliases"],
                             [{"ip": "10.89.3.10", "hostnames": ["smoe-coordinator"]}])
            self.assertEqual(pod["spec"]["restartPolicy"], "OnFailure")
            self.assertNotIn("namespace", pod["metadata"])
            self.assertEqual(plan["pods"][i + 1]["grace"], 90)
            self.assertEqual(plan["pods"][i + 1]["preStop"]["command"], ["/bin/sh", "-c", "kill -TERM 1"])

    def test_deployment_keeps_what_podman_runs(self):
        self.assertEqual(self.convert().returncode, 0)
        d = docs(os.path.join(self.out, "coordinator.yaml"))
        self.assertEqual([x["kind"] for x in d], ["ConfigMap", "PersistentVolumeClaim", "Deployment"])
        spec = d[2]["spec"]["template"]["spec"]
        self.assertEqual(spec["initContainers"][0]["command"], ["true"])
        c = spec["containers"][0]
        self.assertEqual(c["args"], ["--lease-timeout=30", "--literal=$(SMOE_LEASE_TIMEOUT)", "--unknown=$(NOPE)"])
        self.assertEqual(c["readinessProbe"], {"tcpSocket": {"port": 50051}})
        self.assertEqual(c["livenessProbe"], {"tcpSocket": {"port": 50051}})
        ports = {p["containerPort"]: p for p in c["ports"]}
        self.assertEqual((ports[50051]["hostPort"], ports[50051]["hostIP"]), (15051, "127.0.0.1"))
        self.assertEqual((ports[8080]["hostPort"], ports[8080]["hostIP"]), (18080, "127.0.0.1"))
        self.assertNotIn("hostAliases", spec)
        self.assertNotIn("strategy", d[2]["spec"])
        self.assertEqual(d[2]["spec"]["template"]["spec"]["securityContext"]["runAsUser"], 10001)

    def test_secrets_become_files_with_their_modes(self):
        self.assertEqual(self.convert().returncode, 0)
        sdir = os.path.join(self.out, "secrets", "smoe-coordinator", "t")
        with open(os.path.join(sdir, "token"), "rb") as f:
            self.assertEqual(f.read(), b"smoe_secret")
        # The Deployment's volume: defaultMode 0440, every key.
        for key in ("token", "other"):
            st = os.stat(os.path.join(sdir, key))
            self.assertEqual(stat.S_IMODE(st.st_mode), 0o440)
            if os.geteuid() == 0:
                self.assertEqual((st.st_uid, st.st_gid), (0, 10001))
        # A worker's volume: items only (token), the item's own mode.
        wdir = os.path.join(self.out, "secrets", "smoe-worker-2", "t")
        self.assertEqual(sorted(os.listdir(wdir)), ["token"])
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(wdir, "token")).st_mode), 0o440)
        d = docs(os.path.join(self.out, "coordinator.yaml"))
        vols = {v["name"]: v for v in d[2]["spec"]["template"]["spec"]["volumes"]}
        self.assertEqual(vols["t"], {"name": "t", "hostPath": {"path": os.path.abspath(sdir), "type": "Directory"}})
        mounts = {m["name"]: m for m in d[2]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]}
        self.assertEqual(mounts["t"]["mountPath"], "/t")

    def test_differences_are_listed(self):
        r = self.convert()
        with open(os.path.join(self.out, "differences.txt")) as f:
            text = f.read()
        for needle in ("PodDisruptionBudget/pdb dropped", "Service/smoe-coordinator dropped",
                       "lifecycle.preStop", "grpc -> tcpSocket", "$(VAR)", "restartPolicy OnFailure",
                       "Secret volume tok"):
            self.assertIn(needle, text)
            self.assertIn(needle, r.stdout)

    def test_errors_name_the_object_and_value(self):
        r = self.convert("--coordinator-ip", "smoe-coordinator")
        self.assertEqual(r.returncode, 1)
        self.assertIn("--coordinator-ip 'smoe-coordinator' is not an IPv4 address", r.stderr)
        bad = os.path.join(self.dir, "bad.yaml")
        with open(bad, "w") as f:
            f.write((BASE % {"tok": "eA=="}).replace("secretName: tok, defaultMode: 0440", "secretName: gone"))
        r = self.convert(manifest=bad)
        self.assertEqual(r.returncode, 1)
        self.assertIn("Deployment/smoe-coordinator: volume 't' names Secret 'gone'", r.stderr)
        with open(bad, "w") as f:
            f.write((BASE % {"tok": "eA=="}) + "---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: ds}\nspec: {}\n")
        r = self.convert(manifest=bad)
        self.assertEqual(r.returncode, 1)
        self.assertIn("DaemonSet/ds: kind DaemonSet is not handled", r.stderr)
        with open(bad, "w") as f:
            f.write((BASE % {"tok": "eA=="}).replace("  replicas: 1\n  strategy", "  replicas: 2\n  strategy"))
        r = self.convert(manifest=bad)
        self.assertEqual(r.returncode, 1)
        self.assertIn("Deployment/smoe-coordinator: spec.replicas 2", r.stderr)
        r = self.convert("--image", "nonsense")
        self.assertIn("--image 'nonsense' is not NAME=IMAGE", r.stderr)

    def test_rendered_single_node_cpu(self):
        rendered = os.environ.get("RENDERED")
        if not rendered:
            if shutil.which("kubectl") is None:
                self.skipTest("kubectl not found (Debian 12's is too old; it comes with the machine image)")
            k8s = os.path.join(self.dir, "k8s")
            shutil.copytree(os.path.join(HERE, "..", "..", "deploy", "k8s"), k8s)
            ov = os.path.join(k8s, "overlays", "single-node-cpu")
            for name, text in (("token", "smoe_test_token_not_secret\n"),
                               ("worker-token", "smoe_test_worker_token_not_secret\n"),
                               ("tokens", "k8s-workers\tworker\t0\t" + "0" * 64 + "\n")):
                with open(os.path.join(ov, name), "w") as f:
                    f.write(text)
            rendered = os.path.join(self.dir, "rendered.yaml")
            with open(rendered, "w") as f:
                subprocess.run(["kubectl", "kustomize", ov], stdout=f, check=True)
        r = run([rendered, self.out, "--coordinator-ip", "10.89.3.10"])
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(self.out, "plan.json")) as f:
            plan = json.load(f)
        self.assertEqual([p["pod"] for p in plan["pods"]], ["smoe-coordinator-pod-0", "smoe-worker-0", "smoe-worker-1"])
        for p in plan["pods"]:
            for x in docs(p["file"]):
                if x["kind"] in ("Pod", "Deployment"):
                    spec = x["spec"]["template"]["spec"] if x["kind"] == "Deployment" else x["spec"]
                    for c in spec.get("initContainers", []) + spec["containers"]:
                        for a in c.get("args", []) + c.get("command", []):
                            self.assertNotIn("$(", a, f"{p['pod']}/{c['name']}: unexpanded {a}")
                        sc = c["securityContext"]
                        self.assertTrue(sc["readOnlyRootFilesystem"])
                        self.assertEqual(sc["capabilities"]["drop"], ["ALL"])
                        self.assertNotIn("nvidia.com/gpu", str(c.get("resources")))
                    self.assertEqual(spec["securityContext"]["runAsUser"], 10001)
        w = docs(os.path.join(self.out, "smoe-worker-1.yaml"))[-1]
        self.assertIn("--worker-id=smoe-worker-1", w["spec"]["containers"][0]["args"])
        self.assertIn("--gpus=0", w["spec"]["containers"][0]["args"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
