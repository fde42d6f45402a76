#!/usr/bin/env node
// Lints the deploy Dockerfiles.
//   1. dockerfile-utils (rcjsuen/dockerfile-utils, the linter behind the
//      Dockerfile language server used by VS Code and Eclipse): syntax and
//      instruction checks; any diagnostic, warning or error, fails.
//   2. The project's image rules, on the parsed instructions (dockerfile-ast):
//      multi-stage; every FROM pinned to a tag that is not `latest` (a FROM
//      naming a build argument: its default, which must be pinned or name a
//      stage); apt-get
//      install with --no-install-recommends and the lists removed in the same
//      RUN; the final stage runs as a numeric non-root USER (so Kubernetes'
//      runAsNonRoot can verify it) and has an exec-form ENTRYPOINT running
//      `smoe <expected subcommand>` (FILE=SUB@STAGE: the same for the build
//      target STAGE); no ADD of remote URLs; every -dev package installed is
//      one scripts/install-deps installs.
//
//   node lint-dockerfiles.mjs --install-deps scripts/install-deps \
//        FILE.Dockerfile=SUBCOMMAND[@STAGE]...
import fs from "node:fs";
import { validate } from "dockerfile-utils";
import { DockerfileParser } from "dockerfile-ast";

const args = process.argv.slice(2);
let installDeps = null;
const targets = [];
for (let i = 0; i < args.length; ++i) {
  if (args[i] === "--install-deps") installDeps = args[++i];
  else {
    const [file, spec] = args[i].split("=");
    const [sub, stage] = spec.split("@");
    targets.push({ file, sub, stage: stage ?? null });
  }
}
if (!installDeps || targets.length === 0) {
  console.error("usage: lint-dockerfiles.mjs --install-deps FILE DOCKERFILE=SUBCOMMAND...");
  process.exit(2);
}

const depsText = fs.readFileSync(installDeps, "utf8");
const depsPackages = new Set(depsText.match(/[a-z0-9][a-z0-9+.-]*-dev\b/g) ?? []);

let errors = 0;
function fail(file, line, msg) {
  console.error(`${file}:${line}: ${msg}`);
  ++errors;
}

for (const { file, sub, stage } of targets) {
  const text = fs.readFileSync(file, "utf8");
  // 1. dockerfile-utils
  for (const d of validate(text)) {
    const sev = d.severity === 1 ? "error" : "warning";
    fail(file, d.range.start.line + 1, `dockerfile-utils ${sev}: ${d.message}`);
  }
  // 2. project rules
  const df = DockerfileParser.parse(text);
  const froms = df.getFROMs();
  if (froms.length < 2) fail(file, 1, "not multi-stage (build and runtime stages expected)");
  // Build arguments declared before the first FROM, with their defaults.
  const argDefaults = {};
  const firstFrom = froms.length ? froms[0].getRange().start.line : Infinity;
  for (const a of df.getInstructions()) {
    if (a.getKeyword() !== "ARG" || a.getRange().start.line > firstFrom) continue;
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)(?:=(.*))?$/.exec(a.getArgumentsContent() ?? "");
    if (m) argDefaults[m[1]] = (m[2] ?? "").replace(/^"(.*)"$/, "$1");
  }
  const stages = new Set(froms.map((g) => g.getBuildStage()).filter(Boolean));
  for (const f of froms) {
    const raw = f.getArguments()[0]?.getValue() ?? "";
    const line = f.getRange().start.line + 1;
    let missing = null;
    const image = raw.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (m, a, b) => {
      const n = a ?? b;
      if (!(n in argDefaults) || argDefaults[n] === "") missing = n;
      return argDefaults[n] ?? "";
    });
    if (missing) {
      fail(file, line, `FROM ${raw}: build argument ${missing} has no default before the first FROM`);
      continue;
    }
    if (stages.has(image)) continue;
    const slash = image.lastIndexOf("/");
    const colon = image.lastIndexOf(":");
    const tag = colon > slash ? image.slice(colon + 1) : null;
    if (!tag || tag === "latest") {
      fail(file, line, `FROM ${raw}${raw !== image ? ` (= ${image})` : ""}: pin a tag other than latest`);
    }
  }
  for (const ins of df.getInstructions()) {
    const line = ins.getRange().start.line + 1;
    const kw = ins.getKeyword();
    const body = ins.getRawArgs?.() ?? ins.getTextContent();
    if (kw === "ADD" && /https?:\/\//.test(body)) fail(file, line, "ADD of a URL: use curl with a checksum");
    if (kw === "RUN" && /apt-get\s+(-\S+\s+)*install/.test(body)) {
      if (!/--no-install-recommends/.test(body)) fail(file, line, "apt-get install without --no-install-recommends");
      if (!/rm -rf \/var\/lib\/apt\/lists/.test(body)) fail(file, line, "apt lists not removed in the same RUN");
      if (!/\s-y\b/.test(body)) fail(file, line, "apt-get install without -y");
      for (const p of body.match(/[a-z0-9][a-z0-9+.-]*-dev\b/g) ?? []) {
        if (!depsPackages.has(p)) fail(file, line, `${p} is not installed by ${installDeps}`);
      }
    }
  }
  // The image's stage (the last, or @STAGE): USER and ENTRYPOINT.
  const all = df.getInstructions();
  const idx = stage === null ? froms.length - 1 : froms.findIndex((g) => g.getBuildStage() === stage);
  if (idx < 0) {
    fail(file, 1, `no build stage named ${stage}`);
    continue;
  }
  const lastFrom = froms[idx];
  const stageEnd = idx + 1 < froms.length ? froms[idx + 1].getRange().start.line : Infinity;
  const finalStage = all.filter((i) => i.getRange().start.line > lastFrom.getRange().start.line &&
                                       i.getRange().start.line < stageEnd);
  const users = finalStage.filter((i) => i.getKeyword() === "USER");
  if (users.length === 0) {
    fail(file, lastFrom.getRange().start.line + 1, "final stage has no USER (runs as root)");
  } else {
    const u = users[users.length - 1].getArgumentsContent().trim();
    const uid = u.split(":")[0];
    if (!/^\d+$/.test(uid) || uid === "0") {
      fail(file, users[users.length - 1].getRange().start.line + 1,
           `USER ${u}: use a numeric non-zero uid (runAsNonRoot cannot check names)`);
    }
  }
  const eps = finalStage.filter((i) => i.getKeyword() === "ENTRYPOINT");
  if (eps.length === 0) {
    fail(file, lastFrom.getRange().start.line + 1, "final stage has no ENTRYPOINT");
  } else {
    const ep = eps[eps.length - 1];
    let argv = null;
    try {
      argv = JSON.parse(ep.getArgumentsContent());
    } catch {
      fail(file, ep.getRange().start.line + 1, "ENTRYPOINT is not in exec (JSON) form");
    }
    if (argv) {
      const i = argv.findIndex((a) => a === "smoe" || a.endsWith("/smoe"));
      if (i < 0 || argv[i + 1] !== sub) {
        fail(file, ep.getRange().start.line + 1, `ENTRYPOINT does not run 'smoe ${sub}'`);
      }
    }
  }
}

console.log(`lint-dockerfiles: ${targets.length} Dockerfiles, ${errors} problems`);
process.exit(errors ? 1 : 0);
