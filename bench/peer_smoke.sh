#!/usr/bin/env bash
# bench-smoke run of a PyTorch eager peer (bench/CMakeLists.txt): Debian's
# python3 first (python3-torch lives there, not in a python3 that happens to
# be first on PATH); exit 77 (skipped) where no python3 has torch.
#   bench/peer_smoke.sh PEER.py ARGS...
set -euo pipefail
cd "$(dirname "$0")/.."
py=/usr/bin/python3
[[ -x $py ]] || py=python3
if ! "$py" -c 'import torch' 2>/dev/null; then
  echo "no torch for $py: skipped"
  exit 77
fi
peer=$1
shift
exec "$py" "bench/$peer" "$@"
