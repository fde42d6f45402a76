#!/usr/bin/env bash
# Builds the SMoE Lab images with podman, without a container registry:
#   localhost/smoe-coordinator:TAG   deploy/docker/coordinator.Dockerfile
#   localhost/smoe-worker-cpu:TAG    deploy/docker/worker.Dockerfile, target
#                                    worker-cpu (Debian's CPU LibTorch)
# on the local Debian 12 base (make-base.sh) and, for a source build of the
# coordinator, the local Node.js image (make-node.sh). Run from anywhere; the
# build context is the repository root.
# Usage: deploy/images/build.sh [--prebuilt BUILD_DIR] [--tag TAG] [--only IMAGE]
#   --prebuilt DIR  take smoe and smoe-trainer from DIR/bin (a Release build
#                   on Debian 12, e.g. ./build) instead of compiling them in
#                   the image build (BINARIES=prebuilt): what CI does, minutes
#                   instead of a full compile. A CUDA build's worker image
#                   also carries the toolkit's CUDA runtime libraries its
#                   binaries load (libcudart, libnccl, ...)
#   --tag TAG       image tag (default dev)
#   --only IMAGE    coordinator or worker-cpu (default both)
# Prints the time of each step.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=podman.sh
. "$here/podman.sh"
prebuilt="" tag=dev only=""
while (($#)); do
  case "$1" in
    --prebuilt) prebuilt=${2:?--prebuilt needs a build directory}; shift ;;
    --tag) tag=${2:?--tag needs a value}; shift ;;
    --only) only=${2:?--only needs coordinator or worker-cpu}; shift ;;
    *) echo "images/build.sh: unknown argument '$1' (usage: [--prebuilt BUILD_DIR] [--tag TAG] [--only coordinator|worker-cpu])" >&2; exit 64 ;;
  esac
  shift
