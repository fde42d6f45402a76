#!/usr/bin/env bash
# The GPU build recipe says the same thing everywhere (ctest
# gpu_recipe_consistency): the packages scripts/gpu-prefix unpacks are the
# ones docs/gpu-build.md lists, the worker image installs its -dev packages,
# and the gpu preset, the docs and the worker image pass the architecture
# flags LibTorch's CMake config would otherwise override (review A12).
# Usage: check-gpu-recipe.sh REPO_ROOT
set -euo pipefail
root=${1:?usage: check-gpu-recipe.sh REPO_ROOT}
prefix_script=$root/scripts/gpu-prefix
doc=$root/docs/gpu-build.md
dockerfile=$root/deploy/docker/worker.Dockerfile
presets=$root/CMakePresets.json
fail=0
bad() { echo "check-gpu-recipe: $*" >&2; fail=1; }

list_of() {  # the words of NAME=(...) in scripts/gpu-prefix
  sed -n "s/^$1=(\(.*\))$/\1/p" "$prefix_script"
}
core=$(list_of CORE)
tests=$(list_of TESTS)
[[ -n $core && -n $tests ]] || bad "no CORE=(...) / TESTS=(...) in $prefix_script"

for p in $core $tests; do
  grep -qw -- "$p" "$doc" || bad "$doc does not list $p (scripts/gpu-prefix does)"
done
# The image builds with SMOE_BUILD_TESTS=OFF: the core -dev packages only.
# Comments do not count.
docker_code=$(grep -v '^[[:space:]]*#' "$dockerfile")
for p in $core; do
  [[ $p == *-dev ]] || continue
  grep -qw -- "$p" <<<"$docker_code" || bad "$dockerfile does not install $p"
done
for flag in TORCH_CUDA_ARCH_LIST CMAKE_CUDA_ARCHITECTURES; do
  grep -q -- "-D$flag=" <<<"$docker_code" ||
    bad "$dockerfile does not pass -D$flag"
  grep -q -- "$flag" "$doc" || bad "$doc does not mention $flag"
done
# The gpu preset states its architectures and whether tests are built.
gpu_preset=$(sed -n '/"name": "gpu"/,/^    }/p' "$presets")
for key in TORCH_CUDA_ARCH_LIST CMAKE_CUDA_ARCHITECTURES SMOE_BUILD_TESTS \
           SMOE_BUILD_SERVICES; do
  grep -q "\"$key\"" <<<"$gpu_preset" || bad "gpu preset lacks $key"
done
grep -q "scripts/gpu-prefix" "$doc" || bad "$doc does not mention scripts/gpu-prefix"
exit $fail
