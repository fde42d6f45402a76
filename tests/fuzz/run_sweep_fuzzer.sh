#!/usr/bin/env bash
# Builds the sweep-file fuzzer with clang + libFuzzer + ASan/UBSan and runs it
# for a short time (default 30 s) over the seed corpus (the shipped examples).
# Exits 77 (ctest: skipped) when clang or libFuzzer is not installed.
# Usage: tests/fuzz/run_sweep_fuzzer.sh [seconds] [build-dir]
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-30}
out=${2:-$src/build/fuzz}
CXX=${FUZZ_CXX:-clang++}
if ! command -v "$CXX" >/dev/null; then
  echo "SKIP: $CXX not found"; exit 77
fi
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, long){return 0;}' |
     "$CXX" -x c++ -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
  echo "SKIP: libFuzzer runtime not available for $CXX"; exit 77
fi
mkdir -p "$out/corpus"
cp -n "$src"/tests/fuzz/corpus/* "$out/corpus/" 2>/dev/null || true
"$CXX" -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined \
  -fno-sanitize-recover=undefined -I"$src" \
  "$src/tests/fuzz/sweep_spec_fuzzer.cc" "$src/sweeps/sweep_spec.cc" \
  "$src/sweeps/sweep_yaml.cc" "$src/sweeps/search_spec.cc" \
  "$src/sweeps/command_spec.cc" \
  "$src/common/api_token.cc" "$src/common/utf8.cc" "$src/common/suggest.cc" \
  "$src/trials/params.cc" \
  "$src/trials/sraven_params.cc" "$src/trials/skillmix_params.cc" \
  -o "$out/sweep_spec_fuzzer" \
  $(pkg-config --libs yaml-cpp libcrypto) \
  $(pkg-config --libs absl_statusor absl_status absl_strings absl_str_format absl_synchronization absl_time)
echo "fuzzing for ${secs}s..."
"$out/sweep_spec_fuzzer" -max_total_time="$secs" -max_len=4096 -timeout=10 \
  -rss_limit_mb=2048 "$out/corpus"
