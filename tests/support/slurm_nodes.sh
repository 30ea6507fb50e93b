#!/bin/bash
# A Slurm cluster on the namespaced "nodes" of netns_nodes.sh, set up as on real hosts: the last
# node is the head (slurmctld, and where srun, sbatch, squeue and scancel are typed), every other
# one a compute node running slurmd (NodeName = its hostname, NodeAddr = its veth address); each
# runs its own munged (one key for the cluster). Everything it starts or writes lives in DIR (slurm.conf, spool and state
# folders, logs, the munge key and sockets); nothing in /etc is read or written (SLURM_CONF).
# Usage and what it sets: tests/support/README.md.
set -euo pipefail

harness="$(dirname "$0")/netns_nodes.sh"

die() { echo "slurm_nodes: $*" >&2; exit 1; }
usage() {
  cat >&2 <<EOF
usage: slurm_nodes.sh check                 exit 0 if usable, else print why and exit 77
       slurm_nodes.sh up DIR [CPUS]         a cluster on the nodes of FF_NODES_PREFIX (netns_nodes.sh
                                            up N+1 first: N compute nodes and the head), CPUS per
                                            compute node (default 2); waits until they are idle
       slurm_nodes.sh run DIR CMD...        CMD on the head with SLURM_CONF=DIR/slurm.conf
       slurm_nodes.sh down DIR              stop every daemon 'up' started (by the pids it wrote)
EOF
  exit 2
}

unusable_reason() {
  local why
  why=$("$harness" check) || { echo "${why#SKIP: }"; return; }
  local cmd
  for cmd in munged slurmctld slurmd srun sinfo; do
    command -v "$cmd" >/dev/null || { echo "needs $cmd (Debian: slurmctld, slurmd, slurm-client, munge; scripts/setup.sh installs them)"; return; }
  done
}

# Runs CMD on node NAME as on a host of its own: in the node's network and UTS namespaces, and in a
# mount namespace where DIR/munge and DIR/tmp (the paths slurm.conf names) are that node's own
# DIR/NAME/munge and DIR/NAME/tmp, and /etc/hosts is DIR/hosts. Hosts never share a munged (munge
# rejects the second decoding of a credential, and slurm sends one launch request to every node)
# nor a TmpFS (each node's PMIx server makes the same spmix_appdir_* folder there); and the nodes
# know each other's names as a cluster's hosts file says (else slurmctld asks DNS for the name of
# the head's address, which no DNS server answers from inside a namespace, at every job).
# It execs, so a daemon started with it in the background keeps the pid $! names.
on_node() {
  local dir=$1 name=$2; shift 2
  # shellcheck disable=SC2016  # $1, $2, $@ are the inner shell's
  exec "$harness" exec "$name" unshare --mount --propagation private /bin/sh -c \
    'mount --bind "$1/$2/munge" "$1/munge" && mount --bind "$1/$2/tmp" "$1/tmp" &&
     mount --bind "$1/hosts" /etc/hosts && shift 2 && exec "$@"' \
    on_node "$dir" "$name" "$@"
}

# Starts a daemon on a node; its pid goes into DIR/pids, so 'down' ends exactly what 'up' started.
start() {
  local dir=$1 name=$2 log=$3; shift 3
  on_node "$dir" "$name" "$@" >>"$log" 2>&1 &
  echo $! >>"$dir/pids"
}

