#!/usr/bin/env bash
# Copyright 2026 SMoE Lab authors.
#
# Issue 19: Mixtral batch-1 decode on the CPU with f32 vs bf16 weights, our
# loops (mixtral_decode_cpu.h) vs the LibTorch bf16 path vs the PyTorch
# eager peer in f32 and bf16, interleaved per EPT and round, one thread.
#
#   bench/mixtral_decode_bf16_compare.sh [BUILD_DIR]
#
# Same method as bench/cpu_step_decode_compare.sh: CPU ms per token of the
# timed loop only (mixtral_decode_bench under bench/cpu_clock_preload.cc, so
# its copy bandwidth and "% of floor" are per CPU second too; the peer's
# time.process_time()). The floor is the bench's: weight bytes the token
# touches (element size of the dtype) / measured copy bandwidth.
# Env: KS (1,2,8), ROUNDS (3), DECODE_STEPS (300), THREADS (1).
set -u
BUILD=${1:-build}
KS=${KS:-1,2,8}
ROUNDS=${ROUNDS:-3}
DECODE_STEPS=${DECODE_STEPS:-300}
THREADS=${THREADS:-1}
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)

echo "# mixtral_decode_bf16_compare $(date -u +%FT%TZ)"
echo "# commit $(git -C "$HERE" rev-parse --short HEAD)$(git -C "$HERE" diff --quiet || echo '+dirty')"
echo "# decode loops: $("$BUILD/worker/model/mixtral/mixtral_model_test" \
    --gtest_filter=MixtralDecodeIsaTest.* 2>/dev/null | sed -n 's/^decode loops: //p')"
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) vCPUs, $(uname -r); threads $THREADS"
# (nproc before the export below: GNU nproc honours OMP_NUM_THREADS.)
export OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS
load() { echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
SHIM_DIR=$(mktemp -d)
trap 'rm -rf "$SHIM_DIR"' EXIT
nice -n 19 ${CXX:-g++} -O2 -shared -fPIC -o "$SHIM_DIR/cpu_clock.so" \
    "$HERE/cpu_clock_preload.cc"
# CPU ms/token, % of the floor per CPU second and MB/token of the EPT row.
decode_row() {
  LD_PRELOAD="$SHIM_DIR/cpu_clock.so" "$BUILD/bench/mixtral_decode_bench" \
      --shape small --dtype "$1" --ept "$2" --batch 1 --prompt 32 \
      --steps "$DECODE_STEPS" 2>/dev/null | awk -F'|' '/^\| 1 \|/ {
        gsub(/ /, ""); c = $6; f = $10; b = $8 } END {
        print "cpu_ms_per_step=" c " floor_share_per_cpu_s=" f " MB=" b }'
}
peer_row() {
  $PY "$HERE/mixtral_decode_peer.py" --dtype "$1" --ept "$2" --prompt 32 \
      --steps "$DECODE_STEPS" 2>&1 |
      sed -n 's/.*ms\/token=\([0-9.]*\) cpu_ms\/token=\([0-9.]*\).*/cpu_ms_per_step=\2 wall_ms_per_step=\1/p'
}
for r in $(seq 1 "$ROUNDS"); do
  for k in ${KS//,/ }; do
    echo; echo "## round $r EPT=$k"; load
    echo "ours f32:       $(decode_row f32 "$k")"
    echo "ours bf16:      $(decode_row bf16 "$k")"
    echo "libtorch bf16:  $(SMOE_MIXTRAL_DECODE_KERNELS=off decode_row bf16 "$k")"
    echo "peer f32:       $(peer_row f32 "$k")"
    echo "peer bf16:      $(peer_row bf16 "$k")"
  done
done
