#!/usr/bin/env node
// The deployment's own invariants, checked on rendered manifests (what a
// schema cannot say):
//   * every pod: runAsNonRoot, seccomp RuntimeDefault, no service account
//     token; every container: allowPrivilegeEscalation false, all
//     capabilities dropped, readOnlyRootFilesystem, CPU/memory requests and
//     limits (Pod Security "restricted" plus our resource rule);
//   * coordinator: a Deployment with 1 replica, strategy Recreate, grpc
//     readiness and liveness probes on the gRPC port, the data PVC mounted;
//   * workers: nvidia.com/gpu request == limit == SMOE_GPUS of the worker
//     ConfigMap (unless --cpu-workers), and the same on any init container
//     that asks for GPUs (the doctor); terminationGracePeriodSeconds >
//     SMOE_GRACE + 10 (the daemon's outbox flush); a preStop hook; a
//     PodDisruptionBudget selecting them;
//   * NetworkPolicy: the coordinator's grpc port admits only worker pods.
//
//   node check-policy.mjs [--expect-workers N] [--expect-gpus G] FILE.yaml
import fs from "node:fs";
import * as yaml from "js-yaml";

const args = process.argv.slice(2);
let expectWorkers = null, expectGpus = null, expectImageTag = null;
const files = [];
for (let i = 0; i < args.length; ++i) {
  if (args[i] === "--expect-workers") expectWorkers = Number(args[++i]);
  else if (args[i] === "--expect-gpus") expectGpus = Number(args[++i]);
  else if (args[i] === "--expect-image-tag") expectImageTag = args[++i];
  else files.push(args[i]);
}

let errors = 0;
function fail(where, msg) {
  console.error(`${where}: ${msg}`);
  ++errors;
}

const matches = (selector, labels) =>
  Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v);