write_conf() {
  local dir=$1 cpus=$2 head=$3 head_addr=$4; shift 4
  cat >"$dir/slurm.conf" <<EOF
# Written by tests/support/slurm_nodes.sh; every path is under $dir.
ClusterName=fivefold
SlurmctldHost=$head($head_addr)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/socket
# Ranks start through PMIx, so "srun fivefold train ..." needs no --mpi option.
MpiDefault=pmix
# No cgroups: the nodes share one machine's cgroup tree, and tasks are not bound to cores (every
# node's slurmd would bind its first task to "its" core 0, the same core; cf. --bind-to none).
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdParameters=config_overrides
StateSaveLocation=$dir/ctld
SlurmctldPidFile=$dir/ctld/slurmctld.pid
SlurmctldLogFile=$dir/ctld/slurmctld.log
SlurmdSpoolDir=$dir/%n/spool
SlurmdPidFile=$dir/%n/slurmd.pid
SlurmdLogFile=$dir/%n/slurmd.log
TmpFS=$dir/tmp
SlurmctldDebug=info
SlurmdDebug=info
# A stop signal (scancel) gives the tasks this long to save before SIGKILL.
KillWait=30
EOF
  local node addr
  while [ $# -gt 0 ]; do
    node=$1 addr=$2; shift 2
    echo "NodeName=$node NodeAddr=$addr CPUs=$cpus State=UNKNOWN" >>"$dir/slurm.conf"
  done
  echo "PartitionName=nodes Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$dir/slurm.conf"
}

up() {
  local dir=$1 cpus=${2:-2}
  local why
  why=$(unusable_reason)
  [ -z "$why" ] || die "$why"
  [ -d "$dir" ] || die "up: $dir is not a folder"
  dir=$(cd "$dir" && pwd)
  # The nodes and their addresses, from the harness's own files; the last one is the head.
  local nodes=() addrs=() name
  while read -r name _; do nodes+=("$name"); done <"$("$harness" hostfile 1)"
  [ ${#nodes[@]} -ge 2 ] || die "needs a compute node and the head: run netns_nodes.sh up 2 (or more) first"
  for name in "${nodes[@]}"; do
    addrs+=("$("$harness" exec "$name" ip -4 -o addr show ffnet | awk '{ sub("/.*", "", $4); print $4 }')")
  done
  local last=$((${#nodes[@]} - 1)) i compute=()
  local head=${nodes[last]}
  for ((i = 0; i < last; i++)); do compute+=("${nodes[i]}" "${addrs[i]}"); done
  mkdir -p "$dir/munge" "$dir/tmp" "$dir/ctld"
  { echo "127.0.0.1 localhost"; for ((i = 0; i <= last; i++)); do echo "${addrs[i]} ${nodes[i]}"; done; } >"$dir/hosts"
  for name in "${nodes[@]}"; do mkdir -p "$dir/$name/spool" "$dir/$name/munge" "$dir/$name/tmp"; done
  write_conf "$dir" "$cpus" "$head" "${addrs[last]}" "${compute[@]}"
  : >"$dir/pids"

  # One key for the cluster, as real hosts share it.
  dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge.key"
  for ((i = 0; i <= last; i++)); do
    name=${nodes[i]}
    start "$dir" "$name" "$dir/$name/munge/out" munged --foreground --force --key-file="$dir/munge.key" \
      --socket="$dir/munge/socket" --pid-file="$dir/munge/pid" --log-file="$dir/munge/log" \
      --seed-file="$dir/munge/seed" --origin="${addrs[i]}"
  done
  local until=$((SECONDS + 10))
  for name in "${nodes[@]}"; do
    until [ -S "$dir/$name/munge/socket" ]; do
      [ $SECONDS -lt $until ] || die "munged on $name did not start: $(cat "$dir/$name/munge/out" 2>/dev/null)"
      sleep 0.1
    done
  done

  export SLURM_CONF="$dir/slurm.conf"
  start "$dir" "$head" "$dir/ctld/slurmctld.out" slurmctld -D -c -i
  for name in "${nodes[@]:0:last}"; do start "$dir" "$name" "$dir/$name/slurmd.out" slurmd -D -N "$name"; done
  # Up when every compute node is idle.
  until=$((SECONDS + 30))
  local states=""
  while :; do
    states=$(on_node "$dir" "$head" sinfo -h -N -o "%N %t" 2>/dev/null || true)
    [ -n "$states" ] && ! grep -qv " idle$" <<<"$states" && break
    [ $SECONDS -lt $until ] || die "the nodes did not become idle in 30 s (sinfo: ${states:-no answer}); logs in $dir"
    sleep 0.2
  done
}

down() {
  local dir=$1 pid
  [ -f "$dir/pids" ] || return 0
  local pids
  pids=$(cat "$dir/pids")
  for pid in $pids; do kill "$pid" 2>/dev/null || true; done
  local until=$((SECONDS + 5))
  for pid in $pids; do
    while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $until ]; do sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -f "$dir/pids"
}

[ $# -ge 1 ] || usage
cmd=$1; shift
case "$cmd" in
  check) why=$(unusable_reason); [ -z "$why" ] || { echo "SKIP: $why"; exit 77; } ;;
  up) [ $# -ge 1 ] || usage; up "$@" ;;
  run)
    [ $# -ge 2 ] || usage
    dir=$(cd "$1" && pwd); shift
    head=$(awk 'END { print $1 }' "$("$harness" hostfile 1)")
    SLURM_CONF="$dir/slurm.conf" on_node "$dir" "$head" "$@" ;;
  down) [ $# -eq 1 ] || usage; down "$1" ;;
  *) usage ;;
esac
