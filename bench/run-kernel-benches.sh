#!/usr/bin/env bash
# Runs the dispatch-kernel benchmarks on a GPU machine and writes one results
# file: bench/results/kernels-<gpu>-<date>.md (machine, date, commit, tables).
# Usage (repository root, on the lent GPU):
#   cmake --preset gpu && cmake --build --preset gpu -j"$(nproc)" \
#     --target smoe_bench_router_topk smoe_bench_permute smoe_bench_grouped_gemm
#   bench/run-kernel-benches.sh [BUILD_DIR]        # default build-gpu
set -euo pipefail
build="${1:-build-gpu}"
gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr ' ' '-')"
date="$(date -u +%Y-%m-%d)"
out="bench/results/kernels-${gpu}-${date}.md"
{
  echo "# Dispatch kernel benchmarks"
  echo
  echo "- machine: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
  echo "- date: ${date}"
  echo "- commit: $(git rev-parse --short HEAD)$(git diff --quiet || echo '-dirty')"
  echo "- build: ${build} ($(grep -m1 CMAKE_BUILD_TYPE "${build}/CMakeCache.txt" || true))"
  for b in router_topk permute grouped_gemm; do
    echo
    echo "## ${b}"
    echo
    echo '```'
    "${build}/bench/${b}_bench"
    echo '```'
  done
} | tee "${out}"
echo "wrote ${out}" >&2
