#!/usr/bin/env node
// Checks that every `smoe` command line the deployment uses exists in the
// built CLI:
//   * containers in rendered manifests: the image's ENTRYPOINT (from
//     deploy/docker/<name>.Dockerfile, for images named smoe-<name>) or the
//     container's `command`, plus its `args`;
//   * `smoe ...` lines inside fenced code blocks of Markdown files (docs).
// For each: the subcommand path must exist (`smoe [sub...] --help` exits 0),
// every --flag must appear in that help text, and for containers the args,
// with $(VAR) expanded from the pod's env/envFrom ConfigMaps, must parse:
// `smoe <sub> <args> --help` exits 0 (CLI11 and `smoe worker` both validate
// values before honouring --help).
//
//   node check-cli-flags.mjs --smoe BIN --docker-dir DIR [--docs FILE.md]...
//                            MANIFESTS.yaml...
import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import * as yaml from "js-yaml";

function parseArgs(argv) {
  const o = { smoe: null, dockerDir: null, docs: [], manifests: [] };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if (a === "--smoe") o.smoe = argv[++i];
    else if (a === "--docker-dir") o.dockerDir = argv[++i];
    else if (a === "--docs") o.docs.push(argv[++i]);
    else o.manifests.push(a);
  }
  return o;
}

const opts = parseArgs(process.argv.slice(2));
if (!opts.smoe || !opts.dockerDir) {
  console.error("usage: check-cli-flags.mjs --smoe BIN --docker-dir DIR [--docs F.md]... M.yaml...");
  process.exit(2);
}

function runSmoe(args) {
  const r = spawnSync(opts.smoe, args, { encoding: "utf8", timeout: 20000 });
  return { code: r.status, out: (r.stdout ?? "") + (r.stderr ?? "") };
}

const helpCache = new Map();
function help(subs) {
  const key = subs.join(" ");
  if (!helpCache.has(key)) helpCache.set(key, runSmoe([...subs, "--help"]));
  return helpCache.get(key);
}

// Subcommand names listed under CLI11's "Subcommands:" heading.
function subcommandsOf(subs) {
  const { code, out } = help(subs);
  if (code !== 0) return new Set();
  const i = out.indexOf("Subcommands:");
  if (i < 0) return new Set();
  const names = new Set();
  for (const line of out.slice(i).split("\n").slice(1)) {
    const m = /^ {2}([a-z][a-z0-9-]*)\b/.exec(line);
    if (m) names.add(m[1]);
    else if (line.trim() !== "" && !/^ {3,}/.test(line)) break;
  }
  return names;
}

function flagsOf(subs) {
  return new Set(help(subs).out.match(/--[a-z][a-z0-9-]*/g) ?? []);
}

// Checks one argv (after "smoe"). Returns error strings.
function checkCommand(argv, where, { parse }) {
  const errors = [];
  const subs = [];
  let rest = argv;
  while (rest.length && !rest[0].startsWith("-") && subcommandsOf(subs).has(rest[0])) {
    subs.push(rest[0]);
    rest = rest.slice(1);
  }
  if (subs.length === 0) {
    return [`${where}: 'smoe ${argv.join(" ")}': no such smoe command`];
  }
  const h = help(subs);
  if (h.code !== 0) {
    return [`${where}: 'smoe ${subs.join(" ")} --help' exited ${h.code}`];
  }
  const known = flagsOf(subs);
  for (const a of rest) {
    if (!a.startsWith("--")) continue;
    const name = a.split("=")[0];
    if (!known.has(name)) errors.push(`${where}: smoe ${subs.join(" ")}: unknown flag ${name}`);
  }
  if (parse && errors.length === 0) {
    const r = runSmoe([...subs, ...rest, "--help"]);
    if (r.code !== 0) {
      errors.push(`${where}: 'smoe ${[...subs, ...rest].join(" ")}' does not parse ` +
                  `(exit ${r.code}): ${r.out.trim().split("\n").pop()}`);
    }
  }
  return { errors, command: `smoe ${subs.join(" ")}` };
}

// ENTRYPOINT (exec form, as argv) of a Dockerfile's last stage, or of the
// stage named `stage` (a build target such as worker-cpu).
function dockerEntrypoint(file, stage = null) {
  const lines = fs.readFileSync(file, "utf8").replace(/\\\n/g, " ").split("\n");
  let entry = null;
  let current = null;
  const byStage = new Map();
  for (const l of lines) {
    const f = /^\s*FROM\s+\S+(?:\s+AS\s+(\S+))?/i.exec(l);
    if (f) {
      entry = null;
      current = f[1] ?? null;
    }
    const m = /^\s*ENTRYPOINT\s+(\[.*\])\s*$/i.exec(l);
    if (m) {
      entry = JSON.parse(m[1]);
      if (current) byStage.set(current, entry);
    }
  }
  return stage === null ? entry : byStage.get(stage) ?? null;
}

