#!/bin/sh
# The runtime layer every SMoE Lab image shares (coordinator, CPU worker, CUDA
# worker): installs the packages that own the binaries' shared libraries
# (the file runtime-packages.sh wrote at build time) plus tini and EXTRA
# packages, then creates the smoe user (uid/gid 10001) and its state
# directories (0700, owned by it). Runs as root in a Dockerfile RUN.
# Usage: runtime-setup.sh PACKAGES_FILE HOME_DIR [DIR...] -- [EXTRA_PACKAGE...]
set -eu
pkgs_file=$1
home=$2
shift 2
dirs="$home"
while [ $# -gt 0 ] && [ "$1" != "--" ]; do dirs="$dirs $1"; shift; done
[ $# -gt 0 ] && shift
export DEBIAN_FRONTEND=noninteractive
apt-get update
# shellcheck disable=SC2046
apt-get install -y --no-install-recommends tini "$@" $(cat "$pkgs_file")
rm -rf /var/lib/apt/lists/* "$pkgs_file"
groupadd --system --gid 10001 smoe
useradd --system --uid 10001 --gid 10001 --home-dir "$home" \
  --no-create-home --shell /usr/sbin/nologin smoe
# shellcheck disable=SC2086
install -d -o 10001 -g 10001 -m 0700 $dirs