for (const file of files) {
  const docs = yaml.loadAll(fs.readFileSync(file, "utf8")).filter(Boolean);
  const byKind = (k) => docs.filter((d) => d.kind === k);
  const configMaps = new Map(byKind("ConfigMap").map((d) => [d.metadata.name, d.data ?? {}]));
  const workloads = docs.filter((d) => ["Deployment", "StatefulSet", "DaemonSet", "Job"].includes(d.kind));

  for (const w of workloads) {
    const where = `${file}: ${w.kind}/${w.metadata.name}`;
    const pod = w.spec.template.spec;
    const psc = pod.securityContext ?? {};
    if (psc.runAsNonRoot !== true) fail(where, "pod securityContext.runAsNonRoot is not true");
    if (!(psc.runAsUser > 0)) fail(where, "pod securityContext.runAsUser is not a non-zero uid");
    if (psc.seccompProfile?.type !== "RuntimeDefault") fail(where, "pod seccompProfile is not RuntimeDefault");
    if (pod.automountServiceAccountToken !== false) fail(where, "automountServiceAccountToken is not false");
    for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])]) {
      const cw = `${where}/${c.name}`;
      const sc = c.securityContext ?? {};
      if (sc.allowPrivilegeEscalation !== false) fail(cw, "allowPrivilegeEscalation is not false");
      if (!(sc.capabilities?.drop ?? []).includes("ALL")) fail(cw, "capabilities do not drop ALL");
      if (sc.readOnlyRootFilesystem !== true) fail(cw, "readOnlyRootFilesystem is not true");
      if (sc.privileged) fail(cw, "privileged");
      for (const k of ["cpu", "memory"]) {
        if (!c.resources?.requests?.[k]) fail(cw, `no ${k} request`);
        if (!c.resources?.limits?.[k]) fail(cw, `no ${k} limit`);
      }
      if (expectImageTag && !String(c.image).endsWith(`:${expectImageTag}`)) {
        fail(cw, `image ${c.image} does not have tag ${expectImageTag}`);
      }
    }
  }

  const coord = workloads.filter((w) => w.metadata.name === "smoe-coordinator");
  if (coord.length !== 1 || coord[0].kind !== "Deployment") {
    fail(file, "expected exactly one Deployment smoe-coordinator");
  } else {
    const d = coord[0], where = `${file}: Deployment/smoe-coordinator`;
    if (d.spec.replicas !== 1) fail(where, `replicas ${d.spec.replicas} (the SQLite store has one writer: 1)`);
    if (d.spec.strategy?.type !== "Recreate") fail(where, "strategy is not Recreate");
    const c = d.spec.template.spec.containers.find((x) => x.name === "coordinator");
    const grpcPort = c?.ports?.find((p) => p.name === "grpc")?.containerPort;
    for (const probe of ["readinessProbe", "livenessProbe"]) {
      if (!c?.[probe]?.grpc || c[probe].grpc.port !== grpcPort) {
        fail(where, `${probe} is not a grpc probe on the gRPC port ${grpcPort}`);
      }
    }
    const vols = d.spec.template.spec.volumes ?? [];
    if (!vols.some((v) => v.persistentVolumeClaim)) fail(where, "no PersistentVolumeClaim volume for the store");
    if (!vols.some((v) => v.secret)) fail(where, "API token Secret not mounted");
  }

  const workers = workloads.filter((w) => w.metadata.name === "smoe-worker");
  if (workers.length !== 1) fail(file, "expected exactly one smoe-worker workload");
  for (const w of workers) {
    const where = `${file}: ${w.kind}/smoe-worker`;
    const pod = w.spec.template.spec;
    const c = pod.containers.find((x) => x.name === "worker");
    // Workers hold a worker-role token (docs/roles.md), never the admin one.
    const secrets = (pod.volumes ?? []).map((v) => v.secret?.secretName ?? "");
    if (secrets.some((n) => n.startsWith("smoe-api-token"))) fail(where, "workers mount the admin token Secret (use smoe-worker-token)");
    if (!secrets.some((n) => n.startsWith("smoe-worker-token"))) fail(where, "worker-role token Secret smoe-worker-token not mounted");
    const env = {};
    for (const ef of c.envFrom ?? []) Object.assign(env, configMaps.get(ef.configMapRef?.name) ?? {});
    for (const e of c.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
    const gpus = Number(env.SMOE_GPUS);
    const req = c.resources?.requests?.["nvidia.com/gpu"];
    const lim = c.resources?.limits?.["nvidia.com/gpu"];
    if (gpus > 0) {
      if (String(lim) !== String(gpus)) fail(where, `nvidia.com/gpu limit ${lim} != SMOE_GPUS ${gpus}`);
      if (req !== undefined && String(req) !== String(lim)) fail(where, `nvidia.com/gpu request ${req} != limit ${lim}`);
    } else if (lim !== undefined) {
      fail(where, `SMOE_GPUS is ${env.SMOE_GPUS} but the pod asks for nvidia.com/gpu ${lim}`);
    }
    if (expectGpus !== null && gpus !== expectGpus) fail(where, `SMOE_GPUS ${gpus}, expected ${expectGpus}`);
    // Init containers on GPUs (components/worker-doctor) check the worker's
    // devices: the same nvidia.com/gpu as the worker container.
    for (const ic of pod.initContainers ?? []) {
      for (const kind of ["requests", "limits"]) {
        const n = ic.resources?.[kind]?.["nvidia.com/gpu"];
        if (n !== undefined && String(n) !== String(lim)) {
          fail(`${where}/${ic.name}`, `init container nvidia.com/gpu ${kind} ${n} != the worker's ${lim}`);
        }
      }
    }
    if (expectWorkers !== null && w.spec.replicas !== expectWorkers) {
      fail(where, `replicas ${w.spec.replicas}, expected ${expectWorkers}`);
    }
    const grace = Number(env.SMOE_GRACE);
    if (!(grace > 0)) fail(where, "SMOE_GRACE is not set");
    if (!(pod.terminationGracePeriodSeconds > grace + 10)) {
      fail(where, `terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} does not cover ` +
                  `--grace ${grace} + 10 s outbox flush`);
    }
    if (!c.lifecycle?.preStop) fail(where, "no preStop drain hook");
    const labels = w.spec.template.metadata.labels;
    if (!byKind("PodDisruptionBudget").some((p) => matches(p.spec.selector?.matchLabels, labels))) {
      fail(where, "no PodDisruptionBudget selects the workers");
    }
  }

  // NetworkPolicy: who may reach the coordinator's grpc port.
  const coordLabels = coord[0]?.spec.template.metadata.labels;
  const workerLabels = workers[0]?.spec.template.metadata.labels;
  const policies = byKind("NetworkPolicy").filter((p) => matches(p.spec.podSelector?.matchLabels, coordLabels));
  if (!policies.some((p) => (p.spec.policyTypes ?? []).includes("Ingress"))) {
    fail(file, "no ingress NetworkPolicy selects the coordinator");
  }
  for (const p of policies) {
    for (const rule of p.spec.ingress ?? []) {
      const grpc = (rule.ports ?? []).length === 0 ||
                   rule.ports.some((pt) => pt.port === "grpc" || pt.port === 50051);
      if (!grpc) continue;
      const ok = (rule.from ?? []).length > 0 && rule.from.every(
          (f) => !f.namespaceSelector && !f.ipBlock && f.podSelector &&
                 matches(f.podSelector.matchLabels, workerLabels) &&
                 f.podSelector.matchLabels?.["app.kubernetes.io/component"] === "worker");
      if (!ok) fail(`${file}: NetworkPolicy/${p.metadata.name}`, "grpc port reachable by more than worker pods");
    }
  }
}

console.log(`check-policy: ${files.length} files, ${errors} problems`);
process.exit(errors ? 1 : 0);
