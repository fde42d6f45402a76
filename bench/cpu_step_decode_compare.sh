#!/usr/bin/env bash
# Copyright 2026 SMoE Lab authors.
#
# Issue 19: ours vs a baseline build vs the PyTorch eager peers, 1 and 2
# threads, interleaved in one run, with machine, load and commit.
#
#   bench/cpu_step_decode_compare.sh [BUILD_DIR] [BASE_SRAVEN_BENCH]
#
# BUILD_DIR (default build): sraven_train_bench and mixtral_decode_bench of
# this commit. BASE_SRAVEN_BENCH: a sraven_train_bench built from the
# baseline commit (optional). Mixtral's "before" is this binary with
# SMOE_MIXTRAL_DECODE_KERNELS=off (the LibTorch path the kernels replace).
# ROUNDS (default 2), STEPS (SRAVEN timed steps, default 3), KS (1,2,8),
# THREADS ("1 2"), PART (all | sraven | decode).
set -u
BUILD=${1:-build}
BASE=${2:-}
ROUNDS=${ROUNDS:-2}
STEPS=${STEPS:-3}
KS=${KS:-1,2,8}
THREADS=${THREADS:-1 2}
PART=${PART:-all}
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)

echo "# cpu_step_decode_compare $(date -u +%FT%TZ)"
echo "# commit $(git -C "$HERE" rev-parse --short HEAD)$(git -C "$HERE" diff --quiet || echo '+dirty')"
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) vCPUs, $(uname -r)"
echo "# baseline SRAVEN binary: ${BASE:-none}"
load() { echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)"; }

if [ "$PART" != decode ]; then
  for th in $THREADS; do
    for r in $(seq "$ROUNDS"); do
      echo; echo "## SRAVEN step, OMP_NUM_THREADS=$th, round $r"; load
      export OMP_NUM_THREADS=$th OPENBLAS_NUM_THREADS=$th
      if [ -n "$BASE" ]; then
        echo "### before ($BASE)"
        "$BASE" --steps "$STEPS" --k "$KS" --attention softmax --dispatch ops 2>/dev/null | grep '^| softmax'
      fi
      echo "### ours"
      "$BUILD/bench/sraven_train_bench" --steps "$STEPS" --k "$KS" --attention softmax \
          --dispatch ops --roofline $([ "$r" = 1 ] && echo 1 || echo 0) 2>/dev/null \
          | grep -v '^#' | grep -v '^$' | grep -v '^| attention\|^| ---'
      echo "### PyTorch eager peer"
      $PY "$HERE/sraven_peer.py" --k "$KS" --steps "$STEPS"
      load
    done
  done
fi

if [ "$PART" != sraven ]; then
  for th in $THREADS; do
    for r in $(seq "$ROUNDS"); do
      echo; echo "## Mixtral decode, batch 1, OMP_NUM_THREADS=$th, round $r"; load
      export OMP_NUM_THREADS=$th OPENBLAS_NUM_THREADS=$th
      echo "### before (SMOE_MIXTRAL_DECODE_KERNELS=off)"
      SMOE_MIXTRAL_DECODE_KERNELS=off "$BUILD/bench/mixtral_decode_bench" --shape small \
          --ept "$KS" --batch 1 --prompt 32 --steps 16 2>/dev/null | grep '^| 1 \|copy\|bandwidth'
      echo "### ours"
      "$BUILD/bench/mixtral_decode_bench" --shape small --ept "$KS" --batch 1 --prompt 32 \
          --steps 16 2>/dev/null | grep '^| 1 '
      echo "### PyTorch eager peer"
      $PY "$HERE/mixtral_decode_peer.py" --ept "$KS" --prompt 32 --steps 16
      load
    done
  done
fi
