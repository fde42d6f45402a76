# Sourced by the deploy/ scripts: runs podman with the settings these hosts
# need (docs/deploy.md, "Podman settings"):
#   runtime runc, cgroup manager cgroupfs   crun refuses a hybrid cgroup
#                                           layout; no systemd in CI
#   ulimits nofile=N:N, nproc=M:M           podman's default ulimits need
#                                           CAP_SYS_RESOURCE, which a
#                                           container host may lack; N = the
#                                           caller's limit, M = the same but at
#                                           most 32768 (podman 4.3 runs conmon
#                                           and runc with nproc 32768)
# They go into a containers.conf of our own (CONTAINERS_CONF, which then is
# the only one podman reads), so that `podman kube play`, which has no
# --ulimit flag, gets them too. SMOE_PODMAN (default podman) names the binary.
smoe_nofile=$(ulimit -Hn)
smoe_nproc=$(ulimit -Hu)
[[ "$smoe_nofile" == unlimited ]] && smoe_nofile=1048576
[[ "$smoe_nproc" == unlimited || "$smoe_nproc" -gt 32768 ]] && smoe_nproc=32768
SMOE_ULIMITS=(--ulimit "nofile=${smoe_nofile}:${smoe_nofile}" --ulimit "nproc=${smoe_nproc}:${smoe_nproc}")
if [[ -z "${SMOE_CONTAINERS_CONF:-}" ]]; then
  SMOE_CONTAINERS_CONF=${TMPDIR:-/tmp}/smoe-containers-$(id -u).conf
  cat >"$SMOE_CONTAINERS_CONF.$$" <<CONF
# Written by deploy/images/podman.sh
[containers]
default_ulimits = ["nofile=${smoe_nofile}:${smoe_nofile}", "nproc=${smoe_nproc}:${smoe_nproc}"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
  mv -f "$SMOE_CONTAINERS_CONF.$$" "$SMOE_CONTAINERS_CONF"
fi
export CONTAINERS_CONF=$SMOE_CONTAINERS_CONF

smoe_podman() {
  "${SMOE_PODMAN:-podman}" --runtime runc --cgroup-manager cgroupfs "$@"
}