// Drops init wrappers (tini ... --) and returns the argv after `smoe`, or
// null when the command is not smoe.
function smoeArgv(argv) {
  let a = argv;
  if (a.length && path.basename(a[0]) === "tini") {
    const dd = a.indexOf("--");
    a = dd >= 0 ? a.slice(dd + 1) : a.slice(1);
  }
  if (!a.length || path.basename(a[0]) !== "smoe") return null;
  return a.slice(1);
}

function expand(s, env) {
  return s.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, v) => (v in env ? env[v] : m));
}

let errors = [];
let checked = 0;
const commandsSeen = new Set();

for (const file of opts.manifests) {
  const docs = yaml.loadAll(fs.readFileSync(file, "utf8")).filter(Boolean);
  const configMaps = new Map(
    docs.filter((d) => d.kind === "ConfigMap").map((d) => [d.metadata.name, d.data ?? {}]));
  for (const d of docs) {
    const pod = d.kind === "Pod" ? d.spec : d.spec?.template?.spec;
    if (!pod) continue;
    for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])]) {
      const where = `${file}: ${d.kind}/${d.metadata.name}/${c.name}`;
      let argv = c.command;
      if (!argv) {
        // smoe-<name>: <name>.Dockerfile, or the target <name> of
        // <first part>.Dockerfile (smoe-worker-cpu: worker.Dockerfile's
        // stage worker-cpu).
        const m = /(?:^|\/)smoe-([a-z0-9-]+)(?:[:@].*)?$/.exec(c.image ?? "");
        let df = m && path.join(opts.dockerDir, `${m[1]}.Dockerfile`);
        let stage = null;
        if (m && !fs.existsSync(df)) {
          const alt = path.join(opts.dockerDir, `${m[1].split("-")[0]}.Dockerfile`);
          if (fs.existsSync(alt)) {
            df = alt;
            stage = m[1];
          }
        }
        if (!df || !fs.existsSync(df)) {
          errors.push(`${where}: no command and no Dockerfile for image ${c.image}`);
          continue;
        }
        argv = dockerEntrypoint(df, stage);
        if (!argv) {
          errors.push(`${where}: ${df} has no exec-form ENTRYPOINT`);
          continue;
        }
      }
      const sm = smoeArgv([...argv, ...(c.args ?? [])]);
      if (sm === null) continue;  // not a smoe command (e.g. `install`)
      const env = {};
      for (const ef of c.envFrom ?? []) {
        const data = configMaps.get(ef.configMapRef?.name);
        if (ef.configMapRef && !data) errors.push(`${where}: envFrom ConfigMap ${ef.configMapRef.name} not rendered`);
        Object.assign(env, data ?? {});
      }
      for (const e of c.env ?? []) {
        if (e.value !== undefined) env[e.name] = e.value;
        else if (e.valueFrom?.fieldRef) env[e.name] = "smoe-worker-0";
        else if (e.valueFrom?.configMapKeyRef) {
          env[e.name] = configMaps.get(e.valueFrom.configMapKeyRef.name)?.[e.valueFrom.configMapKeyRef.key];
        }
      }
      const expanded = sm.map((a) => expand(a, env));
      for (const a of expanded) {
        const u = /\$\(([A-Za-z_][A-Za-z0-9_]*)\)/.exec(a);
        if (u) errors.push(`${where}: ${u[0]} is not defined in the container's env`);
      }
      const r = checkCommand(expanded, where, { parse: true });
      if (Array.isArray(r)) errors = errors.concat(r);
      else {
        errors = errors.concat(r.errors);
        commandsSeen.add(r.command);
      }
      ++checked;
    }
  }
}

for (const file of opts.docs) {
  let inFence = false;
  const lines = fs.readFileSync(file, "utf8").replace(/\\\n\s*/g, " ").split("\n");
  lines.forEach((line, i) => {
    if (/^\s*```/.test(line)) {
      inFence = !inFence;
      return;
    }
    if (!inFence) return;
    // `smoe ...`, possibly after `$ `, `kubectl exec ... --`, or env assignments.
    const m = /(?:^\s*(?:\$ )?(?:[A-Z_]+=\S+\s+)*|\s--\s+)(?:\S*\/)?smoe\s+([^#|;&]*)/.exec(line);
    if (!m) return;
    const argv = m[1].trim().split(/\s+/).filter(Boolean)
      .filter((a) => !/^["']?\$/.test(a));
    const r = checkCommand(argv, `${file}:${i + 1}`, { parse: false });
    if (Array.isArray(r)) errors = errors.concat(r);
    else {
      errors = errors.concat(r.errors);
      commandsSeen.add(r.command);
    }
    ++checked;
  });
}

for (const e of errors) console.error(e);
console.log(`check-cli-flags: ${checked} smoe command lines checked ` +
            `(${[...commandsSeen].sort().join(", ")}), ${errors.length} errors`);
if (checked === 0) {
  console.error("check-cli-flags: no smoe command found; nothing was checked");
  process.exit(1);
}
process.exit(errors.length ? 1 : 0);
