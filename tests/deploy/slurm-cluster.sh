#!/usr/bin/env bash
# A one-node Slurm cluster on localhost for the deploy-run tests: munged,
# slurmctld and slurmd with everything (config, key, sockets, state, logs)
# under DIR; nothing in /etc is read or changed. Needs root (slurmd), and
# the Debian 12 packages slurm-wlm (22.05) and munge.
#   slurm-cluster.sh start DIR   prints the SLURM_CONF to export; fails
#                                naming the daemon and its log if one does
#                                not come up within 30 s
#   slurm-cluster.sh stop DIR    stops the daemons started from DIR
# Settings the issue found to work on container hosts: proctrack/linuxproc
# (no cgroup plugin), task/none. KillWait=30: scancel's SIGTERM -> SIGKILL
# gap, which the worker's drain must fit in.
set -euo pipefail
cmd=${1:?start|stop}
dir=${2:?DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

stop() {
  local f
  for f in slurmd slurmctld munged; do
    if [[ -f "$dir/$f.pid" ]]; then
      local pid
      pid=$(cat "$dir/$f.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      rm -f "$dir/$f.pid"
    fi
  done
}

if [[ "$cmd" == stop ]]; then stop; exit 0; fi
[[ "$cmd" == start ]] || { echo "slurm-cluster.sh: unknown command '$cmd' (start|stop)" >&2; exit 64; }
for tool in munged slurmctld slurmd sbatch scontrol; do
  command -v "$tool" >/dev/null || PATH=$PATH:/usr/sbin command -v "$tool" >/dev/null ||
    { echo "slurm-cluster.sh: $tool not found: install slurm-wlm and munge (scripts/install-deps --only deploy)" >&2; exit 69; }
done
export PATH=$PATH:/usr/sbin
[[ $(id -u) -eq 0 ]] || { echo "slurm-cluster.sh: slurmd needs root" >&2; exit 69; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
host=$(hostname -s)
ctld_port=$(free_port)
slurmd_port=$(free_port)
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chmod 0700 "$dir/munge"
# munge: a private key and socket (slurm.conf AuthInfo names the socket).
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 0400 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/socket" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed"
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
cat >"$dir/slurm.conf" <<CONF
ClusterName=smoetest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/socket
CredType=cred/munge
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
JobRequeue=1
KillWait=30
MinJobAge=600
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=60
SchedulerParameters=sched_interval=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF" -i
slurmd -f "$SLURM_CONF"
deadline=$((SECONDS + 30))
until sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; do
  if ((SECONDS > deadline)); then
    echo "slurm-cluster.sh: the node did not turn idle within 30 s: $(sinfo -h -o '%T %E' 2>&1)" >&2
    for f in slurmctld slurmd munged; do echo "== $f.log" >&2; tail -5 "$dir/$f.log" >&2 2>/dev/null || true; done
    stop
    exit 1
  fi
  sleep 0.5
done
echo "$SLURM_CONF"
