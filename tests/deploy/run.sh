#!/usr/bin/env bash
# ctest driver for the deploy/ checks (label `deploy`). Usage:
#   run.sh overlays               render every overlay with `kubectl kustomize`,
#                                 validate against the Kubernetes API schemas
#                                 (validate-k8s.mjs) and the policy
#                                 (check-policy.mjs)
#   run.sh validator-selftest     the validators reject known-bad manifests
#   run.sh cli-flags SMOE         every smoe command/flag in the rendered
#                                 manifests and docs exists (check-cli-flags.mjs)
#   run.sh dockerfile-lint        lint-dockerfiles.mjs on deploy/docker
#   run.sh render-cmd SMOE        `smoe deploy render` output validates and has
#                                 the requested workers, GPUs and image tag
# Tools: kubectl (kustomize built in) and the pinned npm packages of
# tests/deploy/package.json (installed by scripts/install-deps). Exit 77 (skip)
# only when one of them is missing and cannot be installed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mode=${1:?mode}
shift

need_node_modules() {
  if [[ ! -d "$here/node_modules/kubernetes-models" ]]; then
    echo "run.sh: tests/deploy/node_modules missing; running npm ci"
    # ctest runs these tests in parallel: one npm ci at a time.
    if ! (cd "$here" && flock "${TMPDIR:-/tmp}/smoe-deploy-npm.lock" \
            sh -c '[ -d node_modules/kubernetes-models ] || npm ci --no-audit --no-fund' \
            >/dev/null 2>&1); then
      echo "SKIP: npm ci in tests/deploy failed (no npm or no registry);" \
           "run scripts/install-deps"
      exit 77
    fi
  fi
}

