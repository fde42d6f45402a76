#!/usr/bin/env python3
"""Converts a rendered overlay (`kubectl kustomize deploy/k8s/overlays/NAME`)
into what `podman kube play` (podman 4.3) runs, keeping everything it can.

  deploy/podman/kube-convert.py RENDERED.yaml OUTDIR \
      --coordinator-ip 10.89.7.10 [--publish-host 127.0.0.1] \
      [--grpc-port 50051] [--http-port 8080] [--image NAME=IMAGE ...]

Writes OUTDIR/coordinator.yaml (its ConfigMap, PVC and Deployment),
OUTDIR/smoe-worker-<i>.yaml per StatefulSet replica (its ConfigMap, PVC and
Pod), OUTDIR/secrets/<pod>/<volume>/<key> (the Secrets' files), OUTDIR/plan.json
(what to play, in order, and the pods' grace periods and preStop hooks) and
OUTDIR/differences.txt. Every difference from a real cluster is listed in
docs/deploy.md ("Running the manifests under podman"); this script prints the
ones it made. Kept as they are: containers, images, command/args, env and
envFrom ConfigMaps, securityContext (uid, read-only root, capabilities,
no privilege escalation), init containers, resources, emptyDir and PVC
volumes, ports. Converted:
  * Secret volumes -> hostPath directories (OUTDIR/secrets/<pod>/<volume>)
    of the Secret's files, with the
    volume's defaultMode/items modes and the pod's fsGroup as their group
    (what the kubelet does); the directory itself is read-only in the pod.
  * StatefulSet -> one Pod per replica (NAME-0, NAME-1, ...), each with its
    own PVC from volumeClaimTemplates (<claim>-NAME-<i>, the StatefulSet
    naming); the pod name is also substituted for fieldRef metadata.name.
  * Service smoe-coordinator -> the coordinator pod gets a static IP
    (--coordinator-ip, `podman kube play --ip`) and every other pod a
    hostAliases entry for the Service name; its ports are published on
    --publish-host (hostPort/hostIP).
  * $(VAR) references in command and args -> expanded here, from the
    container's env and envFrom ConfigMaps, as the kubelet does (podman 4.3
    passes them through literally); $$ stays a literal $.
  * restartPolicy -> OnFailure (podman 4.3 restarts init containers under
    Always, forever); a container that fails or is killed is restarted, one
    that exits 0 (a worker drained by its preStop hook) stays down, as in a
    pod being deleted.
  * grpc probes -> tcpSocket probes on the same port (podman 4.3 has no grpc
    probe); podman runs only the liveness probe, and only with systemd.
Dropped (podman has no such object): Namespace, ServiceAccount, Services,
NetworkPolicy, PodDisruptionBudget, Ingress. Errors name the object and
field; the exit status is 1.
"""
import argparse
import base64
import copy
import grp
import json
import os
import re
import sys

import yaml

DROPPED_KINDS = {
    "Namespace": "podman has no namespaces; all objects share one host",
    "ServiceAccount": "no API server; automountServiceAccountToken is false anyway",
    "NetworkPolicy": "podman enforces no NetworkPolicy: every pod on the network reaches every port",
    "PodDisruptionBudget": "no evictions or node drains on one host",
    "Ingress": "no ingress controller; the dashboard is the coordinator's published port",
}


class ConvertError(Exception):
    pass