done
case "$only" in ""|coordinator|worker-cpu) ;; *) echo "images/build.sh: --only '$only' is not an image (coordinator, worker-cpu)" >&2; exit 64 ;; esac
[[ "$tag" =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || { echo "images/build.sh: --tag '$tag' is not an image tag" >&2; exit 64; }
base=localhost/smoe-debian:12
node=localhost/smoe-node:22.12.0
step() {  # name command...
  local t0=$SECONDS
  "${@:2}"
  echo "images/build.sh: $1: $((SECONDS - t0)) s"
}
step base "$here/make-base.sh" --tag "$base"
args=(--build-arg "BASE_IMAGE=$base")
ctx=""
if [[ -n "$prebuilt" ]]; then
  bin=$(cd "$prebuilt" && pwd)/bin
  for b in smoe smoe-trainer; do
    [[ -x "$bin/$b" ]] || { echo "images/build.sh: --prebuilt $prebuilt: no $bin/$b (scripts/build default smoe smoe-trainer)" >&2; exit 66; }
  done
  # The images install a binary's libraries from Debian packages. A CUDA
  # build (the CUDA toolkit's nvcc found: CI's machines have one) also loads
  # the CUDA runtime libraries of the toolkit (libcudart, libnccl, libcublas,
  # libcublasLt): the worker image carries those files, the binaries' own
  # dynamic dependencies (they load without a GPU; a GPU node adds only the
  # driver). Any other library outside dpkg (LibTorch in /opt, a library not
  # found) would be missing at run time: refused. The coordinator links no
  # CUDA (docs/development.md): its image takes no such library.
  ldd_outside() {  # binary... -> "soname path" for libraries outside dpkg
    ldd "$@" | awk '$2 == "=>" && ($3 ~ /^\/(usr\/local|opt)\// || $3 == "not") {print $1, $3}' | sort -u
  }
  is_cuda_runtime() { [[ $1 =~ ^lib(cudart|nccl|cublas|cublasLt)\.so(\.[0-9]+)*$ && $2 == /* ]]; }
  refuse_outside() {  # image lines...
    local img=$1; shift
    echo "images/build.sh: --prebuilt $prebuilt: the $img image's binaries load libraries no Debian package provides:" >&2
    printf '  %s\n' "$@" >&2
    echo "images/build.sh: build binaries against Debian's LibTorch, e.g." \
      "cmake --preset default -B build-cpu -DSMOE_WITH_CUDA=OFF && cmake --build build-cpu --target smoe smoe-trainer" >&2
    exit 65
  }
  mapfile -t coord_out < <(ldd_outside "$bin/smoe")
  ((${#coord_out[@]} == 0)) || refuse_outside coordinator "${coord_out[@]}"
  ctx=$(mktemp -d "${TMPDIR:-/tmp}/smoe-prebuilt.XXXXXX")
  trap 'rm -rf "$ctx"' EXIT
  mkdir "$ctx/coordinator" "$ctx/worker-cpu" "$ctx/worker-cpu/cuda-lib"
  bad=()
  while read -r soname path; do
    [[ -n "$soname" ]] || continue
    if is_cuda_runtime "$soname" "$path"; then
      install -m 0644 "$(readlink -f "$path")" "$ctx/worker-cpu/cuda-lib/$soname"
    else
      bad+=("$soname => $path")
    fi
  done < <(ldd_outside "$bin/smoe" "$bin/smoe-trainer")
  ((${#bad[@]} == 0)) || refuse_outside worker-cpu "${bad[@]}"
  cuda_libs=$(cd "$ctx/worker-cpu/cuda-lib" && ls)
  [[ -z "$cuda_libs" ]] || echo "images/build.sh: worker-cpu carries the CUDA runtime libraries of this CUDA build: $(echo $cuda_libs) ($(du -sm "$ctx/worker-cpu/cuda-lib" | cut -f1) MB)"
  install -m 0755 -s "$bin/smoe" "$ctx/coordinator/smoe"
  "$root/deploy/docker/runtime-packages.sh" "$ctx/coordinator/smoe" >"$ctx/coordinator/runtime-packages"
  install -m 0755 -s "$bin/smoe" "$bin/smoe-trainer" "$ctx/worker-cpu/"
  "$root/deploy/docker/runtime-packages.sh" "$ctx/worker-cpu/smoe" "$ctx/worker-cpu/smoe-trainer" \
    >"$ctx/worker-cpu/runtime-packages"
  args+=(--build-arg BINARIES=prebuilt)
else
  step node "$here/make-node.sh" --tag "$node"
  # Explicit: podman 4.3 resolves `FROM binaries-${BINARIES}` to the stage
  # only for an ARG given with --build-arg, not for its default.
  args+=(--build-arg "NODE_IMAGE=$node" --build-arg BINARIES=source)
  # The host's npm trusts a CA bundle of its own (a TLS-inspecting proxy on
  # the way to the registry): the dashboard's npm install in the image needs
  # it too, or it hangs. Mounted for the RUN steps only, never in a layer.
  cafile=$(npm config get cafile 2>/dev/null || true)
  if [[ -n "$cafile" && "$cafile" != null && "$cafile" != undefined && -f "$cafile" ]]; then
    args+=(-v "$cafile:/etc/ssl/certs/host-npm-ca.crt:ro" --build-arg NPM_CONFIG_CAFILE=/etc/ssl/certs/host-npm-ca.crt)
  fi
fi
build() {  # image dockerfile [target]
  local extra=()
  [[ -n "$ctx" ]] && extra+=(--build-context "prebuilt=$ctx/$1")
  [[ -n "${3:-}" ]] && extra+=(--target "$3")
  smoe_podman build --quiet --layers=true -f "$root/deploy/docker/$2" "${args[@]}" "${extra[@]}" \
    -t "localhost/smoe-$1:$tag" "$root" >/dev/null
  echo "images/build.sh: localhost/smoe-$1:$tag $(smoe_podman image inspect --format '{{.Size}}' "localhost/smoe-$1:$tag" | awk '{printf "%.0f MB", $1/1e6}')"
}
[[ -z "$only" || "$only" == coordinator ]] && step coordinator build coordinator coordinator.Dockerfile
[[ -z "$only" || "$only" == worker-cpu ]] && step worker-cpu build worker-cpu worker.Dockerfile worker-cpu
exit 0
