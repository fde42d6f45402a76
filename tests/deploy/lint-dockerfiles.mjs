#!/usr/bin/env node
// Lints the deploy Dockerfiles.
//   1. dockerfile-utils (rcjsuen/dockerfile-utils, the linter behind the
//      Dockerfile language server used by VS Code and Eclipse): syntax and
//      instruction checks; any diagnostic, warning or error, fails.
//   2. The project's image rules, on the parsed instructions (dockerfile-ast):
//      multi-stage; every FROM pinned to a tag that is not `latest`; apt-get
//      install with --no-install-recommends and the lists removed in the same
//      RUN; the final stage runs as a numeric non-root USER (so Kubernetes'
//      runAsNonRoot can verify it) and has an exec-form ENTRYPOINT running
//      `smoe <expected subcommand>`; no ADD of remote URLs; every -dev
//      package installed is one scripts/install-deps installs.
//
//   node lint-dockerfiles.mjs --install-deps scripts/install-deps \
//        FILE.Dockerfile=SUBCOMMAND...
import fs from "node:fs";
import { validate } from "dockerfile-utils";
import { DockerfileParser } from "dockerfile-ast";

const args = process.argv.slice(2);
let installDeps = null;
const targets = [];
for (let i = 0; i < args.length; ++i) {
  if (args[i] === "--install-deps") installDeps = args[++i];
  else {
    const [file, sub] = args[i].split("=");
    targets.push({ file, sub });
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

for (const { file, sub } of targets) {
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
  for (const f of froms) {
    const image = f.getImageName();
    const tag = f.getImageTag();
    const line = f.getRange().start.line + 1;
    const stageRef = froms.some((g) => g.getBuildStage() === image);
    if (!stageRef && (!tag || tag === "latest")) {
      fail(file, line, `FROM ${image}: pin a tag other than latest`);
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
  // Final stage: USER and ENTRYPOINT.
  const all = df.getInstructions();
  const lastFrom = froms[froms.length - 1];
  const finalStage = all.filter((i) => i.getRange().start.line > lastFrom.getRange().start.line);
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
