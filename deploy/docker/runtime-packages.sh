#!/usr/bin/env bash
# Prints the Debian/Ubuntu packages that own the shared libraries the given
# binaries load (from ldd), one per line, sorted: what a runtime image must
# install. Libraries outside dpkg (LibTorch in /opt, CUDA in /usr/local) are
# skipped; the worker image copies or inherits those.
# Usage: deploy/docker/runtime-packages.sh BINARY...
set -euo pipefail
for bin in "$@"; do
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  case "$lib" in /opt/* | /usr/local/*) continue ;; esac
  real=$(readlink -f "$lib")
  dpkg -S "$real" 2>/dev/null || dpkg -S "$lib" 2>/dev/null ||
    dpkg -S "/usr${lib#/usr}" 2>/dev/null || echo "runtime-packages: no package owns $lib" >&2
done | cut -d: -f1 | sort -u