def load(path):
    with open(path, encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    for i, d in enumerate(docs):
        if not isinstance(d, dict) or "kind" not in d or "metadata" not in d:
            raise ConvertError(f"{path}: document {i + 1} is not a Kubernetes object (no kind/metadata)")
    return docs


def name_of(obj):
    return f"{obj['kind']}/{obj['metadata'].get('name', '?')}"


def secret_files(secret, outdir, volume, fs_group, pod_name, vol_name):
    """Writes the Secret's keys as files for one pod's volume (each volume
    has its own modes); returns the directory."""
    name = secret["metadata"]["name"]
    data = dict(secret.get("data") or {})
    for k, v in (secret.get("stringData") or {}).items():
        data[k] = base64.b64encode(v.encode()).decode()
    mode = volume.get("defaultMode", 0o644)
    items = volume.get("items")
    d = os.path.join(outdir, "secrets", pod_name, vol_name)
    os.makedirs(d, exist_ok=True)
    for x in (os.path.join(outdir, "secrets"), os.path.dirname(d), d):
        os.chmod(x, 0o755)
    wanted = [(i["key"], i.get("path", i["key"]), i.get("mode", mode)) for i in items] if items else \
        [(k, k, mode) for k in data]
    for key, path, m in wanted:
        if key not in data:
            raise ConvertError(f"Secret/{name}: volume asks for key '{key}', which the Secret lacks")
        if "/" in path or path.startswith("."):
            raise ConvertError(f"Secret/{name}: item path '{path}' is not a plain file name")
        f = os.path.join(d, path)
        fd = os.open(f + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(base64.b64decode(data[key]))
        # The kubelet's ownership: root, group fsGroup when the pod sets one.
        if os.geteuid() == 0:
            os.chown(f + ".tmp", 0, fs_group if fs_group is not None else 0)
        os.chmod(f + ".tmp", m)
        os.replace(f + ".tmp", f)
    return os.path.abspath(d)


VAR_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text, env):
    """Kubernetes' $(VAR) expansion: known names replaced, $$ -> $, the rest kept."""
    def sub(m):
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return VAR_REF.sub(sub, text)


def container_env(c, objs, where):
    env = {}
    for ef in c.get("envFrom") or []:
        n = (ef.get("configMapRef") or {}).get("name")
        if n:
            cm = objs.get(("ConfigMap", n))
            if cm is None:
                raise ConvertError(f"{where}: envFrom names ConfigMap '{n}', which is not in the input")
            for k, v in (cm.get("data") or {}).items():
                env[ef.get("prefix", "") + k] = str(v)
    for e in c.get("env") or []:
        if "value" in e:
            env[e["name"]] = expand(str(e["value"]), env)
    return env


def convert_pod_spec(spec, where, objs, outdir, pod_name, args, diffs):
    spec = copy.deepcopy(spec)
    spec["restartPolicy"] = "OnFailure"
    diffs.add("restartPolicy OnFailure: podman 4.3 restarts init containers under Always, forever; "
              "a killed or failed container is still restarted, one that exits 0 (a drained "
              "worker) stays down, as it would in a deleted pod")
    fs_group = (spec.get("securityContext") or {}).get("fsGroup")
    for v in spec.get("volumes") or []:
        if "secret" in v:
            sname = v["secret"]["secretName"]
            sec = objs.get(("Secret", sname))
            if sec is None:
                raise ConvertError(f"{where}: volume '{v['name']}' names Secret '{sname}', which is not in the input")
            d = secret_files(sec, outdir, v["secret"], fs_group, pod_name, v["name"])
            mode = oct(v["secret"].get("defaultMode", 0o644))[2:]
            v.pop("secret")
            v["hostPath"] = {"path": d, "type": "Directory"}
            diffs.add(f"Secret volume {sname}: hostPath {os.path.dirname(os.path.dirname(d))}/<pod>/{v['name']}, "
                      f"files mode 0{mode}, group {fs_group}")
    for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        cname = c["name"]
        img = c.get("image", "")
        for k, v in args.image.items():
            if img == k or img.rsplit(":", 1)[0] == k or img.rsplit(":", 1)[0].endswith("/" + k):
                c["image"] = v
        for e in c.get("env") or []:
            ref = (e.get("valueFrom") or {}).get("fieldRef")
            if ref and ref.get("fieldPath") == "metadata.name":
                e.pop("valueFrom")
                e["value"] = pod_name
                diffs.add("fieldRef metadata.name: the pod name written in as a value")
        env = container_env(c, objs, f"{where}/{cname}")
        for key in ("command", "args"):
            if c.get(key):
                new = [expand(str(a), env) for a in c[key]]
                if new != c[key]:
                    diffs.add("$(VAR) in command/args: expanded by the conversion (podman 4.3 does not)")
                c[key] = new
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            p = c.get(probe)
            if p and "grpc" in p:
                port = p.pop("grpc")["port"]
                p["tcpSocket"] = {"port": port}
                diffs.add(f"{probe} grpc -> tcpSocket (podman 4.3 has no grpc probe)")
            if p and probe != "livenessProbe":
                diffs.add(f"{probe}: podman 4.3 does not run it (only livenessProbe)")
        if (c.get("lifecycle") or {}).get("preStop"):
            diffs.add("lifecycle.preStop: podman 4.3 does not run it; the test runs the hook's "
                      "command with podman exec, then podman pod stop -t terminationGracePeriodSeconds")
        if c.get("ports") and pod_name.startswith("smoe-coordinator"):
            for p in c["ports"]:
                host = {50051: args.grpc_port, 8080: args.http_port}.get(p["containerPort"])
                if host:
                    p["hostPort"] = host
                    p["hostIP"] = args.publish_host
            diffs.add(f"Service smoe-coordinator: ports published on {args.publish_host}")
    if not pod_name.startswith("smoe-coordinator"):
        spec.setdefault("hostAliases", []).append(
            {"ip": args.coordinator_ip, "hostnames": ["smoe-coordinator"]})
        diffs.add(f"Service smoe-coordinator: hostAliases smoe-coordinator -> {args.coordinator_ip} "
                  "(the coordinator pod's static IP)")
    return spec


def configmaps_used(spec, objs, where):
    out = []
    for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        for ef in c.get("envFrom") or []:
            n = (ef.get("configMapRef") or {}).get("name")
            if n:
                cm = objs.get(("ConfigMap", n))
                if cm is None:
                    raise ConvertError(f"{where}: envFrom names ConfigMap '{n}', which is not in the input")
                if cm not in out:
                    out.append(cm)
    return out


def clean(obj):
    obj = copy.deepcopy(obj)
    obj["metadata"].pop("namespace", None)
    return obj


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rendered")
    ap.add_argument("outdir")
    ap.add_argument("--coordinator-ip", required=True)
    ap.add_argument("--publish-host", default="127.0.0.1")
    ap.add_argument("--grpc-port", type=int, default=50051)
    ap.add_argument("--http-port", type=int, default=8080)
    ap.add_argument("--image", action="append", default=[], metavar="NAME=IMAGE",
                    help="replace the image NAME (repository, or its last path part) with IMAGE")
    args = ap.parse_args()
    try:
        if not re.fullmatch(r"\d+\.\d+\.\d+\.\d+", args.coordinator_ip):
            raise ConvertError(f"--coordinator-ip '{args.coordinator_ip}' is not an IPv4 address")
        for flag in ("grpc_port", "http_port"):
            v = getattr(args, flag)
            if not 1 <= v <= 65535:
                raise ConvertError(f"--{flag.replace('_', '-')} {v} is not a port (1-65535)")
        images = {}
        for spec in args.image:
            if "=" not in spec:
                raise ConvertError(f"--image '{spec}' is not NAME=IMAGE")
            k, v = spec.split("=", 1)
            images[k] = v
        args.image = images
        docs = load(args.rendered)
        objs = {(d["kind"], d["metadata"]["name"]): d for d in docs}
        os.makedirs(args.outdir, exist_ok=True)
        diffs = set()
        plan = {"pods": []}
        for d in docs:
            kind = d["kind"]
            if kind in DROPPED_KINDS:
                diffs.add(f"{name_of(d)} dropped: {DROPPED_KINDS[kind]}")
            elif kind == "Service":
                diffs.add(f"{name_of(d)} dropped: no cluster DNS or ClusterIP (see hostAliases, published ports)")
            elif kind not in ("ConfigMap", "Secret", "PersistentVolumeClaim", "Deployment", "StatefulSet"):
                raise ConvertError(f"{name_of(d)}: kind {kind} is not handled (podman 4.3 kube play)")
        deps = [d for d in docs if d["kind"] == "Deployment"]
        sts = [d for d in docs if d["kind"] == "StatefulSet"]
        if [x["metadata"]["name"] for x in deps] != ["smoe-coordinator"]:
            raise ConvertError("expected exactly one Deployment, smoe-coordinator; got "
                               f"{[x['metadata']['name'] for x in deps]}")
        for dep in deps:
            name = dep["metadata"]["name"]
            if dep["spec"].get("replicas", 1) != 1:
                raise ConvertError(f"Deployment/{name}: spec.replicas {dep['spec']['replicas']}: the coordinator runs one")
            out = copy.deepcopy(dep)
            out["spec"]["template"]["spec"] = convert_pod_spec(
                dep["spec"]["template"]["spec"], f"Deployment/{name}", objs, args.outdir, name, args, diffs)
            out["spec"].pop("strategy", None)
            out["spec"].pop("revisionHistoryLimit", None)
            diffs.add("Deployment strategy Recreate: podman replaces the one pod itself (kube play --replace)")
            tspec = dep["spec"]["template"]["spec"]
            pvcs = [objs[("PersistentVolumeClaim", v["persistentVolumeClaim"]["claimName"])]
                    for v in tspec.get("volumes") or [] if "persistentVolumeClaim" in v]
            cms = configmaps_used(tspec, objs, f"Deployment/{name}")
            f = os.path.join(args.outdir, "coordinator.yaml")
            with open(f, "w", encoding="utf-8") as fh:
                yaml.safe_dump_all([clean(x) for x in cms + pvcs] + [clean(out)], fh, sort_keys=False)
            plan["pods"].append({"file": os.path.abspath(f), "pod": f"{name}-pod-0", "role": "coordinator",
                                 "ip": args.coordinator_ip,
                                 "grace": tspec.get("terminationGracePeriodSeconds", 30)})
        for st in sts:
            name = st["metadata"]["name"]
            tspec = st["spec"]["template"]["spec"]
            cms = configmaps_used(tspec, objs, f"StatefulSet/{name}")
            for i in range(st["spec"].get("replicas", 1)):
                pod_name = f"{name}-{i}"
                spec = convert_pod_spec(tspec, f"StatefulSet/{name}", objs, args.outdir, pod_name, args, diffs)
                pvcs = []
                for t in st["spec"].get("volumeClaimTemplates") or []:
                    claim = f"{t['metadata']['name']}-{pod_name}"
                    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                           "metadata": {"name": claim, "labels": st["spec"]["template"]["metadata"].get("labels", {})},
                           "spec": copy.deepcopy(t["spec"])}
                    pvcs.append(pvc)
                    spec.setdefault("volumes", []).append(
                        {"name": t["metadata"]["name"], "persistentVolumeClaim": {"claimName": claim}})
                labels = dict(st["spec"]["template"]["metadata"].get("labels", {}))
                labels["statefulset.kubernetes.io/pod-name"] = pod_name
                pod = {"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": pod_name, "labels": labels,
                                    "annotations": dict(st["spec"]["template"]["metadata"].get("annotations", {}))},
                       "spec": spec}
                prestop = None
                for c in spec["containers"]:
                    ps = ((c.get("lifecycle") or {}).get("preStop") or {}).get("exec")
                    if ps:
                        prestop = {"container": c["name"], "command": ps["command"]}
                f = os.path.join(args.outdir, f"{pod_name}.yaml")
                with open(f, "w", encoding="utf-8") as fh:
                    yaml.safe_dump_all([clean(x) for x in cms + pvcs] + [pod], fh, sort_keys=False)
                plan["pods"].append({"file": os.path.abspath(f), "pod": pod_name, "role": "worker",
                                     "grace": spec.get("terminationGracePeriodSeconds", 30),
                                     "preStop": prestop})
            diffs.add(f"StatefulSet/{name}: {st['spec'].get('replicas', 1)} Pods {name}-<i>, each with its PVC "
                      "(no controller: a deleted pod is not recreated)")
        with open(os.path.join(args.outdir, "plan.json"), "w", encoding="utf-8") as fh:
            json.dump(plan, fh, indent=2)
        with open(os.path.join(args.outdir, "differences.txt"), "w", encoding="utf-8") as fh:
            fh.write("\n".join(sorted(diffs)) + "\n")
        for line in sorted(diffs):
            print(f"kube-convert: {line}")
        print(f"kube-convert: wrote {len(plan['pods'])} pods to {args.outdir}")
    except ConvertError as e:
        print(f"kube-convert: {e}", file=sys.stderr)
        return 1
    except (OSError, yaml.YAMLError, KeyError, TypeError) as e:
        print(f"kube-convert: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
