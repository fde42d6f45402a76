#!/usr/bin/env bash
# One kernel source, two compilers (docs/kernels.md 7): every kernel launch
# and every __shared__ declaration in the tree is spelled with the portable
# macros of kernels/common/cuda_launch.cuh (SMOE_LAUNCH, SMOE_SHARED,
# SMOE_DYNAMIC_SHARED), which are plain CUDA under nvcc and the CPU
# emulator's spelling under g++. A raw triple-chevron launch or a raw
# `__shared__` would compile under nvcc only and bypass the emulator, so it
# fails here. Scans every .cu, .cuh, .cc and .h file outside build trees;
# comments are ignored; the macros' own definitions (cuda_launch.cuh) are
# the one allowed place.
#
# Usage: tests/quality/check-raw-cuda.sh [--selftest]
set -euo pipefail
cd "$(dirname "$0")/../.."

allowed='kernels/common/cuda_launch.cuh'

# Prints one line per violation in the given files; returns 1 if any.
scan() {
  local bad=0 f
  for f in "$@"; do
    [[ -f $f ]] || continue
    [[ $f == "$allowed" || $f == "./$allowed" ]] && continue
    # Drop // comments and /* */ comments on one line, then look for the
    # raw spellings.
    while IFS= read -r hit; do
      echo "$f:$hit: raw CUDA launch or __shared__ (use SMOE_LAUNCH / SMOE_SHARED / SMOE_DYNAMIC_SHARED from kernels/common/cuda_launch.cuh)"
      bad=1
    done < <(sed -e 's|//.*$||' -e 's|/\*.*\*/||g' "$f" |
      grep -nE '<<<|(^|[^A-Za-z0-9_])__shared__([^A-Za-z0-9_]|$)' | cut -d: -f1)
  done
  return $bad
}

selftest() {
  local dir
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' RETURN
  printf '  Kernel<<<grid, block, 0, s>>>(x);\n' >"$dir/bad1.cu"
  printf '  __shared__ int s[32];\n' >"$dir/bad2.cu"
  printf 'extern __shared__ float dyn[];\n' >"$dir/bad3.cuh"
  printf '  SMOE_LAUNCH(Kernel, grid, block, 0, s, x);  // not <<<\n  SMOE_SHARED(int, s, [32]);\n  int my__shared__x = 1;  /* __shared__ */\n' >"$dir/good.cu"
  local f
  for f in bad1.cu bad2.cu bad3.cuh; do
    if scan "$dir/$f" >/dev/null; then
      echo "selftest: $f was not flagged"
      return 1
    fi
  done
  if ! scan "$dir/good.cu"; then
    echo "selftest: good.cu was flagged"
    return 1
  fi
  echo "selftest: ok"
}

if [[ ${1:-} == --selftest ]]; then
  selftest
  exit
fi
mapfile -t files < <(git ls-files '*.cu' '*.cuh' '*.cc' '*.h' 2>/dev/null ||
  find . -path ./build -prune -o \( -name '*.cu' -o -name '*.cuh' -o -name '*.cc' -o -name '*.h' \) -print)
scan "${files[@]}"
echo "no raw CUDA launches or __shared__ outside $allowed (${#files[@]} files)"
