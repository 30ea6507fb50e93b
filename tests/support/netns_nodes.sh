#!/bin/bash
# Several "nodes" on one machine: each node is a network namespace plus a UTS namespace (its own
# hostname), with one veth into a private "switch" namespace that bridges them. Open MPI then sees
# N hosts: shared memory inside a node, TCP over the veths between nodes, remote launch through
# the rsh agent this script writes (it enters the node's namespaces instead of ssh). Usage and the
# traps it avoids: tests/support/README.md.
#
# Nothing touches the host's own network: addresses (192.0.2.0/24, TEST-NET-1) live only on veths
# inside namespaces made here, and the bridge sits in its own namespace, so nothing is routed.
set -euo pipefail

PREFIX=${FF_NODES_PREFIX:-ffn}                 # names: ${PREFIX}0.. (nodes), ${PREFIX}sw (switch)
STATES=/run/fivefold-nodes
STATE=$STATES/$PREFIX                          # hostfile, agent, UTS namespace handles, owner
IFACE=ffnet                                    # the node's veth, same name in every node
SUBNET=192.0.2                                 # node i is $SUBNET.(10 + i)/24

die() { echo "netns_nodes: $*" >&2; exit 1; }
usage() {
  cat >&2 <<EOF
usage: netns_nodes.sh check                  exit 0 if usable, else print why and exit 77
       netns_nodes.sh up N [RATE]            make N nodes, each link limited to RATE
                                             (unlimited, or tc units: 1gbit, 10gbit, 25gbit)
       netns_nodes.sh rate RATE              change every link's rate
       netns_nodes.sh down                   delete everything this prefix made (also stale)
       netns_nodes.sh sweep                  down every set whose owner process is gone
       netns_nodes.sh exec NODE CMD...       run CMD on node NODE (index or hostname)
       netns_nodes.sh hostfile [SLOTS]       path of the hostfile (SLOTS per node, default 2)
       netns_nodes.sh agent                  path of the rsh agent for --mca plm_rsh_agent
       netns_nodes.sh mpirun ARGS...         mpirun on node 0 across all nodes (see README)
       netns_nodes.sh stats NODE             "tx_bytes tx_packets rx_bytes rx_packets" of NODE's veth
env:   FF_NODES_PREFIX (default ffn) keeps concurrent sets apart; FF_NODES_OWNER=PID marks a
       set as a test's, swept by any later 'up' once that process is gone (a killed test).
EOF
  exit 2
}

# Why this machine cannot run the harness, or nothing.
unusable_reason() {
  [ "$(id -u)" = 0 ] || { echo "needs root (network namespaces); CI runs it as root"; return; }
  command -v ip >/dev/null || { echo "needs the ip command (iproute2)"; return; }
  command -v tc >/dev/null || { echo "needs the tc command (iproute2)"; return; }
  command -v unshare >/dev/null && command -v nsenter >/dev/null ||
    { echo "needs unshare and nsenter (util-linux)"; return; }
  local probe="${PREFIX}probe$$"
  ip netns add "$probe" 2>/dev/null || { echo "'ip netns add' fails here (no network namespaces)"; return; }
  local ok=1
  ip -n "$probe" link add v0 type veth peer name v1 2>/dev/null || ok=0
  ip netns del "$probe" 2>/dev/null || true
  [ $ok = 1 ] || { echo "veth pairs cannot be made here"; return; }
  unshare --uts true 2>/dev/null || { echo "'unshare --uts' fails here (no UTS namespaces)"; return; }
}

node_count() { cat "$STATE/nodes" 2>/dev/null || die "no nodes up for prefix $PREFIX: run 'up N' first"; }

# Node index from an index or a hostname.
node_index() {
  local node=$1 n
  n=$(node_count) || exit 1
  [[ $node =~ ^${PREFIX}([0-9]+)$ ]] && node=${BASH_REMATCH[1]}
  [[ $node =~ ^[0-9]+$ ]] && [ "$node" -lt "$n" ] || die "unknown node '$1' (nodes: ${PREFIX}0..${PREFIX}$((n - 1)))"
  echo "$node"
}

# tbf on one device: burst of 4 ms at the rate (tbf needs burst >= rate / HZ), at least 256 KiB.
limit_device() {
  local ns=$1 dev=$2 rate=$3
  ip netns exec "$ns" tc qdisc del dev "$dev" root 2>/dev/null || true
  [ "$rate" = unlimited ] && return
  local bits
  bits=$(rate_bits "$rate")
  local burst=$((bits / 8 / 250))
  [ $burst -lt 262144 ] && burst=262144
  ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate "$rate" burst "$burst" latency 100ms
}

rate_bits() {
  [[ $1 =~ ^([0-9]+)(k|m|g)?bit$ ]] || die "rate '$1' is not unlimited or a tc rate like 1gbit, 10gbit, 25gbit, 500mbit"
  local mul=1
  case "${BASH_REMATCH[2]}" in k) mul=1000 ;; m) mul=1000000 ;; g) mul=1000000000 ;; esac
  echo $((BASH_REMATCH[1] * mul))
}

set_rate() {
  local rate=$1 n i
  [ "$rate" = unlimited ] || rate_bits "$rate" >/dev/null
  n=$(node_count) || exit 1
  for ((i = 0; i < n; i++)); do
    limit_device "$PREFIX$i" "$IFACE" "$rate"            # node -> switch
    limit_device "${PREFIX}sw" "${PREFIX}p$i" "$rate"    # switch -> node
  done
  echo "$rate" >"$STATE/rate"
}

