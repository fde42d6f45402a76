#!/usr/bin/env bash
# deploy-run tests of the images (label deploy-run):
#   images-run.sh build BUILD_DIR   deploy_images_build: builds
#       localhost/smoe-coordinator:dev and localhost/smoe-worker-cpu:dev with
#       podman from deploy/docker/*.Dockerfile on the local Debian 12 base,
#       from the binaries of BUILD_DIR (BINARIES=prebuilt), or of
#       $SMOE_IMAGES_PREBUILT; a CUDA build's worker image carries the CUDA
#       runtime libraries its binaries load (CI's build is one)
#   images-run.sh run               deploy_images_run: each image starts as
#       uid 10001 with a read-only root file system and prints its --help;
#       every shared library of its binaries resolves
# Root and podman needed; without them: FAIL in CI (CI=true), else SKIP.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
mode=${1:?build|run}
command -v podman >/dev/null || unavailable "podman not found (scripts/install-deps --only deploy)"
need_root "$0" "$@"
# shellcheck source=../../deploy/images/podman.sh
. "$root/deploy/images/podman.sh"
smoe_podman info >/dev/null 2>&1 || unavailable "podman does not start: $(smoe_podman info 2>&1 | tail -2)"
images=(coordinator worker-cpu)
case "$mode" in
  build)
    # SMOE_IMAGES_PREBUILT: another build directory.
    bdir=${SMOE_IMAGES_PREBUILT:-${2:?build directory}}
    command -v debootstrap >/dev/null || unavailable "debootstrap not found (scripts/install-deps --only deploy)"
    t0=$SECONDS
    "$root/deploy/images/build.sh" --prebuilt "$bdir" --tag dev
    log "deploy_images_build: PASS in $((SECONDS - t0)) s"
    ;;
  run)
    for i in "${images[@]}"; do
      img=localhost/smoe-$i:dev
      smoe_podman image exists "$img" || unavailable "$img missing: deploy_images_build builds it (see its output)"
      user=$(smoe_podman image inspect --format '{{.Config.User}}' "$img")
      [[ "$user" == 10001:10001 ]] || fail "$img: USER '$user', expected 10001:10001"
      # The entrypoint's --help, as the image runs it: uid 10001, read-only
      # root, all capabilities dropped, no new privileges.
      run=(smoe_podman run --rm --read-only --cap-drop=ALL --security-opt=no-new-privileges --network=none)
      out=$("${run[@]}" "$img" --help 2>&1) || fail "$img --help failed: $out"
      sub=coordinator; [[ $i == worker-cpu ]] && sub=worker
      grep -q "smoe $sub\|Usage: .*$sub\|$sub" <<<"$out" || fail "$img --help does not describe 'smoe $sub': $out"
      id=$("${run[@]}" --entrypoint /usr/bin/id "$img" -u)
      [[ "$id" == 10001 ]] || fail "$img runs as uid $id"
      if "${run[@]}" --entrypoint /usr/bin/touch "$img" /usr/local/bin/x 2>/dev/null; then
        fail "$img: the root file system is writable under --read-only"
      fi
      # The state directory belongs to the image's user (a fresh volume
      # mounted there inherits it).
      dir=/var/lib/smoe; [[ $i == worker-cpu ]] && dir=/var/lib/smoe-worker
      own=$("${run[@]}" --entrypoint /usr/bin/stat "$img" -c '%u:%g %a' "$dir")
      [[ "$own" == "10001:10001 700" ]] || fail "$img: $dir is $own, expected 10001:10001 700"
      bins=/usr/local/bin/smoe; [[ $i == worker-cpu ]] && bins="/usr/local/bin/smoe /usr/local/bin/smoe-trainer"
      missing=$("${run[@]}" --entrypoint /bin/sh "$img" -c "ldd $bins | grep 'not found' || true")
      [[ -z "$missing" ]] || fail "$img: unresolved libraries: $missing"
      log "$img: uid 10001, read-only root, --help ok, $(smoe_podman image inspect --format '{{.Size}}' "$img" | awk '{printf "%.0f MB", $1/1e6}')"
    done
    # The worker's trainer runs: a few SRAVEN steps on the CPU, as uid 10001
    # with a read-only root and a writable /tmp only.
    out=$(smoe_podman run --rm --read-only --cap-drop=ALL --network=none --tmpfs /tmp \
      --entrypoint /usr/local/bin/smoe localhost/smoe-worker-cpu:dev \
      train sraven --M 1 --top-k 2 --steps 20 --batch-size 8 --depth 1 --width 0.25 \
      --num-eval 64 --workdir /tmp/run 2>&1) || fail "smoe train sraven in the worker image failed: $(tail -20 <<<"$out")"
    log "worker-cpu: smoe train sraven ran: $(tail -1 <<<"$out")"
    log "deploy_images_run: PASS"
    ;;
  *) echo "images-run.sh: unknown mode '$mode' (build|run)" >&2; exit 64 ;;
esac
