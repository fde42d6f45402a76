#!/usr/bin/env node
// Offline validation of rendered Kubernetes manifests against the Kubernetes
// API schemas; no cluster, no network.
//
//   node validate-k8s.mjs FILE.yaml...      (multi-document YAML; '-' = stdin)
//
// Two checks per object, both from schemas generated from the Kubernetes
// OpenAPI document and shipped inside pinned npm packages:
//   1. kubernetes-models (tommy351/kubernetes-models-ts): JSON-schema
//      validation compiled with ajv: required fields, types, enums, formats
//      (int32, quantities as strings, IntOrString...).
//   2. @kubernetes/client-node (the official Kubernetes JavaScript client):
//      its generated models list every field of every API type; any field
//      not in them is an error (what `kubectl apply --validate=strict` and
//      kubeconform -strict reject: a typo such as `imagePullPolice`).
// An object whose apiVersion/kind has no schema is an error too.
// Exit 0: all valid; 1: errors (one line each, "file: Kind/name: path: why").
import fs from "node:fs";
import * as yaml from "js-yaml";
// Only the generated models: the client itself needs a newer Node.js.
import * as k8s from "@kubernetes/client-node/dist/gen/models/all.js";

function versionPrefix(apiVersion) {
  const version = apiVersion.includes("/") ? apiVersion.split("/")[1] : apiVersion;
  return version.charAt(0).toUpperCase() + version.slice(1);
}

function groupPrefix(apiVersion) {
  if (!apiVersion.includes("/")) return "Core";
  const group = apiVersion.split("/")[0].split(".")[0];
  return group.charAt(0).toUpperCase() + group.slice(1);
}

// The client-node model class for apiVersion/kind, e.g. apps/v1 Deployment ->
// V1Deployment; kinds that exist in several groups carry the group
// (events.k8s.io/v1 Event -> EventsV1Event).
function modelClass(apiVersion, kind) {
  const v = versionPrefix(apiVersion);
  const candidates = [`${groupPrefix(apiVersion)}${v}${kind}`, `${v}${kind}`];
  for (const name of candidates) {
    if (typeof k8s[name] === "function" && k8s[name].attributeTypeMap) return name;
  }
  return null;
}

const kScalar = new Set(["string", "number", "boolean", "Date", "any", "object", "IntOrString"]);

// Reports every field of `value` that the model type does not declare.
function strictWalk(value, type, path, errors) {
  if (value === null || value === undefined) return;
  let m;
  if ((m = /^Array<(.+)>$/.exec(type))) {
    if (!Array.isArray(value)) return;  // type errors are kubernetes-models' job
    value.forEach((v, i) => strictWalk(v, m[1], `${path}/${i}`, errors));
    return;
  }
  if ((m = /^\{ \[key: string\]: (.+); \}$/.exec(type))) {
    if (typeof value !== "object") return;
    for (const [k, v] of Object.entries(value)) strictWalk(v, m[1], `${path}/${k}`, errors);
    return;
  }
  if (kScalar.has(type)) return;
  const cls = k8s[type];
  if (!cls || !cls.attributeTypeMap) {
    errors.push(`${path}: no model for type ${type}`);
    return;
  }
  if (typeof value !== "object" || Array.isArray(value)) return;
  const fields = new Map(cls.attributeTypeMap.map((a) => [a.baseName, a.type]));
  for (const [k, v] of Object.entries(value)) {
    if (!fields.has(k)) {
      errors.push(`${path}/${k}: unknown field (not in ${type})`);
      continue;
    }
    strictWalk(v, fields.get(k), `${path}/${k}`, errors);
  }
}

async function schemaValidate(obj) {
  const { apiVersion, kind } = obj;
  const group = apiVersion.includes("/") ? apiVersion.split("/")[0] : null;
  const version = apiVersion.includes("/") ? apiVersion.split("/")[1] : apiVersion;
  const modulePath = group
    ? `kubernetes-models/${group}/${version}/${kind}`
    : `kubernetes-models/${version}/${kind}`;
  let mod;
  try {
    mod = await import(modulePath);
  } catch {
    return [`no schema for ${apiVersion} ${kind}`];
  }
  const Model = mod[kind] ?? mod.default;
  try {
    new Model(obj).validate();
    return [];
  } catch (e) {
    return String(e.message)
      .split(/, (?=data)/)
      .map((s) => s.replace(/^data/, ""));
  }
}

export async function validateObject(obj) {
  if (!obj || typeof obj !== "object") return ["not a mapping"];
  if (typeof obj.apiVersion !== "string" || typeof obj.kind !== "string") {
    return ["missing apiVersion or kind"];
  }
  // Go's base64 decoder (what the API server uses for `format: byte`) skips
  // line breaks, and kustomize wraps long Secret values: drop them first.
  if (obj.kind === "Secret" && obj.data && typeof obj.data === "object") {
    obj = { ...obj, data: Object.fromEntries(Object.entries(obj.data).map(
        ([k, v]) => [k, typeof v === "string" ? v.replace(/[\r\n]/g, "") : v])) };
  }
  const errors = await schemaValidate(obj);
  const cls = modelClass(obj.apiVersion, obj.kind);
  if (!cls) {
    errors.push(`no field list for ${obj.apiVersion} ${obj.kind}`);
  } else {
    strictWalk(obj, cls, "", errors);
  }
  return errors;
}

export function loadDocuments(text) {
  return yaml.loadAll(text).filter((d) => d !== null && d !== undefined);
}

async function main(files) {
  if (files.length === 0) {
    console.error("usage: validate-k8s.mjs FILE.yaml... ('-' = stdin)");
    return 2;
  }
  let bad = 0, total = 0;
  for (const file of files) {
    const text = fs.readFileSync(file === "-" ? 0 : file, "utf8");
    let docs;
    try {
      docs = loadDocuments(text);
    } catch (e) {
      console.error(`${file}: YAML: ${e.message}`);
      ++bad;
      continue;
    }
    if (docs.length === 0) {
      console.error(`${file}: no objects`);
      ++bad;
    }
    for (const obj of docs) {
      ++total;
      const name = `${obj?.kind ?? "?"}/${obj?.metadata?.name ?? "?"}`;
      const errors = await validateObject(obj);
      for (const e of errors) console.error(`${file}: ${name}: ${e}`);
      if (errors.length) ++bad;
    }
  }
  console.log(`validate-k8s: ${total - bad}/${total} objects valid`);
  return bad ? 1 : 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.exitCode = await main(process.argv.slice(2));
}