down() {
  local ns pid
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^${PREFIX}([0-9]+|sw)$" || true); do
    # Processes still inside (an MPI job from a failed test) die with their node.
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns"
  done
  if [ -d "$STATE" ]; then
    for f in "$STATE"/*.uts; do [ -e "$f" ] && { umount "$f" 2>/dev/null || true; }; done
    umount "$STATE" 2>/dev/null || true
    rm -rf "$STATE"
  fi
}

# Sets left by tests that were killed before their trap ran (CTest's timeout kills outright).
sweep() {
  local dir owner
  for dir in "$STATES"/*/; do
    [ -f "$dir/owner" ] || continue
    owner=$(cat "$dir/owner")
    kill -0 "$owner" 2>/dev/null && continue
    echo "netns_nodes: removing set '$(basename "$dir")' left by process $owner, which is gone" >&2
    FF_NODES_PREFIX=$(basename "$dir") "$0" down
  done
}

up() {
  local n=$1 rate=${2:-unlimited} i
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 200 ] || die "up: N must be 1..200, got '$n'"
  [ "$rate" = unlimited ] || rate_bits "$rate" >/dev/null
  local why
  why=$(unusable_reason)
  [ -z "$why" ] || die "$why"
  sweep
  down  # a stale set of this prefix goes first
  mkdir -p "$STATE"
  # UTS namespace handles are bind mounts; a private mount keeps them out of other mount trees.
  mount --bind "$STATE" "$STATE"
  mount --make-private "$STATE"
  ip netns add "${PREFIX}sw"
  ip -n "${PREFIX}sw" link add br0 type bridge
  ip -n "${PREFIX}sw" link set br0 up
  for ((i = 0; i < n; i++)); do
    local ns="$PREFIX$i"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip -n "$ns" link add "$IFACE" type veth peer name "${PREFIX}p$i" netns "${PREFIX}sw"
    # IPv6 off: no router solicitations or DAD packets in the byte counts, one address family.
    ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$IFACE.disable_ipv6=1"
    ip -n "$ns" addr add "$SUBNET.$((10 + i))/24" dev "$IFACE"
    ip -n "$ns" link set "$IFACE" up
    ip -n "${PREFIX}sw" link set "${PREFIX}p$i" master br0 up
    touch "$STATE/$ns.uts"
    unshare --uts="$STATE/$ns.uts" hostname "$ns"
  done
  echo "$n" >"$STATE/nodes"
  [ -z "${FF_NODES_OWNER:-}" ] || echo "$FF_NODES_OWNER" >"$STATE/owner"
  write_agent
  set_rate "$rate"
}

# The rsh agent: called by mpirun as `agent [ssh-style options] HOST COMMAND...`.
write_agent() {
  cat >"$STATE/agent" <<EOF
#!/bin/bash
while [ \$# -gt 0 ] && [ "\${1#-}" != "\$1" ]; do shift; done
host=\$1; shift
[ -e "/run/netns/\$host" ] && [ -e "$STATE/\$host.uts" ] || { echo "netns agent: no node '\$host'" >&2; exit 255; }
exec nsenter --net="/run/netns/\$host" --uts="$STATE/\$host.uts" -- /bin/sh -c "\$*"
EOF
  chmod +x "$STATE/agent"
}

run_on() {
  local i
  i=$(node_index "$1") || exit 1; shift
  exec nsenter --net="/run/netns/$PREFIX$i" --uts="$STATE/$PREFIX$i.uts" -- "$@"
}

hostfile() {
  local slots=${1:-2} n i file
  n=$(node_count) || exit 1
  file="$STATE/hostfile.$slots"
  : >"$file"
  for ((i = 0; i < n; i++)); do echo "$PREFIX$i slots=$slots" >>"$file"; done
  echo "$file"
}

# mpirun as a user types it on the first host, plus what the namespaces need: the agent, TCP
# between nodes on the veth only, and no core binding (each node's daemon would bind its ranks to
# "its" first cores, and all nodes share this machine's cores).
node_mpirun() {
  node_count >/dev/null
  run_on 0 mpirun --mca plm_rsh_agent "$STATE/agent" --mca btl tcp,self,vader \
    --mca btl_tcp_if_include "$IFACE" --mca oob_tcp_if_include "$IFACE" --bind-to none "$@"
}

# /proc/net/dev follows the reader's network namespace (/sys/class/net would show the host's).
stats() {
  local i
  i=$(node_index "$1") || exit 1
  run_on "$i" awk -v dev="$IFACE:" '$1 == dev { print $10, $11, $2, $3 }' /proc/net/dev
}

[ $# -ge 1 ] || usage
cmd=$1; shift
case "$cmd" in
  check) why=$(unusable_reason); [ -z "$why" ] || { echo "SKIP: $why" ; exit 77; } ;;
  up) [ $# -ge 1 ] || usage; up "$@" ;;
  rate) [ $# -eq 1 ] || usage; set_rate "$1" ;;
  down) down ;;
  sweep) sweep ;;
  exec) [ $# -ge 2 ] || usage; run_on "$@" ;;
  hostfile) hostfile "$@" ;;
  agent) node_count >/dev/null; echo "$STATE/agent" ;;
  mpirun) node_mpirun "$@" ;;
  stats) [ $# -eq 1 ] || usage; stats "$1" ;;
  *) usage ;;
esac
