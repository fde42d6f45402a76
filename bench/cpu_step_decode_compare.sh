#!/usr/bin/env bash
# Copyright 2026 SMoE Lab authors.
#
# Issue 19: ours vs a baseline build vs the PyTorch eager peers, 1 and 2
# threads, interleaved in one run, with machine, load and commit.
#
#   bench/cpu_step_decode_compare.sh [BUILD_DIR] [BASE_SRAVEN_BENCH] \
#       [BASE_DECODE_BENCH]
#
# Every figure is CPU ms per step of the timed loop only (start-up, model
# construction, random checkpoints and warm-up excluded; robust to other
# load on a shared machine): sraven_train_bench's own "CPU ms/step (all
# threads)" column; mixtral_decode_bench's ms/step with
# bench/cpu_clock_preload.cc preloaded (its steady_clock then reads process
# CPU time, so its copy bandwidth and "% of floor" are per CPU second too;
# works with a baseline binary as is); the peers' time.process_time(). Wall
# ms/step is printed beside where the program reports it. (The difference
# method of bench/cpu_time_per_step.py is the fallback for other programs:
# at 2-5 ms per decode token its start-up noise, ~1 s, was larger than the
# effect.) BUILD_DIR (default build): this commit's sraven_train_bench and
# mixtral_decode_bench. BASE_SRAVEN_BENCH: a sraven_train_bench built from
# the baseline commit (optional). BASE_DECODE_BENCH: a mixtral_decode_bench
# built from the baseline commit; without it Mixtral's "before" is this
# binary with SMOE_MIXTRAL_DECODE_KERNELS=off (the LibTorch path).
# Env: KS (1,2,8), THREADS ("1 2"), PART (all | sraven | decode |
# roofline), SRAVEN_STEPS (6 timed steps), DECODE_STEPS (300 timed tokens).
set -u
BUILD=${1:-build}
BASE=${2:-}
BASE_DECODE=${3:-}
KS=${KS:-1,2,8}
THREADS=${THREADS:-1 2}
PART=${PART:-all}
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)

echo "# cpu_step_decode_compare $(date -u +%FT%TZ)"
echo "# commit $(git -C "$HERE" rev-parse --short HEAD)$(git -C "$HERE" diff --quiet || echo '+dirty')"
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) vCPUs, $(uname -r)"
echo "# baseline SRAVEN binary: ${BASE:-none}"
echo "# baseline decode binary: ${BASE_DECODE:-this one with SMOE_MIXTRAL_DECODE_KERNELS=off}"
load() { echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
SRAVEN_STEPS=${SRAVEN_STEPS:-6}
DECODE_STEPS=${DECODE_STEPS:-300}
# The CPU and wall ms/step columns of a bench's last table row.
sraven_row() {
  "$1" --steps "$SRAVEN_STEPS" --k "$2" --attention softmax --dispatch ops \
      2>/dev/null | awk -F'|' '/^\| softmax/ {
        gsub(/ /, ""); c = $(NF-1); w = $7 } END {
        print "cpu_ms_per_step=" c " wall_ms_per_step=" w }'
}
SHIM_DIR=$(mktemp -d)
trap 'rm -rf "$SHIM_DIR"' EXIT
nice -n 19 ${CXX:-g++} -O2 -shared -fPIC -o "$SHIM_DIR/cpu_clock.so" \
    "$HERE/cpu_clock_preload.cc"
# CPU ms/step (the ms/step column under the shim) and % of the floor per
# CPU second, of the EPT row.
decode_row() {
  LD_PRELOAD="$SHIM_DIR/cpu_clock.so" "$1" --shape small --ept "$2" --batch 1 \
      --prompt 32 --steps "$DECODE_STEPS" 2>/dev/null | awk -F'|' '/^\| 1 \|/ {
        gsub(/ /, ""); c = $6; f = $10; b = $8 } END {
        print "cpu_ms_per_step=" c " floor_share_per_cpu_s=" f " MB=" b }'
}

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
        echo "before: $(sraven_row "$BASE" "$k")"
      fi
      echo "ours:   $(sraven_row "$BUILD/bench/sraven_train_bench" "$k")"
      echo "peer:   $($PY "$HERE/sraven_peer.py" --k "$k" --steps "$SRAVEN_STEPS" 2>&1 |
          sed -n 's/.*ms\/step=\([0-9.]*\) cpu_ms\/step=\([0-9.]*\).*/cpu_ms_per_step=\2 wall_ms_per_step=\1/p')"
    done
  done
fi

if [ "$PART" = all ] || [ "$PART" = decode ]; then
  echo; echo "## Mixtral decode: the bench's floor line (1 thread, CPU clock)"
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 LD_PRELOAD="$SHIM_DIR/cpu_clock.so" \
      "$BUILD/bench/mixtral_decode_bench" \
      --shape small --ept "$KS" --batch 1 --prompt 32 --steps 16 2>/dev/null |
      grep -v '^$'
  for th in $THREADS; do
    export OMP_NUM_THREADS=$th OPENBLAS_NUM_THREADS=$th
    for k in ${KS//,/ }; do
      echo; echo "## Mixtral decode batch 1, EPT=$k, OMP_NUM_THREADS=$th"; load
      if [ -n "$BASE_DECODE" ]; then
        echo "before: $(decode_row "$BASE_DECODE" "$k")"
      else
        echo "before: $(SMOE_MIXTRAL_DECODE_KERNELS=off decode_row \
            "$BUILD/bench/mixtral_decode_bench" "$k")"
      fi
      echo "ours:   $(decode_row "$BUILD/bench/mixtral_decode_bench" "$k")"
      echo "peer:   $($PY "$HERE/mixtral_decode_peer.py" --ept "$k" --prompt 32 \
          --steps "$DECODE_STEPS" 2>&1 |
          sed -n 's/.*ms\/token=\([0-9.]*\) cpu_ms\/token=\([0-9.]*\).*/cpu_ms_per_step=\2 wall_ms_per_step=\1/p')"
    done
  done
fi
