#!/usr/bin/env bash
# Prints the Debian/Ubuntu packages that own the shared libraries the given
# binaries load (from ldd), one per line, sorted: what a runtime image must
# install. Libraries outside dpkg (LibTorch in /opt, CUDA in /usr/local) are
# skipped; the worker image copies or inherits those. A library no package
# owns is named on stderr. One dpkg query for all libraries (a query per
# library took minutes for smoe-trainer's ~250).
# Usage: deploy/docker/runtime-packages.sh BINARY...
set -euo pipefail
mapfile -t libs < <(for bin in "$@"; do
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3}'
done | sort -u | grep -v -E '^/(opt|usr/local)/' || true)
((${#libs[@]})) || exit 0
# Each library by its own path, its resolved path and the /usr-merged
# variants of both (Debian 12 lists /lib files under /lib, the loader may
# report /usr/lib, and the reverse).
declare -A cands=()
for lib in "${libs[@]}"; do
  real=$(readlink -f "$lib")
  for p in "$lib" "$real"; do
    cands[$p]=1
    case "$p" in
      /usr/*) cands[${p#/usr}]=1 ;;
      *) cands[/usr$p]=1 ;;
    esac
  done
done
owned=$(dpkg -S "${!cands[@]}" 2>/dev/null || true)
for lib in "${libs[@]}"; do
  real=$(readlink -f "$lib")
  hit=""
  for p in "$lib" "$real" "/usr${lib#/usr}" "${lib#/usr}" "/usr${real#/usr}" "${real#/usr}"; do
    hit=$(awk -v p="$p" -F': ' '$2 == p {print $1; exit}' <<<"$owned")
    [[ -n "$hit" ]] && break
  done
  if [[ -n "$hit" ]]; then
    echo "$hit"
  else
    echo "runtime-packages: no package owns $lib" >&2
  fi
done | tr ',' '\n' | sed 's/^ *//' | cut -d: -f1 | sort -u
