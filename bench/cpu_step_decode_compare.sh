#!/usr/bin/env bash
# Copyright 2026 SMoE Lab authors.
#
# Issue 19: ours vs a baseline build vs the PyTorch eager peers, 1 and 2
# threads, interleaved in one run, with machine, load and commit.
#
#   bench/cpu_step_decode_compare.sh [BUILD_DIR] [BASE_SRAVEN_BENCH]
#
# Every figure is per step by the difference method of
# bench/cpu_time_per_step.py (two runs with N1 and N2 steps; start-up and
# warm-up cancel): CPU ms (all threads; robust to other load on a shared
# machine) and wall ms. BUILD_DIR (default build): this commit's
# sraven_train_bench and mixtral_decode_bench. BASE_SRAVEN_BENCH: a
# sraven_train_bench built from the baseline commit (optional). Mixtral's
# "before" is this binary with SMOE_MIXTRAL_DECODE_KERNELS=off (the LibTorch
# path the kernels replace). Env: KS (1,2,8), THREADS ("1 2"), PART (all |
# sraven | decode | roofline).
set -u
BUILD=${1:-build}
BASE=${2:-}
KS=${KS:-1,2,8}
THREADS=${THREADS:-1 2}
PART=${PART:-all}
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
PER="$PY $HERE/cpu_time_per_step.py"

echo "# cpu_step_decode_compare $(date -u +%FT%TZ)"
echo "# commit $(git -C "$HERE" rev-parse --short HEAD)$(git -C "$HERE" diff --quiet || echo '+dirty')"
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) vCPUs, $(uname -r)"
echo "# baseline SRAVEN binary: ${BASE:-none}"
load() { echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)"; }

if [ "$PART" = all ] || [ "$PART" = roofline ]; then
  echo; echo "## GEMM roofline of the SRAVEN step (1 thread)"; load
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 $PY "$HERE/gemm_roofline.py" --k "$KS"
fi

if [ "$PART" = all ] || [ "$PART" = sraven ]; then
  for th in $THREADS; do
    export OMP_NUM_THREADS=$th OPENBLAS_NUM_THREADS=$th
    for k in ${KS//,/ }; do
      echo; echo "## SRAVEN step k=$k, OMP_NUM_THREADS=$th"; load
      if [ -n "$BASE" ]; then
        echo "before: $($PER --n1 1 --n2 4 -- "$BASE" --steps '{steps}' --k "$k" \
            --attention softmax --dispatch ops)"
      fi
      echo "ours:   $($PER --n1 1 --n2 4 -- "$BUILD/bench/sraven_train_bench" \
          --steps '{steps}' --k "$k" --attention softmax --dispatch ops)"
      echo "peer:   $($PER --n1 1 --n2 4 -- $PY "$HERE/sraven_peer.py" --k "$k" \
          --steps '{steps}')"
    done
  done
fi

if [ "$PART" = all ] || [ "$PART" = decode ]; then
  echo; echo "## Mixtral decode: the bench's floor line (1 thread)"
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$BUILD/bench/mixtral_decode_bench" \
      --shape small --ept "$KS" --batch 1 --prompt 32 --steps 16 2>/dev/null |
      grep -v '^$'
  for th in $THREADS; do
    export OMP_NUM_THREADS=$th OPENBLAS_NUM_THREADS=$th
    for k in ${KS//,/ }; do
      echo; echo "## Mixtral decode batch 1, EPT=$k, OMP_NUM_THREADS=$th"; load
      echo "before: $(SMOE_MIXTRAL_DECODE_KERNELS=off $PER --n1 8 --n2 ${N2:-200} -- \
          "$BUILD/bench/mixtral_decode_bench" --shape small --ept "$k" --batch 1 \
          --prompt 32 --steps '{steps}')"
      echo "ours:   $($PER --n1 8 --n2 ${N2:-200} -- "$BUILD/bench/mixtral_decode_bench" \
          --shape small --ept "$k" --batch 1 --prompt 32 --steps '{steps}')"
      echo "peer:   $($PER --n1 8 --n2 ${N2:-200} -- $PY "$HERE/mixtral_decode_peer.py" \
          --ept "$k" --prompt 32 --steps '{steps}')"
    done
  done
fi