need_kubectl() {
  if ! kubectl kustomize --help >/dev/null 2>&1; then
    echo "SKIP: kubectl with kustomize not found; Debian 12 packages only" \
         "kubectl 1.20 (kubernetes-client), too old for kustomize v5 syntax"
    exit 77
  fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Renders overlay $1 into $tmp/$1.yaml, from a copy of deploy/k8s with a
# throwaway token (the real one is never in the repository).
render() {
  if [[ ! -d "$tmp/k8s" ]]; then
    cp -r "$root/deploy/k8s" "$tmp/k8s"
  fi
  (umask 077 && echo "smoe_test_token_not_secret" >"$tmp/k8s/overlays/$1/token")
  (umask 077 && echo "smoe_test_worker_token_not_secret" >"$tmp/k8s/overlays/$1/worker-token")
  printf 'k8s-workers\tworker\t0\t%s\n' \
    "$(printf smoe_test_worker_token_not_secret | sha256sum | cut -d' ' -f1)" \
    >"$tmp/k8s/overlays/$1/tokens"
  kubectl kustomize "$tmp/k8s/overlays/$1" >"$tmp/$1.yaml"
}

overlays() {
  find "$root/deploy/k8s/overlays" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort
}

case "$mode" in
  overlays)
    need_kubectl
    need_node_modules
    files=()
    for o in $(overlays); do
      render "$o"
      echo "rendered overlay $o: $(grep -c '^kind:' "$tmp/$o.yaml") objects"
      files+=("$tmp/$o.yaml")
    done
    node "$here/validate-k8s.mjs" "${files[@]}"
    node "$here/check-policy.mjs" "${files[@]}"
    ;;
  validator-selftest)
    need_kubectl
    need_node_modules
    render gpu-cluster
    good="$tmp/gpu-cluster.yaml"
    fails=0
    expect_reject() {  # name, validator, sed expression
      sed -e "$3" "$good" >"$tmp/bad.yaml"
      if cmp -s "$good" "$tmp/bad.yaml"; then
        echo "selftest $1: the mutation changed nothing"; fails=$((fails + 1)); return
      fi
      if node "$here/$2" "$tmp/bad.yaml" >/dev/null 2>&1; then
        echo "selftest $1: $2 accepted a bad manifest"; fails=$((fails + 1))
      else
        echo "selftest $1: rejected"
      fi
    }
    expect_reject unknown-field validate-k8s.mjs 's/imagePullPolicy:/imagePullPolice:/'
    expect_reject wrong-type validate-k8s.mjs 's/containerPort: 50051/containerPort: grpc-port/'
    expect_reject bad-enum validate-k8s.mjs 's/protocol: TCP/protocol: QUIC/'
    expect_reject missing-required validate-k8s.mjs 's/^  selector:$/  selectorz:/'
    expect_reject unknown-kind validate-k8s.mjs 's/^kind: PodDisruptionBudget/kind: PodDisruptionBudgets/'
    expect_reject root validate-k8s.mjs 's/runAsUser: 10001/runAsUser: "root"/'
    expect_reject replicas check-policy.mjs '0,/^  replicas: 1$/s//  replicas: 2/'
    expect_reject privilege-escalation check-policy.mjs '0,/allowPrivilegeEscalation: false/s//allowPrivilegeEscalation: true/'
    expect_reject short-grace check-policy.mjs 's/terminationGracePeriodSeconds: 180/terminationGracePeriodSeconds: 60/'
    expect_reject gpu-mismatch check-policy.mjs 's/SMOE_GPUS: "8"/SMOE_GPUS: "4"/'
    expect_reject doctor-gpus check-policy.mjs '/name: doctor$/,/volumeMounts:/s/nvidia.com\/gpu: "8"/nvidia.com\/gpu: "1"/'
    expect_reject open-grpc check-policy.mjs '0,/kubernetes.io\/metadata.name: ingress-nginx/s//kubernetes.io\/metadata.name: default/;0,/port: http$/s//port: grpc/'
    echo "validator-selftest: $fails failures"
    [[ $fails -eq 0 ]]
    ;;
  cli-flags)
    smoe=${1:?smoe binary}
    need_kubectl
    need_node_modules
    files=()
    for o in $(overlays); do
      render "$o"
      files+=("$tmp/$o.yaml")
    done
    docs=()
    for d in "$root/docs/deploy.md" "$root/deploy/README.md"; do
      [[ -f "$d" ]] && docs+=(--docs "$d")
    done
    node "$here/check-cli-flags.mjs" --smoe "$smoe" --docker-dir "$root/deploy/docker" \
      "${docs[@]}" "${files[@]}"
    ;;
  dockerfile-lint)
    need_node_modules
    node "$here/lint-dockerfiles.mjs" --install-deps "$root/scripts/install-deps" \
      "$root/deploy/docker/coordinator.Dockerfile=coordinator" \
      "$root/deploy/docker/worker.Dockerfile=worker" \
      "$root/deploy/docker/worker.Dockerfile=worker@worker-cpu"
    ;;
  render-cmd)
    smoe=${1:?smoe binary}
    need_kubectl
    need_node_modules
    token="$tmp/token"
    "$smoe" deploy render --manifests-dir "$root/deploy/k8s" --workers 3 \
      --gpus-per-worker 2 --image-tag 9.9.9-test --token-file "$token" \
      --output "$tmp/render.yaml"
    [[ "$(stat -c %a "$token")" == 600 ]] || { echo "token file not 0600"; exit 1; }
    [[ "$(stat -c %a "$tmp/render.yaml")" == 600 ]] || { echo "output not 0600"; exit 1; }
    want=$(base64 -w0 <"$token")
    tr -d ' \n' <"$tmp/render.yaml" | grep -qF "token:|$want" || { echo "rendered Secret does not hold the token"; exit 1; }
    # The workers mount a worker-role token of their own, not the admin one;
    # the coordinator gets its hash (never the token) in the tokens Secret.
    [[ "$(stat -c %a "$token-worker")" == 600 ]] || { echo "worker token file not 0600"; exit 1; }
    want_worker=$(base64 -w0 <"$token-worker")
    tr -d ' \n' <"$tmp/render.yaml" | grep -qF "token:|$want_worker" || { echo "rendered worker Secret does not hold the worker token"; exit 1; }
    worker_hash=$(tr -d '\n' <"$token-worker" | sha256sum | cut -d' ' -f1)
    grep -q "name: smoe-worker-token" "$tmp/render.yaml" || { echo "no smoe-worker-token Secret"; exit 1; }
    grep -q "secretName: smoe-worker-token" "$tmp/render.yaml" || { echo "workers do not mount smoe-worker-token"; exit 1; }
    grep -q -- "--tokens-file=/etc/smoe/tokens/tokens" "$tmp/render.yaml" || { echo "the coordinator does not read the tokens file"; exit 1; }
    # The Secret's data (base64, folded as a YAML block).
    tokens_b64=$(awk '/^  tokens: \|$/ {on=1; next} on && /^    / {gsub(/ /, ""); printf "%s", $0; next} {on=0}' "$tmp/render.yaml")
    base64 -d <<<"$tokens_b64" | grep -qP "^k8s-workers\tworker\t[0-9]+\t$worker_hash\$" \
      || { echo "the tokens Secret does not hold the worker token's hash"; exit 1; }
    if base64 -d <<<"$tokens_b64" | grep -qF "$(tr -d '\n' <"$token-worker")"; then
      echo "the tokens Secret holds the worker token itself"; exit 1
    fi
    echo "worker token hash: ${worker_hash:0:12}"
    node "$here/validate-k8s.mjs" "$tmp/render.yaml"
    node "$here/check-policy.mjs" --expect-workers 3 --expect-gpus 2 \
      --expect-image-tag 9.9.9-test "$tmp/render.yaml"
    "$smoe" deploy render --manifests-dir "$root/deploy/k8s" --overlay single-node \
      --workers 1 --gpus-per-worker 8 --token-file "$token" >"$tmp/single.yaml"
    node "$here/check-policy.mjs" --expect-workers 1 --expect-gpus 8 "$tmp/single.yaml"
    # The doctor init container (components/worker-doctor) is rendered with
    # the worker's GPU count and image (check-policy above checks both); an
    # overlay without the component renders without it.
    grep -q 'name: doctor$' "$tmp/render.yaml" \
      || { echo "render: the doctor init container is missing"; exit 1; }
    cp -r "$root/deploy/k8s" "$tmp/nodoctor"
    sed -i '/^# The worker self-check/,$d' "$tmp/nodoctor/overlays/single-node/kustomization.yaml"
    "$smoe" deploy render --manifests-dir "$tmp/nodoctor" --overlay single-node \
      --workers 1 --gpus-per-worker 2 --token-file "$token" >"$tmp/nodoctor.yaml"
    if grep -q 'name: doctor$' "$tmp/nodoctor.yaml"; then
      echo "render: an overlay without worker-doctor still got the init container"; exit 1
    fi
    node "$here/check-policy.mjs" --expect-workers 1 --expect-gpus 2 "$tmp/nodoctor.yaml"
    if "$smoe" deploy render --manifests-dir "$root/deploy/k8s" --overlay nope \
         --token-file "$token" >/dev/null 2>&1; then
      echo "an unknown overlay was accepted"; exit 1
    fi
    echo "render-cmd: ok"
    ;;
  *)
    echo "run.sh: unknown mode $mode" >&2
    exit 2
    ;;
esac
