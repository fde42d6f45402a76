#!/usr/bin/env bash
# Makes the Debian 12 base image of the SMoE Lab images without a registry:
# `debootstrap --variant=minbase bookworm`, then `podman import`. The result
# stands in for debian:12-slim (deploy/docker/*.Dockerfile, build argument
# BASE_IMAGE). Needs root (debootstrap), podman and a Debian mirror.
# Usage: deploy/images/make-base.sh [--tag NAME] [--mirror URL] [--force]
#   --tag     image name (default localhost/smoe-debian:12)
#   --mirror  Debian mirror (default http://deb.debian.org/debian)
#   --force   rebuild even when the image exists
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=podman.sh
. "$here/podman.sh"
tag=localhost/smoe-debian:12
mirror=http://deb.debian.org/debian
force=0
while (($#)); do
  case "$1" in
    --tag) tag=${2:?--tag needs a value}; shift ;;
    --mirror) mirror=${2:?--mirror needs a value}; shift ;;
    --force) force=1 ;;
    *) echo "make-base: unknown argument '$1' (usage: [--tag NAME] [--mirror URL] [--force])" >&2; exit 64 ;;
  esac
  shift
done
if ((!force)) && smoe_podman image exists "$tag"; then
  echo "make-base: $tag exists (--force rebuilds)"
  exit 0
fi
for tool in debootstrap "${SMOE_PODMAN:-podman}"; do
  command -v "$tool" >/dev/null || { echo "make-base: $tool not found (scripts/install-deps installs it)" >&2; exit 69; }
done
[[ $(id -u) -eq 0 ]] || { echo "make-base: debootstrap needs root" >&2; exit 77; }
dir=$(mktemp -d "${TMPDIR:-/var/tmp}/smoe-base.XXXXXX")
trap 'rm -rf "$dir"' EXIT
start=$(date +%s)
# The rootfs is written under a 0755 directory: mktemp's 0700 would become
# the image's / mode.
chmod 0755 "$dir"
debootstrap --variant=minbase bookworm "$dir" "$mirror" >"$dir.log" 2>&1 || {
  tail -20 "$dir.log" >&2; echo "make-base: debootstrap failed (log above)" >&2; rm -f "$dir.log"; exit 1; }
rm -f "$dir.log"
# What debian:12-slim has and minbase lacks: the updates and security
# suites, no documentation or man pages, no apt caches kept.
cat >"$dir/etc/apt/sources.list" <<SRC
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
SRC
cat >"$dir/etc/dpkg/dpkg.cfg.d/smoe-slim" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
CFG
cat >"$dir/etc/apt/apt.conf.d/smoe-clean" <<'CFG'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
APT::Install-Recommends "false";
CFG
rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/archives/*.deb "$dir"/usr/share/doc/* \
  "$dir"/usr/share/man/* "$dir"/usr/share/locale/*
# /etc/resolv.conf and /etc/hostname are the engine's at run time.
rm -f "$dir/etc/resolv.conf" "$dir/etc/hostname"
tar --numeric-owner -C "$dir" -c . |
  smoe_podman import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/bash"]' - "$tag" >/dev/null
echo "make-base: $tag ($(cat "$dir/etc/debian_version"), $(smoe_podman image inspect --format '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}')) in $(( $(date +%s) - start )) s"
